"""SentEval transfer protocols (nested CV, fixed dev, fixed test), MRPC features and few-shot transfer."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import torch
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import f1_score

from sentrepro.data.benchmarks.transfer import read_binary
from sentrepro.evaluation.fewshot import (
    cv_task_holdout,
    evaluate_fewshot,
    evaluate_fewshot_cv_task,
    sample_per_class,
)
from sentrepro.evaluation.transfer import (
    evaluate_cv_task,
    evaluate_fixed_test_task,
    evaluate_split_task,
    mrpc_features,
    stratified_folds,
)


@pytest.fixture(scope="module")
def cr_features(shared_data) -> tuple[np.ndarray, np.ndarray]:
    """CR (3,775 reviews) as cheap 64-d LSA features scaled to unit variance, and SentEval's labels."""
    samples = read_binary(shared_data / "senteval" / "CR", "CR")
    texts = [sample.text for sample in samples]
    labels = np.array([sample.label for sample in samples])
    tfidf = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
    features = TruncatedSVD(n_components=64, random_state=0).fit_transform(tfidf)
    return (features / features.std()).astype(np.float32), labels


def gaussian_task(n: int, n_classes: int, dim: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Classes centred at shift * (random unit-variance direction), unit noise: a moderately hard problem."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * shift
    labels = rng.integers(0, n_classes, size=n)
    return (centres[labels] + rng.normal(size=(n, dim))).astype(np.float32), labels


@pytest.mark.parametrize("k", [5, 10])
def test_cv_folds_partition_the_data_and_keep_class_ratios(cr_features, k):
    _, labels = cr_features
    folds = stratified_folds(labels, k, 1111)
    assert len(folds) == k
    test_rows = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(test_rows), np.arange(len(labels)))  # disjoint, every sample tested once
    positive_share = labels.mean()
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0 and len(train) + len(test) == len(labels)
        expected_positives = positive_share * len(test)
        assert abs(labels[test].sum() - expected_positives) <= 1.0


CR_SUBSET = 800  # the protocol (folds, nested L2 choice, determinism) does not need all 3,775 reviews


@pytest.mark.heavy
def test_cr_nested_cv_is_stable_and_beats_the_majority_class(cr_features):
    features, labels = cr_features
    rows = np.sort(np.random.default_rng(0).choice(len(labels), CR_SUBSET, replace=False))
    features, labels = features[rows], labels[rows]
    first = evaluate_cv_task(features, labels, mode="fasttest")
    second = evaluate_cv_task(features, labels, mode="fasttest")
    assert first == second
    json.dumps(first)  # the result is JSON-serialisable as is
    assert len(first["folds"]) == 5 and first["n_samples"] == CR_SUBSET
    assert sum(fold["n_test"] for fold in first["folds"]) == CR_SUBSET
    assert all(fold["n_train"] + fold["n_test"] == CR_SUBSET for fold in first["folds"])
    assert all(l2 in (1e-5, 1e-4, 1e-3, 1e-2) for l2 in first["l2"])
    assert first["acc"] == round(np.mean([fold["acc"] for fold in first["folds"]]), 2)
    majority = 100 * max(labels.mean(), 1 - labels.mean())  # about 64 %
    assert first["acc"] > majority + 5
    assert first["devacc"] > majority + 5


@pytest.mark.heavy
def test_split_task_selects_l2_on_dev_and_scores_test():
    X, y = gaussian_task(900, 2, 16, shift=0.6, seed=0)
    result = evaluate_split_task(X[:600], y[:600] + 3, X[600:750], y[600:750] + 3, X[750:], y[750:] + 3,
                                 mode="fasttest")
    # Labels 3/4 are mapped to 0/1 internally; the dev score of the chosen L2 is the best dev score.
    assert result["n_classes"] == 2
    assert (result["n_train"], result["n_dev"], result["n_test"]) == (600, 150, 150)
    assert result["devacc"] == max(result["l2_scores"])
    assert result["l2"] == (1e-5, 1e-4, 1e-3, 1e-2)[result["l2_scores"].index(result["devacc"])]
    assert result["acc"] > 75.0


@pytest.mark.heavy
def test_fixed_test_task_multiclass_and_binary_f1():
    X, y = gaussian_task(1200, 6, 16, shift=0.8, seed=1)
    trec_like = evaluate_fixed_test_task(X[:900], y[:900], X[900:], y[900:], mode="fasttest")
    assert trec_like["n_classes"] == 6 and "f1" not in trec_like
    assert trec_like["acc"] > 70.0
    assert trec_like["devacc"] == max(trec_like["l2_scores"])

    u, labels = gaussian_task(800, 2, 12, shift=0.4, seed=2)
    v = u + np.where(labels[:, None] == 1, 0.1, 1.5) * np.random.default_rng(3).normal(size=u.shape).astype(np.float32)
    pairs = mrpc_features(u, v)
    mrpc_like = evaluate_fixed_test_task(pairs[:600], labels[:600], pairs[600:], labels[600:], mode="fasttest")
    assert mrpc_like["acc"] > 75.0
    assert 50.0 < mrpc_like["f1"] <= 100.0  # positive-class F1 of a probe that is right > 75 % of the time


