"""Which metrics files a table reads, for the workflow's ``table`` rule (no torch: imported at DAG time).

A cell (paper backbone B, method M, suite S) is filled by the runs of M on the config backbone named
B, or, when the matrix has no such run, on the backbones standing in for B (``stands_in_for``). Only
(run, suite) pairs the evaluation plan produces are requested (``suite_runs``: the suite is enabled
and its ``runs`` filter selects the run), and at most the spec's ``max_seeds`` lowest seeds. The
builder (:mod:`sentrepro.tables.build`) resolves backbones the same way from the files it is given.
"""

from __future__ import annotations

from typing import Callable, Iterable

from sentrepro.runs import Run
from sentrepro.planning.table_specs import cell_selector

Seed = int | None


def seed_order(seed: Seed) -> int:
    """Sort key: the frozen evaluation (None) first, then seeds ascending."""
    return -1 if seed is None else seed


def lowest_seeds(seeds, max_seeds: int | None) -> list[Seed]:
    """The ``max_seeds`` lowest seeds (all when None), ascending."""
    ordered = sorted(seeds, key=seed_order)
    return ordered if max_seeds is None else ordered[:max_seeds]


def stands_in_for(backbone_spec: dict) -> list[str]:
    value = backbone_spec.get("stands_in_for")
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def cell_keys(spec: dict) -> set[tuple[str, str, str]]:
    """Every (paper backbone, method, suite) the spec's non-reported-only cells read."""
    keys = set()
    for row in spec["rows"]:
        if row.get("reported_only"):
            continue
        for column in spec["columns"]:
            selector = cell_selector(spec, row, column)
            keys.add((selector["backbone"], selector["method"], selector["suite"]))
    return keys


def table_inputs(spec: dict, runs: Iterable[Run], backbones: dict,
                 suite_runs: Callable[[str], Iterable[Run]]) -> list[tuple[Run, str]]:
    """(run, suite) pairs whose metrics files fill ``spec``, sorted.

    ``suite_runs(suite)`` returns the runs that get ``suite`` (empty for a suite that is not enabled).
    """
    evaluated: dict[str, set[Run]] = {}
    wanted: set[tuple[Run, str]] = set()
    all_runs = list(runs)
    for paper_backbone, method, suite in sorted(cell_keys(spec)):
        if suite not in evaluated:
            evaluated[suite] = set(suite_runs(suite))
        candidates = [paper_backbone] + sorted(b for b, s in backbones.items()
                                               if b != paper_backbone and paper_backbone in stands_in_for(s))
        for backbone in candidates:
            matching = [r for r in all_runs if r.backbone == backbone and r.method == method
                        and r in evaluated[suite]]
            if matching:
                seeds = lowest_seeds([r.seed for r in matching], spec.get("max_seeds"))
                wanted.update((r, suite) for r in matching if r.seed in seeds)
                break
    return sorted(wanted, key=lambda pair: (pair[0].backbone, pair[0].method,
                                            -1 if pair[0].seed is None else pair[0].seed, pair[1]))


def unfilled_cells(spec: dict, runs: Iterable[Run], backbones: dict,
                   suite_runs: Callable[[str], Iterable[Run]]) -> list[tuple[str, str, str]]:
    """(paper backbone, method, suite) of the spec that no planned (run, suite) fills: those cells
    will show only the published number. Lets a user see before running what a config leaves out."""
    planned = table_inputs(spec, runs, backbones, suite_runs)
    filled = set()
    for run, suite in planned:
        names = {run.backbone} | set(stands_in_for(backbones.get(run.backbone, {})))
        for name in names:
            filled.add((name, run.method, suite))
    return sorted(key for key in cell_keys(spec) if key not in filled)
