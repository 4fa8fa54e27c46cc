"""The verdict statistics (verdicts/stats.py) computed again, independently, on small inputs: every function's
exact output, every boundary of every comparison, every default. Written for the mutants `make mutation` found
surviving tests/test_stats.py (which checks calibration and agreement with scipy on larger samples): a
statistic named wrongly, an interval's end one step off, a default seed changed, a bound at its edge."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sentrepro.verdicts import stats
from sentrepro.verdicts.stats import (
    HOLDS,
    INCONCLUSIVE,
    REVERSED,
    Interval,
    PairedTask,
    exact_difference,
    false_call_bound,
    false_reversed_chance,
    holm,
    item_bootstrap_against_constant,
    magnitude_position,
    minimum_detectable_difference,
    minimum_detectable_from_interval,
    minimum_detectable_spread_difference,
    one_sample_interval,
    one_sample_intervals,
    one_sided_p,
    paired_bootstrap,
    pearson_rows,
    seed_bootstrap_interval,
    seed_interval,
    seed_intervals,
    seed_statistic,
    signed_magnitude,
    spread_factor,
    standard_error,
    variance_ratio_interval,
    verdict,
    welch_interval,
    within_noise,
)

VALUES = np.array([[1.0, 7.0], [4.0, 2.0], [3.0, 9.0], [2.0, 5.0]])  # (S=4 seeds, 2 cells)
SELECTION = np.array([[0.1, 0.9], [0.8, 0.3], [0.8, 0.1], [0.2, 0.5]])  # seed 1 and 2 tie in cell 0: the first


def test_each_seed_statistic_by_hand():
    assert seed_statistic(VALUES, "mean").tolist() == [2.5, 5.75]
    assert seed_statistic(VALUES, "max").tolist() == [4.0, 9.0]
    assert seed_statistic(VALUES, "min").tolist() == [1.0, 2.0]
    assert seed_statistic(VALUES, "range").tolist() == [3.0, 7.0]
    assert np.allclose(seed_statistic(VALUES, "std"), [math.sqrt(1.25), math.sqrt(6.6875)])
    assert seed_statistic(VALUES, "best", SELECTION).tolist() == [4.0, 7.0]  # tie at 0.8: the first seed
    assert seed_statistic(VALUES, "best").tolist() == [4.0, 9.0]  # without a selection: the max


def test_the_unknown_statistic_error_lists_exactly_what_is_computed():
    computed = [name for name in stats.SEED_STATISTICS if seed_statistic(VALUES, name) is not None]
    assert computed == ["mean", "best", "max", "min", "std", "range"]
    with pytest.raises(ValueError, match=r"^unknown seed statistic 'median' \(known: mean, best, max, min, std, "
                                         r"range\)$"):
        seed_statistic(VALUES, "median")


def test_interval_sign_and_membership_at_their_edges():
    assert Interval(1, 0.0, 2, "m", "d").excludes_zero() == 0
    assert Interval(1, 1e-9, 2, "m", "d").excludes_zero() == 1
    assert Interval(1, 0.5, 0.9, "m", "d").excludes_zero() == 1  # a low of 0.5 is above 0 (not above 1)
    assert Interval(-1, -2, 0.0, "m", "d").excludes_zero() == 0
    assert Interval(-1, -2, -1e-9, "m", "d").excludes_zero() == -1
    inside = Interval(0, -1.0, 1.0, "m", "d")
    assert inside.contains(-1.0) and inside.contains(1.0) and inside.contains(0.0)
    assert not inside.contains(1.0000001) and not inside.contains(-1.0000001)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inside.low = 0.0


def bootstrap_by_hand(a, b, statistic, sel_a=None, sel_b=None, n_resamples=10000, seed=0, level=0.95):
    """The seed bootstrap written out: the same generator, one draw of (R, Sa) then (R, Sb)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, len(a), size=(n_resamples, len(a)))
    ib = rng.integers(0, len(b), size=(n_resamples, len(b)))

    def stat(x, sel, rows):
        out = []
        for row in rows:
            if statistic == "best":
                out.append(x[row][int(np.argmax(np.asarray(sel, float)[row]))])
            else:
                out.append({"max": np.max, "min": np.min, "std": np.std, "range": np.ptp, "mean": np.mean}[
                    statistic](x[row]))
        return np.array(out)

    diffs = stat(a, sel_a, ia) - stat(b, sel_b, ib)
    alpha = (1 - level) / 2
    return np.quantile(diffs, [alpha, 1 - alpha])


