"""Embedding-space measures behind the papers' analyses, as small pure functions on numpy arrays.

* Alignment and uniformity (Wang & Isola 2020, as SimCSE and MoCoUTRL use them): on L2-normalised
  vectors, ``align = E ||f(x) - f(x+)||^2`` over positive pairs and
  ``uniform = log E exp(-2 ||f(x) - f(y)||^2)`` over all distinct pairs of sentences.
* Anisotropy (PromptBERT ``cal_avg_cosine``): the mean over i of the mean cosine between vector i and
  every vector, itself included, which equals the squared norm of the mean unit vector.
* Min-max scaling of predicted similarities (ConPVP Fig. 4 "scale the predicted scores to 0 to 1").
* Token frequencies and top-k removal (ConPVP Fig. 5, after Yan et al. 2021).
* STS-B pairs at given gold scores and their t-SNE coordinates (ConPVP Fig. 6).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np

_EPS = 1e-12


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero). (N, H) -> (N, H) float64"""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), _EPS)


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    """Mean ``||x_i - y_i||^alpha`` of normalised positive pairs. (P, H), (P, H) -> scalar"""
    if x.shape != y.shape or len(x) == 0:
        raise ValueError(f"alignment needs two equal, non-empty (P, H) arrays, got {x.shape} and {y.shape}")
    difference = unit_rows(x) - unit_rows(y)
    return float(np.mean(np.linalg.norm(difference, axis=1) ** alpha))


def uniformity(x: np.ndarray, t: float = 2.0, chunk: int = 2048) -> float:
    """``log`` of the mean of ``exp(-t ||u_i - u_j||^2)`` over the pairs i < j of normalised rows. (N, H) -> scalar

    On unit vectors ``||u_i - u_j||^2 = 2 - 2 u_i.u_j``; the sum runs in row chunks so N can be large.
    """
    units = unit_rows(x)
    n_rows = len(units)
    if n_rows < 2:
        raise ValueError(f"uniformity needs at least 2 vectors, got {n_rows}")
    total = 0.0
    for start in range(0, n_rows, chunk):
        block = units[start:start + chunk]  # (C, H)
        squared = np.clip(2.0 - 2.0 * block @ units.T, 0.0, None)  # (C, N)
        upper = np.arange(n_rows)[None, :] > np.arange(start, start + len(block))[:, None]  # j > i
        total += float(np.exp(-t * squared)[upper].sum())
    return float(np.log(total / (n_rows * (n_rows - 1) / 2)))


def mean_pairwise_cosine(x: np.ndarray) -> float:
    """Mean cosine over all ordered pairs, diagonal included: ``|| mean_i u_i ||^2``. (N, H) -> scalar"""
    units = unit_rows(x)
    if len(units) == 0:
        raise ValueError("mean_pairwise_cosine needs at least one vector")
    centre = units.mean(axis=0)
    return float(centre @ centre)


def scale_unit_interval(values: np.ndarray) -> np.ndarray:
    """Min-max scaling to [0, 1] (all zeros when every value is equal). (N,) -> (N,)"""
    values = np.asarray(values, dtype=np.float64)
    low, high = values.min(), values.max()
    if high - low < _EPS:
        return np.zeros_like(values)
    return (values - low) / (high - low)


def token_counts(token_lists: Iterable[Sequence[str]]) -> Counter:
    """How often each token occurs over all token lists."""
    counts: Counter = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    return counts


def most_frequent(counts: Counter, k: int) -> list[str]:
    """The ``k`` most frequent tokens, ties broken by the token text (deterministic)."""
    return [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]]


def without_tokens(tokens: Sequence[str], removed: set[str]) -> list[str]:
    """``tokens`` with every token in ``removed`` dropped, order kept."""
    return [token for token in tokens if token not in removed]


def pairs_at_scores(scores: Sequence[float], targets: Sequence[float], per_target: int, seed: int
                    ) -> list[list[int]]:
    """For each target gold score, ``per_target`` pair indices whose score equals it exactly, drawn with ``seed``.

    Raises when a target has fewer pairs than asked, naming it.
    """
    scores = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng(seed)
    groups = []
    for target in targets:
        candidates = np.flatnonzero(np.isclose(scores, target, atol=1e-9))
        if len(candidates) < per_target:
            raise ValueError(f"only {len(candidates)} pairs have gold score {target}; {per_target} asked")
        groups.append(sorted(int(i) for i in rng.choice(candidates, size=per_target, replace=False)))
    return groups


def tsne_coordinates(x: np.ndarray, seed: int, perplexity: float) -> np.ndarray:
    """2-D t-SNE of the rows (sklearn, PCA init, seeded). (N, H) -> (N, 2)"""
    from sklearn.manifold import TSNE

    x = np.asarray(x, dtype=np.float64)
    if not 0 < perplexity < len(x):
        raise ValueError(f"t-SNE perplexity must be in (0, {len(x)}) for {len(x)} points, got {perplexity}")
    model = TSNE(n_components=2, perplexity=perplexity, init="pca", learning_rate="auto", random_state=seed)
    return model.fit_transform(x)
