"""Hungarian clustering accuracy, NMI and the KMeans protocol on real AgNews texts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import normalized_mutual_info_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import normalize

from sentrepro.data.benchmarks.clustering import read_clustering
from sentrepro.evaluation.clustering import (
    cluster_once,
    contingency_matrix,
    evaluate_clustering,
    hungarian_accuracy,
)

# 12 items, 3 classes (5 + 4 + 3), 3 clusters. Worked by hand:
#   class 0 items fall in clusters 1,1,1,0,2; class 1 in 0,0,0,1; class 2 in 2,2,0.
#   count matrix M[cluster, class] = [[1, 3, 1],
#                                     [3, 1, 0],
#                                     [1, 0, 2]]
#   the six cluster->class bijections score: (0,1,2) 1+1+2=4, (0,2,1) 1+0+0=1, (1,0,2) 3+3+2=8,
#   (1,2,0) 3+0+1=4, (2,0,1) 1+3+0=4, (2,1,0) 1+1+1=3; the best is 8 -> accuracy 8/12 = 2/3.
HAND_TRUE = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2])
HAND_PRED = np.array([1, 1, 1, 0, 2, 0, 0, 0, 1, 2, 2, 0])
HAND_MATRIX = np.array([[1, 3, 1], [3, 1, 0], [1, 0, 2]])


def test_contingency_matrix_matches_the_hand_count():
    assert np.array_equal(contingency_matrix(HAND_TRUE, HAND_PRED), HAND_MATRIX)


def test_hungarian_accuracy_matches_the_hand_worked_value():
    assert hungarian_accuracy(HAND_TRUE, HAND_PRED) == pytest.approx(8 / 12)


def test_hungarian_accuracy_ignores_label_names():
    renamed_true = np.array([10, 20, 30])[HAND_TRUE]  # sparse class ids, like Tweet's
    permuted_pred = np.array([2, 0, 1])[HAND_PRED]  # same partition, other cluster ids
    assert hungarian_accuracy(renamed_true, permuted_pred) == pytest.approx(8 / 12)
    assert hungarian_accuracy(HAND_TRUE, np.array([7, 5, 9])[HAND_TRUE]) == 1.0


def test_more_clusters_than_classes_is_padded_not_an_error():
    # Two classes split over three clusters: the best mapping covers 3 + 2 of the 6 items.
    truth = np.array([0, 0, 0, 1, 1, 1])
    predicted = np.array([0, 0, 0, 1, 1, 2])
    assert hungarian_accuracy(truth, predicted) == pytest.approx(5 / 6)


def test_hungarian_accuracy_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="equal length"):
        hungarian_accuracy(HAND_TRUE, HAND_PRED[:-1])


@pytest.fixture(scope="module")
def agnews_subsample(shared_data) -> tuple[np.ndarray, np.ndarray]:
    """800 AgNews texts (stratified, 200 per class) as 32-d row-normalised LSA vectors, and labels 0..3."""
    samples = read_clustering(shared_data / "short-text-clustering", "AgNews")
    labels = np.array([sample.label for sample in samples])
    _, chosen = train_test_split(np.arange(len(samples)), test_size=800, stratify=labels, random_state=0)
    tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform([samples[i].text for i in chosen])
    features = normalize(TruncatedSVD(n_components=32, random_state=0).fit_transform(tfidf))
    return features.astype(np.float32), labels[chosen]


@pytest.mark.heavy
def test_agnews_clustering_is_far_above_chance(agnews_subsample):
    features, labels = agnews_subsample
    result = evaluate_clustering(features, labels, k=4)
    assert result["seeds"] == list(range(10)) and result["n_init"] == 10 and result["k"] == 4
    assert result["acc_mean"] > 50.0  # chance is 25 %
    assert result["nmi_mean"] > 15.0
    # Summaries are taken before rounding, so they match the rounded per-seed values to within 0.01.
    assert result["acc_mean"] == pytest.approx(np.mean(result["acc"]), abs=0.011)
    assert result["acc_std"] == pytest.approx(np.std(result["acc"]), abs=0.011)
    assert all(0.0 <= value <= 100.0 for value in result["acc"] + result["nmi"])


@pytest.mark.heavy
def test_one_run_is_seeded_and_its_nmi_is_sklearns(agnews_subsample):
    features, labels = agnews_subsample
    first = cluster_once(features, labels, k=4, seed=3)
    assert first == cluster_once(features, labels, k=4, seed=3)
    from sklearn.cluster import KMeans

    predicted = KMeans(n_clusters=4, n_init=10, random_state=3).fit_predict(features)
    assert first["nmi"] == pytest.approx(100 * normalized_mutual_info_score(labels, predicted))
    assert first["acc"] == pytest.approx(100 * hungarian_accuracy(labels, predicted))