@pytest.mark.parametrize("statistic", ["best", "max", "std", "range", "min"])
def test_seed_bootstrap_equals_the_loop_written_out(statistic):
    a, b = [70.1, 71.5, 69.8, 72.0], [69.0, 70.2, 68.5]
    sel_a, sel_b = [0.3, 0.9, 0.1, 0.5], [0.2, 0.1, 0.7]
    kwargs = dict(selection_a=sel_a, selection_b=sel_b) if statistic == "best" else {}
    got = seed_bootstrap_interval(a, b, statistic, n_resamples=400, seed=3, level=0.9, **kwargs)
    low, high = bootstrap_by_hand(a, b, statistic, sel_a, sel_b, n_resamples=400, seed=3, level=0.9)
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)
    full = {"best": 71.5 - 68.5, "max": 72.0 - 70.2, "min": 69.8 - 68.5, "std": np.std(a) - np.std(b),
            "range": (72.0 - 69.8) - (70.2 - 68.5)}[statistic]
    assert got.estimate == pytest.approx(full, abs=1e-12)
    assert got.method == "seed-bootstrap"
    assert got.detail == (f"bootstrap over seeds, n=4 vs 3, 400 resamples, seed 3 (few seeds: a coarse interval)")


def test_seed_bootstrap_defaults_and_its_smallest_sides():
    a, b = [1.0, 2.0, 4.0, 3.0, 5.0], [0.5, 1.5]
    got = seed_bootstrap_interval(a, b, "max")
    assert got.detail == "bootstrap over seeds, n=5 vs 2, 10000 resamples, seed 0 (few seeds: a coarse interval)"
    assert (got.low, got.high) == pytest.approx(tuple(bootstrap_by_hand(a, b, "max")), abs=1e-12)
    assert seed_bootstrap_interval([1.0, 2.0], [0.5, 1.5], "max") is not None  # 2 seeds a side: an interval
    assert seed_bootstrap_interval([1.0], [0.5, 1.5], "max") is None
    assert seed_bootstrap_interval([1.0, 2.0], [0.5], "max") is None
    five = seed_bootstrap_interval(a, [0.5, 1.5, 1.0, 2.0, 0.0], "max", n_resamples=50)
    assert five.detail == "bootstrap over seeds, n=5 vs 5, 50 resamples, seed 0"


