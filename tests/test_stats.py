"""sentrepro.verdicts.stats against independent computations: scipy's bootstrap, a hand-worked Welch interval,
and constructed verdict cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sentrepro.verdicts.stats import (
    HOLDS,
    INCONCLUSIVE,
    REVERSED,
    Interval,
    PairedTask,
    paired_bootstrap,
    resampled_ranks,
    seed_bootstrap_interval,
    seed_interval,
    seed_statistic,
    pearson_rows,
    value_groups,
    verdict,
    welch_interval,
    within_noise,
    false_reversed_chance,
    magnitude_position,
    minimum_detectable_difference,
    one_sample_interval,
    one_sample_intervals,
    item_bootstrap_against_constant,
    exact_difference,
    spread_factor,
    variance_ratio_interval,
    minimum_detectable_spread_difference,
    seed_intervals,
    standard_error,
)


def _paired_sample(n=40, seed=3):
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n).round(1)                       # ties, as STS gold scores have
    a = gold + rng.normal(0, 1.0, n)                           # the better system
    b = gold + rng.normal(0, 2.0, n)
    return a, b, gold


def test_spearman_from_resampled_ranks_matches_scipy_with_ties():
    a, b, gold = _paired_sample()
    full = np.arange(len(gold))[None, :]
    got = [pearson_rows(resampled_ranks(*value_groups(x), full), resampled_ranks(*value_groups(gold), full))[0]
           for x in (a, b)]
    assert got == pytest.approx([scipy_stats.spearmanr(a, gold).statistic,
                                 scipy_stats.spearmanr(b, gold).statistic], abs=1e-12)


def test_resampled_ranks_equal_rankdata_of_each_resample_with_ties():
    values = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 1.0, 4.0])
    draws = np.random.default_rng(0).integers(0, len(values), size=(50, len(values)))
    expected = np.stack([scipy_stats.rankdata(values[row]) for row in draws])
    assert np.array_equal(resampled_ranks(*value_groups(values), draws), expected)


def test_paired_bootstrap_matches_scipy_bootstrap_on_a_small_paired_sample():
    a, b, gold = _paired_sample()

    def difference(x, y, g):
        return 100 * (scipy_stats.spearmanr(x, g).statistic - scipy_stats.spearmanr(y, g).statistic)

    reference = scipy_stats.bootstrap((a, b, gold), difference, paired=True, vectorized=False,
                                      n_resamples=4000, method="percentile", random_state=0).confidence_interval
    ours = paired_bootstrap({"T": PairedTask(a[None], b[None], gold)}, "mean", n_resamples=4000, seed=1)
    assert ours.estimate == pytest.approx(difference(a, b, gold), abs=1e-9)
    width = reference.high - reference.low
    # two independent Monte-Carlo draws of the same percentile interval: agree to a few % of its width
    assert ours.low == pytest.approx(reference.low, abs=0.08 * width)
    assert ours.high == pytest.approx(reference.high, abs=0.08 * width)


def test_paired_bootstrap_is_seeded_and_averages_tasks_resampled_independently():
    a, b, gold = _paired_sample()
    a2, b2, gold2 = _paired_sample(n=30, seed=9)
    tasks = {"T1": PairedTask(a[None], b[None], gold), "T2": PairedTask(a2[None], b2[None], gold2)}
    first = paired_bootstrap(tasks, "mean", n_resamples=1000, seed=5)
    again = paired_bootstrap(dict(reversed(list(tasks.items()))), "mean", n_resamples=1000, seed=5)
    assert (first.low, first.high) == (again.low, again.high)
    singles = [paired_bootstrap({k: t}, "mean", n_resamples=1000, seed=5).estimate for k, t in tasks.items()]
    assert first.estimate == pytest.approx(np.mean(singles))
    # the same draws by hand: per replicate, one index vector per task (sorted order), average of tasks
    rng = np.random.default_rng(5)
    diffs = np.zeros(1000)
    for name in ("T1", "T2"):
        t = tasks[name]
        idx = rng.integers(0, len(t.gold), size=(1000, len(t.gold)))
        for r in range(1000):
            diffs[r] += 100 * (scipy_stats.spearmanr(t.a[0][idx[r]], t.gold[idx[r]]).statistic
                               - scipy_stats.spearmanr(t.b[0][idx[r]], t.gold[idx[r]]).statistic) / 2
    assert (first.low, first.high) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])), abs=1e-9)


def test_paired_bootstrap_scores_every_seed_and_applies_the_seed_statistic():
    a, b, gold = _paired_sample()
    noisy = np.stack([a, a + 0.5, a - 0.3])                    # 3 seeds on side A
    result = paired_bootstrap({"T": PairedTask(noisy, b[None], gold)}, "mean", n_resamples=200, seed=0)
    per_seed = [100 * scipy_stats.spearmanr(s, gold).statistic for s in noisy]
    assert result.estimate == pytest.approx(np.mean(per_seed) - 100 * scipy_stats.spearmanr(b, gold).statistic)


def test_item_bootstrap_against_a_constant_matches_a_hand_loop_with_scipy():
    a, _, gold = _paired_sample(n=30, seed=4)
    got = item_bootstrap_against_constant({"T": (a[None, :], gold)}, "mean", 50.0, n_resamples=300, seed=7)
    draws = np.random.default_rng(7).integers(0, 30, size=(300, 30))
    hand = [100 * scipy_stats.spearmanr(a[d], gold[d]).statistic - 50.0 for d in draws]
    assert (got.low, got.high) == pytest.approx(tuple(np.quantile(hand, [0.025, 0.975])), abs=1e-9)
    assert got.estimate == pytest.approx(100 * scipy_stats.spearmanr(a, gold).statistic - 50.0)
    flipped = item_bootstrap_against_constant({"T": (a[None, :], gold)}, "mean", 50.0, constant_first=True,
                                              n_resamples=300, seed=7)
    assert (flipped.low, flipped.high) == pytest.approx((-got.high, -got.low))
    assert exact_difference(0.4445, 0.1465, "why").low == pytest.approx(0.298)


def test_welch_interval_hand_worked():
    # A = 80 82 84 86: mean 83, sample var 20/3; B = 76 78 80 82: mean 79, var 20/3.
    # se = sqrt(20/3/4 + 20/3/4) = sqrt(10/3) = 1.825742; Welch df = (2 v)^2 / (2 v^2 / 3) = 6;
    # t(0.975, 6) = 2.446912 (t table) -> 4 +- 4.467429 = [-0.467429, 8.467429].
    interval = welch_interval([80, 82, 84, 86], [76, 78, 80, 82])
    assert interval.estimate == 4
    assert (interval.low, interval.high) == pytest.approx((-0.467429, 8.467429), abs=1e-5)
    assert "df=6.0" in interval.detail
    # and an unequal-variance case against scipy's own Welch test
    x, y = [78.1, 78.6, 78.4, 78.9, 78.3], [75.0, 76.6, 73.5, 75.9]
    reference = scipy_stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    got = welch_interval(x, y)
    assert (got.low, got.high) == pytest.approx((reference.low, reference.high), abs=1e-9)


def test_seed_intervals_need_three_seeds_and_gate_best_of_n_by_the_means():
    assert [i.method for i in seed_intervals([1, 2, 3], [0, 1, 2], "mean")] == ["welch-t"]
    assert [i.method for i in seed_intervals([1, 2, 3], [0, 1, 2], "best")] == ["seed-bootstrap", "welch-t"]
    assert [i.method for i in seed_intervals([1, 2, 3], [0, 1, 4], "std")] == ["seed-bootstrap", "variance-ratio-f"]
    assert seed_intervals([1, 2], [0, 1], "mean") == [] and seed_interval([1, 2], [0, 1], "mean") is None
    assert seed_intervals([1, 2, 3], [0, 1], "best") == []
    assert [i.method for i in one_sample_intervals([1, 2, 3], 0.0, "best")] == ["one-sample-bootstrap",
                                                                                "one-sample-t"]
    assert one_sample_intervals([1, 2], 0.0, "mean") == []


# --- the rule as implemented: its false-"holds" rate and its power, simulated --------------------------

SEED_COUNTS = (2, 3, 4, 5, 10)          # every seed count config.yaml and its overlays produce
SIM_REPS, SIM_RESAMPLES = 1000, 1000


def _holds_rate(n: int, statistic: str, shift: float, reps: int = SIM_REPS, seed: int = 11, *,
                direction: str = "greater", scale: float = 1.0) -> float:
    """How often seed_intervals + verdict say the claim holds for n seeds per side, a = b + shift with a's
    sd ``scale`` (b's 1)."""
    rng = np.random.default_rng(seed)
    held = 0
    for _ in range(reps):
        a, b = rng.normal(shift, scale, n), rng.normal(0.0, 1.0, n)
        held += verdict(seed_intervals(a, b, statistic, n_resamples=SIM_RESAMPLES, seed=0), direction) == HOLDS
    return held / reps


@pytest.mark.parametrize("statistic", ["mean", "best"])
@pytest.mark.parametrize("n", SEED_COUNTS)
def test_false_holds_rate_at_no_true_difference_is_at_most_the_stated_one_tail(n, statistic):
    # the stated rate is one tail of the 95% interval, 2.5 %; allow two Monte Carlo standard errors
    nominal = 0.025
    allowed = nominal + 2 * np.sqrt(nominal * (1 - nominal) / SIM_REPS)
    rate = _holds_rate(n, statistic, 0.0)
    assert rate <= allowed, f"{statistic} of {n} seeds: false 'holds' {rate:.3f} > {allowed:.3f}"


@pytest.mark.parametrize("statistic", ["std", "range"])
@pytest.mark.parametrize("n", [4, 10])
def test_false_holds_rate_of_a_spread_claim_at_equal_spreads(n, statistic):
    # PromptBERT Knowl 9's stability claims: "a's std (range) over seeds is smaller than b's"
    nominal = 0.025
    allowed = nominal + 2 * np.sqrt(nominal * (1 - nominal) / SIM_REPS)
    rate = _holds_rate(n, statistic, 0.0, direction="less")
    assert rate <= allowed, f"{statistic} of {n} seeds: false 'holds' {rate:.3f} > {allowed:.3f}"


@pytest.mark.parametrize("statistic", ["mean", "best"])
@pytest.mark.parametrize("n", [4, 10])          # the paper config's seed counts of trained sides
def test_a_true_difference_of_two_stds_is_found_most_of_the_time(n, statistic):
    assert _holds_rate(n, statistic, 2.0, reps=400) > 0.5


def test_the_paper_s_own_stability_gap_is_found_at_ten_seeds():
    # PromptBERT's std 0.15 against SimCSE's 0.86 over 10 seeds (promptbert-paper.txt:202-203)
    assert _holds_rate(10, "std", 0.0, reps=300, direction="less", scale=0.15 / 0.86) > 0.8


def test_variance_ratio_interval_matches_scipy_f():
    a, b = [78.4, 78.6, 78.5, 78.8, 78.3], [75.0, 76.6, 73.5, 75.9, 74.2]
    got = variance_ratio_interval(a, b)
    ratio = np.var(a, ddof=1) / np.var(b, ddof=1)
    low, high = ratio / scipy_stats.f.ppf(0.975, 4, 4), ratio / scipy_stats.f.ppf(0.025, 4, 4)
    assert (got.low, got.high) == pytest.approx((0.5 * np.log(low), 0.5 * np.log(high)))
    assert got.high < 0 and verdict([got], "less") == HOLDS
    assert variance_ratio_interval([1, 1, 1], [0, 1, 2]).excludes_zero() == 0      # no spread: decides nothing


def test_seed_bootstrap_against_scipy_bootstrap_of_independent_samples():
    a = [78.2, 78.9, 77.6, 78.4, 79.0, 78.1]
    b = [75.4, 76.6, 73.5, 75.9, 74.8, 76.0]
    reference = scipy_stats.bootstrap((a, b), lambda x, y: np.mean(x) - np.mean(y), vectorized=False,
                                      n_resamples=6000, method="percentile", random_state=0).confidence_interval
    ours = seed_bootstrap_interval(a, b, "mean", n_resamples=6000, seed=2)
    width = reference.high - reference.low
    assert ours.low == pytest.approx(reference.low, abs=0.05 * width)
    assert ours.high == pytest.approx(reference.high, abs=0.05 * width)


def test_best_of_n_picks_the_seed_with_the_highest_selection_metric():
    values = np.array([[70.0], [72.0], [71.0]])                # (S, 1): a column's value per seed
    selection = np.array([[79.0], [78.0], [80.0]])             # the row's Avg. per seed
    assert seed_statistic(values, "best", selection)[0] == 71.0
    assert seed_statistic(values, "std")[0] == pytest.approx(np.std([70, 72, 71]))


def _interval(low, high):
    return Interval((low + high) / 2, low, high, "test", "")


def test_verdicts_on_constructed_cases():
    gain, loss, overlap = _interval(0.4, 2.0), _interval(-2.0, -0.3), _interval(-0.5, 1.2)
    assert verdict([gain], "greater") == HOLDS
    assert verdict([loss], "greater") == REVERSED
    assert verdict([overlap], "greater") == INCONCLUSIVE
    assert verdict([loss], "less") == HOLDS
    assert verdict([gain, overlap], "greater") == INCONCLUSIVE      # every interval must agree
    assert verdict([gain, _interval(0.1, 0.9)], "greater") == HOLDS
    assert verdict([], "greater") == INCONCLUSIVE
    assert verdict([gain], "no_gain") == REVERSED
    assert verdict([loss], "no_gain") == HOLDS
    assert verdict([overlap], "no_gain") == INCONCLUSIVE
    with pytest.raises(ValueError, match="direction"):
        verdict([gain], "better")


def test_constructed_systems_give_the_expected_verdicts_end_to_end():
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 400)
    good = gold + rng.normal(0, 0.5, 400)
    bad = gold + rng.normal(0, 3.0, 400)
    same = good + rng.normal(0, 0.01, 400)
    assert verdict([paired_bootstrap({"T": PairedTask(good[None], bad[None], gold)}, "mean")], "greater") == HOLDS
    assert verdict([paired_bootstrap({"T": PairedTask(bad[None], good[None], gold)}, "mean")], "greater") == REVERSED
    assert verdict([paired_bootstrap({"T": PairedTask(same[None], good[None], gold)}, "mean")], "greater") \
        == INCONCLUSIVE


