"""STS aggregation as the papers report STS12-16: the "all" setting is one Spearman over the pooled subsets.

A hand-built year of two subsets on which the three candidate aggregates all differ: the pooled Spearman
(what SimCSE's SentEval reports as "all"), the pooled Pearson, and the mean of the per-subset Spearmans. A
Pearson in place of the Spearman, or the subset mean in place of the pooled score, changes the reported number.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentrepro.data.records import ScoredPair
from sentrepro.evaluation.sts import aggregate_subsets, cosine_rows
from sentrepro.evaluation.sts_suite import score_tasks

# Two subsets, predictions and gold by hand. Subset "a" is perfectly ranked (Spearman 1), subset "b" has one swap
# (Spearman 0.9); pooled, the gold scales differ (a: 0..3, b: 1.5..5.5) while the predictions overlap, so the pooled
# ranks disagree with the per-subset ones, and the large last prediction makes Pearson differ from Spearman.
PRED_A = np.array([0.10, 0.20, 0.30, 0.90])
GOLD_A = np.array([0.0, 1.0, 2.0, 3.0])
PRED_B = np.array([0.15, 0.35, 0.25, 0.40, 0.50])
GOLD_B = np.array([1.5, 2.5, 3.5, 4.5, 5.5])


def rank(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of distinct values (the hand case has no ties)."""
    assert len(set(values.tolist())) == len(values)
    return np.argsort(np.argsort(values)) + 1.0


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum()))


def hand_values() -> dict:
    """The three aggregates from their definitions (numpy only: no scipy, so an oracle independent of the code)."""
    pred, gold = np.concatenate([PRED_A, PRED_B]), np.concatenate([GOLD_A, GOLD_B])
    spearman_a, spearman_b = pearson(rank(PRED_A), rank(GOLD_A)), pearson(rank(PRED_B), rank(GOLD_B))
    return {"spearman_all": pearson(rank(pred), rank(gold)), "pearson_all": pearson(pred, gold),
            "mean": (spearman_a + spearman_b) / 2, "wmean": (4 * spearman_a + 5 * spearman_b) / 9,
            "subset_spearman": (spearman_a, spearman_b)}


def test_the_hand_case_tells_the_three_aggregates_apart():
    hand = hand_values()
    assert hand["subset_spearman"] == pytest.approx((1.0, 0.9))
    values = [hand["spearman_all"], hand["pearson_all"], hand["mean"]]
    assert min(abs(a - b) for i, a in enumerate(values) for b in values[i + 1:]) > 0.02, values


def test_all_is_the_pooled_spearman_not_the_pooled_pearson_or_the_subset_mean():
    hand = hand_values()
    result = aggregate_subsets({"a": (PRED_A, GOLD_A), "b": (PRED_B, GOLD_B)})
    assert result["all"] == pytest.approx(hand["spearman_all"], abs=1e-12)
    assert result["mean"] == pytest.approx(hand["mean"], abs=1e-12)
    assert result["wmean"] == pytest.approx(hand["wmean"], abs=1e-12)
    assert result["n"] == 9
    assert [result["subsets"][s]["spearman"] for s in ("a", "b")] == pytest.approx(hand["subset_spearman"])
    assert result["subsets"]["a"]["pearson"] == pytest.approx(pearson(PRED_A, GOLD_A), abs=1e-12)
    assert [result["subsets"][s]["n"] for s in ("a", "b")] == [4, 5]


def pairs_with_cosines(predictions: np.ndarray, gold: np.ndarray, offset: int) -> tuple[list, dict]:
    """Pairs whose sentence vectors have exactly the given cosines: s1 -> (1, 0), s2 -> (c, sqrt(1 - c^2))."""
    pairs, vectors = [], {}
    for i, (cosine, score) in enumerate(zip(predictions, gold)):
        s1, s2 = f"left {offset + i}", f"right {offset + i}"
        vectors[s1] = np.array([1.0, 0.0], dtype=np.float32)
        vectors[s2] = np.array([cosine, np.sqrt(1 - cosine**2)], dtype=np.float32)
        pairs.append(ScoredPair(s1, s2, float(score)))
    return pairs, vectors


def test_the_sts_suite_reports_the_pooled_spearman_for_a_year_and_the_test_spearman_otherwise():
    """score_tasks, the STS suite's scoring: STS12's reported number is 100 x pooled Spearman ("all")."""
    pairs_a, vectors = pairs_with_cosines(PRED_A, GOLD_A, 0)
    pairs_b, more = pairs_with_cosines(PRED_B, GOLD_B, 100)
    vectors.update(more)
    calls = []

    def embed(sentences):
        calls.append(len(sentences))
        return np.stack([vectors[s] for s in sentences])

    # the cosines the suite computes are the hand predictions (up to float32)
    left, right = np.stack([vectors[p.s1] for p in pairs_b]), np.stack([vectors[p.s2] for p in pairs_b])
    assert cosine_rows(left, right) == pytest.approx(PRED_B, abs=1e-6)
    items: dict = {}
    results = score_tasks({"STS12": {"a": pairs_a, "b": pairs_b}, "STSBenchmark": {"test": pairs_b}}, embed, items)
    hand = hand_values()
    assert calls == [2 * (4 + 5 + 5)]  # every sentence in one call
    assert results["STS12"]["reported"] == pytest.approx(100 * hand["spearman_all"], abs=1e-6)
    assert results["STS12"]["mean"] == pytest.approx(hand["mean"], abs=1e-6)
    assert results["STSBenchmark"]["reported"] == pytest.approx(100 * hand["subset_spearman"][1], abs=1e-6)
    assert results["avg"]["reported"] == pytest.approx(
        (results["STS12"]["reported"] + results["STSBenchmark"]["reported"]) / 2)
    assert items["STS12"][1].tolist() == np.concatenate([GOLD_A, GOLD_B]).tolist()


def test_cosine_rows_of_unnormalised_rows_and_the_clamp_of_near_zero_norms():
    """The cosine of rows of any length; a product of norms under 1e-12 is clamped to 1e-12, so a zero vector scores
    0 and two 1e-7 vectors 1e-14 / 1e-12 = 0.01 (the clamp decides the score of near-zero vectors, so it is pinned)."""
    a = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [1e-7, 0.0]])
    b = np.array([[4.0, 3.0], [2.0, 2.0], [5.0, 5.0], [1e-7, 0.0]])
    cosines = cosine_rows(a, b)
    assert cosines.dtype == np.float32
    assert cosines.tolist() == pytest.approx([24 / 25, 2 / (1 * 8**0.5), 0.0, 0.01], rel=1e-5)
