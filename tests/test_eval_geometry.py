"""Embedding-space measures of the analyses, checked against brute-force and hand-worked values."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from sentrepro.evaluation import geometry


def test_alignment_hand_worked():
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    y = np.array([[0.0, 3.0], [0.0, 1.0]])
    # normalised: pair 1 orthogonal unit vectors (squared distance 2), pair 2 identical (0)
    assert geometry.alignment(x, y) == pytest.approx(1.0)
    assert geometry.alignment(x, y, alpha=1.0) == pytest.approx(np.sqrt(2) / 2)


def test_uniformity_matches_brute_force_over_distinct_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 5))
    units = x / np.linalg.norm(x, axis=1, keepdims=True)
    expected = np.log(np.mean(np.exp(-2 * pdist(units, "sqeuclidean"))))
    assert geometry.uniformity(x, chunk=8) == pytest.approx(expected, rel=1e-10)
    assert geometry.uniformity(x, chunk=1000) == pytest.approx(expected, rel=1e-10)


def test_uniformity_of_identical_vectors_is_zero_and_needs_two():
    assert geometry.uniformity(np.ones((4, 3))) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="at least 2"):
        geometry.uniformity(np.ones((1, 3)))


def test_mean_pairwise_cosine_includes_the_diagonal():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(23, 4)) + 0.5
    units = x / np.linalg.norm(x, axis=1, keepdims=True)
    brute = np.mean([[u @ v for v in units] for u in units])  # i == j included, as PromptBERT's cal_avg_cosine
    assert geometry.mean_pairwise_cosine(x) == pytest.approx(brute, rel=1e-12)
    assert geometry.mean_pairwise_cosine(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(0.0)
    assert geometry.mean_pairwise_cosine(np.array([[2.0, 0.0], [3.0, 0.0]])) == pytest.approx(1.0)


def test_scale_unit_interval():
    assert geometry.scale_unit_interval(np.array([0.2, 0.6, 1.0])).tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert geometry.scale_unit_interval(np.array([0.3, 0.3])).tolist() == [0.0, 0.0]


def test_most_frequent_breaks_ties_by_token_and_removal_keeps_order():
    counts = geometry.token_counts([["a", "the", "dog"], ["the", "cat", "a"], ["the"]])
    assert counts == Counter({"the": 3, "a": 2, "dog": 1, "cat": 1})
    assert geometry.most_frequent(counts, 3) == ["the", "a", "cat"]
    assert geometry.without_tokens(["the", "dog", "the", "ran"], {"the"}) == ["dog", "ran"]


def test_pairs_at_scores_draws_exact_scores_reproducibly():
    scores = [0.0, 3.0, 5.0, 0.0, 3.0, 5.0, 0.4, 0.0, 3.0]
    groups = geometry.pairs_at_scores(scores, [0, 3], 2, seed=7)
    assert all(scores[i] == 0.0 for i in groups[0]) and all(scores[i] == 3.0 for i in groups[1])
    assert groups == geometry.pairs_at_scores(scores, [0, 3], 2, seed=7)
    with pytest.raises(ValueError, match="only 2 pairs have gold score 5"):
        geometry.pairs_at_scores(scores, [5], 3, seed=0)


@pytest.mark.heavy
def test_tsne_coordinates_are_seeded():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(size=(10, 6)), rng.normal(size=(10, 6)) + 8])
    first = geometry.tsne_coordinates(x, seed=3, perplexity=5)
    assert first.shape == (20, 2)
    assert np.allclose(first, geometry.tsne_coordinates(x, seed=3, perplexity=5))
    # two well separated blobs stay separated: every point is nearer its own blob's centre
    centres = first[:10].mean(0), first[10:].mean(0)
    nearer_own = [np.linalg.norm(p - centres[i >= 10]) < np.linalg.norm(p - centres[i < 10])
                  for i, p in enumerate(first)]
    assert all(nearer_own)
    with pytest.raises(ValueError, match="perplexity"):
        geometry.tsne_coordinates(x, seed=0, perplexity=30)