def test_within_noise_combines_both_standard_errors():
    # paper 79.90 with se 0.32, ours 79.00 with se 0.40: sqrt(0.32^2 + 0.40^2) = 0.5122; 1.96 x = 1.004 > 0.90
    noise = within_noise(79.00, 0.40, 79.90, 0.32, basis="test")
    assert noise.within and noise.sd == pytest.approx(0.512250, abs=1e-6) and noise.basis == "test, z=1.96"
    assert not within_noise(76.25, 0.86, 78.75, 0.86).within          # sqrt(2) 0.86 1.96 = 2.384 < 2.5


def test_standard_error_of_a_mean_and_of_one_chosen_run():
    seeds = np.array([77.1, 78.3, 76.4, 77.9])
    pop = seeds.std()                                                  # the tables' ddof=0 std
    assert standard_error(pop, 4, "mean") == pytest.approx(scipy_stats.sem(seeds))
    assert standard_error(pop, 4, "best") == pytest.approx(seeds.std(ddof=1))
    assert standard_error(pop, 1, "mean") is None and standard_error(None, 4, "mean") is None


def test_one_sample_interval_matches_scipy_and_puts_the_constant_on_either_side():
    seeds = [78.2, 79.0, 77.6, 78.8, 78.1]
    got = one_sample_interval(seeds, 76.0, "mean")
    want = scipy_stats.ttest_1samp(np.array(seeds) - 76.0, 0.0).confidence_interval(0.95)
    assert got.method == "one-sample-t"
    assert (got.low, got.high) == pytest.approx((want.low, want.high)) and got.estimate == pytest.approx(2.34)
    flipped = one_sample_interval(seeds, 76.0, "mean", constant_first=True)     # constant - mean(seeds)
    assert (flipped.low, flipped.high, flipped.estimate) == pytest.approx((-want.high, -want.low, -2.34))
    assert one_sample_interval([78.2], 76.0, "mean") is None                   # one seed: no spread
    # best-of-N: a percentile bootstrap over the seeds, the same resamples as a hand computation
    boot = one_sample_interval(seeds, 76.0, "max", n_resamples=2000, seed=5)
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 5, size=(2000, 5))
    hand = np.quantile(np.array(seeds)[idx].max(axis=1) - 76.0, [0.025, 0.975])
    assert (boot.low, boot.high) == pytest.approx(tuple(hand)) and boot.estimate == pytest.approx(3.0)


