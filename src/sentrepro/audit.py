"""Trace a table cell back to raw data, verifying every hash on the way.

Chain: table CSV cell -> metrics file(s) -> their inputs (checkpoint files, training summary) ->
the training summary's inputs (tokenized corpus, dev data, backbone files) -> tokenized corpus ->
corpus -> dataset manifest -> download record -> downloaded file. Every input is listed with the
sha256 recorded when it was consumed and checked against the file as it is now; a JSON input that
carries its own ``provenance`` is followed. A dataset manifest's files are each verified too.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from sentrepro.fsutil import sha256_file


class AuditError(LookupError):
    """The asked-for cell does not exist in the table."""


@dataclass
class AuditReport:
    lines: list[str] = field(default_factory=list)
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self) -> str:
        verdict = (f"OK: {self.checked} files verified" if self.ok else
                   f"FAILED: {len(self.problems)} of {self.checked} files changed or missing:\n  "
                   + "\n  ".join(self.problems))
        return "\n".join(self.lines + ["", verdict]) + "\n"


def find_cell(csv_path: Path, row: str, column: str) -> dict:
    """The CSV record for (row, column); rows match exactly or, failing that, by unique substring."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    in_column = [r for r in records if r["column"].lower() == column.lower()]
    if not in_column:
        columns = sorted({r["column"] for r in records})
        raise AuditError(f"{csv_path}: no column '{column}' (columns: {', '.join(columns)})")
    exact = [r for r in in_column if r["row"].lower() == row.lower()]
    matches = exact or [r for r in in_column if row.lower() in r["row"].lower()]
    if len(matches) != 1:
        rows = sorted({r["row"] for r in in_column})
        what = "no row" if not matches else "several rows"
        raise AuditError(f"{csv_path}: {what} matching '{row}' in column '{column}'; rows: " + "; ".join(rows))
    return matches[0]


def _verify(path: Path, expected: str, report: AuditReport, indent: str, label: str) -> bool:
    report.checked += 1
    if not path.exists():
        report.lines.append(f"{indent}{label} {path}  MISSING")
        report.problems.append(f"{path} (missing)")
        return False
    actual = sha256_file(path)
    if actual != expected:
        report.lines.append(f"{indent}{label} {path}  CHANGED (recorded {expected[:12]}…, now {actual[:12]}…)")
        report.problems.append(f"{path} (sha256 recorded {expected}, now {actual})")
        return False
    report.lines.append(f"{indent}{label} {path}  sha256 {expected[:12]}… ok")
    return True


def _describe(prov: dict) -> str:
    code = prov.get("code", {})
    commit = (code.get("commit") or "unknown")[:12] + (" (dirty)" if code.get("dirty") else "")
    libs = prov.get("libraries", {})
    device = prov.get("device", {})
    return (f"step {prov.get('step')} | seed {prov.get('seed')} | code {commit} | torch {libs.get('torch')} "
            f"transformers {libs.get('transformers')} | {device.get('device')} {prov.get('precision')} | "
            f"{prov.get('wall_seconds')} s on {prov.get('host')} | SLURM job {prov.get('slurm_job_id') or '-'}")


def _follow(path: Path, report: AuditReport, depth: int, seen: set[Path]) -> None:
    """If ``path`` is a provenance-carrying JSON, describe it and verify its inputs recursively."""
    if path in seen or path.suffix != ".json" or not path.exists():
        return
    seen.add(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return
    prov = payload.get("provenance") if isinstance(payload, dict) else None
    if not prov:
        return
    indent = "  " * depth
    report.lines.append(f"{indent}  · {_describe(prov)}")
    report.lines.append(f"{indent}  · config slice: {json.dumps(prov.get('config'), sort_keys=True)[:400]}")
    if "files" in payload and isinstance(payload["files"], dict):  # dataset manifest
        root = path.parent / "files"
        bad_before = len(report.problems)
        for rel, digest in payload["files"].items():
            report.checked += 1
            target = root / rel
            if not target.exists():
                report.problems.append(f"{target} (missing)")
            elif sha256_file(target) != digest:
                report.problems.append(f"{target} (sha256 recorded {digest}, now {sha256_file(target)})")
        bad = len(report.problems) - bad_before
        report.lines.append(f"{indent}  · dataset '{payload.get('name')}': {len(payload['files'])} files "
                            + ("all match" if not bad else f"{bad} CHANGED"))
    if "verification" in payload:  # download record
        report.lines.append(f"{indent}  · downloaded from {payload.get('url')} ({payload.get('verification')})")
    for entry in prov.get("inputs", []):
        child = Path(entry["path"])
        if _verify(child, entry["sha256"], report, indent + "  - ", entry["role"] + ":"):
            _follow(child, report, depth + 1, seen)


def audit_cell(csv_path: Path, row: str, column: str) -> AuditReport:
    cell = find_cell(Path(csv_path), row, column)
    report = AuditReport()
    report.lines.append(f"{cell['table']} | {cell['row']} | {cell['column']}: value {cell['value'] or '–'}"
                        f" (std {cell['std'] or '–'}, n={cell['n']}), paper {cell['reported'] or '–'}")
    if not cell["provenance"]:
        report.lines.append("  reported-only cell: no metrics file (not run in this experiment)")
        return report
    seen: set[Path] = set()
    for source in cell["provenance"].split(";"):
        path_text, _, digest = source.partition("#sha256=")
        path = Path(path_text)
        if _verify(path, digest, report, "- ", "metrics:"):
            _follow(path, report, 0, seen)
    return report
