"""``sentrepro registry``: what the workflow can run, and which paper tables each part feeds.

The method kinds, suites and figures are the discovered units (sentrepro.code.units: ``<module>.units.yaml``
sidecars in the package, and plug-ins of the ``sentrepro.code.units`` entry-point group), each shown with its
origin (``built-in`` or the plug-in's ``<distribution>==<version>``); the tables each feeds
are derived from the table specs (``planning/specs/*.yaml``: the suite and config method of every cell),
never listed by hand. A method kind feeds a table when a config method of that kind fills one of its
cells (the config maps method names to kinds).
"""

from __future__ import annotations

from sentrepro.planning import registry
from sentrepro.planning.table_cells import cell_keys
from sentrepro.planning.table_specs import available_specs, load_spec


def tables_reading() -> dict[str, set[tuple[str, str]]]:
    """table -> the (config method, suite) pairs its cells read."""
    return {name: {(method, suite) for _, method, suite in cell_keys(load_spec(name))} for name in available_specs()}


def tables_by_suite(reads: dict[str, set[tuple[str, str]]]) -> dict[str, list[str]]:
    return {suite: sorted(t for t, pairs in reads.items() if any(s == suite for _, s in pairs))
            for suite in registry.suites()}


def tables_by_kind(reads: dict[str, set[tuple[str, str]]], methods: dict) -> dict[str, list[str]]:
    """kind -> tables with a cell read from a config method of that kind (``methods``: config.methods)."""
    kinds = {name: spec["kind"] for name, spec in methods.items()}
    return {kind: sorted(t for t, pairs in reads.items() if any(kinds.get(m) == kind for m, _ in pairs))
            for kind in registry.methods()}


def format_overview(methods: dict) -> str:
    reads = tables_reading()
    by_kind, by_suite = tables_by_kind(reads, methods), tables_by_suite(reads)
    wide = max([16, *map(len, registry.methods())]) + 2  # column width: the longest kind (plug-ins' too)
    lines = ["Method kinds (units: methods)",
             f"  {'kind':<{wide}}{'trains':<8}{'corpus':<11}{'authors':<9}{'params':>7}  origin; module; tables"]
    for kind, entry in registry.methods().items():
        lines.append(f"  {kind:<{wide}}{'yes' if entry.trains else 'no':<8}{entry.training_corpus if entry.trains else '-':<11}"
                     f"{entry.authors_precision or '-':<9}{len(entry.params):>7}  {entry.origin}; "
                     f"{registry.implementation_module(entry.implementation)}; {', '.join(by_kind[kind]) or '-'}")
    wide = max([13, *map(len, registry.suites())]) + 2
    lines += ["", "Evaluation suites (units: suites; rule evaluate_<suite>)",
              f"  {'suite':<{wide}}{'data':<8}{'model':<12}{'group':<10}  origin; module; tables"]
    for name, entry in registry.suites().items():
        lines.append(f"  {name:<{wide}}{entry.data:<8}{entry.model:<12}{entry.group or '-':<10}  {entry.origin}; "
                     f"{registry.implementation_module(entry.implementation)}; {', '.join(by_suite[name]) or '-'}")
    lines += ["", "Figures (units: figures)"]
    for name, entry in registry.figures().items():
        lines.append(f"  {name:<15}suite {entry.suite:<15}{entry.paper:<11}{entry.origin}; "
                     f"{registry.implementation_module(entry.implementation)}")
    return "\n".join(lines) + "\n"
