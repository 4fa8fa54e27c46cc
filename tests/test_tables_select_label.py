"""The metric best-of-N ranks seeds by, as a caption names it: the label of the column that shows it, a column
without its own key taking the table's (a transposed or one-metric table), and the metric's key itself when no
column shows it. An empty cell renders as nothing."""

from __future__ import annotations

from sentrepro.tables.render import cell_text, select_label


def test_the_ranking_metric_is_named_by_the_label_of_the_column_that_shows_it():
    spec = {"select_by": "avg", "columns": [{"key": "MR", "label": "MR"}, {"key": "avg", "label": "Avg."}]}
    assert select_label(spec) == "Avg."


def test_a_column_without_a_key_takes_the_tables_key():
    spec = {"key": "avg", "select_by": "avg", "columns": [{"label": "BERT-base", "backbone": "bert-base"}]}
    assert select_label(spec) == "BERT-base"
    # the table's key is only a default: a column's own key wins over it
    spec = {"key": "avg", "select_by": "avg", "columns": [{"label": "MR", "key": "MR"}]}
    assert select_label(spec) == "avg"


def test_a_ranking_metric_no_column_shows_is_named_by_its_key():
    spec = {"select_by": "stsb", "columns": [{"key": "MR", "label": "MR"}]}
    assert select_label(spec) == "stsb"


def test_a_missing_cell_renders_as_nothing():
    assert cell_text(None) == ""
    assert cell_text(None, "mean") == ""
