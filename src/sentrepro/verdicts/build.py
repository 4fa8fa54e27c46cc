"""Test every claim of claims.yaml on this experiment's metrics files: ours with intervals, a verdict.

For each claim both sides are read from the cells the table builder computes from the same metrics
files the tables use (:func:`sentrepro.tables.build.build_table`), so ours here is the number the
table shows. Per claim:

* ours: difference of the sides' headline seed statistics (best-of-N or mean, or the column's
  forced statistic), a - b;
* seed interval (:func:`sentrepro.stats.seed_interval`): Welch's t for means with n >= 3 seeds on
  both sides, else a bootstrap over seeds (n >= 2), else none;
* test-set interval (:func:`sentrepro.stats.paired_bootstrap`): from the per-pair cosines kept
  beside STS metrics files; every seed the statistic uses is scored on the same resample of each
  task (best-of-N: the selected seed); the Avg. column averages the tasks resampled independently;
* verdict: holds / reversed / inconclusive from the available intervals (all must agree), "not run"
  when a side has no number of ours, and whether the claimed magnitude lies inside each interval.

Cell noise: every reproduced cell of those tables with a published number gets
:func:`sentrepro.stats.within_noise` (the paper's std and ours, or the stated default).
Synthetic inputs and stand-in backbones are carried into every row's labels; a synthetic cell is
never compared with the paper's number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentrepro.evaluation.item_scores import ItemScoresError, item_scores_file, read_pairs
from sentrepro.fsutil import read_json, sha256_file
from sentrepro.provenance import project_path
from sentrepro.stats import (
    INCONCLUSIVE,
    Interval,
    Noise,
    PairedTask,
    paired_bootstrap,
    seed_interval,
    signed_magnitude,
    verdict,
    within_noise,
)
from sentrepro.tables.build import Cell, TableResult, build_table, metric_value, paper_value
from sentrepro.tables.reported import ReportedValue, load_reported
from sentrepro.tables.spec import cell_selector, load_spec
from sentrepro.verdicts.claims import CLAIMS_PATH, Side, claim_tables, sides

NOT_RUN = "not run"
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

    @property
    def ours(self) -> float | None:
        return None if self.cell is None else self.cell.value

    @property
    def statistic(self) -> str | None:
        return None if self.cell is None else self.cell.statistic

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
    verdict: str = NOT_RUN
    magnitude_inside: dict = field(default_factory=dict)    # interval method -> bool
    labels: list = field(default_factory=list)              # stand-in / synthetic / partial average
    notes: list = field(default_factory=list)
    item_files: dict = field(default_factory=dict)          # "a"/"b" -> {seed: Path}

    @property
    def paper_delta(self) -> float | None:
        if self.a.paper is None or self.b.paper is None or None in (self.a.paper.value, self.b.paper.value):
            return None
        return self.a.paper.value - self.b.paper.value

    @property
    def partial(self) -> bool:
        """Ours averages fewer tasks than the paper's Avg.: its size is not comparable with the paper's."""
        return any(label.startswith("Avg. over") for label in self.labels)

    @property
    def synthetic(self) -> bool:
        return any(s.cell is not None and s.cell.synthetic for s in (self.a, self.b))

    def intervals(self) -> list[Interval]:
        return [i for i in (self.seed, self.items) if i is not None]


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
        return SideResult(side, printed_row, cell, paper, selector.get("suite"), selector.get("key"),
                          bool(row.get("reported_only")), selector.get("backbone"), ran, missing)


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


def _seed_interval(result: ClaimResult, tables: Tables, settings: dict) -> None:
    a, b = result.a, result.b
    if a.statistic != b.statistic:
        result.seed_note = f"no seed interval: the sides use different statistics ({a.statistic} vs {b.statistic})"
        return
    values_a, values_b = list(a.cell.per_seed.values()), list(b.cell.per_seed.values())
    interval = seed_interval(values_a, values_b, a.statistic,
                             selection_a=_selection(a, tables.specs[a.side.table]),
                             selection_b=_selection(b, tables.specs[b.side.table]),
                             n_resamples=settings["seed_resamples"], seed=settings["seed_seed"],
                             level=settings["level"])
    if interval is None:
        result.seed_note = (f"no seed interval: {len(values_a)} vs {len(values_b)} seed(s) "
                            f"(a bootstrap needs 2 per side, Welch's t 3)")
    result.seed = interval


def _why_missing(side: SideResult) -> str:
    if side.reported_only:
        return "reported only, not run by this workflow"
    if side.missing:
        return (f"{side.side.column} left empty: ours lacks {', '.join(side.missing)} "
                "(an average of some columns is never set against the paper's average of all)")
    if side.row_ran:
        return f"its runs' {side.suite} metrics files have no '{side.key}'"
    return "no run of ours in this experiment"


def judge(claim: dict, tables: Tables, settings: dict) -> ClaimResult:
    side_a, side_b = sides(claim)
    result = ClaimResult(claim, tables.locate(side_a), tables.locate(side_b))
    if claim.get("note"):
        result.notes.append(claim["note"])
    missing = [s for s in (result.a, result.b) if s.cell is None]
    if missing:
        result.notes.append("; ".join(f"{s.label}: {_why_missing(s)}" for s in missing))
        return result
    result.ours_delta = result.a.ours - result.b.ours
    for s in (result.a, result.b):
        if s.cell.stand_in:
            result.labels.append(f"{s.cell.stand_in} in place of {s.backbone}")
        if s.cell.synthetic:
            result.labels.append(f"SYNTHETIC data: {', '.join(s.cell.synthetic)}")
        partial = partial_average(s)
        if partial:
            result.labels.append(f"Avg. over {len(partial)} of {len(STS_TASKS)} STS tasks ({', '.join(partial)})")
    result.labels = list(dict.fromkeys(result.labels))
    _seed_interval(result, tables, settings)
    _test_set_interval(result, settings)
    intervals = result.intervals()
    result.verdict = verdict(intervals, claim["direction"]) if intervals else INCONCLUSIVE
    if not intervals:
        result.notes.append("no interval: one seed per side and no per-item scores")
    target = signed_magnitude(claim.get("magnitude"), claim["direction"])
    if target is not None and not result.synthetic and not result.partial:
        result.magnitude_inside = {i.method: i.contains(target) for i in intervals}
    return result


def partial_average(side: SideResult) -> list[str] | None:
    """The STS tasks an Avg. cell of ours averages when they are fewer than the paper's 7, else None."""
    if side.cell is None or side.key != "avg" or side.suite != "sts":
        return None
    results = read_json(next(iter(side.cell.files.values())))["results"]
    tasks = [t for t in STS_TASKS if t in results]
    return tasks if len(tasks) < len(STS_TASKS) else None


