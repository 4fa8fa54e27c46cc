"""Short-text clustering of frozen embeddings (ConPVP Table 6, the SCCL / PairSupCon protocol).

Protocol (PairSupCon ``DownstreamEval`` / SCCL ``utils/metric.py``, re-implemented):

* ``sklearn.cluster.KMeans(n_clusters=K, random_state=seed, n_init=10)`` on the **un-normalised** embeddings,
  once per seed 0..9. ``n_init=10`` is set explicitly because sklearn ≥ 1.4 defaults to ``'auto'`` (a single
  k-means++ start), which would not reproduce the papers. Other settings are sklearn's (k-means++ init,
  ``max_iter=300``, Lloyd iterations; sklearn 0.23's ``'auto'`` used the exact Elkan variant of the same
  algorithm). The embeddings are clustered in the dtype given (float32 for encoder outputs).
* Accuracy: the best one-to-one mapping of clusters to classes (Hungarian algorithm on the negated
  cluster × class count matrix), correct rows / all rows. NMI: ``normalized_mutual_info_score`` with sklearn's
  default arithmetic normalisation.
* Reported: per-seed values and mean ± population std (``ddof=0``) over the seeds, all ×100. ConPVP's table
  gives the mean accuracy.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from sentrepro.evaluation.probe import as_features, as_labels

CLUSTERING_SEEDS = tuple(range(10))
KMEANS_N_INIT = 10


def contingency_matrix(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Square count matrix M[cluster, class] (size = max(#clusters, #classes)); labels may be any integers."""
    _, true_ids = np.unique(y_true, return_inverse=True)
    _, pred_ids = np.unique(y_pred, return_inverse=True)
    size = max(true_ids.max(), pred_ids.max()) + 1
    counts = np.zeros((size, size), dtype=np.int64)
    np.add.at(counts, (pred_ids, true_ids), 1)
    return counts


def hungarian_accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Clustering accuracy in [0, 1] under the best one-to-one cluster→class mapping."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or len(y_true) == 0:
        raise ValueError(
            "y_true and y_pred must be non-empty 1-D arrays of equal length, "
            f"got {y_true.shape} and {y_pred.shape}"
        )
    counts = contingency_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(-counts)
    return float(counts[rows, cols].sum() / len(y_true))


def cluster_once(X: np.ndarray, y: np.ndarray, k: int, seed: int, n_init: int = KMEANS_N_INIT) -> dict:
    """KMeans with ``random_state=seed``; accuracy and NMI ×100 against the labels ``y``."""
    X = as_features(X)
    y = as_labels(y, len(X))
    if not 1 <= k <= len(X):
        raise ValueError(f"k must be between 1 and the number of rows ({len(X)}), got {k}")
    predicted = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(X)
    return {
        "seed": int(seed),
        "acc": 100 * hungarian_accuracy(y, predicted),
        "nmi": 100 * float(normalized_mutual_info_score(y, predicted)),
    }


def evaluate_clustering(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    seeds: Iterable[int] = CLUSTERING_SEEDS,
    n_init: int = KMEANS_N_INIT,
) -> dict:
    """Cluster once per seed; per-seed and mean ± std accuracy and NMI (×100, 2 dp)."""
    X = as_features(X)
    y = as_labels(y, len(X))
    runs = [cluster_once(X, y, k, seed, n_init) for seed in seeds]
    if not runs:
        raise ValueError("seeds is empty; give at least one KMeans seed")
    accuracies = np.array([run["acc"] for run in runs])
    nmis = np.array([run["nmi"] for run in runs])
    return {
        "protocol": "kmeans",
        "k": int(k),
        "n_init": int(n_init),
        "n_samples": int(len(X)),
        "n_classes": int(len(np.unique(y))),
        "seeds": [run["seed"] for run in runs],
        "acc": [round(float(value), 2) for value in accuracies],
        "nmi": [round(float(value), 2) for value in nmis],
        "acc_mean": round(float(accuracies.mean()), 2),
        "acc_std": round(float(accuracies.std()), 2),
        "nmi_mean": round(float(nmis.mean()), 2),
        "nmi_std": round(float(nmis.std()), 2),
    }
