"""The per-pair score files (evaluation/item_scores.py) pinned exactly: the file name beside a metrics file, the
record written (every key, the sha256 of the bytes on disk), the shape checks, and which payloads name a file.
Written for the mutants `make mutation` found surviving the verdict tests that use these files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from sentrepro.evaluation.item_scores import ItemScoresError, item_scores_file, pairs_path, read_pairs, write_pairs


def test_the_pairs_file_sits_beside_its_metrics_file():
    assert pairs_path("run/metrics/sts.json") == Path("run/metrics/sts.pairs.npz")


def test_the_record_written_names_the_file_its_bytes_its_format_and_each_tasks_length(tmp_path):
    path = tmp_path / "sts.pairs.npz"
    record = write_pairs(path, {"STS12": ([0.5, 0.25], [4.0, 1.0]), "SICKR": ([0.1], [2.5])})
    assert record == {"file": "sts.pairs.npz", "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                      "format": "npz: <task>/cosine, <task>/gold", "tasks": {"STS12": 2, "SICKR": 1}}
    back = read_pairs(tmp_path / "sts.json", {"item_scores": record})
    assert back["STS12"][0].tolist() == [0.5, 0.25] and back["SICKR"][1].tolist() == [2.5]


@pytest.mark.parametrize("cosine, gold", [([0.1, 0.2], [1.0, 2.0, 3.0]), ([[0.1, 0.2]], [[1.0, 2.0]])])
def test_cosines_and_gold_must_be_equal_one_dimensional_shapes(tmp_path, cosine, gold):
    with pytest.raises(ItemScoresError, match="must be equal 1-d shapes"):
        write_pairs(tmp_path / "x.pairs.npz", {"STS12": (cosine, gold)})


def test_a_record_without_a_file_is_no_record(tmp_path):
    with pytest.raises(ItemScoresError, match="no 'item_scores' record"):
        read_pairs(tmp_path / "sts.json", {"item_scores": {"sha256": "0" * 64, "tasks": {}}})


@pytest.mark.parametrize("payload", [{}, {"item_scores": None}, {"item_scores": "sts.pairs.npz"},
                                     {"item_scores": {"sha256": "0" * 64}}])
def test_a_payload_that_names_no_file_has_no_item_scores_file(payload):
    assert item_scores_file("run/sts.json", payload) is None


def test_a_payload_that_names_a_file_has_it_beside_the_metrics_file():
    assert item_scores_file("run/sts.json", {"item_scores": {"file": "sts.pairs.npz"}}) == Path("run/sts.pairs.npz")
