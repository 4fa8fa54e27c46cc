"""STS scoring as SimCSE's modified SentEval does it (unsupervised: cosine of frozen embeddings).

STS12-16 are reported in the "all" setting: one Spearman over the concatenation of a year's
subsets (``mean`` and size-weighted ``wmean`` of the per-subset values are recorded too). STS-B and
SICK-R use the test split. Everything x100; the STS average is the plain mean of the 7 numbers.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import pearsonr, spearmanr


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity in fp32. (N, H), (N, H) -> (N,)"""
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-12)


def correlations(pred: np.ndarray, gold: np.ndarray) -> dict:
    """Spearman and Pearson (x1, not x100) of predictions against gold scores."""
    return {"spearman": float(spearmanr(pred, gold).statistic), "pearson": float(pearsonr(pred, gold).statistic),
            "n": int(len(gold))}


def aggregate_subsets(per_subset: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict:
    """Score every subset, then ``all`` (pooled), ``mean`` and ``wmean`` (weighted by size).

    per_subset: name -> (predicted similarities (n,), gold scores (n,))
    """
    scores = {name: correlations(pred, gold) for name, (pred, gold) in per_subset.items()}
    pooled_pred = np.concatenate([pred for pred, _ in per_subset.values()])
    pooled_gold = np.concatenate([gold for _, gold in per_subset.values()])
    sizes = np.array([scores[n]["n"] for n in per_subset], dtype=np.float64)
    spearmans = np.array([scores[n]["spearman"] for n in per_subset])
    return {
        "subsets": scores,
        "all": correlations(pooled_pred, pooled_gold)["spearman"],
        "mean": float(spearmans.mean()),
        "wmean": float((spearmans * sizes).sum() / sizes.sum()),
        "n": int(sizes.sum()),
    }
