"""Documented item counts of every benchmark, in one table derived from the benchmark units, and the check
every parser runs.

A parser that reads a file with the wrong rules (keeps unscored STS pairs, counts a header row,
splits on the wrong newline) or a truncated download shows up first as a wrong count, so every
reader compares what it parsed against these numbers and a mismatch is an error.

Keys are ``(dataset, part)``. ``part`` is a split (``train``/``dev``/``test``, or ``all`` for
sets that have no split) or a documented sub-part: an STS subset, or one class file of a binary
transfer task. Each benchmark declares its own counts next to its parser (``COUNTS``, ``CLASSES`` and
``PARENT_CLASSES`` of its module in sentrepro.data.benchmarks, with their sources); ``EXPECTED``,
``EXPECTED_CLASSES`` and ``EXPECTED_PARENT_CLASSES`` are the union over the discovered units, built on
first use (the units import this module, so the table cannot be built when it is imported).
"""

from __future__ import annotations

import os

from sentrepro.data import benchmarks
from sentrepro.data.records import CountMismatch

_DERIVED = {"EXPECTED": benchmarks.expected_counts, "EXPECTED_CLASSES": benchmarks.expected_classes,
            "EXPECTED_PARENT_CLASSES": benchmarks.expected_parent_classes}


def __getattr__(name: str):
    """``EXPECTED``, ``EXPECTED_CLASSES``, ``EXPECTED_PARENT_CLASSES``: derived from the units when asked for."""
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CLASS_SPLIT = "classes"
PARENT_CLASS_SPLIT = "parent classes"


def expected_count(dataset: str, split: str) -> int:
    """The documented count for ``(dataset, split)``; KeyError naming the known parts otherwise."""
    expected = benchmarks.expected_counts()
    try:
        return expected[(dataset, split)]
    except KeyError:
        known = sorted(part for name, part in expected if name == dataset)
        hint = f"documented parts of {dataset}: {known}" if known else f"no documented counts for {dataset!r}"
        raise KeyError(f"no documented count for ({dataset!r}, {split!r}); {hint}") from None


def check_count(dataset: str, split: str, n: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless ``n`` equals the documented count of ``(dataset, split)``."""
    expected = expected_count(dataset, split)
    if n != expected:
        raise CountMismatch(dataset, split, expected, n, where)


def check_classes(dataset: str, n_classes: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless ``n_classes`` distinct labels is the documented number."""
    classes = benchmarks.expected_classes()
    if dataset not in classes:
        raise KeyError(f"no documented class count for {dataset!r}; known: {sorted(classes)}")
    if n_classes != classes[dataset]:
        raise CountMismatch(dataset, CLASS_SPLIT, classes[dataset], n_classes, where)


def check_parent_classes(dataset: str, n_parents: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless a WOS version has its documented number of parent categories."""
    parents = benchmarks.expected_parent_classes()
    if dataset not in parents:
        raise KeyError(f"no documented parent-class count for {dataset!r}; known: {sorted(parents)}")
    if n_parents != parents[dataset]:
        raise CountMismatch(dataset, PARENT_CLASS_SPLIT, parents[dataset], n_parents, where)
