"""A table cell's seed summary (tables/aggregate.py) without a selection metric names no best seed: None, not an
empty seed label that a reader would take for a seed. Written for the mutant `make mutation` found surviving
tests/test_tables.py."""

from __future__ import annotations

from sentrepro.tables.aggregate import summarize


def test_without_a_selection_there_is_no_best_seed_and_no_best_value():
    summary = summarize({1: 2.0, 2: 4.0})
    assert summary.best_seed is None and summary.best is None
    assert (summary.n, summary.mean, summary.min, summary.max) == (2, 3.0, 2.0, 4.0)
