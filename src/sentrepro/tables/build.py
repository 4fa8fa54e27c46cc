"""Build a paper table from metrics files: one declarative spec, reported numbers beside ours.

Each metrics file says which run produced it (its provenance config: backbone, method, seed), so
the builder only needs the list of files. Seeds are combined as the spec says: ``best-of-n`` picks
the seed with the best ``select_by`` column and reports that seed's values (ConPVP Table 3);
``mean`` reports mean ± std (population std, ddof=0) over seeds. Either way every cell records
n, the std over seeds, and the metrics files it came from with their sha256 (for ``audit``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from sentrepro.fsutil import atomic_write_text, read_json, sha256_file

TABLES_DIR = Path(__file__).resolve().parent
CSV_HEADER = ["table", "row", "column", "value", "std", "n", "reported", "provenance"]


def load_spec(name: str) -> dict:
    path = TABLES_DIR / "specs" / f"{name}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"no table spec '{name}' ({path})")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_reported() -> dict:
    return yaml.safe_load((TABLES_DIR / "reported.yaml").read_text(encoding="utf-8"))


def reported_row(reference: str | None, reported: dict) -> dict[str, float]:
    """``"<table>:<row>"`` -> {column: number} from reported.yaml (empty when no reference)."""
    if not reference:
        return {}
    table, row = reference.split(":", 1)
    entry = reported[table]
    values = entry["rows"][row]
    return dict(zip(entry["columns"], values))


@dataclass
class Cell:
    value: float | None
    std: float | None
    n: int
    reported: float | None
    sources: list[str]


def combine_seeds(per_seed: dict[int | None, dict[str, float]], column: str, mode: str, select_by: str,
                  ) -> tuple[float | None, float | None, int, list]:
    """Combine one column over seeds. -> (value, std over seeds, n, seeds used for the value)

    best-of-n: the value of the seed whose ``select_by`` is highest (ties: smallest seed).
    mean: the mean over seeds. ``std`` is always the population std over the seeds.
    """
    seeds = [s for s in per_seed if column in per_seed[s]]
    if not seeds:
        return None, None, 0, []
    values = np.array([per_seed[s][column] for s in seeds], dtype=np.float64)
    std = float(values.std()) if len(values) > 1 else None
    if mode == "mean":
        return float(values.mean()), std, len(seeds), seeds
    if mode != "best-of-n":
        raise ValueError(f"unknown seed aggregation '{mode}'")
    ranked = sorted(seeds, key=lambda s: (-per_seed[s].get(select_by, float("-inf")), -1 if s is None else s))
    return float(per_seed[ranked[0]][column]), std, len(seeds), [ranked[0]]


def _metric_values(payload: dict, spec: dict) -> dict[str, float]:
    return {c["key"]: payload["results"][c["key"]]["reported"] for c in spec["columns"]
            if c["key"] in payload["results"]}


def build_table(spec: dict, metrics_files: list[Path], backbones: dict, *, synthetic: bool = False) -> list[dict]:
    """Cells of the table in long form: one dict per (row, column), in spec order.

    ``backbones`` maps config backbone names to their specs, so a demo backbone with
    ``stands_in_for: bert-base`` fills the bert-base rows (and its label says so).
    """
    reported = load_reported()
    stand_in = {name: b.get("stands_in_for", name) for name, b in backbones.items()}
    runs: dict[tuple[str, str], dict] = {}
    for path in metrics_files:
        payload = read_json(path)
        if payload.get("suite") != spec["suite"]:
            continue
        run = payload["provenance"]["config"]["run"]
        key = (stand_in.get(run["backbone"], run["backbone"]), run["method"])
        entry = runs.setdefault(key, {"backbone": run["backbone"], "per_seed": {}, "files": {}})
        entry["per_seed"][run["seed"]] = _metric_values(payload, spec)
        entry["files"][run["seed"]] = Path(path)
    cells = []
    for row in spec["rows"]:
        ours = runs.get((row["backbone"], row["method"]))
        label = row["label"]
        if ours and ours["backbone"] != row["backbone"]:
            label = f"{label} [{ours['backbone']} in place of {row['backbone']}]"
        paper = reported_row(row.get("reported"), reported)
        for column in spec["columns"]:
            key = column["key"]
            value = std = None
            n, used = 0, []
            if ours:
                value, std, n, used = combine_seeds(ours["per_seed"], key, spec["seeds"], spec.get("select_by", "avg"))
            sources = [f"{ours['files'][s]}#sha256={sha256_file(ours['files'][s])}" for s in used] if ours else []
            if value is None and key not in paper:
                continue
            cells.append({"table": spec["name"], "row": label, "column": column["label"],
                          "value": value, "std": std, "n": n, "reported": paper.get(key),
                          "provenance": ";".join(sources), "synthetic": synthetic})
    return cells


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def to_csv(cells: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for c in cells:
        writer.writerow([c["table"], c["row"], c["column"], _fmt(c["value"]), _fmt(c["std"]), c["n"],
                         _fmt(c["reported"]), c["provenance"]])
    return buffer.getvalue()


def to_markdown(spec: dict, cells: list[dict], caption: str) -> str:
    """Rows x columns; each cell "ours (paper)" with ± std over seeds when there is more than one."""
    columns = [c["label"] for c in spec["columns"]]
    rows: dict[str, dict[str, dict]] = {}
    for c in cells:
        rows.setdefault(c["row"], {})[c["column"]] = c
    lines = [f"## {spec['title']}", "", caption, "", "| Model | " + " | ".join(columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for label, by_column in rows.items():
        rendered = []
        for column in columns:
            cell = by_column.get(column)
            if cell is None:
                rendered.append("")
                continue
            ours = "–" if cell["value"] is None else _fmt(cell["value"])
            if cell["std"] is not None:
                ours += f" ±{cell['std']:.2f}"
            if cell["reported"] is not None:
                delta = "" if cell["value"] is None else f", Δ {cell['value'] - cell['reported']:+.2f}"
                ours += f" ({_fmt(cell['reported'])}{delta})"
            rendered.append(ours)
        lines.append(f"| {label} | " + " | ".join(rendered) + " |")
    return "\n".join(lines) + "\n"


def caption_for(spec: dict, synthetic: bool, experiment: str) -> str:
    seeds = ("best of N seeds, selected by " + spec.get("select_by", "avg")) if spec["seeds"] == "best-of-n" \
        else "mean over seeds"
    text = (f"Experiment `{experiment}`. Each cell: ours ({seeds}; ± population std over seeds when N > 1), then the "
            f"paper's number in parentheses with the difference Δ. – = not run in this experiment. "
            f"Every cell is traceable: `sentrepro audit <this table>.csv <row> <column>`.")
    if synthetic:
        text += " Some inputs are SYNTHETIC fixtures (offline demo): numbers show the pipeline works, not the paper."
    return text


def write_table(spec: dict, cells: list[dict], out_prefix: Path, experiment: str, synthetic: bool) -> None:
    atomic_write_text(Path(f"{out_prefix}.csv"), to_csv(cells))
    atomic_write_text(Path(f"{out_prefix}.md"), to_markdown(spec, cells, caption_for(spec, synthetic, experiment)))
