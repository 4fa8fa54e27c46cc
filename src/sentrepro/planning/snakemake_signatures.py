"""Each rule function's parameters, read once per workflow load instead of once per job.

Snakemake calls a rule's input functions, callable params and callable resources once or more per job,
and before each call reads which arguments the function takes (``inspect.signature``: wildcards, input,
output, threads, ...). On the paper config that is some 25,000 signature reads for 621 jobs, about a
tenth of a plan's CPU time. A function's signature cannot change after the Snakefile defined it, so
:func:`memoize_signatures` reads each rule function's signature once, after the Snakefile is loaded,
(and that of ``Resource.evaluate``, through which Snakemake evaluates every resource of every job),
and hands it to Snakemake through the attribute Snakemake itself consults first
(``snakemake.common.get_function_params``, which returns ``func._overwrite_params`` when present; the
same mechanism ``snakemake.ioutils`` uses). The parameters handed over are exactly the ones
``inspect.signature`` returns, so no job sees other arguments; tests/test_snakemake_signatures.py checks
that Snakemake reads them and that they are the functions' own.
"""

from __future__ import annotations

import inspect
import types
from typing import Iterable, Iterator

# snakemake.common.FUNC_OVERWRITE_PARAMS_ATTR (Snakemake 9); the test checks the two agree
ATTRIBUTE = "_overwrite_params"


def rule_functions(rules: Iterable) -> Iterator[types.FunctionType]:
    """The plain functions a workflow's rules call per job: input functions, callable params, and the
    evaluators of callable resources (Snakemake wraps each resource in a ``Resource``)."""
    for rule in rules:
        for item in (*rule.input, *rule.params):
            if isinstance(item, types.FunctionType):
                yield item
        for resource in rule.resources.values():
            evaluator = getattr(resource, "_evaluator", None)
            if isinstance(evaluator, types.FunctionType):
                yield evaluator


def memoize_signatures(rules: Iterable) -> int:
    """Give every rule function its own parameters (``inspect.signature(f).parameters``) once; returns
    how many functions were given them. A function that already carries them is left alone.

    Snakemake evaluates every resource of every job, constant or not, through the bound method
    ``Resource.evaluate`` (twice per resource: one signature read for ``groupid``, one for the arguments to
    pass), whose parameters are ``(*args, **kwargs)`` for every resource; a bound method reads attributes
    from its function, so that function is given the bound method's parameters once as well."""
    count = 0
    for function in rule_functions(rules):
        if not hasattr(function, ATTRIBUTE):
            setattr(function, ATTRIBUTE, inspect.signature(function).parameters)
            count += 1
    from snakemake.resources import Resource

    if not hasattr(Resource.evaluate, ATTRIBUTE):
        setattr(Resource.evaluate, ATTRIBUTE, inspect.signature(Resource("probe", 1).evaluate).parameters)
        count += 1
    return count
