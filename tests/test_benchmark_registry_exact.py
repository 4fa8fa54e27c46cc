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
