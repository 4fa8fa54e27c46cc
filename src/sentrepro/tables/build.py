"""Build a paper table from metrics files: one declarative spec, the published numbers beside ours.

Metrics-file contract (every evaluation suite writes one file per run and suite)::

    {"suite": "<suite>",
     "results": {"<key>": {"reported": <number as the paper's table shows it>, ...} | <number>, ...},
     "provenance": {"config": {"run": {"backbone": ..., "method": ..., "seed": <int | null>}}, "inputs": [...]}}

``result_keys`` (written by the evaluation job) and the task list of the file's recorded settings are its
schema (:mod:`sentrepro.records.metrics_schema`): a key among them that is missing or not a number stops
the build naming the file and the key. Each file says which run produced it, so the builder needs only
the list of files (the workflow's ``table`` rule passes exactly the ones the spec reads, see :mod:`sentrepro.planning.table_cells`). For every
cell the builder keeps both seed statistics (best-of-N chosen by the spec's ``select_by`` metric, and
mean ± population std), the headline one being the spec's ``statistic``; the published number with
its std, footnote mark and file:line; and the metrics files (with sha256) the value came from, so
``sentrepro audit`` can follow the chain. Inputs built from synthetic fixtures are detected from the
dataset manifests in the provenance chain and labelled in the row.

Like with like: an aggregate cell (metric key ``avg``) is filled only when the run has every metric the
aggregate averages (the column's or spec's ``averages``, else the table's other columns of that suite);
otherwise it stays empty and :attr:`TableResult.incomplete` names the missing columns for the caption.
A cell computed on synthetic data has no Δ against the paper. A cell whose provenance chain was written
by code that has changed since (``provenance.code_fingerprint``, see :mod:`sentrepro.code.codedeps`) is
listed in :attr:`TableResult.stale`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sentrepro.code.codedeps import stale_description
from sentrepro.files import nonfinite_keys, read_json
from sentrepro.hashing import sha256_file
from sentrepro.planning.table_cells import lowest_seeds
from sentrepro.records.metrics_schema import MetricsSchemaError, check_metrics
from sentrepro.tables.aggregate import SeedSummary, summarize
from sentrepro.planning.reported import ReportedValue, load_reported, reported_value, resolve_row
from sentrepro.planning.table_cells import stands_in_for
from sentrepro.planning.table_specs import AGGREGATE_KEY, averaged_keys, cell_selector

CSV_HEADER = ["table", "row", "column", "value", "std", "n", "reported", "provenance"]


class MetricsError(ValueError):
    """A metrics file does not follow the contract above; the message names the file and key."""


@dataclass
class Cell:
    """One (row, column) of a built table, with everything the renderers and the audit need."""

    table: str
    row: str
    column: str
    group: str | None
    value: float | None                  # the headline statistic (spec or column `stat`)
    std: float | None                    # population std over the seeds used
    n: int
    statistic: str                       # which statistic `value` is: best, mean, max, ...
    summary: SeedSummary | None
    reported: ReportedValue | None
    reported_only: bool
    files: dict = field(default_factory=dict)       # seed -> metrics file
    per_seed: dict = field(default_factory=dict)    # seed -> value
    synthetic: list = field(default_factory=list)   # names of synthetic datasets in the chain
    stand_in: str | None = None                     # config backbone used in place of the paper's
    forced: bool = False                            # the column fixes the statistic (`stat`)
    missing: list = field(default_factory=list)     # aggregate cell: averaged columns the run lacks
    stale: list = field(default_factory=list)       # files of the chain made by code changed since
    extra_seeds: dict = field(default_factory=dict)  # seed -> value beyond max_seeds (paper's statistic differs)
    digits: int = 2                                 # decimals shown (the spec's `digits`)

    @property
    def delta(self) -> float | None:
        """ours − paper; None when either is missing or our number comes from synthetic data or a stand-in
        backbone (another model: the paper's number stays as context, as in the demo summary)."""
        if (self.value is None or self.reported is None or self.reported.value is None or self.synthetic
                or self.stand_in):
            return None
        return self.value - self.reported.value

    def sources(self) -> list[str]:
        """Provenance entries: the files behind ``value`` (``path#sha256=``), then the other seeds
        best-of-N compared against (``candidate=path#sha256=``), ``incomplete=<columns>`` for an
        aggregate left empty, then ``paper=file:line``."""
        entries = []
        if self.summary is not None:
            used = [self.summary.best_seed] if self.statistic == "best" else list(self.files)
            for seed in used:
                entries.append(_hashed(self.files[seed]))
            if self.statistic == "best":
                entries += [f"candidate={_hashed(self.files[s])}" for s in self.files if s not in used]
        if self.missing:  # an aggregate left empty: say why (the audit prints it)
            entries.append(f"incomplete={','.join(self.missing)}")
        if self.reported is not None:
            std = f" (± from {self.reported.std_source})" if self.reported.std_source else ""
            entries.append(f"paper={self.reported.where}{std}")
        return entries


_DIGESTS: dict[tuple[str, float], str] = {}


def _hashed(path: Path) -> str:
    """``path#sha256=<hex>``; digests are cached per (path, mtime) as each file feeds many cells."""
    key = (str(path), Path(path).stat().st_mtime)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_file(path)
    return f"{path}#sha256={_DIGESTS[key]}"


@dataclass
class TableResult:
    spec: dict
    cells: list[Cell]
    rows: list[tuple[str, str | None, bool]]      # (label, group, reported_only) in spec order
    columns: list[str]
    stand_ins: dict[str, list[str]]               # config backbone -> paper backbones it filled
    synthetic: list[str]                          # synthetic datasets anywhere in the table
    subsets: dict = field(default_factory=dict)   # suite -> max_samples of subsampled metrics files
    incomplete: dict = field(default_factory=dict)  # aggregate column -> {row: [missing columns]}
    stale: dict = field(default_factory=dict)     # file -> what changed in the code that made it
    # method -> {"used": [...], "authors": ...} where runs were trained in another precision than the authors'
    precisions: dict = field(default_factory=dict)


# --- reading metrics files ----------------------------------------------------------------------


def metric_value(results: dict, key: str) -> float | None:
    """``results[key]`` (dotted path for nested results); a dict yields its ``reported`` entry."""
    node = results
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    if isinstance(node, dict):
        node = node.get("reported")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        return None
    return float(node)


def _run_of(payload: dict, path: Path) -> dict:
    try:
        run = payload["provenance"]["config"]["run"]
        return {"backbone": run["backbone"], "method": run["method"], "seed": run["seed"]}
    except (KeyError, TypeError) as exc:
        raise MetricsError(f"{path}: no provenance.config.run {{backbone, method, seed}} ({exc})") from exc


def synthetic_datasets(path: Path, cache: dict[Path, list[str]]) -> list[str]:
    """Names of synthetic datasets (manifests with ``synthetic: true``) in a JSON's provenance chain."""
    path = Path(path)
    if path in cache:
        return cache[path]
    cache[path] = []
    found: set[str] = set()
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return []
    if not isinstance(payload, dict):
        return []
    if payload.get("synthetic"):  # a dataset manifest
        found.add(str(payload.get("name") or path.parent.name))
    data = payload.get("data")
    if isinstance(data, dict) and data.get("synthetic"):  # a suite's metrics file names its source
        found.add(str(data.get("source") or path.stem))
    for entry in (payload.get("provenance") or {}).get("inputs", []):
        child = Path(entry.get("path", ""))
        if child.suffix == ".json":
            found.update(synthetic_datasets(child, cache))
    cache[path] = sorted(found)
    return cache[path]


def stale_links(path: Path, cache: dict[Path, dict[str, str]]) -> dict[str, str]:
    """{file: description} of the files in a JSON's provenance chain whose recorded code fingerprint
    differs from today's code (see :func:`sentrepro.code.codedeps.stale_description`)."""
    path = Path(path)
    if path in cache:
        return cache[path]
    cache[path] = {}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    prov = payload.get("provenance") if isinstance(payload, dict) else None
    if not isinstance(prov, dict):
        return {}
    found: dict[str, str] = {}
    description = stale_description(prov.get("code_fingerprint"))
    if description:
        found[str(path)] = description
    for entry in prov.get("inputs", []):
        child = Path(entry.get("path", ""))
        if child.suffix == ".json":
            found.update(stale_links(child, cache))
    cache[path] = found
    return found
def training_precision(path: Path, cache: dict[Path, dict | None]) -> dict | None:
    """The ``precision`` block of the training summary (train.json) a metrics file was computed from:
    ``{"configured", "used", "authors", "dev_scoring"}``; None for runs without training."""
    path = Path(path)
    if path not in cache:
        cache[path] = None
        for entry in (read_json(path).get("provenance") or {}).get("inputs", []):
            child = Path(entry.get("path", ""))
            if child.name == "train.json" and child.exists():
                block = read_json(child).get("precision")
                cache[path] = block if isinstance(block, dict) else None
                break
    return cache[path]


@dataclass
class RunMetrics:
    """All seeds of one (config backbone, method, suite): results and file per seed."""

    results: dict = field(default_factory=dict)   # seed -> results mapping
    files: dict = field(default_factory=dict)     # seed -> Path
    subsets: dict = field(default_factory=dict)   # seed -> max_samples when the suite scored a subset


def index_metrics(metrics_files: list[Path]) -> dict[tuple[str, str, str], RunMetrics]:
    """(backbone, method, suite) -> RunMetrics, from the files' own provenance."""
    index: dict[tuple[str, str, str], RunMetrics] = {}
    for path in metrics_files:
        path = Path(path)
        try:
            payload = read_json(path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MetricsError(f"{path}: cannot read this metrics file ({exc})") from exc
        if not isinstance(payload, dict) or "suite" not in payload or not isinstance(payload.get("results"), dict):
            raise MetricsError(f"{path}: a metrics file needs 'suite' and a 'results' mapping")
        bad = nonfinite_keys(payload["results"], "results")
        if bad:  # a NaN or inf never reaches a table (jobs refuse to write one; this catches a hand-made file)
            raise MetricsError(f"{path}: non-finite value at {', '.join(bad[:5])}; rerun its evaluation")
        try:  # every key its suite wrote is there and a number: a damaged file is never a blank cell
            check_metrics(payload, path)
        except MetricsSchemaError as exc:
            raise MetricsError(str(exc)) from None
        run = _run_of(payload, path)
        entry = index.setdefault((run["backbone"], run["method"], payload["suite"]), RunMetrics())
        if run["seed"] in entry.results:
            raise MetricsError(f"{path}: seed {run['seed']} of {run['backbone']}/{run['method']} "
                               f"also in {entry.files[run['seed']]}")
        entry.results[run["seed"]] = payload["results"]
        entry.files[run["seed"]] = path
        subset = payload.get("subset")
        if isinstance(subset, dict) and subset.get("applied"):
            entry.subsets[run["seed"]] = subset.get("max_samples")
    return index


def resolve_backbone(paper_backbone: str, method: str, suite: str, backbones: dict,
                     index: dict) -> str | None:
    """The config backbone whose runs fill ``paper_backbone``: the backbone of that name when it has
    metrics, else the first (by name) backbone standing in for it that has metrics."""
    candidates = [paper_backbone] + sorted(b for b, spec in backbones.items()
                                           if b != paper_backbone and paper_backbone in stands_in_for(spec))
    for name in candidates:
        if (name, method, suite) in index:
            return name
    return None


# --- building -----------------------------------------------------------------------------------


def _column_values(run: RunMetrics, key: str, seeds: list) -> dict:
    """{seed: value of ``key``} over ``seeds``, skipping seeds whose results lack it."""
    values = {}
    for seed in seeds:
        value = metric_value(run.results[seed], key)
        if value is not None:
            values[seed] = value
    return values


def paper_value(reported: dict, spec: dict, row: dict, column: dict, key: str | None) -> ReportedValue | None:
    """The published number of a cell: the row's reported.yaml row, the column's ``reported_column``
    (default: the metric key). A column the paper does not print (key not among the entry's columns,
    or ``reported_column: null``) has none; a missing entry or row is an error naming it."""
    if not row.get("reported"):
        return None
    entry, row_key = resolve_row(row["reported"], spec.get("reported"))
    if entry not in reported or row_key not in reported[entry]["rows"]:
        first = reported.get(entry, {}).get("columns", [None])[0]
        reported_value(reported, entry, row_key, first)  # raises ReportedError naming what is missing
    if "reported_column" in column:
        if column["reported_column"] is None:
            return None
        return reported_value(reported, entry, row_key, column["reported_column"])
    if key not in reported[entry]["columns"]:
        return None
    return reported_value(reported, entry, row_key, key)


def _headline(spec: dict, column: dict) -> str:
    if column.get("stat"):
        return column["stat"]
    return "best" if spec["statistic"] == "best-of-n" else "mean"


def build_table(spec: dict, metrics_files: list[Path], backbones: dict, *, reported: dict | None = None) -> TableResult:
    """All cells of ``spec`` from ``metrics_files`` (long form, spec order).

    ``backbones`` maps config backbone names to ``{"stands_in_for": str | list, "stand_in": str | None}`` so a
    demo backbone fills the paper backbone's rows (its name is added to the row label), and a tiny random
    backbone (``stand_in``, :func:`sentrepro.pretrained.tiny_names.stand_in_label`) labels every cell it fills as a
    stand-in, whatever its name: no verdict judges it.
    """
    reported = load_reported() if reported is None else reported
    index = index_metrics(metrics_files)
    synthetic_cache: dict[Path, list[str]] = {}
    stale_cache: dict[Path, dict[str, str]] = {}
    incomplete: dict[str, dict[str, list[str]]] = {}
    labels = {cell_selector(spec, {}, column).get("key") or column["label"]: column["label"]
              for column in spec["columns"]}
    precision_cache: dict[Path, dict | None] = {}
    precisions: dict[str, dict] = {}
    select_by = spec.get("select_by")
    cells: list[Cell] = []
    rows: list[tuple[str, str | None, bool]] = []
    stand_ins: dict[str, set[str]] = {}
    subsets: dict[str, int] = {}
    for row in spec["rows"]:
        row_cells: list[Cell] = []
        for column in spec["columns"]:
            selector = cell_selector(spec, row, column)
            paper = paper_value(reported, spec, row, column, selector["key"])
            statistic = _headline(spec, column)
            cell = Cell(table=spec["name"], row=row["label"], column=column["label"], group=row.get("group"),
                        value=None, std=None, n=0, statistic=statistic, summary=None, reported=paper,
                        reported_only=bool(row.get("reported_only")), forced=bool(column.get("stat")),
                        digits=spec.get("digits", 2))
            if not cell.reported_only:
                backbone = resolve_backbone(selector["backbone"], selector["method"], selector["suite"],
                                            backbones, index)
                if backbone is not None:
                    run = index[(backbone, selector["method"], selector["suite"])]
                    seeds = lowest_seeds(run.results, spec.get("max_seeds"))
                    values = _column_values(run, selector["key"], seeds)
                    if selector["key"] == AGGREGATE_KEY and values:
                        averaged = averaged_keys(spec, column, selector["suite"])
                        cell.missing = sorted({labels.get(k, k) for s in values for k in averaged
                                               if metric_value(run.results[s], k) is None})
                        if cell.missing:
                            values = {}
                    selection = _column_values(run, select_by, seeds) if select_by else None
                    summary = summarize(values, selection)
                    if summary is not None and statistic == "best" and summary.best is None:
                        raise MetricsError(f"{spec['name']}: best-of-n ranks seeds by '{select_by}', which the "
                                           f"metrics files lack: {', '.join(str(f) for f in run.files.values())}")
                    if summary is not None:
                        cell.summary = summary
                        cell.value = summary.stat(statistic)
                        cell.std = summary.std
                        cell.n = summary.n
                        cell.per_seed = values
                        cell.files = {s: run.files[s] for s in values}
                        for seed in values:
                            if seed in run.subsets:
                                subsets[selector["suite"]] = run.subsets[seed]
                        cell.synthetic = sorted({name for s in values
                                                 for name in synthetic_datasets(run.files[s], synthetic_cache)})
                        cell.stale = sorted({f for s in values for f in stale_links(run.files[s], stale_cache)})
                        statistic_of_paper = paper.statistic if paper is not None else None
                        if statistic_of_paper and statistic_of_paper.get("seeds", 0) > len(seeds):
                            more = lowest_seeds(run.results, statistic_of_paper["seeds"])
                            cell.extra_seeds = _column_values(run, selector["key"], [s for s in more
                                                                                     if s not in seeds])
                        for seed in values:
                            block = training_precision(run.files[seed], precision_cache)
                            if block and block.get("used") != block.get("authors"):
                                entry = precisions.setdefault(selector["method"], {"used": set(),
                                                                                   "authors": block.get("authors")})
                                entry["used"].add(block.get("used"))
                        tiny = backbones.get(backbone, {}).get("stand_in")  # a tiny random model (rehearsal)
                        if backbone != selector["backbone"] or tiny:
                            cell.stand_in = f"{tiny} {backbone}" if tiny and backbone != selector["backbone"] \
                                else tiny or backbone
                            stand_ins.setdefault(cell.stand_in, set()).add(selector["backbone"])
            row_cells.append(cell)
            if cell.missing:
                incomplete.setdefault(column["label"], {})[row["label"]] = cell.missing
        label = _row_label(row, row_cells)
        for cell in row_cells:
            cell.row = label
        rows.append((label, row.get("group"), bool(row.get("reported_only"))))
        cells.extend(c for c in row_cells if c.value is not None or (c.reported and c.reported.value is not None))
    columns = [_column_label(column, [c for c in cells if c.column == column["label"]])
               for column in spec["columns"]]
    for column, label in zip(spec["columns"], columns):
        for cell in cells:
            if cell.column == column["label"]:
                cell.column = label
    synthetic = sorted({name for c in cells for name in c.synthetic})
    stale = {f: d for cache in stale_cache.values() for f, d in cache.items()
             if any(f in c.stale for c in cells)}
    return TableResult(spec=spec, cells=cells, rows=rows, columns=columns,
                       stand_ins={b: sorted(p) for b, p in stand_ins.items()}, synthetic=synthetic,
                       subsets=subsets, incomplete=incomplete, stale=dict(sorted(stale.items())),
                       precisions={m: {"used": sorted(e["used"]), "authors": e["authors"]}
                                   for m, e in sorted(precisions.items())})


def _row_label(row: dict, cells: list[Cell]) -> str:
    """The row label as written in every output: spec label plus what a reader must know."""
    label = row["label"]
    if row.get("reported_only"):
        marks = sorted({c.reported.mark for c in cells if c.reported and c.reported.mark})
        return f"{label}{' ' + ''.join(marks) if marks else ''} (reported only)"
    used = sorted({c.stand_in for c in cells if c.stand_in})
    if "backbone" in row and used:
        label += f" [{', '.join(used)} in place of {row['backbone']}]"
    synthetic = sorted({name for c in cells for name in c.synthetic})
    if synthetic:
        label += f" [SYNTHETIC data: {', '.join(synthetic)}]"
    return label


def _column_label(column: dict, cells: list[Cell]) -> str:
    """A column that sets the backbone (transposed tables) names its stand-in backbone."""
    if "backbone" not in column:
        return column["label"]
    used = sorted({c.stand_in for c in cells if c.stand_in})
    if not used:
        return column["label"]
    return f"{column['label']} [{', '.join(used)} in place of {column['backbone']}]"
