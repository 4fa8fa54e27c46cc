"""Benchmark units: one module per benchmark, discovered, from which every benchmark list is derived.

A benchmark is one module of this package (in the spirit of MTEB's task definitions) that defines a
module-level ``BENCHMARK = Benchmark(...)``: its task groups (the task names a suite can score and where
each sits), its documented counts, its layouts (how a prepared source holding it is read and checked: the
``check.layout`` of a config source) and its offline fixture generator, next to its parser. Everything that
must agree with the units is derived from the modules found here, never listed:

* ``check.LAYOUTS`` (the ``check_dataset`` step) is :func:`layouts`;
* ``counts.EXPECTED`` and the class counts every parser checks are :func:`expected_counts` and friends;
* ``tasks.task_names`` (the config schema's task enums, the suites' task lists) is :func:`task_groups`;
* the fixture generators (``sentrepro fixture``, its CLI choices, the ``fixture`` rule's wildcard) are
  :func:`generators`;
* a data job's code fingerprint names the unit it reads (:func:`layout_module`, :func:`fixture_module`), so
  editing one benchmark reruns only the jobs reading it, and adding one reruns nothing.

Discovery imports each module of this package (``pkgutil``), so a new benchmark is a new file here plus
its source in the config (CONTRIBUTING.md, "Add a benchmark"). Light on purpose: units and this module
import only the standard library and the data layer, never torch, because the plan reads them.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# The text variants of STS data a layout may hold (a source's ``check.text_variant``).
TEXT_VARIANTS: dict[str, str] = {
    "senteval": "SentEval/SimCSE senteval.tar copy: Moses-tokenized; STS and STS-B lowercased, SICK keeps case",
    "raw": "original SemEval STS / SICK release text, untokenized",
}

# A layout reader gets (tree root, STS text variant or None, check_counts) and returns {data set: summary};
# a summary is {"family", "parts": {part: n}, ["classes": k], "files": [paths relative to the root]}.
Reader = Callable[[Path, "str | None", bool], dict[str, dict]]
# A fixture generator writes its files into a directory and returns their paths.
Generator = Callable[[Path], list[Path]]


class BenchmarkError(ValueError):
    """A benchmark unit is malformed or clashes with another one; the message names the module."""


@dataclass(frozen=True)
class Layout:
    """Which data sets a prepared tree holds and how to read them (a source's ``check.layout``)."""

    description: str
    read: Reader
    default_variant: str | None = None  # STS text variant the layout implies; None: must be given (or no STS)
    holds_sts: bool = False


@dataclass(frozen=True)
class Benchmark:
    """Everything the project knows about one benchmark, declared by its module as ``BENCHMARK``.

    ``tasks``: task group -> {task name: how the suite finds it} (the group names the ``{enum_of: ...}`` of
    the suite units' settings schemas use); ``counts``: (data set, part) -> documented number of items, where a part is a split
    (``train``/``dev``/``test``, ``all``) or a documented sub-part; ``classes`` and ``parent_classes``: data
    set -> documented number of labels; ``layouts``: layout name -> :class:`Layout`; ``fixture``: writes a
    synthetic stand-in in the upstream format (``sentrepro fixture <name>``), or None when there is none.
    """

    name: str
    description: str
    tasks: dict[str, dict] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    classes: dict[str, int] = field(default_factory=dict)
    parent_classes: dict[str, int] = field(default_factory=dict)
    layouts: dict[str, Layout] = field(default_factory=dict)
    fixture: Generator | None = None


def relative_files(paths, root: Path) -> list[str]:
    """The files a layout reader read, relative to the tree root, sorted (what ``CHECKED.json`` lists)."""
    return sorted(str(Path(p).relative_to(root)) for p in paths)


# --- discovery -------------------------------------------------------------------------------------


def unit_module_names() -> list[str]:
    """Dotted names of the benchmark modules of this package, sorted (``pkgutil``: files, not a list)."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."))


@functools.lru_cache(maxsize=1)
def _discovered() -> tuple[tuple[str, Benchmark], ...]:
    """(module, Benchmark) of every unit, checked for clashes; imported once per process."""
    found: list[tuple[str, Benchmark]] = []
    for module_name in unit_module_names():
        module = importlib.import_module(module_name)
        unit = getattr(module, "BENCHMARK", None)
        if not isinstance(unit, Benchmark):
            raise BenchmarkError(f"{module_name} ({module.__file__}): a benchmark module must define "
                                 "BENCHMARK = Benchmark(...) (see sentrepro.data.benchmarks)")
        found.append((module_name, unit))
    _check_clashes(found)
    return tuple(found)


def _check_clashes(found: list[tuple[str, Benchmark]]) -> None:
    """No two units share a benchmark name, task group, layout name or counted data set."""
    kinds = {"benchmark name": lambda u: [u.name], "task group": lambda u: list(u.tasks),
             "layout": lambda u: list(u.layouts),
             "counted data set": lambda u: sorted({d for d, _ in u.counts} | set(u.classes) | set(u.parent_classes))}
    for kind, names_of in kinds.items():
        owner: dict[str, str] = {}
        for module_name, unit in found:
            for name in names_of(unit):
                if name in owner and owner[name] != module_name:
                    raise BenchmarkError(f"{module_name}: {kind} '{name}' is already defined by {owner[name]}")
                owner[name] = module_name


def benchmarks() -> dict[str, Benchmark]:
    """Benchmark name -> its unit, in module order."""
    return {unit.name: unit for _, unit in _discovered()}


def benchmark_module(name: str) -> str:
    """The dotted module defining benchmark ``name`` (what a data job's code fingerprint adds)."""
    for module_name, unit in _discovered():
        if unit.name == name:
            return module_name
    raise BenchmarkError(f"no benchmark '{name}' (known: {', '.join(benchmarks())})")


def layouts() -> dict[str, Layout]:
    """Layout name -> :class:`Layout`, over every unit: ``check.LAYOUTS``."""
    return {name: layout for _, unit in _discovered() for name, layout in unit.layouts.items()}


def layout_module(layout: str) -> str:
    """The dotted module of the unit defining ``layout``."""
    for module_name, unit in _discovered():
        if layout in unit.layouts:
            return module_name
    raise BenchmarkError(f"no benchmark defines layout '{layout}' (known: {', '.join(layouts())})")


def generators() -> dict[str, Generator]:
    """Fixture name (its benchmark's name) -> generator, for the units that have one."""
    return {unit.name: unit.fixture for _, unit in _discovered() if unit.fixture is not None}


def fixture_module(name: str) -> str:
    """The dotted module of the unit whose fixture is ``name``."""
    if name not in generators():
        raise BenchmarkError(f"unknown fixture generator '{name}' (known: {', '.join(generators())})")
    return benchmark_module(name)


def task_groups() -> dict[str, dict]:
    """Task group -> {task: entry}, over every unit (each group is defined by exactly one unit)."""
    return {group: entries for _, unit in _discovered() for group, entries in unit.tasks.items()}


def expected_counts() -> dict[tuple[str, str], int]:
    """(data set, part) -> documented count, over every unit: ``counts.EXPECTED``."""
    return {key: n for _, unit in _discovered() for key, n in unit.counts.items()}


def expected_classes() -> dict[str, int]:
    return {name: n for _, unit in _discovered() for name, n in unit.classes.items()}


def expected_parent_classes() -> dict[str, int]:
    return {name: n for _, unit in _discovered() for name, n in unit.parent_classes.items()}
