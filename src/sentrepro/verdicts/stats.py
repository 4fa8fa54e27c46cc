"""Uncertainty of a difference between two systems: over seeds and over evaluation items.

Pure numpy/scipy functions, no I/O. Two kinds of interval, both 95% by default:

* seed intervals: the difference of the two sides' seed statistics (mean, best, std, ...). A side
  needs at least :data:`MIN_SEEDS` (3) seeds: with 2 per side no interval over seeds keeps its stated
  error rate (a bootstrap over 2 seeds calls "holds" whenever every seed of a beats every seed of b,
  1 time in 6 with no true difference; an exact permutation test of 2 vs 2 can never reach 2.5 %).
  A mean uses Welch's t interval. Best-of-N (and max) uses a bootstrap over seeds for its own size
  *and* Welch's t on the means of the same seeds, and a verdict needs both: the bootstrap of a
  maximum over 3-10 seeds alone says "holds" 5-10 % of the time with no true difference, Welch's t
  keeps the one-tail rate at or below 2.5 % (tests/test_stats.py simulates both, as implemented).
* test-set interval: a paired bootstrap over evaluation items. Each task's items (STS pairs) are
  resampled once per replicate and both systems (every seed of both sides) are scored on that same
  resample; the 7-task average resamples every task independently and averages the task scores.

* one-sample intervals: a deterministic side (a frozen model, a published number) is a constant, so
  the interval is the trained side's seed statistic minus that constant (one-sample t for a mean; for
  best-of-N a bootstrap over the trained side's seeds beside the one-sample t of their mean, which
  is calibrated, conservatively, for claims that the trained side is *above* the constant: its mean
  is at most its expected best).

A verdict compares the intervals with the claimed direction (with an equivalence margin for "no gain"
claims and a threshold for "at least d" claims); :func:`minimum_detectable_difference` says how large a
difference the seeds can show at 80% power, and :func:`within_noise` says whether a reproduced cell is
within the combined noise (standard errors) of the paper's number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

LEVEL = 0.95
SEED_STATISTICS = ("mean", "best", "max", "min", "std", "range")
DIRECTIONS = ("greater", "less", "no_gain")
HOLDS, REVERSED, INCONCLUSIVE = "holds", "reversed", "inconclusive"
POWER = 0.80
MIN_SEEDS = 3            # seeds a varying side needs before any seed interval is computed
GATED_BY_MEANS = ("best", "max")   # statistics whose verdict also needs the t interval on the means
GATED_BY_VARIANCES = ("std", "range")   # statistics whose verdict also needs the F interval of the variance ratio


@dataclass(frozen=True)
class Interval:
    """A point estimate of a difference (A - B) with its interval and how it was obtained."""

    estimate: float
    low: float
    high: float
    method: str          # "welch-t", "seed-bootstrap", "paired-bootstrap"
    detail: str          # e.g. "n=4 vs 4", "1000 resamples, seed 0, tasks STS12..."

    def excludes_zero(self) -> int:
        """+1 when the whole interval is above 0, -1 when below, 0 when it contains 0."""
        if self.low > 0:
            return 1
        if self.high < 0:
            return -1
        return 0

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


# --- seed statistics ------------------------------------------------------------------------------


def seed_statistic(values: np.ndarray, name: str, selection: np.ndarray | None = None) -> np.ndarray:
    """The statistic over axis 0 (seeds) of ``values`` (S, ...) -> (...).

    ``best`` is the value of the seed with the highest ``selection`` (S, ...) (ties: the first seed),
    as ConPVP's best-of-N; without a selection it is the max. ``std`` is the population std (ddof=0),
    the tables' convention.
    """
    values = np.asarray(values, dtype=np.float64)
    if name == "mean":
        return values.mean(axis=0)
    if name == "max" or (name == "best" and selection is None):
        return values.max(axis=0)
    if name == "best":
        chosen = np.argmax(np.asarray(selection, dtype=np.float64), axis=0)          # (...)
        return np.take_along_axis(values, chosen[None, ...], axis=0)[0]
    if name == "min":
        return values.min(axis=0)
    if name == "std":
        return values.std(axis=0)
    if name == "range":
        return values.max(axis=0) - values.min(axis=0)
    raise ValueError(f"unknown seed statistic '{name}' (known: {', '.join(SEED_STATISTICS)})")


def _percentile(diffs: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1 - level) / 2
    low, high = np.quantile(diffs, [alpha, 1 - alpha])
    return float(low), float(high)


def seed_bootstrap_interval(a: Sequence[float], b: Sequence[float], statistic: str, *,
                            selection_a: Sequence[float] | None = None, selection_b: Sequence[float] | None = None,
                            n_resamples: int = 10000, seed: int = 0, level: float = LEVEL) -> Interval | None:
    """Percentile bootstrap of stat(A) - stat(B), seeds of each side resampled with replacement.

    None when a side has fewer than 2 seeds (one seed carries no seed spread).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if len(a) < 2 or len(b) < 2:
        return None
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, len(a), size=(n_resamples, len(a)))     # (R, Sa)
    ib = rng.integers(0, len(b), size=(n_resamples, len(b)))     # (R, Sb)
    sel_a = None if selection_a is None else np.asarray(selection_a, dtype=np.float64)[ia].T
    sel_b = None if selection_b is None else np.asarray(selection_b, dtype=np.float64)[ib].T
    stat_a = seed_statistic(a[ia].T, statistic, sel_a)           # (R,)
    stat_b = seed_statistic(b[ib].T, statistic, sel_b)
    estimate = float(seed_statistic(a, statistic, selection_a) - seed_statistic(b, statistic, selection_b))
    low, high = _percentile(stat_a - stat_b, level)
    few = " (few seeds: a coarse interval)" if min(len(a), len(b)) < 5 else ""
    return Interval(estimate, low, high, "seed-bootstrap",
                    f"bootstrap over seeds, n={len(a)} vs {len(b)}, {n_resamples} resamples, seed {seed}{few}")


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile. scipy is imported here, not at the top: planning imports this module, never scipy."""
    from scipy import stats as scipy_stats

    return float(scipy_stats.t.ppf(p, df))


def welch_interval(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Interval | None:
    """Welch's t interval for mean(A) - mean(B) (sample variances, Welch-Satterthwaite df).

    None unless both sides have at least 3 seeds.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if len(a) < 3 or len(b) < 3:
        return None
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff = float(a.mean() - b.mean())
    se = float(np.sqrt(va + vb))
    if se == 0.0:
        return Interval(diff, diff, diff, "welch-t", f"n={len(a)} vs {len(b)}, zero variance")
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    t = t_quantile(1 - (1 - level) / 2, df)
    return Interval(diff, diff - t * se, diff + t * se, "welch-t", f"Welch's t, n={len(a)} vs {len(b)}, df={df:.1f}")


