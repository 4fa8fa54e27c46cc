"""The text of a table cell (tables/render.py) pinned exactly on hand-made cells: our number for each statistic,
the published number with its ± and mark, Δ = ours − paper and why it is absent, the per-seed CSV's lines, and the
two statistics of a row whose paper number is another statistic. Written for the mutants `make mutation` found
surviving tests/test_tables.py and tests/test_entry_data.py."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

import pytest

from sentrepro.planning.reported import ReportedValue
from sentrepro.tables.aggregate import summarize
from sentrepro.tables.build import Cell
from sentrepro.tables.render import (
    alternative_statistic,
    delta_text,
    fmt,
    no_delta_note,
    ours_text,
    paper_statistic_values,
    paper_text,
    to_seeds_csv,
)


def reported(value=80.0, std=None, mark=None, statistic=None) -> ReportedValue:
    return ReportedValue(value=value, std=std, mark=mark, mark_meaning=None, where="paper.txt:1", entry="e",
                         row="r", statistic=statistic)


def cell(values=None, selection=None, statistic="best", paper=None, **extra) -> Cell:
    values = {1: 81.0, 2: 83.5, 3: 82.0} if values is None else values
    summary = summarize(values, selection) if values else None
    return Cell(table="t", row="r", column="c", group=None, value=None, std=None, n=len(values),
                statistic=statistic, summary=summary, reported=paper, reported_only=False,
                files={seed: f"m{seed}.json" for seed in values}, per_seed=dict(values), **extra)


def test_numbers_have_two_decimals_by_default_and_none_is_blank():
    assert (fmt(1.23456), fmt(1.23456, 3), fmt(None)) == ("1.23", "1.235", "")


def test_our_best_is_the_selected_seed_else_the_maximum():
    assert ours_text(cell(selection={1: 9.0, 2: 1.0, 3: 1.0})) == "81.00"  # seed 1 selected, not the max
    assert ours_text(cell()) == "83.50"  # no selection: the best is the maximum
    assert ours_text(cell(), "mean") == "82.17 ±1.03"  # population std of 81, 83.5, 82
    assert ours_text(cell(), "mean", pm="+/-") == "82.17 +/-1.03"
    assert ours_text(cell(values={})) == "–"


def test_the_paper_number_carries_its_std_and_mark():
    assert paper_text(cell(paper=reported(80.0))) == "80.00"
    assert paper_text(cell(paper=reported(80.0, std=0.5, mark="†"))) == "80.00 ±0.50†"
    assert paper_text(cell(paper=reported(80.0, std=0.5)), pm="+/-") == "80.00 +/-0.50"
    assert paper_text(cell(paper=reported(None))) == "" and paper_text(cell()) == ""


def test_delta_is_ours_minus_paper_for_the_statistic_shown():
    paper = reported(80.0)
    assert delta_text(cell(paper=paper)) == "+3.50"  # best = max without selection
    assert delta_text(cell(selection={1: 9.0, 2: 1.0, 3: 1.0}, paper=paper)) == "+1.00"
    assert delta_text(cell(paper=paper), "mean") == "+2.17"
    assert delta_text(cell(paper=reported(85.0)), "min") == "-4.00"
    assert delta_text(cell(paper=paper, synthetic=["sts"])) == ""
    assert delta_text(cell(paper=paper, stand_in="tiny")) == ""
    assert delta_text(cell()) == ""


def test_no_delta_says_why():
    assert no_delta_note(cell(paper=reported(), synthetic=["sts"])) == "synthetic, no Δ"
    assert no_delta_note(cell(paper=reported(), stand_in="tiny")) == "stand-in, no Δ"
    assert no_delta_note(cell(paper=reported())) == "" and no_delta_note(cell(values={})) == ""


def test_the_second_table_shows_the_statistic_the_headline_is_not():
    assert alternative_statistic(SimpleNamespace(spec={"statistic": "best-of-n"})) == "mean"
    assert alternative_statistic(SimpleNamespace(spec={"statistic": "mean"})) == "best"


def test_a_row_whose_paper_number_is_a_mean_of_more_seeds_gets_both_statistics():
    paper = reported(statistic={"stat": "mean", "seeds": 4})
    c = cell(selection={1: 1.0, 2: 9.0, 3: 1.0}, paper=paper, extra_seeds={4: 86.0, 5: 99.0})
    values = paper_statistic_values(c)
    assert values == {"best of N, N = 3 (this table)": 83.5,
                      "mean of 4 seeds (the paper's statistic for this row)": pytest.approx((81 + 83.5 + 82 + 86) / 4)}
    unseeded = cell(values={None: 70.0, 1: 81.0, 2: 83.5}, statistic="mean", paper=reported(
        statistic={"stat": "mean", "seeds": 2}))
    assert paper_statistic_values(unseeded) == {  # the unseeded run sorts first
        "mean ± std, N = 3 (this table)": pytest.approx((70 + 81 + 83.5) / 3),
        "mean of 2 seeds (the paper's statistic for this row)": pytest.approx((70 + 81) / 2)}


def test_the_seeds_csv_lines():
    paper = reported(statistic={"stat": "mean", "seeds": 3})
    c = cell(values={None: 70.0, 1: 81.0}, selection={None: 1.0, 1: 2.0}, paper=paper, extra_seeds={2: 90.0})
    rows = list(csv.reader(io.StringIO(to_seeds_csv(SimpleNamespace(cells=[c])))))
    assert rows[1:] == [
        ["t", "r", "c", "", "70.0000", "0", "mNone.json", "1", ""],
        ["t", "r", "c", "1", "81.0000", "1", "m1.json", "1", ""],
        ["t", "r", "c", "2", "90.0000", "0", "", "0", ""],
        ["t", "r", "c", "", "81.0000", "", "", "", "best of N, N = 2 (this table)"],
        ["t", "r", "c", "", "80.3333", "", "", "", "mean of 3 seeds (the paper's statistic for this row)"]]


def test_a_mean_table_shows_the_mean_even_when_a_seed_was_selected():
    c = cell(selection={1: 1.0, 2: 9.0, 3: 1.0}, statistic="mean", paper=reported(statistic={"stat": "mean",
                                                                                            "seeds": 1}))
    assert paper_statistic_values(c)["mean ± std, N = 3 (this table)"] == pytest.approx((81 + 83.5 + 82) / 3)


def test_the_unseeded_run_is_the_first_of_the_papers_seeds():
    c = cell(values={1: 81.0, None: 70.0, 2: 83.5}, selection={1: 9.0, None: 1.0, 2: 1.0},
             paper=reported(statistic={"stat": "mean", "seeds": 1}))
    assert paper_statistic_values(c)["mean of 1 seeds (the paper's statistic for this row)"] == 70.0
