"""subset_rows at its edges: a cap equal to the rows keeps them all; a cap of one row is allowed; classes of two
rows each, with a cap of one row per class, are drawn stratified (every class kept); a class of one row falls back
to a plain draw, without repeats; a log that cut nothing says so."""

from __future__ import annotations

import numpy as np

from sentrepro.evaluation.subsets import SubsetLog, subset_rows


def test_a_cap_equal_to_the_rows_keeps_every_row():
    assert subset_rows(np.array([0, 1, 0, 1]), 4, seed=0).tolist() == [0, 1, 2, 3]


def test_a_cap_of_one_row_keeps_one_row():
    rows = subset_rows(np.array([0, 0, 1, 1, 2]), 1, seed=0)
    assert len(rows) == 1 and 0 <= rows[0] < 5


def test_two_rows_per_class_and_one_row_per_class_asked_is_a_stratified_draw():
    labels = np.array([0, 0, 1, 1, 2, 2])
    for seed in range(20):
        rows = subset_rows(labels, 3, seed)
        assert sorted(labels[rows].tolist()) == [0, 1, 2], seed


def test_a_class_of_one_row_falls_back_to_a_plain_draw_without_repeats():
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 1, 1, 2])
    for seed in range(20):
        rows = subset_rows(labels, 8, seed)
        assert len(rows) == 8 and len(set(rows.tolist())) == 8 and rows.tolist() == sorted(rows.tolist()), seed


def test_a_log_that_cut_nothing_is_not_applied():
    log = SubsetLog(None, 0)
    log.take("MR", "test", np.array([0, 1, 0]))
    assert not log.applied and log.record()["sizes"] == {"MR": {"test": [3, 3]}}
    cut = SubsetLog(2, 0)
    cut.take("MR", "test", np.array([0, 1, 0]))
    assert cut.applied
