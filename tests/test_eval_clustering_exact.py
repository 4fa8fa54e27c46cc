"""The clustering record (evaluation/clustering.py) pinned exactly on inputs small enough to work by hand: the
bounds on k, the one-row edge of the accuracy, every key of the record and its 2-dp rounding of each value and of
the mean and std over seeds. Written for the mutants `make mutation` found surviving tests/test_eval_clustering.py,
which checks the protocol on a real AG News sample."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sentrepro.evaluation import clustering
from sentrepro.evaluation.clustering import cluster_once, evaluate_clustering, hungarian_accuracy

THREE_POINTS = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]], dtype=np.float32)
LABELS = np.array([0, 0, 1])


def test_a_single_row_is_clustered_right():
    assert hungarian_accuracy(np.array([3]), np.array([7])) == 1.0


def test_one_cluster_puts_every_row_with_the_largest_class():
    run = cluster_once(THREE_POINTS, LABELS, k=1, seed=0, n_init=1)
    assert run == {"seed": 0, "acc": pytest.approx(100 * 2 / 3), "nmi": 0.0}


def test_as_many_clusters_as_rows_gives_each_row_its_own():
    run = cluster_once(THREE_POINTS, LABELS, k=3, seed=0, n_init=1)
    # each class maps to one singleton: 2 of 3 rows right; NMI = 2 I / (H(Y) + H(C)) with I = H(Y), H(C) = ln 3
    entropy = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert run["acc"] == pytest.approx(100 * 2 / 3)
    assert run["nmi"] == pytest.approx(100 * 2 * entropy / (entropy + math.log(3)))


@pytest.mark.parametrize("k", [0, 4])
def test_k_outside_one_to_the_rows_is_refused(k):
    with pytest.raises(ValueError, match="k must be between 1 and the number of rows"):
        cluster_once(THREE_POINTS, LABELS, k=k, seed=0, n_init=1)


def test_the_record_has_every_key_and_rounds_each_value_to_two_places():
    record = evaluate_clustering(THREE_POINTS, LABELS, k=3, seeds=(4, 5), n_init=1)
    entropy = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    nmi = round(100 * 2 * entropy / (entropy + math.log(3)), 2)
    assert nmi == 73.37  # the hand value, to 2 dp
    assert record == {"protocol": "kmeans", "k": 3, "n_init": 1, "n_samples": 3, "n_classes": 2, "seeds": [4, 5],
                      "acc": [66.67, 66.67], "nmi": [nmi, nmi], "acc_mean": 66.67, "acc_std": 0.0,
                      "nmi_mean": nmi, "nmi_std": 0.0}


def test_the_mean_and_population_std_over_seeds_are_rounded_to_two_places(monkeypatch):
    values = {1: (100 / 3, 100.0 / 7), 2: (200 / 3, 300.0 / 7)}  # seed -> (acc, nmi)
    monkeypatch.setattr(clustering, "cluster_once", lambda X, y, k, seed, n_init: {
        "seed": seed, "acc": values[seed][0], "nmi": values[seed][1]})
    record = evaluate_clustering(THREE_POINTS, LABELS, k=2, seeds=(1, 2), n_init=1)
    assert record["acc"] == [33.33, 66.67] and record["nmi"] == [14.29, 42.86]
    assert record["acc_mean"] == 50.0 and record["acc_std"] == 16.67  # |200/3 - 100/3| / 2
    assert record["nmi_mean"] == 28.57 and record["nmi_std"] == 14.29  # (300/7 - 100/7) / 2