def test_minimum_detectable_difference_has_the_stated_power():
    # independent check: the power of Welch's two-sided t test at the MDD, from the noncentral t
    sd_a, sd_b, n = 0.32 * np.sqrt(4 / 3), 0.49 * np.sqrt(4 / 3), 4
    mdd = minimum_detectable_difference(sd_a, n, sd_b, n)
    se = np.sqrt(sd_a ** 2 / n + sd_b ** 2 / n)
    df = se ** 4 / ((sd_a ** 2 / n) ** 2 / (n - 1) + (sd_b ** 2 / n) ** 2 / (n - 1))
    crit = scipy_stats.t.ppf(0.975, df)
    power = scipy_stats.nct.sf(crit, df, mdd / se) + scipy_stats.nct.cdf(-crit, df, mdd / se)
    assert power == pytest.approx(0.80, abs=0.03)
    # ConPVP Table 4, 4 seeds each: continuous vs manual differ by 0.72, less than the MDD (underpowered)
    assert mdd > 0.72
    # a deterministic side adds no variance: one-sample df = n - 1
    one = minimum_detectable_difference(1.0, 10, 0.0, None)
    assert one == pytest.approx((scipy_stats.t.ppf(0.975, 9) + scipy_stats.t.ppf(0.8, 9)) / np.sqrt(10))
    assert minimum_detectable_difference(1.0, 1, 1.0, 4) is None               # a 1-seed trained side
    assert minimum_detectable_difference(0.0, None, 0.0, None) == 0.0


