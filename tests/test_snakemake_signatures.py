"""sentrepro.snakemake_signatures: each rule function's parameters are read once, and Snakemake reads those."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from snakemake.common import FUNC_OVERWRITE_PARAMS_ATTR, get_function_params, get_input_function_aux_params
from snakemake.resources import Resource

from sentrepro.snakemake_signatures import ATTRIBUTE, memoize_signatures, rule_functions


def _rules():
    def tokenized(wildcards):
        return f"tokenized/{wildcards.backbone}"

    def run_dir(wildcards, input):
        return input[0]

    def memory(wildcards, attempt):
        return 1000 * attempt

    def anything(wildcards, **kwargs):
        return 0

    rule = SimpleNamespace(input=[tokenized, "data/manifest.json"], params=[run_dir, "a constant"],
                           resources={"mem_mb": Resource("mem_mb", memory), "runtime": Resource("runtime", 60),
                                      "other": Resource("other", anything)})
    return [rule], (tokenized, run_dir, memory, anything)


def test_snakemake_reads_the_attribute_this_module_sets():
    assert ATTRIBUTE == FUNC_OVERWRITE_PARAMS_ATTR


def test_every_rule_function_gets_its_own_parameters_and_snakemake_uses_them():
    rules, functions = _rules()
    assert set(rule_functions(rules)) == set(functions)  # inputs, params, resource evaluators; no constants
    expected = {f: dict(inspect.signature(f).parameters) for f in functions}
    assert memoize_signatures(rules) == len(functions)
    for function in functions:
        assert get_function_params(function) is getattr(function, ATTRIBUTE)
        assert dict(get_function_params(function)) == expected[function]
    candidates = {"input": ["x"], "attempt": 2, "threads": 1, "rulename": "r"}
    assert get_input_function_aux_params(functions[1], candidates) == {"input": ["x"]}
    assert get_input_function_aux_params(functions[2], candidates) == {"attempt": 2}
    assert get_input_function_aux_params(functions[3], candidates) == candidates  # **kwargs takes everything
    assert memoize_signatures(rules) == 0  # already given: left alone
