"""Test every claim of claims.yaml on this experiment's metrics files: ours with intervals, a verdict.

For each claim both sides are read from the cells the table builder computes from the same metrics
files the tables use (:func:`sentrepro.tables.build.build_table`), so ours here is the number the
table shows. Each side is one of three kinds: **trained** (its metrics files descend from a training
summary: seeds vary), **deterministic** (a frozen model: one evaluation, no seed variance) or
**published** (a reported-only row: the paper's number, a constant). Per claim:

* ours: difference of the sides' headline seed statistics (best-of-N or mean, or the column's
  forced statistic), a - b;
* seed intervals: two trained sides -> :func:`sentrepro.verdicts.stats.seed_intervals` (Welch's t for means;
  best-of-N: a bootstrap over seeds *and* Welch's t on the same seeds' means, both required; std or
  range: a bootstrap *and* the F interval of the variance ratio); a
  trained side against a constant (a deterministic or published side) ->
  :func:`sentrepro.verdicts.stats.one_sample_intervals`; two constants -> none needed (no seed variance). A
  trained side with fewer than :data:`sentrepro.verdicts.stats.MIN_SEEDS` (3) seeds makes the claim **not
  decidable**: below that no interval over seeds keeps its error rate, and no item-level interval
  can replace seed variance;
* test-set interval (:func:`sentrepro.verdicts.stats.paired_bootstrap`): from the per-pair cosines kept
  beside STS metrics files; every seed the statistic uses is scored on the same resample of each
  task (best-of-N: the selected seed); the Avg. column averages the tasks resampled independently;
* verdict: holds / reversed / inconclusive from the available intervals (all must agree; ``no_gain``
  claims with the claim's equivalence ``margin``, "at least d" claims with ``at_least``);
  "inconclusive — underpowered" when the minimum detectable difference at these seeds exceeds the
  paper's own difference; "not run" with a named cause; and where the claimed magnitude lies against
  each interval (inside, ours smaller, ours larger), reported apart from the sign.

A claim with a stand-in backbone or synthetic data on either side is computed (``computed``, for the
code path) but its verdict is "not judged" and it is left out of every count.

Cell noise: every reproduced cell of those tables with a published number gets
:func:`sentrepro.verdicts.stats.within_noise` with both numbers' standard errors (a mean's, or one run's
for best-of-N); a missing std comes from the suite's spread (the median of the papers' printed stds
for that suite and metric). Stand-in and synthetic cells are never compared with the paper's number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentrepro.evaluation.item_scores import ItemScoresError, item_scores_file, read_pairs
from sentrepro.files import read_json
from sentrepro.hashing import sha256_file
from sentrepro.records.provenance import project_path
from sentrepro.verdicts.stats import (
    HOLDS,
    INCONCLUSIVE,
    Interval,
    Noise,
    PairedTask,
    exact_difference,
    holm,
    one_sided_p,
    item_bootstrap_against_constant,
    magnitude_position,
    MIN_SEEDS,
    SPREAD_STATISTICS,
    minimum_detectable_difference,
    minimum_detectable_from_interval,
    minimum_detectable_spread_difference,
    one_sample_intervals,
    paired_bootstrap,
    seed_intervals,
    signed_magnitude,
    standard_error,
    verdict,
    within_noise,
)
from sentrepro.tables.build import Cell, TableResult, build_table, metric_value, paper_value
from sentrepro.planning.reported import ReportedValue, load_reported
from sentrepro.planning.table_specs import cell_selector, load_spec
from sentrepro.verdicts.claims import CLAIMS_PATH, Side, claim_tables, sides

NOT_RUN = "not run"
NOT_DECIDABLE = "not decidable"
UNDERPOWERED = "inconclusive — underpowered"
NOT_JUDGED = "not judged"
TRAINED, DETERMINISTIC, PUBLISHED = "trained", "deterministic", "published"
# why a claim was not run, in order of precedence (a claim takes the first that applies to either side: a side
# with no run at all explains it before the other side's empty average) and the order the summary lists them
NOT_RUN_CAUSES = ("no run in this experiment", "metric missing", "average left empty", "reported only")
STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
NOISE_STATISTICS = ("mean", "best")   # a forced std/max/range column is not a noisy estimate of the paper's


@dataclass
class SideResult:
    side: Side
    label: str                              # the row label as the table prints it (stand-in, synthetic)
    cell: Cell | None
    paper: ReportedValue | None
    suite: str | None
    key: str | None
    reported_only: bool
    backbone: str | None = None             # the paper backbone the spec names for this cell
    row_ran: bool = False                   # other cells of the row have numbers of ours
    missing: tuple = ()                     # an aggregate (Avg.) the table left empty: the columns it lacks
    kind: str | None = None                 # trained / deterministic / published; None: no number
    paper_seeds: int | None = None          # seeds behind the paper's number (reported statistic or max_seeds)
    digits: int = 2                         # decimals the table prints this cell with (the spec's `digits`)

    @property
    def ours(self) -> float | None:
        if self.kind == PUBLISHED:
            return self.paper.value
        return None if self.cell is None else self.cell.value

    @property
    def statistic(self) -> str | None:
        return None if self.cell is None else self.cell.statistic

    @property
    def n(self) -> int:
        return 0 if self.cell is None else len(self.cell.per_seed)

    @property
    def flagged(self) -> bool:
        """Computed on a stand-in backbone or on synthetic data: never a test of the paper."""
        return self.cell is not None and bool(self.cell.stand_in or self.cell.synthetic)

    def seeds_used(self) -> list:
        """The seeds behind ``ours``: the selected one for best-of-N, else every seed."""
        if self.cell is None or self.cell.summary is None:
            return []
        if self.cell.statistic == "best":
            return [self.cell.summary.best_seed]
        return list(self.cell.per_seed)


@dataclass
class ClaimResult:
    claim: dict
    a: SideResult
    b: SideResult
    ours_delta: float | None = None
    seed: Interval | None = None
    seed_note: str = ""
    items: Interval | None = None
    items_note: str = ""
    exact: Interval | None = None                           # two deterministic population numbers: a point
    verdict: str = NOT_RUN
    why: str = ""                                           # what decided (or blocked) the verdict
    cause: str = ""                                         # not run: one of NOT_RUN_CAUSES
    computed: str = ""                                      # not judged: the verdict the code computed
    mdd: float | None = None                                # minimum detectable difference (80% power)
    mdd_basis: str = ""
    magnitude: dict = field(default_factory=dict)           # interval method -> inside / ours smaller / larger
    gate: Interval | None = None            # required too: best-of-N's t on the means, a spread's F ratio
    labels: list = field(default_factory=list)              # stand-in / synthetic / partial average
    notes: list = field(default_factory=list)
    item_files: dict = field(default_factory=dict)          # "a"/"b" -> {seed: Path}
    p_value: float | None = None                            # judged: one-sided p of "holds" (the largest interval's)
    holm_holds: bool | None = None                          # judged: still holds under Holm over the judged claims

    @property
    def paper_values(self) -> tuple[float | None, float | None]:
        """The paper's a and b: its tables' numbers, else the values its text quotes (``paper_values``)."""
        quoted = self.claim.get("paper_values") or [None, None]
        return tuple(s.paper.value if s.paper is not None and s.paper.value is not None else q
                     for s, q in zip((self.a, self.b), quoted))

    @property
    def paper_delta(self) -> float | None:
        a, b = self.paper_values
        return None if a is None or b is None else a - b

    @property
    def digits(self) -> int:
        return max(self.a.digits, self.b.digits)

    @property
    def partial(self) -> bool:
        """Ours averages fewer tasks than the paper's Avg.: its size is not comparable with the paper's."""
        return any(label.startswith("Avg. over") for label in self.labels)

    @property
    def synthetic(self) -> bool:
        return any(s.cell is not None and s.cell.synthetic for s in (self.a, self.b))

    @property
    def flagged(self) -> bool:
        return self.a.flagged or self.b.flagged

    @property
    def magnitude_inside(self) -> dict:
        return {m: p == "inside" for m, p in self.magnitude.items()}

    def intervals(self) -> list[Interval]:
        return [i for i in (self.seed, self.gate, self.items, self.exact) if i is not None]


@dataclass
class CellNoise:
    cell: Cell
    noise: Noise | None          # None: synthetic or not comparable
    reason: str = ""


@dataclass
class VerdictResult:
    experiment: str
    claims: list[ClaimResult]
    not_checked: list[dict]
    cells: list[CellNoise]
    settings: dict               # claims.yaml noise + bootstrap
    claims_file: str             # path#sha256=...
    spreads: dict = field(default_factory=dict)   # (suite, key or "*") -> (spread, how many stds)


class VerdictError(ValueError):
    """The metrics files cannot answer a claim as specified (e.g. the two sides scored different items)."""


# --- locating the two sides ------------------------------------------------------------------------


class Tables:
    """Built tables (each spec once) and the spec-label -> printed-label maps."""

    def __init__(self, names: list[str], metrics_files: list[Path], backbones: dict, reported: dict):
        self.reported = reported
        self.specs = {name: load_spec(name) for name in names}
        self.results: dict[str, TableResult] = {
            name: build_table(spec, metrics_files, backbones, reported=reported) for name, spec in self.specs.items()}

    def locate(self, side: Side) -> SideResult:
        spec, result = self.specs[side.table], self.results[side.table]
        row_index = [r["label"] for r in spec["rows"]].index(side.row)
        col_index = [c["label"] for c in spec["columns"]].index(side.column)
        row, column = spec["rows"][row_index], spec["columns"][col_index]
        printed_row, printed_column = result.rows[row_index][0], result.columns[col_index]
        cell = next((c for c in result.cells if c.row == printed_row and c.column == printed_column), None)
        selector = cell_selector(spec, row, column)
        paper = cell.reported if cell is not None else paper_value(self.reported, spec, row, column, selector["key"])
        missing = tuple(cell.missing) if cell is not None and cell.value is None else ()
        if cell is not None and cell.value is None:
            cell = None
        ran = any(c.row == printed_row and c.value is not None for c in result.cells)
        reported_only = bool(row.get("reported_only"))
        if cell is not None:
            kind = TRAINED if trained(cell) else DETERMINISTIC
        else:
            kind = PUBLISHED if reported_only and paper is not None and paper.value is not None else None
        seeds = (paper.statistic or {}).get("seeds") if paper is not None else None
        return SideResult(side, printed_row, cell, paper, selector.get("suite"), selector.get("key"),
                          reported_only, selector.get("backbone"), ran, missing, kind,
                          seeds or spec.get("max_seeds"), spec.get("digits", 2))


_TRAINED: dict[str, bool] = {}


def trained(cell: Cell) -> bool:
    """Whether a cell's runs were trained: their metrics files' provenance names a training summary
    (sentrepro.evaluation.job adds one for every trained run; a frozen model has none)."""
    for path in cell.files.values():
        key = f"{path}@{Path(path).stat().st_mtime_ns}"
        if key not in _TRAINED:
            inputs = (read_json(path).get("provenance") or {}).get("inputs") or []
            _TRAINED[key] = any(isinstance(e, dict) and e.get("role") == "training summary" for e in inputs)
        if _TRAINED[key]:
            return True
    return False


# --- intervals -----------------------------------------------------------------------------------------


def _selection(side: SideResult, spec: dict) -> list[float] | None:
    """Per-seed selection metric (the spec's select_by) for a best-of-N side, in per_seed order."""
    if side.statistic != "best":
        return None
    values = []
    for seed in side.cell.per_seed:
        value = metric_value(read_json(side.cell.files[seed])["results"], spec["select_by"])
        if value is None:
            raise VerdictError(f"{side.cell.files[seed]}: no '{spec['select_by']}' to select the best seed by")
        values.append(value)
    return values


def _item_tasks(side: SideResult, key: str) -> tuple[dict[str, np.ndarray], np.ndarray | None, dict, list[str]]:
    """{task: predictions (S, n)}, {task: gold (n,)}, {seed: items file} of a side's seeds, and tasks."""
    per_task: dict[str, list[np.ndarray]] = {}
    gold: dict[str, np.ndarray] = {}
    files = {}
    for seed in side.seeds_used():
        path = side.cell.files[seed]
        payload = read_json(path)
        pairs = read_pairs(path, payload)
        files[seed] = item_scores_file(path, payload)
        for task, (cosine, labels) in pairs.items():
            if task in gold and not np.array_equal(gold[task], labels):
                raise VerdictError(f"{path}: {task} gold scores differ between seeds of {side.label}")
            gold[task] = labels
            per_task.setdefault(task, []).append(cosine)
    tasks = sorted(per_task) if key == "avg" else [key]
    missing = [t for t in tasks if t not in per_task]
    if missing:
        raise ItemScoresError(f"{side.label}: no per-pair scores for {', '.join(missing)}")
    return {t: np.stack(per_task[t]) for t in tasks}, gold, files, tasks


def _test_set_interval(result: ClaimResult, settings: dict) -> None:
    a, b = result.a, result.b
    if a.suite != "sts" or b.suite != "sts":
        result.items_note = (f"no test-set interval: per-item scores are kept for STS only "
                             f"(suite {a.suite if a.suite != 'sts' else b.suite})")
        return
    if a.key != b.key:
        result.items_note = f"no test-set interval: the sides read different metrics ({a.key} vs {b.key})"
        return
    try:
        pred_a, gold_a, files_a, tasks_a = _item_tasks(a, a.key)
        pred_b, gold_b, files_b, tasks_b = _item_tasks(b, b.key)
    except ItemScoresError as exc:
        result.items_note = f"no test-set interval: {exc}"
        return
    if tasks_a != tasks_b:
        raise VerdictError(f"claim {result.claim['id']}: the sides were scored on different tasks "
                           f"({', '.join(tasks_a)} vs {', '.join(tasks_b)})")
    tasks = {}
    for task in tasks_a:
        if not np.array_equal(gold_a[task], gold_b[task]):
            raise VerdictError(f"claim {result.claim['id']}: {task} items differ between the sides "
                               f"(gold scores of {a.label} and {b.label})")
        tasks[task] = PairedTask(pred_a[task], pred_b[task], gold_a[task])
    result.items = paired_bootstrap(tasks, a.statistic, b.statistic, n_resamples=settings["item_resamples"],
                                    seed=settings["item_seed"], level=settings["level"])
    result.item_files = {"a": files_a, "b": files_b}


def _items_against_constant(result: ClaimResult, settings: dict) -> None:
    """A deterministic STS side against a published number: a bootstrap over our side's items
    (the published side's per-item scores do not exist). A trained side has its seed interval."""
    a, b = result.a, result.b
    ours, published = (a, b) if b.kind == PUBLISHED else (b, a)
    if ours.kind != DETERMINISTIC or ours.suite != "sts":
        result.items_note = "no test-set interval: one side is a published number (no per-item scores)"
        return
    try:
        predictions, gold, files, tasks = _item_tasks(ours, ours.key)
    except ItemScoresError as exc:
        result.items_note = f"no test-set interval: {exc}"
        return
    result.items = item_bootstrap_against_constant(
        {t: (predictions[t], gold[t]) for t in tasks}, ours.statistic, published.ours, constant_first=ours is b,
        n_resamples=settings["item_resamples"], seed=settings["item_seed"], level=settings["level"])
    result.item_files = {"a" if ours is a else "b": files}


def _seed_interval(result: ClaimResult, tables: Tables, settings: dict) -> str | None:
    """Set ``result.seed`` by the sides' kinds; returns why the claim is not decidable, else None."""
    a, b = result.a, result.b
    short = [s for s in (a, b) if s.kind == TRAINED and s.n < MIN_SEEDS]
    if short:
        return "; ".join(f"{s.label} is a trained side with {s.n} seed(s): below {MIN_SEEDS} seeds no interval "
                         "over seeds keeps its stated error rate, so none can separate the methods from the seed"
                         for s in short)
    options = dict(n_resamples=settings["seed_resamples"], seed=settings["seed_seed"], level=settings["level"])
    if a.kind == TRAINED and b.kind == TRAINED:
        if a.statistic != b.statistic:
            result.seed_note = f"no seed interval: the sides use different statistics ({a.statistic} vs {b.statistic})"
            return None
        values_a, values_b = list(a.cell.per_seed.values()), list(b.cell.per_seed.values())
        found = seed_intervals(values_a, values_b, a.statistic,
                               selection_a=_selection(a, tables.specs[a.side.table]),
                               selection_b=_selection(b, tables.specs[b.side.table]), **options)
        result.seed, result.gate = (found + [None, None])[:2]
        return None
    if TRAINED in (a.kind, b.kind):
        varying, constant = (a, b) if a.kind == TRAINED else (b, a)
        found = one_sample_intervals(list(varying.cell.per_seed.values()), constant.ours, varying.statistic,
                                     selection=_selection(varying, tables.specs[varying.side.table]),
                                     constant_first=varying is b, **options)
        result.seed, result.gate = (found + [None, None])[:2]
        result.seed_note = f"{constant.label} is {constant.kind}: tested as a constant"
        return None
    result.seed_note = "no seed interval needed: both sides are constants (deterministic or published)"
    return None


def _cause(side: SideResult) -> tuple[str, str]:
    """(cause, explanation) of a side without a number of ours."""
    if side.reported_only:
        return "reported only", "reported only, not run by this workflow (and the paper prints no number here)"
    if side.missing:
        return "average left empty", (f"{side.side.column} left empty: ours lacks {', '.join(side.missing)} "
                                      "(an average of some columns is never set against the paper's average of all)")
    if side.row_ran:
        return "metric missing", f"its runs' {side.suite} metrics files have no '{side.key}'"
    return "no run in this experiment", "no run of ours in this experiment"


def _power(result: ClaimResult, level: float) -> None:
    """The minimum detectable difference of the claim's own statistic, and the basis it was computed on.

    Seeds (ours; the paper's std and seeds where we have no spread): a difference of means (best-of-N
    treated as a mean) or, for a std or range claim, of that spread statistic. Two deterministic sides
    have no seed noise: the test-set (items) interval's noise, or 0 for an exact difference.
    """
    if result.a.kind == result.b.kind == DETERMINISTIC:
        if result.items is not None:
            result.mdd = minimum_detectable_from_interval(result.items, level=level)
            result.mdd_basis = "both sides deterministic: the test-set interval's noise (80% power)"
        elif result.exact is not None:
            result.mdd, result.mdd_basis = 0.0, "both sides deterministic and exact: no noise"
        else:
            result.mdd_basis = "no minimum detectable difference: two deterministic sides and no interval"
        return
    statistic = result.a.statistic or result.b.statistic
    parts, args = [], []
    for s in (result.a, result.b):
        if s.kind in (DETERMINISTIC, PUBLISHED):
            args += [0.0, None]
            parts.append(f"{s.label}: constant")
        elif s.kind == TRAINED and s.n >= 2:
            sample = float(np.std(list(s.cell.per_seed.values()), ddof=1))
            args += [sample, s.n]
            parts.append(f"{s.label}: our sd {sample:.2f}, n={s.n}")
        elif s.paper is not None and s.paper.std is not None and s.paper_seeds and s.paper_seeds >= 2:
            n = s.paper_seeds
            sample = s.paper.std * np.sqrt(n / (n - 1))
            args += [sample, n]
            parts.append(f"{s.label}: the paper's sd {s.paper.std:.2f}, n={n}")
        else:
            result.mdd_basis = f"no minimum detectable difference: no seed spread for {s.label}"
            return
    if statistic in SPREAD_STATISTICS:
        result.mdd = minimum_detectable_spread_difference(statistic, *args, level=level)
        result.mdd_basis = "; ".join(parts) + f" (80% power, of the difference of the {statistic} over seeds)"
    else:
        result.mdd = minimum_detectable_difference(*args, level=level)
        result.mdd_basis = "; ".join(parts) + " (80% power; best-of-N treated as a mean)"


def _underpowered(result: ClaimResult) -> bool:
    """The difference the claim needs is below what these seeds can detect."""
    if result.mdd is None:
        return False
    claim = result.claim
    if claim["direction"] == "no_gain":
        return result.mdd > float(claim.get("margin", 0.0))
    needed = abs(result.paper_delta) if result.paper_delta is not None else claim.get("magnitude")
    if claim.get("at_least") is not None and needed is not None:
        needed = abs(needed) - abs(claim["at_least"])      # how far the paper's difference clears d
    return needed is not None and abs(needed) < result.mdd


def judge(claim: dict, tables: Tables, settings: dict) -> ClaimResult:
    side_a, side_b = sides(claim)
    result = ClaimResult(claim, tables.locate(side_a), tables.locate(side_b))
    if claim.get("note"):
        result.notes.append(claim["note"])
    if claim.get("inconsistency"):
        result.notes.append(f"the paper is inconsistent: {claim['inconsistency']}")
    missing = [s for s in (result.a, result.b) if s.kind is None]
    if missing or {result.a.kind, result.b.kind} == {PUBLISHED}:
        causes = [_cause(s) for s in missing] or [("reported only", "both sides are published numbers only")]
        result.cause = next(c for c in NOT_RUN_CAUSES if c in {k for k, _ in causes})
        by_text: dict[str, list[str]] = {}                 # the same explanation for both sides is said once
        for s, (_, text) in zip(missing, causes):
            by_text.setdefault(text, []).append(s.label)
        result.why = "; ".join(f"{' and '.join(labels)}: {text}" for text, labels in by_text.items()) or causes[0][1]
        _power(result, settings["level"])
        return result
    result.ours_delta = result.a.ours - result.b.ours
    for s in (result.a, result.b):
        if s.cell is None:
            continue
        if s.cell.stand_in:
            result.labels.append(f"{s.cell.stand_in} in place of {s.backbone}")
        if s.cell.synthetic:
            result.labels.append(f"SYNTHETIC data: {', '.join(s.cell.synthetic)}")
        partial = partial_average(s)
        if partial:
            result.labels.append(f"Avg. over {len(partial)} of {len(STS_TASKS)} STS tasks ({', '.join(partial)})")
    result.labels = list(dict.fromkeys(result.labels))
    blocked = _seed_interval(result, tables, settings)
    if PUBLISHED in (result.a.kind, result.b.kind):
        _items_against_constant(result, settings)
    else:
        _test_set_interval(result, settings)
    if claim.get("exact") and result.a.kind == result.b.kind == DETERMINISTIC:
        result.exact = exact_difference(result.a.ours, result.b.ours, claim["exact"])
        result.seed_note = "no seed interval needed: both sides are deterministic over a whole population"

    _power(result, settings["level"])
    intervals = result.intervals()
    options = {"margin": float(claim.get("margin", 0.0)), "at_least": claim.get("at_least")}
    if blocked:
        computed, result.why = NOT_DECIDABLE, blocked
    elif not intervals:
        computed, result.why = INCONCLUSIVE, "no interval"
    else:
        computed = verdict(intervals, claim["direction"], **options)
        if computed == INCONCLUSIVE and _underpowered(result):
            computed = UNDERPOWERED
            result.why = (f"the seeds can detect a difference of {result.mdd:.2f} (80% power), more than the "
                          f"{'margin' if claim['direction'] == 'no_gain' else 'difference the paper claims'}")
    target = signed_magnitude(claim.get("magnitude"), claim["direction"])
    if target is not None and not result.partial:
        # the stated size is of the headline statistic: the gate (means, variance ratio) is not its interval
        result.magnitude = {i.method: magnitude_position(i, target) for i in intervals if i is not result.gate}
    if result.flagged:
        result.computed, result.verdict = computed, NOT_JUDGED
        result.why = ("computed on a stand-in backbone or synthetic data for the code path only "
                      f"(it would read '{computed}'); never counted") + (f"; {result.why}" if result.why else "")
    else:
        result.verdict = computed
    return result


def judged(results: list[ClaimResult]) -> list[ClaimResult]:
    """The claims judged on the papers' backbones and real data (every verdict but not run / not judged)."""
    return [r for r in results if r.verdict not in (NOT_RUN, NOT_JUDGED)]


def multiplicity(results: list[ClaimResult], level: float) -> None:
    """Each judged claim's one-sided p-value of "holds" (the largest over its intervals: every one must
    agree; 1 with none) and whether it still holds under Holm's correction over the judged claims at one
    tail of ``level``."""
    family = judged(results)
    for r in family:
        options = {"margin": float(r.claim.get("margin", 0.0)), "at_least": r.claim.get("at_least")}
        r.p_value = max((one_sided_p(i, r.claim["direction"], level=level, **options) for i in r.intervals()),
                        default=1.0)
    for r, rejected in zip(family, holm([r.p_value for r in family], (1 - level) / 2)):
        r.holm_holds = rejected and r.verdict == HOLDS


def partial_average(side: SideResult) -> list[str] | None:
    """The STS tasks an Avg. cell of ours averages when they are fewer than the paper's 7, else None."""
    if side.cell is None or side.key != "avg" or side.suite != "sts":
        return None
    results = read_json(next(iter(side.cell.files.values())))["results"]
    tasks = [t for t in STS_TASKS if t in results]
    return tasks if len(tasks) < len(STS_TASKS) else None


def suite_spreads(tables: Tables) -> dict[tuple[str, str], tuple[float, int]]:
    """(suite, metric key) -> (median of the papers' printed stds of that metric, how many), and
    (suite, "*") over every metric of the suite: the spread a number without its own std is given."""
    found: dict[tuple[str, str], list[float]] = {}
    for name, spec in tables.specs.items():
        for row in spec["rows"]:
            for column in spec["columns"]:
                if column.get("stat") not in (None, "mean"):
                    continue
                selector = cell_selector(spec, row, column)
                paper = paper_value(tables.reported, spec, row, column, selector["key"])
                if paper is not None and paper.std is not None:
                    found.setdefault((selector["suite"], selector["key"]), []).append(paper.std)
                    found.setdefault((selector["suite"], "*"), []).append(paper.std)
    return {k: (float(np.median(v)), len(v)) for k, v in sorted(found.items())}


def cell_noise(tables: Tables, spreads: dict) -> list[CellNoise]:
    out = []
    for name in sorted(tables.results):
        spec = tables.specs[name]
        for row in spec["rows"]:
            for column in spec["columns"]:
                side = tables.locate(Side(name, row["label"], column["label"]))
                if side.cell is not None and side.paper is not None and side.paper.value is not None:
                    out.append(_noise(side, spreads))
    return out


def _spread(side: SideResult, spreads: dict) -> tuple[float, str] | None:
    for key in (side.key, "*"):
        if (side.suite, key) in spreads:
            value, count = spreads[(side.suite, key)]
            what = "this metric" if key != "*" else "any metric"
            return value, f"{side.suite} spread {value:.2f} (median of {count} published std(s) of {what})"
    return None


RANDOM_EVALUATIONS = {"clustering": "KMeans restarts", "wos": "the probe's seed and split"}


def evaluation_noise(side: SideResult) -> tuple[float, str] | None:
    """A frozen cell's noise from its own evaluation's randomness, where the metrics file measures it:
    clustering keeps every KMeans restart's accuracy (``acc_std``, population std over ``seeds``), so the
    reported mean has standard error std / sqrt(n - 1); the Avg. averages the sets' means. None where
    the evaluation is deterministic or its randomness is not measured (WOS: one probe seed)."""
    if side.suite != "clustering" or side.cell is None:
        return None
    results = read_json(next(iter(side.cell.files.values())))["results"]
    names = [side.key] if side.key != "avg" else [k for k, v in results.items()
                                                   if k != "avg" and isinstance(v, dict) and "acc_std" in v]
    entries = [results.get(name) or {} for name in names]
    if not entries or any("acc_std" not in e or len(e.get("seeds") or []) < 2 for e in entries):
        return None
    ses = [e["acc_std"] / np.sqrt(len(e["seeds"]) - 1) for e in entries]
    se = float(np.sqrt(np.sum(np.square(ses))) / len(ses))
    return se, f"ours frozen, noise of its {len(entries[0]['seeds'])} KMeans restarts: se {se:.2f}"


def _noise(side: SideResult, spreads: dict) -> CellNoise:
    cell, paper = side.cell, side.paper
    partial = partial_average(side)
    if partial:
        return CellNoise(cell, None, f"ours averages {len(partial)} of {len(STS_TASKS)} STS tasks")
    if cell.synthetic:
        return CellNoise(cell, None, "synthetic data: not compared with the paper")
    if cell.stand_in:
        return CellNoise(cell, None, f"stand-in backbone ({cell.stand_in} in place of {side.backbone}): "
                                     "not compared with the paper")
    if cell.statistic not in NOISE_STATISTICS:
        return CellNoise(cell, None, f"a {cell.statistic} over seeds is not compared for noise")
    spread = _spread(side, spreads)
    # like with like: a paper row whose number is another statistic (the † rows: a mean of 10 seeds in a
    # best-of-4 table) is set against the same statistic of our seeds
    statistic, ours_value, like = cell.statistic, cell.value, ""
    other = (paper.statistic or {}).get("stat")
    if other and other != cell.statistic and cell.summary is not None and cell.summary.stat(other) is not None:
        statistic, ours_value = other, cell.summary.stat(other)
        like = f"like with like: our {other} of {cell.n} seeds against the paper's {other} ({paper.statistic['where']})"
    measured = evaluation_noise(side) if side.kind == DETERMINISTIC else None
    if measured is not None:
        ours_se, ours_basis = measured
    elif side.kind == DETERMINISTIC and side.suite in RANDOM_EVALUATIONS:
        return CellNoise(cell, None, f"frozen, but the {side.suite} evaluation is random "
                                     f"({RANDOM_EVALUATIONS[side.suite]}) and its spread is not measured")
    elif side.kind == DETERMINISTIC:
        ours_se, ours_basis = 0.0, "ours deterministic (se 0)"
    elif standard_error(cell.std, cell.n, statistic) is not None:
        ours_se = standard_error(cell.std, cell.n, statistic)
        ours_basis = f"our se {ours_se:.2f} ({statistic} of {cell.n} seeds)"
    elif spread is not None:
        ours_se, ours_basis = spread[0], f"ours one run: {spread[1]}"
    else:
        return CellNoise(cell, None, f"one run of ours and no published spread for suite {side.suite}")
    paper_n = side.paper_seeds
    if paper.std is not None:
        se = standard_error(paper.std, paper_n, statistic) if paper_n else None
        paper_se, paper_basis = ((se, f"paper se {se:.2f} (std {paper.std:.2f}, n={paper_n})") if se is not None
                                 else (paper.std, f"paper std {paper.std:.2f} (seeds unknown)"))
    elif measured is not None:
        paper_se, paper_basis = ours_se, "paper: the same protocol's noise as ours"
    elif side.kind == DETERMINISTIC:
        paper_se, paper_basis = 0.0, "paper deterministic (se 0)"
    elif spread is not None:
        n = paper_n if statistic == "mean" and paper_n and paper_n > 1 else 1
        paper_se = spread[0] * np.sqrt(n / (n - 1)) / np.sqrt(n) if n > 1 else spread[0]
        paper_basis = f"paper prints no std: {spread[1]}" + (f", n={n}" if n > 1 else ", one run")
    else:
        return CellNoise(cell, None, f"the paper prints no std and no published spread for suite {side.suite}")
    basis = "; ".join(b for b in (like, paper_basis, ours_basis) if b)
    noise = within_noise(ours_value, ours_se, paper.value, paper_se, basis=basis, rounding=0.5 * 10 ** -cell.digits)
    return CellNoise(cell, noise)


def build_verdicts(claims: dict, metrics_files: list[Path], backbones: dict, experiment: str, *,
                   reported: dict | None = None, claims_path: Path = CLAIMS_PATH) -> VerdictResult:
    reported = load_reported() if reported is None else reported
    tables = Tables(claim_tables(claims), [Path(p) for p in metrics_files], backbones, reported)
    settings = dict(claims["bootstrap"])
    results = [judge(claim, tables, settings) for claim in claims["claims"]]
    multiplicity(results, settings["level"])
    spreads = suite_spreads(tables)
    return VerdictResult(experiment=experiment, claims=results, not_checked=list(claims.get("not_checked") or []),
                         cells=cell_noise(tables, spreads),
                         settings={"bootstrap": settings},
                         claims_file=f"{project_path(claims_path)['path']}#sha256={sha256_file(claims_path)}",
                         spreads=spreads)


# --- provenance of one verdict row (what `sentrepro audit` follows) ------------------------------------


def _hashed(path: Path | None) -> str | None:
    return None if path is None else f"{path}#sha256={sha256_file(path)}"


def row_provenance(result: ClaimResult, claims_file: str) -> str:
    """JSON: the claim's source, each side's cell, statistic, seeds with value, metrics and items files."""
    def side(key: str, s: SideResult) -> dict:
        entry = {"cell": s.side.describe(), "printed_row": s.label, "statistic": s.statistic,
                 "paper": s.paper.where if s.paper else None, "seeds": []}
        if s.cell is not None:
            used = set(map(str, s.seeds_used()))
            items = result.item_files.get(key, {})
            for seed, value in s.cell.per_seed.items():
                entry["seeds"].append({"seed": seed, "value": value, "used": str(seed) in used,
                                       "metrics": _hashed(s.cell.files[seed]),
                                       "items": _hashed(items.get(seed))})
        return entry

    claim = result.claim
    return json.dumps({"claim": f"{claim['file']}:{claim['line']}", "claims_file": claims_file,
                       "a": side("a", result.a), "b": side("b", result.b)}, sort_keys=True, default=str)
