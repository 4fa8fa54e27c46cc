"""claims.yaml's validator (verdicts/claims.py validate_claims, sides, normalise) pinned on one hand-made claim
over a real table spec (conpvp_table3): each check refuses exactly the malformed field it names, at the claim's
location, and the well-formed variants (at_least, exact, margin 0, line 1, dict sides) pass."""

import copy
from pathlib import Path

import pytest

from sentrepro.verdicts.claims import CLAIMS_PATH, ClaimsError, Side, normalise, sides, validate_claims

P = Path("c.yaml")
BOOT = {"item_resamples": 1000, "item_seed": 0, "seed_resamples": 10, "seed_seed": 0, "level": 0.95}
CLAIM = {"id": "x", "paper": "ConPVP", "file": "f.txt", "line": 1, "quote": "gains 2.60 and 1.50 points",
         "text": "t", "table": "conpvp_table3", "column": "Avg.", "a": "BERT-base ConPVP", "b": "BERT-base SimCSE",
         "direction": "greater"}


def check(**changes):
    claim = {**copy.deepcopy(CLAIM), **changes}
    claim = {k: v for k, v in claim.items() if v is not DROP}
    return validate_claims({"bootstrap": dict(BOOT), "claims": [claim]}, P)


DROP = object()


def test_a_good_claim_passes_with_line_1_at_least_exact_and_numbers():
    data = check(line=1, at_least=0.5, exact="both are population numbers", numbers=[2.6],
                 paper_values=[2.6, 1.5])
    assert data["claims"][0]["id"] == "x"


def test_an_unknown_field_alone_is_refused():
    with pytest.raises(ClaimsError, match=r"^c\.yaml: claims\[0\] \('x'\): unknown fields \['bogus'\], missing \[\]$"):
        check(bogus=1)


def test_a_missing_field_alone_is_refused():
    with pytest.raises(ClaimsError, match=r"unknown fields \[\], missing \['text'\]$"):
        check(text=DROP)


def test_line_0_and_a_non_integer_line_are_refused():
    for bad in (0, "3"):
        with pytest.raises(ClaimsError, match="line must be a positive integer"):
            check(line=bad)


def test_numbers_and_paper_values_must_be_in_the_quote():
    with pytest.raises(ClaimsError, match="number 3.1 is not in its quote"):
        check(numbers=[3.1])
    with pytest.raises(ClaimsError, match="number 3.1 is not in its quote"):
        check(paper_values=[2.6, 3.1])


def test_no_gain_accepts_margin_0_and_other_directions_refuse_margin_why():
    check(direction="no_gain", margin=0, margin_why="w")
    with pytest.raises(ClaimsError, match="'margin' is for no_gain claims"):
        check(margin_why="w")


def test_at_least_is_refused_on_no_gain_non_numbers_and_non_positive_sizes():
    with pytest.raises(ClaimsError, match="'at_least' is a positive size"):
        check(direction="no_gain", margin=0, margin_why="w", at_least=1.0)
    for bad in ("1", 0, 0.0):
        with pytest.raises(ClaimsError, match="'at_least' is a positive size"):
            check(at_least=bad)
    check(at_least=0.5)


def test_exact_must_be_a_sentence():
    for bad in ("   ", 3):
        with pytest.raises(ClaimsError, match="'exact' says why"):
            check(exact=bad)


def test_paper_values_must_be_a_pair():
    with pytest.raises(ClaimsError, match=r"paper_values must be \[a, b\]"):
        check(paper_values=[2.6])


def test_not_checked_entries_are_validated_with_their_location():
    data = {"bootstrap": dict(BOOT), "claims": [copy.deepcopy(CLAIM)], "not_checked": [{"id": "y"}]}
    with pytest.raises(ClaimsError, match=r"^c\.yaml: not_checked\[0\]: needs exactly"):
        validate_claims(data, P)


def test_the_top_level_refuses_unknown_keys():
    with pytest.raises(ClaimsError, match="top level must be a mapping"):
        validate_claims({"bootstrap": dict(BOOT), "claims": [], "other": 1}, P)


def test_sides_read_strings_and_partial_dicts_and_refuse_other_values():
    a, b = sides({**CLAIM, "b": {"row": "BERT-base SimCSE", "column": "STS12"}})
    assert a == Side("conpvp_table3", "BERT-base ConPVP", "Avg.")
    assert b == Side("conpvp_table3", "BERT-base SimCSE", "STS12")
    assert b.describe() == "conpvp_table3 | BERT-base SimCSE | STS12"
    with pytest.raises(ClaimsError, match=rf"^{CLAIMS_PATH}: claim 'x'\.b: a row label"):
        sides({**CLAIM, "b": ["row"]})
    with pytest.raises(Exception):
        a.row = "other"


def test_normalise_collapses_whitespace_to_single_spaces():
    assert normalise(" a\t b\n\nc ") == "a b c"


def test_undecidable_constants_names_each_case_by_its_sides_kinds():
    from sentrepro.verdicts.claims import _undecidable_constants
    assert _undecidable_constants({}, [("published", "sts"), ("published", "sts")]) == [
        "both sides are published numbers: nothing of ours to test"]
    assert _undecidable_constants({}, [("deterministic", "transfer"), ("deterministic", "sts")]) == [
        "two deterministic sides without per-item scores (suite sts, transfer) and not 'exact': no interval can decide"]
    assert _undecidable_constants({"exact": "why"}, [("deterministic", "transfer"), ("deterministic", "sts")]) == []
    assert _undecidable_constants({}, [("published", "sts"), ("deterministic", "transfer")]) == [
        "a deterministic transfer number against a published one: no per-item scores, no interval"]
    assert _undecidable_constants({}, [("published", "transfer"), ("deterministic", "sts")]) == []


def test_producible_keys_read_a_suites_sets_list_plus_avg():
    from sentrepro.verdicts.claims import _producible_keys
    assert _producible_keys({"evaluation": {"s": {"sets": ["a", "b"]}}}, "s") == {"a", "b", "avg"}
    assert _producible_keys({"evaluation": {"s": {"tasks": ["t"]}}}, "s") == {"t", "avg"}
    assert _producible_keys({"evaluation": {}}, "s") is None
