"""sentrepro.planning.snakemake_signatures: each rule function's parameters are read once, and Snakemake reads those."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from snakemake.common import FUNC_OVERWRITE_PARAMS_ATTR, get_function_params, get_input_function_aux_params
from snakemake.resources import Resource

from sentrepro.planning.snakemake_signatures import ATTRIBUTE, memoize_signatures, rule_functions


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
    already = hasattr(Resource.evaluate, ATTRIBUTE)  # set once per process (by an earlier test or plan)
    assert memoize_signatures(rules) == len(functions) + (0 if already else 1)
    for function in functions:
        assert get_function_params(function) is getattr(function, ATTRIBUTE)
        assert dict(get_function_params(function)) == expected[function]
    candidates = {"input": ["x"], "attempt": 2, "threads": 1, "rulename": "r"}
    assert get_input_function_aux_params(functions[1], candidates) == {"input": ["x"]}
    assert get_input_function_aux_params(functions[2], candidates) == {"attempt": 2}
    assert get_input_function_aux_params(functions[3], candidates) == candidates  # **kwargs takes everything
    assert memoize_signatures(rules) == 0  # already given: left alone


def test_every_resource_evaluation_reads_the_parameters_once():
    """Snakemake evaluates each resource through the bound ``Resource.evaluate``: its parameters are given once,
    they are the bound method's own, and a resource evaluates as before (constant, function of wildcards)."""
    rules, _ = _rules()
    memoize_signatures(rules)
    for resource in rules[0].resources.values():
        bound = resource.evaluate
        assert get_function_params(bound) is getattr(Resource.evaluate, ATTRIBUTE)
        assert dict(get_function_params(bound)) == dict(inspect.signature(bound).parameters)
        assert [p.kind for p in get_function_params(bound).values()] == [inspect.Parameter.VAR_POSITIONAL,
                                                                           inspect.Parameter.VAR_KEYWORD]
    wildcards = SimpleNamespace(backbone="b")
    assert rules[0].resources["mem_mb"].evaluate(wildcards, attempt=2, input=[]).value == 2000
    assert rules[0].resources["runtime"].evaluate(wildcards, attempt=2).value == 60
