"""The geometry analyses (evaluation/geometry.py) pinned exactly on inputs worked by hand: each default (alpha, t),
each size edge (one pair, two rows, one vector), the zero-norm floor and the equal-values edge, the exact-score
draw without replacement, and t-SNE's perplexity bounds. Written for the mutants `make mutation` found surviving
tests/test_eval_geometry.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sentrepro.evaluation.geometry import (
    alignment,
    mean_pairwise_cosine,
    pairs_at_scores,
    scale_unit_interval,
    tsne_coordinates,
    uniformity,
    unit_rows,
)


def test_a_zero_row_stays_zero_and_a_row_just_above_the_floor_is_made_unit():
    rows = unit_rows(np.array([[0.0, 0.0], [1.5e-12, 0.0], [3.0, 4.0]]))
    assert rows.tolist() == [[0.0, 0.0], [1.0, 0.0], [0.6, 0.8]]


def test_alignment_of_one_pair_with_the_default_exponent_two():
    x, y = np.array([[1.0, 0.0]]), np.array([[0.0, 2.0]])
    assert alignment(x, y) == pytest.approx(2.0)  # ||(1, 0) - (0, 1)||^2
    assert alignment(x, y, alpha=1.0) == pytest.approx(math.sqrt(2.0))


def test_alignment_refuses_pairs_of_different_shapes():
    with pytest.raises(ValueError, match="alignment needs two equal"):
        alignment(np.ones((2, 3)), np.ones((2, 4)))


def test_uniformity_of_two_rows_with_the_default_temperature_two():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])  # one pair, squared distance 2
    assert uniformity(x) == pytest.approx(-4.0)
    assert uniformity(x, t=1.0) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="at least 2 vectors"):
        uniformity(x[:1])


def test_mean_pairwise_cosine_of_one_vector_is_one():
    assert mean_pairwise_cosine(np.array([[3.0, 4.0]])) == pytest.approx(1.0)


def test_scaling_treats_a_spread_of_exactly_the_floor_as_a_spread():
    assert scale_unit_interval(np.array([0.0, 1e-12])).tolist() == [0.0, 1.0]
    assert scale_unit_interval(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]


def test_a_score_off_zero_by_more_than_the_tolerance_is_not_drawn():
    with pytest.raises(ValueError, match="only 1 pairs have gold score 0.0"):
        pairs_at_scores([0.0, 1.5e-9, 4.0], targets=[0.0], per_target=2, seed=0)


@pytest.mark.parametrize("seed", range(5))
def test_the_draw_is_without_replacement(seed):
    assert pairs_at_scores([1.0] * 5 + [2.0], targets=[1.0], per_target=5, seed=seed) == [[0, 1, 2, 3, 4]]


@pytest.mark.parametrize("perplexity", [0.0, 5.0])
def test_tsne_perplexity_outside_zero_to_the_points_is_refused(perplexity):
    with pytest.raises(ValueError, match="t-SNE perplexity must be in"):
        tsne_coordinates(np.eye(5), seed=0, perplexity=perplexity)


def test_tsne_takes_a_perplexity_of_one():
    assert tsne_coordinates(np.eye(5), seed=0, perplexity=1.0).shape == (5, 2)
