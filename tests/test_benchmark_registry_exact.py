"""The benchmark registry: the unit names a user types (``sentrepro fixture <name>``, docs/evaluation-and-data.md)
and the clash check, whose message names the kind of name two units share."""

from __future__ import annotations

import pytest

from sentrepro.data.benchmarks import Benchmark, BenchmarkError, _check_clashes, benchmarks


def test_unit_names():
    assert sorted(benchmarks()) == ["clustering", "senteval", "sts", "transfer", "wos"]


@pytest.mark.parametrize("first, second, kind, name", [
    (Benchmark("a", "x"), Benchmark("a", "y"), "benchmark name", "a"),
    (Benchmark("a", "x", tasks={"g": {}}), Benchmark("b", "y", tasks={"g": {}}), "task group", "g"),
    (Benchmark("a", "x", counts={("D", "all"): 1}), Benchmark("b", "y", classes={"D": 2}), "counted data set", "D"),
    (Benchmark("a", "x", classes={"D": 2}), Benchmark("b", "y", parent_classes={"D": 2}), "counted data set", "D"),
    (Benchmark("a", "x", counts={("D", "all"): 1}), Benchmark("b", "y", parent_classes={"D": 2}), "counted data set", "D"),
])
def test_clash_names_its_kind(first, second, kind, name):
    with pytest.raises(BenchmarkError, match=f"^m2: {kind} '{name}' is already defined by m1$"):
        _check_clashes([("m1", first), ("m2", second)])


def test_distinct_units_do_not_clash():
    _check_clashes([("m1", Benchmark("a", "x", counts={("D", "all"): 1})),
                    ("m2", Benchmark("b", "y", classes={"E": 2}, parent_classes={"F": 2}))])


def test_the_registry_entries_cannot_be_changed_by_a_caller():
    """``benchmarks()`` hands every caller the same objects (discovered once per process): one caller's edit
    would change what every later job reads."""
    import dataclasses

    unit = benchmarks()["sts"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        unit.name = "other"
    layout = next(iter(unit.layouts.values()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.holds_sts = False


def test_an_sts_layout_without_an_implied_variant_requires_one(monkeypatch):
    """A layout that holds STS text and implies no variant (the default) makes ``check.text_variant`` required,
    with the message naming the key (not an "unknown variant ''")."""
    from sentrepro.data import check
    from sentrepro.data.benchmarks import Layout

    monkeypatch.setattr(check.benchmarks, "layouts", lambda: {"bare": Layout("a bare tree", None, holds_sts=True)})
    with pytest.raises(check.CheckConfigError, match=r"^data\.sources\.src\.check\.text_variant: required for "
                                                     r"layout 'bare' \(one of senteval, raw\)$"):
        check.text_variant("src", {"layout": "bare"})
    assert check.text_variant("src", {"layout": "bare", "text_variant": "raw"}) == "raw"


def test_the_text_variants_recorded_in_checked_json_say_how_the_text_was_processed():
    """``CHECKED.json`` and each metrics file's STS provenance record these words as the text's processing: a
    reader tells the papers' SentEval copy from the raw release by them, so their wording is pinned here."""
    from sentrepro.data.benchmarks import TEXT_VARIANTS

    assert TEXT_VARIANTS == {
        "senteval": "SentEval/SimCSE senteval.tar copy: Moses-tokenized; STS and STS-B lowercased, SICK keeps case",
        "raw": "original SemEval STS / SICK release text, untokenized"}