def test_binary_f1_matches_sklearn():
    from sentrepro.evaluation.transfer import _binary_f1

    rng = np.random.default_rng(4)
    truth, predicted = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    assert _binary_f1(truth, predicted) == pytest.approx(f1_score(truth, predicted))


def test_mrpc_features_are_abs_difference_then_product():
    u = np.array([[1.0, -2.0], [0.5, 0.0]], dtype=np.float32)
    v = np.array([[3.0, 1.0], [0.5, 4.0]], dtype=np.float32)
    expected = np.array([[2.0, 3.0, 3.0, -2.0], [0.0, 4.0, 0.25, 0.0]], dtype=np.float32)
    assert np.array_equal(mrpc_features(u, v), expected)
    with pytest.raises(ValueError, match="same shape"):
        mrpc_features(u, v[:1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_probe_scores_like_the_cpu_one():
    X, y = gaussian_task(1000, 3, 32, shift=0.5, seed=5)
    on_cpu = evaluate_fixed_test_task(X[:800], y[:800], X[800:], y[800:], mode="fasttest", device="cpu")
    on_gpu = evaluate_fixed_test_task(X[:800], y[:800], X[800:], y[800:], mode="fasttest", device="cuda")
    assert abs(on_cpu["acc"] - on_gpu["acc"]) <= 2.0


# ---------------------------------------------------------------------------------------------- few-shot


def test_per_class_sample_is_exact_and_seeded():
    labels = np.repeat([0, 1, 2], [40, 25, 16])
    sample = sample_per_class(labels, 16, seed=0)
    assert np.array_equal(np.bincount(labels[sample]), [16, 16, 16])
    assert len(np.unique(sample)) == 48
    assert np.array_equal(sample, sample_per_class(labels, 16, seed=0))
    assert not np.array_equal(sample, sample_per_class(labels, 16, seed=1))
    with pytest.raises(ValueError, match="class 2 has 16"):
        sample_per_class(labels, 17, seed=0)


@pytest.mark.heavy
def test_fewshot_cv_task_tests_on_a_fixed_holdout_and_is_deterministic():
    X, y = gaussian_task(1000, 2, 16, shift=0.5, seed=6)
    pool, test = cv_task_holdout(y)
    assert len(test) == 100 and np.intersect1d(pool, test).size == 0  # first fold of a 10-fold split
    result = evaluate_fewshot_cv_task(X, y, seeds=range(3), mode="fasttest", n_epochs=20)
    again = evaluate_fewshot_cv_task(X, y, seeds=range(3), mode="fasttest", n_epochs=20)
    assert result == again
    json.dumps(result)
    assert result["seeds"] == [0, 1, 2] and len(result["accs"]) == 3
    assert (result["n_pool"], result["n_test"]) == (900, 100)
    assert result["acc_mean"] == round(np.mean(result["accs"]), 2)
    assert result["acc_std"] == round(np.std(result["accs"]), 2)
    assert result["acc_mean"] > 75.0  # 32 examples of an easy problem
    assert len(set(result["accs"])) > 1  # different seeds, different samples


def test_fewshot_fixed_test_task_trains_on_sixteen_per_class():
    X, y = gaussian_task(700, 3, 16, shift=0.6, seed=7)
    result = evaluate_fewshot(X[:500], y[:500], X[500:], y[500:], seeds=[4], mode="fasttest", n_epochs=20)
    assert result["shots"] == 16 and result["n_test"] == 200 and result["n_epochs"] == 20
    assert result["runs"][0]["l2"] in (1e-5, 1e-4, 1e-3, 1e-2)
    assert result["accs"][0] > 60.0


def test_mrpc_features_name_the_bad_side_and_mismatched_shapes():
    from sentrepro.evaluation import transfer

    good = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"^u must be a non-empty 2-D array"):
        mrpc_features(np.ones(3), good)
    with pytest.raises(ValueError, match=r"^v contains NaN or inf \(first at row 1\)$"):
        mrpc_features(good, np.array([[1.0, 1.0, 1.0], [1.0, np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"^u and v must have the same shape, got \(2, 3\) and \(2, 2\)$"):
        mrpc_features(good, np.ones((2, 2)))
    # the protocols default to SimCSE's "test" mode, the one the papers' tables were scored in
    for protocol in (transfer.evaluate_cv_task, transfer.evaluate_split_task, transfer.evaluate_fixed_test_task):
        assert inspect.signature(protocol).parameters["mode"].default == "test", protocol.__name__