def test_spread_factors_match_a_simulation_and_the_control_chart_table():
    draws = np.random.default_rng(9).standard_normal((100_000, 10))
    assert spread_factor("std", 10) == pytest.approx(draws.std(axis=1).std(), rel=0.02)
    assert spread_factor("range", 10) == pytest.approx(0.797, abs=0.005)      # d3(10), tabulated
    assert spread_factor("range", 4) == pytest.approx(0.880, abs=0.005)       # d3(4)
    # PromptBERT Knowl 9: stds 0.86 (SimCSE) and 0.15 over 10 seeds: the stds' own MDD, not the means'
    sd = lambda pop: pop * np.sqrt(10 / 9)                                    # noqa: E731 (population -> sample)
    mdd = minimum_detectable_spread_difference("std", sd(0.15), 10, sd(0.86), 10)
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    assert mdd == pytest.approx(z * np.hypot(spread_factor("std", 10) * sd(0.15), spread_factor("std", 10) * sd(0.86)))
    assert mdd < minimum_detectable_difference(sd(0.15), 10, sd(0.86), 10)


def test_equivalence_margin_and_at_least_claims():
    # the paper's own ConPVP Table 4 numbers for "w/o c+ & c- does not improve on SimCSE": 77.28 +- 0.25
    # vs 77.37 +- 0.88 over 4 seeds (population stds): four values with exactly that mean and std each
    a = [77.28 + 0.25, 77.28 - 0.25, 77.28 + 0.25, 77.28 - 0.25]
    b = [77.37 + 0.88, 77.37 - 0.88, 77.37 + 0.88, 77.37 - 0.88]
    welch = welch_interval(a, b)
    want = scipy_stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (welch.low, welch.high) == pytest.approx((want.low, want.high))
    assert (welch.low, welch.high) == pytest.approx((-1.65, 1.47), abs=0.005)   # the hand figures
    assert verdict([welch], "no_gain") == INCONCLUSIVE                   # no margin: a tie can never hold
    assert verdict([welch], "no_gain", margin=1.69) == HOLDS
    assert verdict([_interval(1.8, 2.4)], "no_gain", margin=1.69) == REVERSED
    with pytest.raises(ValueError, match="margin"):
        verdict([welch], "no_gain", margin=-1)
    # "at least d": the whole interval must clear d
    assert verdict([_interval(0.4, 2.0)], "greater", at_least=1.0) == INCONCLUSIVE
    assert verdict([_interval(1.2, 2.0)], "greater", at_least=1.0) == HOLDS
    assert verdict([_interval(-2.0, -1.2)], "less", at_least=1.0) == HOLDS
    assert verdict([_interval(-2.0, -0.2)], "less", at_least=1.0) == INCONCLUSIVE
    assert magnitude_position(_interval(0.4, 2.0), 2.6) == "ours smaller"
    assert magnitude_position(_interval(0.4, 2.0), 1.0) == "inside"
    assert magnitude_position(_interval(0.4, 2.0), 0.1) == "ours larger"


def test_false_reversed_chance_over_many_claims():
    assert false_reversed_chance(1) == pytest.approx(0.025)
    assert false_reversed_chance(50) == pytest.approx(1 - 0.975 ** 50)