def cell_noise(tables: Tables, default_sd: float) -> list[CellNoise]:
    out = []
    for name in sorted(tables.results):
        spec = tables.specs[name]
        for row in spec["rows"]:
            for column in spec["columns"]:
                side = tables.locate(Side(name, row["label"], column["label"]))
                if side.cell is not None and side.paper is not None and side.paper.value is not None:
                    out.append(_noise(side, default_sd))
    return out


def _noise(side: SideResult, default_sd: float) -> CellNoise:
    cell = side.cell
    partial = partial_average(side)
    if partial:
        return CellNoise(cell, None, f"ours averages {len(partial)} of {len(STS_TASKS)} STS tasks")
    if cell.synthetic:
        return CellNoise(cell, None, "synthetic data: not compared with the paper")
    if cell.statistic not in NOISE_STATISTICS:
        return CellNoise(cell, None, f"a {cell.statistic} over seeds is not compared for noise")
    return CellNoise(cell, within_noise(cell.value, cell.std, side.paper.value, side.paper.std, default_sd=default_sd))


def build_verdicts(claims: dict, metrics_files: list[Path], backbones: dict, experiment: str, *,
                   reported: dict | None = None, claims_path: Path = CLAIMS_PATH) -> VerdictResult:
    reported = load_reported() if reported is None else reported
    tables = Tables(claim_tables(claims), [Path(p) for p in metrics_files], backbones, reported)
    settings = dict(claims["bootstrap"])
    results = [judge(claim, tables, settings) for claim in claims["claims"]]
    return VerdictResult(experiment=experiment, claims=results, not_checked=list(claims.get("not_checked") or []),
                         cells=cell_noise(tables, claims["noise"]["default_std"]),
                         settings={"noise": claims["noise"], "bootstrap": settings},
                         claims_file=f"{project_path(claims_path)['path']}#sha256={sha256_file(claims_path)}")


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