def test_welch_interval_equals_scipy_at_two_levels_and_needs_three_seeds():
    a, b = [70.1, 71.5, 69.8, 72.0], [69.0, 70.2, 68.5]
    for level in (0.95, 0.8):
        got = welch_interval(a, b, level)
        ref = scipy_stats.ttest_ind(a, b, equal_var=False).confidence_interval(level)
        assert (got.low, got.high) == pytest.approx((ref.low, ref.high), abs=1e-10)
        assert got.estimate == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
    assert welch_interval(a, [1.0, 2.0]) is None and welch_interval([1.0, 2.0], b) is None
    assert welch_interval([1.0, 2.0, 3.0], [0.0, 1.0, 2.0]) is not None
    flat = welch_interval([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    assert (flat.estimate, flat.low, flat.high, flat.method, flat.detail) == (1.0, 1.0, 1.0, "welch-t",
                                                                              "n=3 vs 3, zero variance")
    assert welch_interval(a, b).detail.startswith("Welch's t, n=4 vs 3, df=")
    unit = welch_interval([0.0, 0.0, 1.5], [0.0, 1.5, 3.0])  # standard error exactly 1: still an interval
    assert unit.low < unit.estimate < unit.high
    assert welch_interval([1.0, 2.0, 4.0], b[:2] + [70.0]) is not None


def test_which_intervals_each_statistic_needs():
    a, b = [70.1, 71.5, 69.8, 72.0], [69.0, 70.2, 68.5]
    methods = {s: [i.method for i in seed_intervals(a, b, s, n_resamples=50)] for s in stats.SEED_STATISTICS}
    assert methods == {"mean": ["welch-t"], "best": ["seed-bootstrap", "welch-t"],
                       "max": ["seed-bootstrap", "welch-t"], "min": ["seed-bootstrap"],
                       "std": ["seed-bootstrap", "variance-ratio-f"], "range": ["seed-bootstrap", "variance-ratio-f"]}
    assert seed_intervals(a, b[:2], "mean") == [] and seed_intervals(a[:2], b, "max") == []
    assert seed_interval(a, b[:2], "mean") is None
    assert seed_interval(a, b, "mean") == welch_interval(a, b)
    # the options reach the bootstrap and the gate
    boot, welch = seed_intervals(a, b, "max", n_resamples=60, seed=4, level=0.8)
    assert boot == seed_bootstrap_interval(a, b, "max", n_resamples=60, seed=4, level=0.8)
    assert welch == welch_interval(a, b, 0.8)
    sel_a, sel_b = [0.3, 0.9, 0.1, 0.5], [0.2, 0.1, 0.7]
    best = seed_intervals(a, b, "best", selection_a=sel_a, selection_b=sel_b, n_resamples=60)[0]
    assert best == seed_bootstrap_interval(a, b, "best", selection_a=sel_a, selection_b=sel_b, n_resamples=60)
    assert seed_intervals(a, b, "std", level=0.8)[1] == variance_ratio_interval(a, b, 0.8)
    assert seed_intervals(a, b, "max")[0] == seed_bootstrap_interval(a, b, "max")  # the defaults: 10000, seed 0


def test_variance_ratio_interval_by_hand():
    a, b = [1.0, 3.0, 2.0, 6.0], [2.0, 2.5, 3.0]
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    for level in (0.95, 0.9):
        alpha = (1 - level) / 2
        got = variance_ratio_interval(a, b, level)
        low = va / vb / scipy_stats.f.ppf(1 - alpha, 3, 2)
        high = va / vb / scipy_stats.f.ppf(alpha, 3, 2)
        assert (got.estimate, got.low, got.high) == pytest.approx(
            (0.5 * np.log(va / vb), 0.5 * np.log(low), 0.5 * np.log(high)), abs=1e-12)
    assert got.detail == "F interval of log(sd_a / sd_b), n=4 vs 3, df=3, 2"
    for flat in ([(2.0, 2.0, 2.0), b], [a, (1.0, 1.0, 1.0)]):
        none = variance_ratio_interval(*flat)
        assert (none.estimate, none.low, none.high, none.method) == (0.0, -np.inf, np.inf, "variance-ratio-f")
    assert variance_ratio_interval((2.0, 2.0, 2.0), b).detail == (
        "no F interval: a side without spread (sample variances 0 and 0.25)")
    unit = variance_ratio_interval(a, [1.0, 2.0, 3.0])  # a sample variance of exactly 1 is a spread
    assert np.isfinite(unit.low) and np.isfinite(unit.high)


def test_one_sample_intervals_equal_scipy_and_the_bootstrap_written_out():
    x = [70.1, 71.5, 69.8, 72.0]
    for level in (0.95, 0.8):
        got = one_sample_interval(x, 69.0, "mean", level=level)
        ref = scipy_stats.ttest_1samp(np.array(x) - 69.0, 0.0).confidence_interval(level)
        assert (got.estimate, got.low, got.high) == pytest.approx((np.mean(x) - 69.0, ref.low, ref.high), abs=1e-10)
    assert got.detail == "one-sample t against a constant 69.00, n=4, df=3"
    flipped = one_sample_interval(x, 69.0, "mean", constant_first=True, level=0.8)
    assert (flipped.estimate, flipped.low, flipped.high) == pytest.approx((-got.estimate, -got.high, -got.low))
    sel = [0.5, 0.2, 0.9, 0.1]  # the selection prefers the lowest seed (69.8): best-of-N is far from the max
    boot = one_sample_interval(x, 69.0, "best", selection=sel, n_resamples=300, seed=2, level=0.9)
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 4, size=(300, 4))
    drawn = np.array([np.asarray(x)[row][np.argmax(np.asarray(sel)[row])] for row in idx]) - 69.0
    assert (boot.low, boot.high) == pytest.approx(tuple(np.quantile(drawn, [0.05, 0.95])), abs=1e-12)
    assert boot.estimate == pytest.approx(69.8 - 69.0)
    assert boot.detail == "bootstrap over seeds against a constant 69.00, n=4, 300 resamples, seed 2"
    default = one_sample_interval(x, 69.0, "max")
    assert default.detail.endswith("10000 resamples, seed 0")
    assert one_sample_interval([70.0], 69.0, "mean") is None
    assert one_sample_interval([70.0, 71.0], 69.0, "max") is not None


def test_one_sample_intervals_gate_best_of_n_by_the_mean_at_the_same_level():
    x, sel = [70.1, 71.5, 69.8, 72.0], [0.3, 0.9, 0.1, 0.5]
    found = one_sample_intervals(x, 69.0, "best", selection=sel, constant_first=True, n_resamples=80, level=0.8)
    assert found == [one_sample_interval(x, 69.0, "best", selection=sel, constant_first=True, n_resamples=80,
                                         level=0.8),
                     one_sample_interval(x, 69.0, "mean", constant_first=True, level=0.8)]
    assert one_sample_intervals(x, 69.0, "min", n_resamples=20) == [one_sample_interval(x, 69.0, "min",
                                                                                       n_resamples=20)]
    assert one_sample_intervals(x[:2], 69.0, "mean") == []
    assert len(one_sample_intervals(x[:3], 69.0, "mean")) == 1


def test_minimum_detectable_difference_by_hand():
    t = scipy_stats.t.ppf
    var = 1.0 ** 2 / 4 + 2.0 ** 2 / 5
    df = var ** 2 / ((0.25) ** 2 / 3 + (0.8) ** 2 / 4)
    assert minimum_detectable_difference(1.0, 4, 2.0, 5) == pytest.approx((t(0.975, df) + t(0.8, df)) * np.sqrt(var))
    assert minimum_detectable_difference(1.0, 4, 2.0, 5, level=0.9, power=0.5) == pytest.approx(
        (t(0.95, df) + t(0.5, df)) * np.sqrt(var))
    one = minimum_detectable_difference(1.0, 4, 0.0, None)  # a constant side adds nothing; df = n - 1
    assert one == pytest.approx((t(0.975, 3) + t(0.8, 3)) * 0.5)
    assert minimum_detectable_difference(0.0, None, 0.0, None) == 0.0
    assert minimum_detectable_difference(0.0, 4, 0.0, 3) == 0.0
    assert minimum_detectable_difference(1.0, 1, 2.0, 5) is None
    assert minimum_detectable_difference(None, 4, 2.0, 5) is None
    assert minimum_detectable_difference(1.0, 2, 0.0, None) is not None  # two seeds: df 1
    # a constant side first is skipped, not the end of the sides; a variance of exactly 1 is a variance
    assert minimum_detectable_difference(0.0, None, 1.0, 4) == one
    assert minimum_detectable_difference(2.0, 4, 0.0, None) == pytest.approx((t(0.975, 3) + t(0.8, 3)) * 1.0)


def test_spread_factors_and_the_spread_mdd_by_hand():
    n = 5
    c4 = math.sqrt(2 / (n - 1)) * math.gamma(n / 2) / math.gamma((n - 1) / 2)
    assert spread_factor("std", n) == pytest.approx(math.sqrt((n - 1) / n) * math.sqrt(1 - c4 ** 2), rel=1e-12)
    assert spread_factor("range", 2) == pytest.approx(0.8525, abs=0.004)  # d3(2), the control-chart table
    for k in (3, 6):  # the documented simulation: 200,000 draws of a seeded generator (seed 0)
        draws = np.random.default_rng(0).standard_normal((200_000, k))
        assert spread_factor("range", k) == float((draws.max(axis=1) - draws.min(axis=1)).std())
    assert spread_factor("std", 2) > 0
    with pytest.raises(ValueError, match="over 1 seed"):
        spread_factor("std", 1)
    with pytest.raises(ValueError, match=r"'mean' is not a spread statistic \(known: std, range\)$"):
        spread_factor("mean", 4)
    z = scipy_stats.norm.ppf
    got = minimum_detectable_spread_difference("std", 1.5, 5, 2.0, 4)
    se2 = (spread_factor("std", 5) * 1.5) ** 2 + (spread_factor("std", 4) * 2.0) ** 2
    assert got == pytest.approx((z(0.975) + z(0.8)) * math.sqrt(se2))
    assert minimum_detectable_spread_difference("std", 1.5, 5, 0.0, None, level=0.9, power=0.5) == pytest.approx(
        (z(0.95) + z(0.5)) * spread_factor("std", 5) * 1.5)
    assert minimum_detectable_spread_difference("std", 1.5, 1, 2.0, 4) is None
    assert minimum_detectable_spread_difference("std", None, 5, 2.0, 4) is None
    assert minimum_detectable_spread_difference("std", 1.5, 2, 2.0, 4) is not None
    assert minimum_detectable_spread_difference("std", 0.0, None, 1.5, 5, level=0.9, power=0.5) == pytest.approx(
        (z(0.95) + z(0.5)) * spread_factor("std", 5) * 1.5)


def test_mdd_of_an_interval_and_the_multiplicity_bounds_by_hand():
    z = scipy_stats.norm.ppf(0.975)
    assert minimum_detectable_from_interval(Interval(0, -1.0, 3.0, "m", "d")) == pytest.approx(
        (z + scipy_stats.norm.ppf(0.8)) * 4.0 / (2 * z))
    z9 = scipy_stats.norm.ppf(0.95)
    assert minimum_detectable_from_interval(Interval(0, -1.0, 3.0, "m", "d"), level=0.9, power=0.5) == \
        pytest.approx(z9 * 4.0 / (2 * z9))
    assert false_reversed_chance(1) == pytest.approx(0.025)
    assert false_reversed_chance(3) == pytest.approx(1 - 0.975 ** 3)
    assert false_reversed_chance(2, level=0.9) == pytest.approx(1 - 0.95 ** 2)
    assert false_call_bound(4) == pytest.approx(0.1)
    assert false_call_bound(10, level=0.9) == pytest.approx(0.5)
    assert false_call_bound(40) == 1.0 and false_call_bound(41) == 1.0


def test_one_sided_p_by_hand():
    z = scipy_stats.norm.ppf(0.975)
    interval = Interval(1.0, -1.0, 3.0, "m", "d")  # se = 4 / (2z) = 2 / z
    se = 2.0 / z
    assert one_sided_p(interval, "greater") == pytest.approx(scipy_stats.norm.sf(1.0 / se))
    assert one_sided_p(interval, "greater", at_least=-0.5) == pytest.approx(scipy_stats.norm.sf(0.5 / se))
    assert one_sided_p(interval, "less") == pytest.approx(scipy_stats.norm.sf(-1.0 / se))
    assert one_sided_p(interval, "less", at_least=0.5) == pytest.approx(scipy_stats.norm.sf(-1.5 / se))
    assert one_sided_p(interval, "no_gain", margin=2.0) == pytest.approx(scipy_stats.norm.sf(1.0 / se))
    assert one_sided_p(interval, "no_gain") == pytest.approx(scipy_stats.norm.sf(-1.0 / se))  # margin 0
    wide = Interval(1.0, 0.0, 3.0, "m", "d")  # the standard error is the width's, not the ends' sum
    assert one_sided_p(wide, "greater") == pytest.approx(scipy_stats.norm.sf(1.0 / (3.0 / (2 * z))))
    se9 = 2.0 / scipy_stats.norm.ppf(0.95)
    assert one_sided_p(interval, "greater", level=0.9) == pytest.approx(scipy_stats.norm.sf(1.0 / se9))
    point = Interval(0.5, 0.5, 0.5, "exact", "d")
    assert one_sided_p(point, "greater") == 0.0
    assert one_sided_p(point, "greater", at_least=0.5) == 1.0  # a distance of exactly 0 is no evidence
    assert one_sided_p(point, "less") == 1.0


def test_holm_by_hand():
    # m = 4: thresholds 0.05/4, 0.05/3, 0.05/2, 0.05/1 for the sorted p-values
    assert holm([0.0125, 0.04, 0.0166, 0.3], 0.05) == [True, False, True, False]
    assert holm([0.01, 0.02, 0.03, 0.04], 0.05) == [True, False, False, False]
    assert holm([0.0125, 0.0125 + 1e-12], 0.025) == [True, True]  # p == alpha / (m - k) is rejected
    assert holm([0.02, 0.001], 0.05) == [True, True]
    assert holm([0.3, 0.001], 0.05) == [False, True]
    assert holm([], 0.05) == []


def test_pearson_rows_equal_numpy_and_a_flat_row_is_nan():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(3, 7)), rng.normal(size=(3, 7))
    assert pearson_rows(x, y) == pytest.approx([np.corrcoef(x[i], y[i])[0, 1] for i in range(3)], abs=1e-12)
    flat = pearson_rows(np.ones((1, 4)), np.arange(4.0)[None, :])
    assert np.isnan(flat[0])
    unit = np.array([[0.5, -0.5, 0.5, -0.5]])  # centred, squares summing to 1: a denominator of exactly 1
    assert pearson_rows(unit, unit).tolist() == [1.0]