def seed_intervals(a: Sequence[float], b: Sequence[float], statistic: str, *, selection_a=None, selection_b=None,
                   n_resamples: int = 10000, seed: int = 0, level: float = LEVEL) -> list[Interval]:
    """The seed intervals a verdict requires (every one must agree): [] when a side has fewer than
    :data:`MIN_SEEDS` seeds; a mean -> [Welch's t]; best-of-N or max -> [bootstrap of the statistic,
    Welch's t on the means of the same seeds]; std or range -> [bootstrap of it, the F interval of the
    same seeds' variance ratio] (the bootstrap of a range over 10 seeds alone says "holds" about 6 % of
    the time with equal spreads); any other statistic -> [bootstrap of it]."""
    if min(len(a), len(b)) < MIN_SEEDS:
        return []
    if statistic == "mean":
        return [welch_interval(a, b, level)]
    boot = seed_bootstrap_interval(a, b, statistic, selection_a=selection_a, selection_b=selection_b,
                                   n_resamples=n_resamples, seed=seed, level=level)
    if statistic in GATED_BY_MEANS:
        return [boot, welch_interval(a, b, level)]
    if statistic in GATED_BY_VARIANCES:
        return [boot, variance_ratio_interval(a, b, level)]
    return [boot]


def variance_ratio_interval(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Interval:
    """The interval of log(sd_A / sd_B) from the F distribution of the ratio of sample variances (exact
    for normal seeds): it lies below 0 when A's spread is smaller than B's. Its sign is what a spread
    claim's verdict needs; its scale (a log ratio) is not the claim's, so no magnitude is read from it."""
    from scipy import stats as scipy_stats

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    va, vb = a.var(ddof=1), b.var(ddof=1)
    dfa, dfb = len(a) - 1, len(b) - 1
    if va == 0.0 or vb == 0.0:                  # no spread to take a ratio of: this interval decides nothing
        return Interval(0.0, -np.inf, np.inf, "variance-ratio-f",
                        f"no F interval: a side without spread (sample variances {va:g} and {vb:g})")
    ratio = va / vb
    alpha = (1 - level) / 2
    low = ratio / scipy_stats.f.ppf(1 - alpha, dfa, dfb)
    high = ratio / scipy_stats.f.ppf(alpha, dfa, dfb)
    return Interval(0.5 * float(np.log(ratio)), 0.5 * float(np.log(low)), 0.5 * float(np.log(high)),
                    "variance-ratio-f", f"F interval of log(sd_a / sd_b), n={len(a)} vs {len(b)}, df={dfa}, {dfb}")


def seed_interval(a: Sequence[float], b: Sequence[float], statistic: str, **options) -> Interval | None:
    """The headline seed interval (the first of :func:`seed_intervals`), None below :data:`MIN_SEEDS`."""
    found = seed_intervals(a, b, statistic, **options)
    return found[0] if found else None


def one_sample_interval(values: Sequence[float], constant: float, statistic: str, *, selection=None,
                        constant_first: bool = False, n_resamples: int = 10000, seed: int = 0,
                        level: float = LEVEL) -> Interval | None:
    """stat(values) - constant (or constant - stat(values) with ``constant_first``): the interval when
    one side is deterministic (a frozen model or a published number has no seed spread).

    A mean uses the one-sample t interval (sample std, n - 1 df); another statistic (best-of-N, max)
    a percentile bootstrap over the seeds. None with fewer than 2 seeds (no spread to estimate); the
    verdict asks :func:`one_sample_intervals`, which needs :data:`MIN_SEEDS`.
    """
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return None
    if statistic == "mean":
        diff = float(x.mean() - constant)
        se = float(x.std(ddof=1) / np.sqrt(len(x)))
        t = t_quantile(1 - (1 - level) / 2, len(x) - 1)
        low, high, method = diff - t * se, diff + t * se, "one-sample-t"
        detail = f"one-sample t against a constant {constant:.2f}, n={len(x)}, df={len(x) - 1}"
    else:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
        sel = None if selection is None else np.asarray(selection, dtype=np.float64)[idx].T
        boot = seed_statistic(x[idx].T, statistic, sel) - constant
        diff = float(seed_statistic(x, statistic, selection) - constant)
        low, high = _percentile(boot, level)
        method = "one-sample-bootstrap"
        detail = (f"bootstrap over seeds against a constant {constant:.2f}, n={len(x)}, {n_resamples} resamples, "
                  f"seed {seed}")
    if constant_first:
        diff, low, high = -diff, -high, -low
    return Interval(diff, low, high, method, detail)


def one_sample_intervals(values: Sequence[float], constant: float, statistic: str, *, selection=None,
                         constant_first: bool = False, **options) -> list[Interval]:
    """The one-sample intervals a verdict requires (every one must agree): [] below :data:`MIN_SEEDS`
    seeds; best-of-N or max adds the one-sample t of the seeds' mean to the bootstrap of the statistic."""
    if len(values) < MIN_SEEDS:
        return []
    found = [one_sample_interval(values, constant, statistic, selection=selection, constant_first=constant_first,
                                 **options)]
    if statistic in GATED_BY_MEANS:
        found.append(one_sample_interval(values, constant, "mean", constant_first=constant_first,
                                         level=options.get("level", LEVEL)))
    return found


def minimum_detectable_difference(sd_a: float | None, n_a: int | None, sd_b: float | None, n_b: int | None, *,
                                  level: float = LEVEL, power: float = POWER) -> float | None:
    """The smallest true |A - B| a two-sided t test at ``level`` detects with probability ``power``.

    ``sd`` is a side's sample std over seeds and ``n`` its seeds; a deterministic side is ``(0, None)``
    (a constant: no variance term). MDD = (t_{1-alpha/2, df} + t_{power, df}) * SE with
    SE = sqrt(sd_a^2/n_a + sd_b^2/n_b) and Welch-Satterthwaite df (one-sample: n - 1). None when a
    side that varies has fewer than 2 seeds (no df) or a std is unknown.
    """
    terms, dfs = [], []
    for sd, n in ((sd_a, n_a), (sd_b, n_b)):
        if n is None:                     # deterministic
            continue
        if sd is None or n < 2:
            return None
        terms.append(sd ** 2 / n)
        dfs.append(n - 1)
    if not terms:
        return 0.0
    var = sum(terms)
    if var == 0.0:
        return 0.0
    df = var ** 2 / sum(t ** 2 / d for t, d in zip(terms, dfs))
    quantile = t_quantile(1 - (1 - level) / 2, df) + t_quantile(power, df)
    return float(quantile * np.sqrt(var))


SPREAD_STATISTICS = ("std", "range")
_SPREAD_FACTORS: dict[tuple[str, int], float] = {}


def spread_factor(statistic: str, n: int) -> float:
    """The standard deviation of a seed spread statistic over ``n`` normal seeds, per unit of the seeds'
    sigma: ``std`` the population std (ddof 0, the tables' convention; exact from c4), ``range``
    the range (d3, the control-chart constant, from a seeded simulation of 200,000 draws, cached)."""
    key = (statistic, n)
    if key not in _SPREAD_FACTORS:
        if n < 2:
            raise ValueError(f"a {statistic} over {n} seed(s) has no sampling spread to compute")
        if statistic == "std":
            from scipy.special import gammaln

            c4 = np.sqrt(2.0 / (n - 1)) * np.exp(gammaln(n / 2) - gammaln((n - 1) / 2))
            _SPREAD_FACTORS[key] = float(np.sqrt((n - 1) / n) * np.sqrt(1 - c4 ** 2))
        elif statistic == "range":
            draws = np.random.default_rng(0).standard_normal((200_000, n))
            _SPREAD_FACTORS[key] = float(np.ptp(draws, axis=1).std())
        else:
            raise ValueError(f"'{statistic}' is not a spread statistic (known: {', '.join(SPREAD_STATISTICS)})")
    return _SPREAD_FACTORS[key]


def minimum_detectable_spread_difference(statistic: str, sd_a: float | None, n_a: int | None, sd_b: float | None,
                                         n_b: int | None, *, level: float = LEVEL,
                                         power: float = POWER) -> float | None:
    """The smallest true difference of two sides' std (or range) over seeds that a two-sided test at
    ``level`` finds with probability ``power`` (normal approximation): (z_{1-alpha/2} + z_power) x
    sqrt(se_a^2 + se_b^2), se = :func:`spread_factor` x the side's sample std. A deterministic side is
    ``(0, None)``. None when a varying side has fewer than 2 seeds or no std."""
    from scipy import stats as scipy_stats

    terms = []
    for sd, n in ((sd_a, n_a), (sd_b, n_b)):
        if n is None:
            continue
        if sd is None or n < 2:
            return None
        terms.append((spread_factor(statistic, n) * sd) ** 2)
    quantile = scipy_stats.norm.ppf(1 - (1 - level) / 2) + scipy_stats.norm.ppf(power)
    return float(quantile * np.sqrt(sum(terms)))


def minimum_detectable_from_interval(interval: Interval, *, level: float = LEVEL, power: float = POWER) -> float:
    """The minimum detectable difference an interval implies (normal approximation): its standard
    error, half its width over z_{1-alpha/2}, times (z_{1-alpha/2} + z_power). Used for two
    deterministic sides, whose only noise is the items'."""
    from scipy import stats as scipy_stats

    z = scipy_stats.norm.ppf(1 - (1 - level) / 2)
    return float((z + scipy_stats.norm.ppf(power)) * (interval.high - interval.low) / (2 * z))


def false_reversed_chance(n_claims: int, level: float = LEVEL) -> float:
    """Chance that at least one of ``n_claims`` true claims is called "reversed" when each is tested
    with its own two-sided interval at ``level`` (one tail each, independence assumed, no correction)."""
    return float(1.0 - (1.0 - (1.0 - level) / 2.0) ** n_claims)


def false_call_bound(n_claims: int, level: float = LEVEL) -> float:
    """An upper bound on the chance of at least one false call (a false "holds" or a false
    "reversed") among ``n_claims`` judged claims, each tested at one tail of ``level``: the union
    bound n x (1 - level) / 2, capped at 1. It needs no independence (the per-task claims share runs),
    and one tail of (1 - level) / 2 per claim is itself a bound, reached only at a difference exactly at
    the claim's threshold."""
    return float(min(1.0, n_claims * (1.0 - level) / 2.0))


def one_sided_p(interval: Interval, direction: str, *, margin: float = 0.0, at_least: float | None = None,
                level: float = LEVEL) -> float:
    """The one-sided p-value of "holds" that an interval implies (normal approximation: its standard
    error is half its width over z_{1-alpha/2}): for ``greater`` the chance of an estimate this far
    above 0 (``at_least``) with no true gain, mirrored for ``less``; for ``no_gain`` this far below the
    margin. A point interval (an exact difference) gives 0 or 1."""
    from scipy import stats as scipy_stats

    z = scipy_stats.norm.ppf(1 - (1 - level) / 2)
    se = (interval.high - interval.low) / (2 * z)
    threshold = 0.0 if at_least is None else abs(at_least)
    if direction == "greater":
        distance = interval.estimate - threshold
    elif direction == "less":
        distance = -interval.estimate - threshold
    else:
        distance = margin - interval.estimate
    if se == 0:
        return 0.0 if distance > 0 else 1.0
    return float(scipy_stats.norm.sf(distance / se))


def holm(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected with family-wise error at most
    ``alpha`` (any dependence). Sorted ascending, the k-th smallest (k = 0, 1, ...) is rejected while
    p <= alpha / (m - k); the first that is not stops the procedure."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    rejected = [False] * len(pvalues)
    for rank, index in enumerate(order):
        if pvalues[index] > alpha / (len(pvalues) - rank):
            break
        rejected[index] = True
    return rejected


# --- paired bootstrap over evaluation items --------------------------------------------------------


def value_groups(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's group among the distinct values, ascending: (n,) -> group ids (n,), number of groups."""
    distinct, groups = np.unique(np.asarray(values), return_inverse=True)
    return groups.reshape(-1), len(distinct)


def resampled_ranks(groups: np.ndarray, n_groups: int, draws: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged, as rankdata) of each resample's drawn items, without sorting.

    groups (n,) from :func:`value_groups`; draws (R, m) item indices -> ranks (R, m). Per row, the items
    of value group g occupy ranks below(g) + 1 .. below(g) + count(g); each gets their average.
    """
    rows, m = draws.shape
    drawn = groups[draws]                                                      # (R, m)
    flat = (np.arange(rows)[:, None] * n_groups + drawn).ravel()
    counts = np.bincount(flat, minlength=rows * n_groups).reshape(rows, n_groups).astype(np.float64)
    below = np.cumsum(counts, axis=1) - counts                                 # (R, G)
    return np.take_along_axis(below + (counts + 1.0) / 2.0, drawn, axis=1)     # (R, m)


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row: (R, m), (R, m) -> (R,)."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    return (x * y).sum(axis=1) / np.where(den == 0, np.nan, den)


@dataclass(frozen=True)
class PairedTask:
    """One task's items scored by both sides: per-seed predictions (S, n) and the gold labels (n,)."""

    a: np.ndarray        # (Sa, n)
    b: np.ndarray        # (Sb, n)
    gold: np.ndarray     # (n,)

    def __post_init__(self):
        n = len(self.gold)
        if self.a.ndim != 2 or self.b.ndim != 2 or self.a.shape[1] != n or self.b.shape[1] != n:
            raise ValueError(f"paired task: predictions {self.a.shape} and {self.b.shape} do not match {n} items")


def paired_bootstrap(tasks: dict[str, PairedTask], statistic_a: str, statistic_b: str | None = None, *,
                     n_resamples: int = 1000, seed: int = 0, level: float = LEVEL,
                     chunk: int = 200) -> Interval:
    """Paired bootstrap of stat(A) - stat(B) of the STS score (Spearman x100); several tasks are averaged.

    Per replicate, each task (sorted by name, so the draws do not depend on dict order) draws one
    index vector of its items; every seed of both sides is scored on it; the seed statistic
    (``best`` must already be reduced to the chosen seed by the caller) combines seeds; the task
    scores are averaged over tasks. Ranks within a resample come from counting value groups
    (:func:`resampled_ranks`), the gold ranks once per resample for every seed of both sides.
    Returns the percentile interval of A - B and the full-data estimate.
    """
    if not tasks:
        raise ValueError("paired_bootstrap needs at least one task")
    statistic_b = statistic_a if statistic_b is None else statistic_b
    rng = np.random.default_rng(seed)
    diffs = np.zeros(n_resamples)                                         # (R,)
    estimate = 0.0
    for name in sorted(tasks):
        task = tasks[name]
        n = len(task.gold)
        gold_groups = value_groups(task.gold)
        pred_groups = ([value_groups(p) for p in task.a], [value_groups(p) for p in task.b])

        def difference(idx: np.ndarray) -> np.ndarray:                    # idx (R, n) -> (R,)
            gold_ranks = resampled_ranks(*gold_groups, idx)
            side_a = _side(pred_groups[0], gold_ranks, idx, statistic_a)
            return side_a - _side(pred_groups[1], gold_ranks, idx, statistic_b)

        estimate += float(difference(np.arange(n)[None, :])[0])
        draws = rng.integers(0, n, size=(n_resamples, n))                 # (R, n)
        for start in range(0, n_resamples, chunk):
            diffs[start:start + chunk] += difference(draws[start:start + chunk])
    diffs /= len(tasks)
    low, high = _percentile(diffs, level)
    return Interval(estimate / len(tasks), low, high, "paired-bootstrap",
                    f"paired bootstrap over items, {n_resamples} resamples, seed {seed}, "
                    f"{len(tasks)} task(s): {', '.join(sorted(tasks))}")


def item_bootstrap_against_constant(tasks: dict[str, tuple[np.ndarray, np.ndarray]], statistic: str,
                                    constant: float, *, constant_first: bool = False, n_resamples: int = 1000,
                                    seed: int = 0, level: float = LEVEL, chunk: int = 200) -> Interval:
    """Bootstrap over evaluation items of stat(A) - constant (or constant - stat(A)): a deterministic
    side scored on its STS items against a published number, whose per-item predictions are not
    published. ``tasks``: {task: (predictions (S, n), gold (n,))}; several tasks are averaged, each
    resampled independently, as :func:`paired_bootstrap` does. Only our side's test-set noise is in
    it (the published side scored the same items, so the difference's true spread may be smaller or
    larger): the detail says so.
    """
    if not tasks:
        raise ValueError("item_bootstrap_against_constant needs at least one task")
    rng = np.random.default_rng(seed)
    scores = np.zeros(n_resamples)                                        # (R,)
    estimate = 0.0
    for name in sorted(tasks):
        predictions, gold = tasks[name]
        n = len(gold)
        gold_groups = value_groups(gold)
        groups = [value_groups(p) for p in predictions]

        def score(idx: np.ndarray) -> np.ndarray:                         # idx (R, n) -> (R,)
            return _side(groups, resampled_ranks(*gold_groups, idx), idx, statistic)

        estimate += float(score(np.arange(n)[None, :])[0])
        draws = rng.integers(0, n, size=(n_resamples, n))
        for start in range(0, n_resamples, chunk):
            scores[start:start + chunk] += score(draws[start:start + chunk])
    diffs = scores / len(tasks) - constant
    diff = estimate / len(tasks) - constant
    low, high = _percentile(diffs, level)
    if constant_first:
        diff, low, high = -diff, -high, -low
    return Interval(diff, low, high, "item-bootstrap-vs-constant",
                    f"bootstrap over our items against a published constant {constant:.2f} (its own test-set "
                    f"noise unknown), {n_resamples} resamples, seed {seed}, {len(tasks)} task(s): "
                    f"{', '.join(sorted(tasks))}")


def exact_difference(a: float, b: float, why: str) -> Interval:
    """Two deterministic numbers computed over a whole population (no sample, no seed): the
    difference is exact, its interval a point. ``why`` says what makes it a population."""
    return Interval(a - b, a - b, a - b, "exact", why)


def _side(groups: list[tuple[np.ndarray, int]], gold_ranks: np.ndarray, idx: np.ndarray, statistic: str) -> np.ndarray:
    """One side's seed statistic of Spearman x100 on each resample: idx (R, n) -> (R,)."""
    per_seed = np.stack([100.0 * pearson_rows(resampled_ranks(g, k, idx), gold_ranks) for g, k in groups])  # (S, R)
    return seed_statistic(per_seed, "max" if statistic == "best" else statistic)


# --- verdicts and cell noise ----------------------------------------------------------------------


def verdict(intervals: Sequence[Interval], direction: str, *, margin: float = 0.0,
            at_least: float | None = None) -> str:
    """holds / reversed / inconclusive from the available intervals of A - B.

    ``greater`` (A beats B) holds when every interval lies above 0 (above ``at_least`` for an "at least
    d" claim) and is reversed when every interval lies below 0; ``less`` mirrors it. ``no_gain`` (A
    does not improve on B) is a non-superiority test with equivalence ``margin`` (>= 0): it holds when
    every interval's upper end is at or below the margin (any gain is smaller than the margin) and is
    reversed when every interval's lower end is above it. With no interval, or intervals that
    disagree, the claim is inconclusive.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown claim direction '{direction}' (known: {', '.join(DIRECTIONS)})")
    if margin < 0:
        raise ValueError(f"an equivalence margin is a size (>= 0), got {margin}")
    if not intervals:
        return INCONCLUSIVE
    if direction == "no_gain":
        if all(i.low > margin for i in intervals):
            return REVERSED
        if all(i.high <= margin for i in intervals):
            return HOLDS
        return INCONCLUSIVE
    want = 1 if direction == "greater" else -1
    threshold = 0.0 if at_least is None else abs(at_least)
    if all(want * i.low > threshold if want > 0 else want * i.high > threshold for i in intervals):
        return HOLDS
    if {i.excludes_zero() for i in intervals} == {-want}:
        return REVERSED
    return INCONCLUSIVE


def magnitude_position(interval: Interval, target: float) -> str:
    """Where a claimed size (as a value of A - B) lies against an interval: inside, or the interval
    lies below / above it (ours is smaller / larger than claimed)."""
    if interval.contains(target):
        return "inside"
    return "ours smaller" if interval.high < target else "ours larger"


def signed_magnitude(magnitude: float | None, direction: str) -> float | None:
    """A claimed magnitude as a value of A - B ("improves by 2.60" -> +2.60; "less by 1.4" -> -1.4)."""
    if magnitude is None:
        return None
    return -abs(magnitude) if direction == "less" else abs(magnitude)


@dataclass(frozen=True)
class Noise:
    """Is a reproduced cell within the noise of the paper's number?"""

    delta: float          # ours - paper
    sd: float             # sqrt(paper_se^2 + ours_se^2): the standard error of the difference
    within: bool          # |delta| <= z * sd
    basis: str            # where each standard error came from


def standard_error(pop_std: float | None, n: int, statistic: str) -> float | None:
    """The noise of a cell's headline number from its seeds' population std (the tables' ddof=0).

    A mean of n seeds: the standard error sample_std / sqrt(n) = pop_std / sqrt(n - 1). Best-of-N is
    one chosen run: a single seed's spread, the sample std. None with fewer than 2 seeds or no std.
    """
    if pop_std is None or n < 2:
        return None
    sample = pop_std * np.sqrt(n / (n - 1))
    return float(sample / np.sqrt(n)) if statistic == "mean" else float(sample)


def within_noise(ours: float, ours_se: float, paper: float, paper_se: float, *, basis: str = "",
                 z: float = 1.96, rounding: float = 0.0) -> Noise:
    """|ours - paper| <= z * sqrt(paper_se^2 + ours_se^2) + rounding: both numbers' standard errors
    (the caller says where each came from in ``basis``); ``rounding`` is half the printed last digit,
    the only slack two deterministic numbers have."""
    sd = float(np.sqrt(paper_se ** 2 + ours_se ** 2))
    delta = float(ours - paper)
    return Noise(delta, sd, abs(delta) <= z * sd + rounding + 1e-9, f"{basis}, z={z}" if basis else f"z={z}")
