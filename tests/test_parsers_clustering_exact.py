"""Short-text clustering line parsing (the trailing StackOverflow tab, a tab inside the text) and the
layout summary of the real files: family, item counts, dense class counts, unit task group name."""

from __future__ import annotations

from pathlib import Path

from sentrepro.data.benchmarks import expected_classes, expected_counts
from sentrepro.data.benchmarks.clustering import BENCHMARK, CLUSTERING_SETS, parse_clustering_line, read_clustering_layout


def test_trailing_tab_is_dropped_and_last_character_kept():
    assert parse_clustering_line("3\tHow to sort ?\t", Path("f"), 1) == (3, "How to sort ?")


def test_tab_inside_text_survives_the_trailing_tab_rule():
    assert parse_clustering_line("3\tab\tcd\t", Path("f"), 1) == (3, "ab\tcd")


def test_real_layout_summary(shared_data):
    root = shared_data / "short-text-clustering"
    found = read_clustering_layout(root, None, True)
    counts, classes = expected_counts(), expected_classes()
    assert set(found) == set(CLUSTERING_SETS)
    for name, entry in found.items():
        assert entry["family"] == "clustering"
        assert entry["parts"] == {"all": counts[(name, "all")]}
        assert entry["classes"] == classes[name]
        assert entry["files"] == [CLUSTERING_SETS[name]]


def test_task_group_name():
    assert list(BENCHMARK.tasks) == ["clustering"]