def test_a_paired_task_refuses_predictions_of_another_size():
    task = PairedTask(np.zeros((2, 3)), np.zeros((1, 3)), np.zeros(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.gold = np.ones(3)
    for a, b in ((np.zeros((2, 4)), np.zeros((1, 3))), (np.zeros((2, 3)), np.zeros((1, 4))),
                 (np.zeros(3), np.zeros((1, 3))), (np.zeros((2, 3)), np.zeros(3))):
        with pytest.raises(ValueError, match="do not match 3 items"):
            PairedTask(a, b, np.zeros(3))


def spearman100(pred, gold):
    return 100.0 * scipy_stats.spearmanr(pred, gold).statistic


def test_paired_bootstrap_of_two_tasks_written_out():
    rng = np.random.default_rng(5)
    gold = {"t1": rng.integers(0, 5, 9).astype(float), "t0": rng.normal(size=7)}
    tasks = {name: PairedTask(g + rng.normal(size=(2, len(g))), g + 2 * rng.normal(size=(3, len(g))), g)
             for name, g in gold.items()}
    got = paired_bootstrap(tasks, "max", "mean", n_resamples=30, seed=9, level=0.9, chunk=7)
    draw = np.random.default_rng(9)
    diffs, estimate = np.zeros(30), 0.0
    for name in ("t0", "t1"):  # sorted by name
        task = tasks[name]
        n = len(task.gold)

        def diff(idx):
            side_a = max(spearman100(p[idx], task.gold[idx]) for p in task.a)
            side_b = np.mean([spearman100(p[idx], task.gold[idx]) for p in task.b])
            return side_a - side_b

        estimate += diff(np.arange(n))
        draws = draw.integers(0, n, size=(30, n))
        diffs += np.array([diff(row) for row in draws])
    diffs /= 2
    assert got.estimate == pytest.approx(estimate / 2, abs=1e-9)
    assert (got.low, got.high) == pytest.approx(tuple(np.quantile(diffs, [0.05, 0.95])), abs=1e-9)
    assert got.detail == "paired bootstrap over items, 30 resamples, seed 9, 2 task(s): t0, t1"
    assert got.method == "paired-bootstrap"
    same = paired_bootstrap(tasks, "max", n_resamples=30, seed=9, chunk=30)
    assert same == paired_bootstrap(tasks, "max", "max", n_resamples=30, seed=9, chunk=4)
    assert paired_bootstrap(tasks, "mean").detail.startswith("paired bootstrap over items, 1000 resamples, seed 0,")
    # best-of-N arrives reduced to its chosen seed, so within a resample it is the max over what it was given
    assert paired_bootstrap(tasks, "best", n_resamples=30, seed=9) == same
    with pytest.raises(ValueError, match="at least one task"):
        paired_bootstrap({}, "mean")


def test_item_bootstrap_against_a_constant_of_two_tasks_written_out():
    rng = np.random.default_rng(6)
    tasks = {}
    for name, n in (("b", 8), ("a", 6)):
        g = rng.normal(size=n)
        tasks[name] = (g + rng.normal(size=(2, n)), g)
    got = item_bootstrap_against_constant(tasks, "mean", 50.0, n_resamples=25, seed=4, level=0.8, chunk=6)
    draw = np.random.default_rng(4)
    scores, estimate = np.zeros(25), 0.0
    for name in ("a", "b"):
        pred, gold = tasks[name]
        n = len(gold)

        def score(idx):
            return np.mean([spearman100(p[idx], gold[idx]) for p in pred])

        estimate += score(np.arange(n))
        scores += np.array([score(row) for row in draw.integers(0, n, size=(25, n))])
    low, high = np.quantile(scores / 2 - 50.0, [0.1, 0.9])
    assert (got.estimate, got.low, got.high) == pytest.approx((estimate / 2 - 50.0, low, high), abs=1e-9)
    assert got.method == "item-bootstrap-vs-constant"
    assert got.detail == ("bootstrap over our items against a published constant 50.00 (its own test-set noise "
                          "unknown), 25 resamples, seed 4, 2 task(s): a, b")
    flipped = item_bootstrap_against_constant(tasks, "mean", 50.0, constant_first=True, n_resamples=25, seed=4,
                                              level=0.8)
    assert (flipped.estimate, flipped.low, flipped.high) == pytest.approx((-got.estimate, -got.high, -got.low))
    assert "1000 resamples, seed 0" in item_bootstrap_against_constant(tasks, "max", 50.0).detail
    with pytest.raises(ValueError, match="at least one task"):
        item_bootstrap_against_constant({}, "mean", 1.0)


def test_exact_difference():
    assert exact_difference(3.0, 1.0, "why") == Interval(2.0, 2.0, 2.0, "exact", "why")


def I(low, high):
    return Interval((low + high) / 2, low, high, "m", "d")


def test_verdict_at_every_edge():
    assert verdict([I(0.0, 1.0)], "greater") == INCONCLUSIVE  # touching 0 is not above it
    assert verdict([I(1e-9, 1.0)], "greater") == HOLDS
    assert verdict([I(-1.0, -1e-9)], "greater") == REVERSED
    assert verdict([I(-1.0, 0.0)], "greater") == INCONCLUSIVE
    assert verdict([I(-1.0, -1e-9)], "less") == HOLDS
    assert verdict([I(-1.0, 0.0)], "less") == INCONCLUSIVE
    assert verdict([I(1e-9, 1.0)], "less") == REVERSED
    assert verdict([I(0.5, 1.0)], "greater", at_least=0.5) == INCONCLUSIVE
    assert verdict([I(0.6, 1.0)], "greater", at_least=-0.5) == HOLDS
    assert verdict([I(-1.0, -0.6)], "less", at_least=0.5) == HOLDS
    assert verdict([I(-1.0, -0.5)], "less", at_least=0.5) == INCONCLUSIVE
    assert verdict([I(1e-9, 1.0), I(-1.0, 1.0)], "greater") == INCONCLUSIVE  # every interval must agree
    assert verdict([I(-2.0, -1.0), I(-1.0, 1.0)], "greater") == INCONCLUSIVE
    assert verdict([I(-2.0, -1.0), I(-3.0, -1.0)], "greater") == REVERSED
    assert verdict([], "greater") == INCONCLUSIVE and verdict([], "no_gain") == INCONCLUSIVE
    assert verdict([I(-1.0, 0.5)], "no_gain", margin=0.5) == HOLDS  # at the margin: holds
    assert verdict([I(-1.0, 0.5000001)], "no_gain", margin=0.5) == INCONCLUSIVE
    assert verdict([I(0.5, 1.0)], "no_gain", margin=0.5) == INCONCLUSIVE  # a low at the margin is not above it
    assert verdict([I(0.5000001, 1.0)], "no_gain", margin=0.5) == REVERSED
    assert verdict([I(-1.0, 0.0)], "no_gain") == HOLDS
    assert verdict([I(-1.0, 0.2), I(-1.0, 0.6)], "no_gain", margin=0.5) == INCONCLUSIVE
    assert verdict([I(0.6, 1.0), I(0.4, 1.0)], "no_gain", margin=0.5) == INCONCLUSIVE
    assert verdict([I(-1.0, 0.5)], "no_gain", margin=0.0) == INCONCLUSIVE
    verdict([I(0, 1)], "no_gain", margin=0.0)  # a margin of 0 is allowed
    with pytest.raises(ValueError, match=r"known: greater, less, no_gain\)$"):
        verdict([I(0, 1)], "bigger")
    with pytest.raises(ValueError, match="got -0.1"):
        verdict([I(0, 1)], "no_gain", margin=-0.1)


def test_magnitudes_and_standard_errors_by_hand():
    interval = I(1.0, 2.0)
    assert magnitude_position(interval, 1.0) == "inside" and magnitude_position(interval, 2.0) == "inside"
    assert magnitude_position(interval, 2.5) == "ours smaller"
    assert magnitude_position(interval, 0.5) == "ours larger"
    assert signed_magnitude(2.6, "greater") == 2.6 and signed_magnitude(-2.6, "greater") == 2.6
    assert signed_magnitude(1.4, "less") == -1.4 and signed_magnitude(-1.4, "less") == -1.4
    assert signed_magnitude(1.4, "no_gain") == 1.4 and signed_magnitude(None, "less") is None
    assert standard_error(2.0, 5, "mean") == pytest.approx(2.0 * math.sqrt(5 / 4) / math.sqrt(5))
    assert standard_error(2.0, 5, "best") == pytest.approx(2.0 * math.sqrt(5 / 4))
    assert standard_error(2.0, 2, "mean") == pytest.approx(2.0 * math.sqrt(2) / math.sqrt(2))
    assert standard_error(2.0, 1, "mean") is None and standard_error(None, 5, "mean") is None


def test_within_noise_at_its_edge():
    sd = math.sqrt(0.3 ** 2 + 0.4 ** 2)  # 0.5
    edge = within_noise(71.0 + 1.96 * sd, 0.3, 71.0, 0.4)
    assert (edge.delta, edge.sd, edge.within, edge.basis) == (pytest.approx(0.98), pytest.approx(0.5), True, "z=1.96")
    assert not within_noise(71.0 + 1.96 * sd + 1e-6, 0.3, 71.0, 0.4).within
    assert within_noise(71.0 - 1.0, 0.3, 71.0, 0.4, z=2.0).within
    assert not within_noise(71.0 - 1.0 - 1e-6, 0.3, 71.0, 0.4, z=2.0).within
    assert within_noise(71.05, 0.0, 71.0, 0.0, rounding=0.05).within
    assert not within_noise(71.06, 0.0, 71.0, 0.0, rounding=0.05).within
    assert within_noise(1.0, 0.1, 1.0, 0.1, basis="seeds").basis == "seeds, z=1.96"
    # the float slack is 1e-9 and inclusive: a difference of exactly 1e-9 between two exact numbers is within
    assert within_noise(1e-9, 0.0, 0.0, 0.0).within
    assert not within_noise(1.5e-9, 0.0, 0.0, 0.0).within
    with pytest.raises(dataclasses.FrozenInstanceError):
        edge.within = False


def test_the_verdict_words_are_the_ones_the_pages_show():
    assert (verdict([I(1, 2)], "greater"), verdict([I(-2, -1)], "greater"), verdict([I(-1, 1)], "greater")) == (
        "holds", "reversed", "inconclusive")
