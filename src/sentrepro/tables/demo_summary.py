"""The demo's closing table: what each trained method did to its own readout on real STS-B test.

One row per trained run: STS-B test Spearman x100 of the untrained model (step 0, scored with the
method's own evaluation embedding by the ``sts_start`` suite, ``sentrepro evaluate sts_start``) and of the run's best
checkpoint (the ordinary ``evaluate_sts`` metrics file), the change, the training steps and the time
of the training loop, and -- as context only -- the paper's STS-B number for the method on the
backbone the demo's model stands in for. The paper number is on another backbone and training budget,
so the table prints no difference against it (like with like).

Outputs ``<prefix>.md``, ``.csv`` (the tables' long format ``table,row,column,value,std,n,reported,
provenance``, so ``sentrepro audit`` traces every cell) and ``.html`` (for ``snakemake --report``).
"""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from sentrepro.files import atomic_write_text
from sentrepro.hashing import sha256_file
from sentrepro.tables.build import CSV_HEADER
from sentrepro.planning.reported import EntryReads, ReportedValue, load_reported, reported_value, resolve_row
from sentrepro.planning.table_specs import available_specs, load_spec

NAME = "demo_summary"
TASK = "STSBenchmark"
COLUMNS = ("STS-B test before", "STS-B test after", "change", "training steps", "training time (s)",
           "paper STS-B (context)")


# The suites the summary compares, with the model each must score: the model a training job starts from
# (step 0) and the run's best checkpoint. Checked against the registered units when the workflow loads.
SUITES = {"before": ("sts_start", "start"), "after": ("sts", "checkpoint")}


class SummaryError(ValueError):
    """An input file lacks what the summary needs; the message names the file and the key."""


def summary_suite(side: str) -> str:
    """The suite of one side (``before``, ``after``), checked: a registered suite scoring the right model."""
    from sentrepro.planning import registry

    name, model = SUITES[side]
    if name not in registry.suites():
        raise SummaryError(f"sentrepro.tables.demo_summary.SUITES['{side}']: '{name}' is no evaluation suite "
                           f"(known: {', '.join(registry.suites())})")
    if registry.suite(name).model != model:
        raise SummaryError(f"sentrepro.tables.demo_summary.SUITES['{side}']: suite '{name}' scores the "
                           f"{registry.suite(name).model} model, the summary needs the {model} model")
    return name


@dataclass
class SummaryRow:
    """One trained run; ``sources`` maps a column to the files (``path#sha256=``) behind its value."""

    label: str
    values: dict[str, float | None]
    context: ReportedValue | None
    context_label: str
    sources: dict[str, list[str]] = field(default_factory=dict)


def _read(path: Path, *keys: str):
    try:
        node = json.loads(Path(path).read_text(encoding="utf-8"))
        for key in keys:
            node = node[key]
    except (OSError, json.JSONDecodeError) as exc:
        raise SummaryError(f"{path}: cannot read ({exc})") from exc
    except (KeyError, TypeError) as exc:
        raise SummaryError(f"{path}: no key {'.'.join(keys)}") from exc
    return node


def sts_score(path: Path) -> float:
    """The STS-B Spearman x100 (``results.STSBenchmark.reported``) of a metrics file."""
    value = _read(path, "results", TASK, "reported")
    if not isinstance(value, (int, float)):
        raise SummaryError(f"{path}: results.{TASK}.reported is {value!r}, not a number")
    return float(value)


def paper_context(method: str, stands_in_for: list[str], reported: dict) -> tuple[ReportedValue, str] | None:
    """The paper's STS-B number for ``method`` on the first backbone in ``stands_in_for`` that a table
    spec has a row for (ConPVP Table 3 layout first, then the other specs by name), with that backbone.

    Derived from the table specs' rows and reported.yaml, so it is the number the paper tables print.
    """
    names = ["sts_main"] + [n for n in available_specs() if n != "sts_main"]
    specs = [load_spec(n) for n in names]
    for backbone in stands_in_for:
        for spec in specs:
            for row in spec["rows"]:
                if row.get("method") != method or row.get("backbone") != backbone or not row.get("reported"):
                    continue
                entry, row_key = resolve_row(row["reported"], spec.get("reported"))
                if TASK in reported.get(entry, {}).get("columns", []):
                    return reported_value(reported, entry, row_key, TASK), backbone
    return None


def context_entries(runs: list[dict], stands_in: dict[str, list[str]]) -> list[str]:
    """The reported.yaml entries :func:`build_rows` reads for ``runs`` (its rule's ``params.data_entries``):
    :func:`paper_context` of every run, run on a mapping that notes each entry looked up."""
    reads = EntryReads(load_reported())
    for run in runs:
        paper_context(run["method"], stands_in.get(run["backbone"], [run["backbone"]]), reads)
    return sorted(reads.read)


def _hashed(path: Path) -> str:
    return f"{path}#sha256={sha256_file(path)}"


