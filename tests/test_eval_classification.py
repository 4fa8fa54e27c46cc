"""WOS classification: stratified split, probe metrics, and agreement of the metrics with sklearn."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score

from sentrepro.evaluation.classification import classification_metrics, evaluate_wos, wos_split

CHILDREN_PER_PARENT = (4, 4, 3)  # 11 level-2 classes under 3 parents, the shape of WOS-5736


def wos_like(n_per_class: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embeddings = parent centre (far apart) + child offset (closer) + unit noise; flat and parent labels."""
    rng = np.random.default_rng(seed)
    parents = np.repeat(np.arange(len(CHILDREN_PER_PARENT)), CHILDREN_PER_PARENT)  # parent of each flat class
    parent_centres = rng.normal(size=(len(CHILDREN_PER_PARENT), dim)) * 2.0
    child_centres = parent_centres[parents] + rng.normal(size=(len(parents), dim)) * 0.5
    flat = np.repeat(np.arange(len(parents)), n_per_class)
    features = child_centres[flat] + rng.normal(size=(len(flat), dim))
    return features.astype(np.float32), flat, parents[flat]


def test_split_is_stratified_disjoint_and_twenty_percent():
    _, flat, _ = wos_like(50, 4, seed=0)
    train, test = wos_split(flat)
    assert np.intersect1d(train, test).size == 0 and len(train) + len(test) == len(flat)
    assert len(test) == 110
    assert np.array_equal(np.bincount(flat[test]), np.full(11, 10))
    assert np.array_equal(wos_split(flat)[1], test)  # seeded


def test_metrics_match_sklearn_macro_scores():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 5, 300)
    predicted = np.where(rng.random(300) < 0.6, truth, rng.integers(0, 6, 300))  # class 5 is never true
    metrics = classification_metrics(truth, predicted)
    assert metrics["acc"] == round(100 * np.mean(truth == predicted), 2)
    assert metrics["macro_f1"] == round(100 * f1_score(truth, predicted, average="macro", zero_division=0), 2)
    macro_precision = precision_score(truth, predicted, average="macro", zero_division=0)
    assert metrics["macro_precision"] == round(100 * macro_precision, 2)
    assert metrics["macro_recall"] == round(100 * recall_score(truth, predicted, average="macro", zero_division=0), 2)
    assert metrics["weighted_f1"] == round(100 * f1_score(truth, predicted, average="weighted", zero_division=0), 2)


def test_macro_f1_by_hand():
    # class 0: TP 1, FP 1, FN 1 -> F1 0.5; class 1: TP 2, FP 1, FN 1 -> F1 2/3; macro = (0.5 + 2/3) / 2 = 58.33 %
    truth = np.array([0, 0, 1, 1, 1])
    predicted = np.array([0, 1, 1, 1, 0])
    assert classification_metrics(truth, predicted)["macro_f1"] == 58.33


@pytest.mark.heavy
def test_wos_like_problem_scores_both_levels():
    features, flat, parent = wos_like(60, 16, seed=2)
    result = evaluate_wos(features, flat, parent, mode="fasttest")
    json.dumps(result)
    assert (result["n_train"], result["n_test"]) == (528, 132)
    assert result["level2"]["n_classes"] == 11 and result["level1"]["n_classes"] == 3
    for level in ("level1", "level2"):
        scores = result[level]
        assert all(0.0 <= scores[name] <= 100.0 for name in ("acc", "macro_precision", "macro_recall", "macro_f1"))
        assert scores["l2"] in (1e-5, 1e-4, 1e-3, 1e-2)
    assert result["level2"]["acc"] > 60.0  # chance is 9 %
    assert result["level1"]["acc"] > 90.0  # parents are far apart
    assert evaluate_wos(features, flat, mode="fasttest")["level2"] == result["level2"]
    assert "level1" not in evaluate_wos(features, flat, mode="fasttest")


@pytest.mark.heavy
def test_mlp_head_is_an_option():
    features, flat, _ = wos_like(40, 8, seed=3)
    result = evaluate_wos(features, flat, mode="fasttest", hidden_dim=16)
    assert result["config"]["hidden_dim"] == 16
    assert result["level2"]["acc"] > 30.0
