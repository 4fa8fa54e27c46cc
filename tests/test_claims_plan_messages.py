"""What plan_problems says about a claim its plan cannot produce or decide, word for word, on claims built here
against the real table specs and the paper config: a published side without a number, two published sides, a
published side before one the plan does not fill, an unfilled cell, a metric key the suite does not write, two
problems of one claim, and the seeds counted for a trained side (its own backbone's runs, not another's).
tests/test_claims.py checks the real claims.yaml; these pin each message and each branch (their mutants survived
it)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import sentrepro.tables.build as tables_build
from sentrepro.planning.config import load_config
from sentrepro.planning.reported import ReportedValue
from sentrepro.planning.table_specs import cell_selector, load_spec
from sentrepro.verdicts.claims import load_claims, plan_problems, sides

REPO = Path(__file__).resolve().parents[1]
T5 = "conpvp_table5"


@pytest.fixture(scope="module")
def config() -> dict:
    return load_config(REPO / "config.yaml")


def claim(ident: str, a, b, column: str = "Avg.", table: str = T5, **extra) -> dict:
    return {"id": ident, "table": table, "column": column, "a": a, "b": b, "direction": "greater", **extra}


def problems_of(config: dict, *claims: dict) -> dict[str, str]:
    return plan_problems({"claims": list(claims)}, config)


def test_two_published_sides_are_nothing_of_ours_to_test(config):
    assert problems_of(config, claim("c", "GloVe", "Skip-thought")) == {
        "c": "both sides are published numbers: nothing of ours to test"}


def test_a_published_side_with_a_number_against_a_trained_one_is_decidable(config):
    assert problems_of(config, claim("c", "RoBERTa-base ConPVP", "GloVe")) == {}


def test_the_side_after_a_published_one_is_checked_too(config):
    """A published side first, then a trained side the plan does not fill: the second side's problem is named."""
    off = copy.deepcopy(config)
    for block in off["matrix"]:
        if "conpvp" in block["methods"]:
            block["backbones"] = [b for b in block["backbones"] if b != "roberta-base"]
    assert problems_of(off, claim("c", "GloVe", "RoBERTa-base ConPVP")) == {
        "c": f"{T5} | RoBERTa-base ConPVP | Avg.: no planned run of conpvp on roberta-base gets suite transfer"}


@pytest.mark.parametrize("paper", [None, ReportedValue(value=None, std=None, mark=None, mark_meaning=None, where="x",
                                                       entry="e", row="r")], ids=["no entry", "no value"])
def test_a_published_side_the_paper_prints_no_number_for_is_named(config, monkeypatch, paper):
    real = tables_build.paper_value

    def without_glove(reported, spec, row, column, key):
        return paper if row["label"] == "GloVe" else real(reported, spec, row, column, key)

    monkeypatch.setattr(tables_build, "paper_value", without_glove)
    assert problems_of(config, claim("c", "GloVe", "RoBERTa-base ConPVP")) == {
        "c": f"{T5} | GloVe | Avg.: reported only and the paper prints no number"}


def test_a_metric_key_the_suite_does_not_write_is_named_with_the_keys_it_writes(config):
    fewer = copy.deepcopy(config)
    fewer["evaluation"]["transfer"]["tasks"] = ["SST2", "MR"]
    assert problems_of(fewer, claim("c", "RoBERTa-base ConPVP", "RoBERTa-base SimCSE", column="TREC")) == {
        "c": f"{T5} | RoBERTa-base ConPVP | TREC: suite transfer writes no 'TREC' (it writes MR, SST2, avg); "
             f"{T5} | RoBERTa-base SimCSE | TREC: suite transfer writes no 'TREC' (it writes MR, SST2, avg)"}


def test_the_seeds_of_a_trained_side_are_its_own_backbones(config):
    """ConPVP keeps 4 seeds on three backbones and gets 1 on RoBERTa-large: exactly the claims with a ConPVP side on
    RoBERTa-large cannot decide (another backbone's seeds do not count for it)."""
    one = copy.deepcopy(config)
    for block in list(one["matrix"]):
        if block["methods"] == ["conpvp"]:
            rest = [b for b in block["backbones"] if b != "roberta-large"]
            one["matrix"].append({**block, "backbones": ["roberta-large"], "seeds": block["seeds"][:1]})
            block["backbones"] = rest
    claims = load_claims()
    expected = set()
    for entry in claims["claims"]:
        for side in sides(entry):
            spec = load_spec(side.table)
            row = next(r for r in spec["rows"] if r["label"] == side.row)
            column = next(c for c in spec["columns"] if c["label"] == side.column)
            if row.get("reported_only"):
                continue
            selector = cell_selector(spec, row, column)
            if (selector["backbone"], selector["method"]) == ("roberta-large", "conpvp"):
                expected.add(entry["id"])
    assert expected  # ConPVP's Table 3 claims on RoBERTa-large, at least
    problems = plan_problems(claims, one)
    assert set(problems) == expected
    assert all("trained with 1 planned seed(s), the verdict needs at least 3" in text for text in problems.values())