def build_rows(runs: list[dict], stands_in: dict[str, list[str]], reported: dict | None = None) -> list[SummaryRow]:
    """``runs``: ``{"backbone", "method", "seed", "train", "before", "after"}`` (the last three: paths
    of train.json, the step-0 and the best-checkpoint STS metrics files), in display order."""
    reported = load_reported() if reported is None else reported
    rows = []
    for run in runs:
        train, before, after = Path(run["train"]), Path(run["before"]), Path(run["after"])
        b, a = sts_score(before), sts_score(after)
        steps = _read(train, "steps")
        seconds = _read(train, "train_seconds_this_job")
        found = paper_context(run["method"], stands_in.get(run["backbone"], [run["backbone"]]), reported)
        context, on = found if found else (None, "")
        label = f"{run['method']} ({run['backbone']}, seed {run['seed']})"
        rows.append(SummaryRow(
            label=label,
            values={COLUMNS[0]: b, COLUMNS[1]: a, COLUMNS[2]: a - b, COLUMNS[3]: float(steps),
                    COLUMNS[4]: float(seconds), COLUMNS[5]: None},
            context=context,
            context_label=f"{context.value:.2f} ({on}, {context.where})" if context else "–",
            sources={COLUMNS[0]: [_hashed(before)], COLUMNS[1]: [_hashed(after)],
                     COLUMNS[2]: [_hashed(after), _hashed(before)], COLUMNS[3]: [_hashed(train)],
                     COLUMNS[4]: [_hashed(train)],
                     COLUMNS[5]: [f"paper={context.where}"] if context else []},
        ))
    return rows


def _fmt(column: str, value: float | None) -> str:
    if value is None:
        return ""
    if column == COLUMNS[3]:
        return f"{value:.0f}"
    if column == COLUMNS[2]:
        return f"{value:+.2f}"
    return f"{value:.2f}" if column != COLUMNS[4] else f"{value:.1f}"


def to_csv(rows: list[SummaryRow]) -> str:
    """Long format; the context column is a reported-only cell (empty value, the paper's in ``reported``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in rows:
        for column in COLUMNS:
            value = row.values[column]
            reported = row.context.value if column == COLUMNS[5] and row.context else None
            writer.writerow([NAME, row.label, column, "" if value is None else f"{value:.4f}", "",
                             1 if value is not None else 0, "" if reported is None else f"{reported:.2f}",
                             ";".join(row.sources[column])])
    return buffer.getvalue()


def caption(experiment: str, csv_name: str) -> list[str]:
    return [
        f"Experiment '{experiment}'. Real STS-B test (Spearman ×100): 'before' scores the untrained model "
        "(step 0, as the training job builds it) with the method's own evaluation embedding, 'after' the run's "
        "checkpoint selected on STS-B dev; test is never used for selection.",
        "Training time: the job's training loop (updates and dev evaluations) on the machine that ran it.",
        "Paper STS-B is context only: the method's published number on the paper's backbone (in brackets) after "
        "full training; the demo trains a small stand-in backbone for a few steps, so no difference is taken.",
        f"Every cell traces to its files: sentrepro audit {csv_name} '<method>' '<column>'.",
    ]


def _cells(row: SummaryRow) -> list[str]:
    return [_fmt(c, row.values[c]) for c in COLUMNS[:5]] + [row.context_label]


def to_markdown(rows: list[SummaryRow], paragraphs: list[str]) -> str:
    lines = ["# Demo summary: each trained method on real STS-B test, before -> after", ""]
    lines += ["| run | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    lines += ["| " + row.label + " | " + " | ".join(_cells(row)) + " |" for row in rows]
    lines += [""] + [p + "\n" for p in paragraphs]
    return "\n".join(lines)


def to_html(rows: list[SummaryRow], paragraphs: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ("run",) + COLUMNS)
    body = "".join("<tr><td>" + html.escape(r.label) + "</td>"
                   + "".join(f"<td>{html.escape(t)}</td>" for t in _cells(r)) + "</tr>\n" for r in rows)
    text = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Demo summary</title></head><body>\n"
            "<h2>Demo summary: each trained method on real STS-B test, before → after</h2>\n"
            f"<table border=\"1\"><tr>{head}</tr>\n{body}</table>\n{text}</body></html>\n")


def write_summary(runs: list[dict], stands_in: dict[str, list[str]], out_prefix: Path,
                  experiment: str) -> list[SummaryRow]:
    """Build the rows and write ``<prefix>.md/.csv/.html`` atomically."""
    if not runs:
        raise SummaryError("no trained runs to summarise (the matrix has no training method)")
    rows = build_rows(runs, stands_in)
    csv_name = f"{out_prefix}.csv"
    paragraphs = caption(experiment, csv_name)
    atomic_write_text(f"{out_prefix}.csv", to_csv(rows))
    atomic_write_text(f"{out_prefix}.md", to_markdown(rows, paragraphs))
    atomic_write_text(f"{out_prefix}.html", to_html(rows, paragraphs))
    return rows
