"""Trace a table cell back to raw data, verifying every hash on the way.

Chain: table CSV cell -> metrics file(s) -> their inputs (checkpoint files, training summary) ->
the training summary's inputs (tokenized corpus, dev data, model snapshot manifest and weights) -> tokenized
corpus -> corpus -> dataset manifest -> download record -> downloaded file; model manifest -> every
snapshot file (config, tokenizer, weights) as fetched. Every input is listed with the
sha256 recorded when it was consumed and checked against the file as it is now; a JSON input that
carries its own ``provenance`` is followed. A dataset manifest's files are each verified too.

For each step the audit prints the config slice, code version, environment (libraries, device,
precision, host) and SLURM job; for a training summary also the selected (best STS-B dev) step, a
summary of the dev history and losses, and the job's log file. A best-of-N cell also lists the seeds
it was compared against (``candidate=`` entries, hash-checked), and every cell the paper's number
with the file and line it was transcribed from (``paper=`` entry).

Every link also records the fingerprint of the code that made it (``provenance.code_fingerprint``,
per module); the audit compares it with today's code and names each stale link: the file, the recorded
and current fingerprints and the modules that differ (:func:`sentrepro.code.codedeps.stale_description`). A stale link fails the audit
like a changed hash.

Each link is also checked against the experiment's append-only ledger (:mod:`sentrepro.records.ledger`): the file's
bytes must be those its job wrote. A metrics file edited after its job is named as such even after a table
was rebuilt from it (the cell then records the edited hash, which the ledger does not); a metrics file or
table no job of an existing ledger wrote is named too. A tree without a ledger (written before ledgers, or
by hand) is checked against recorded hashes only, and the audit says so. A link in a shared store (a
``resources_dir`` outside the project) is checked against the store's own ledger. A ledger line that is not
a record (torn by a crash mid-append, or unparsable) is skipped and named in one line (file:line, what could
be read of it); the audit goes on with every other line, and such a line alone does not fail it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from sentrepro.code.codedeps import stale_description
from sentrepro.hashing import sha256_file
from sentrepro.records.ledger import LedgerView
from sentrepro.records.provenance import CARD_RECORD, EXPORT_RECORD, local_path


class AuditError(LookupError):
    """The asked-for cell does not exist in the table."""


@dataclass
class AuditReport:
    lines: list[str] = field(default_factory=list)
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    ledger: LedgerView = field(default_factory=LedgerView)

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self) -> str:
        verdict = (f"OK: {self.checked} files verified" if self.ok else
                   f"FAILED: {len(self.problems)} of {self.checked} files changed or missing:\n  "
                   + "\n  ".join(self.problems))
        skipped = [f"ledger line skipped: {fault.describe()}" for fault in self.ledger.faults]
        return "\n".join(self.lines + skipped + ["", verdict]) + "\n"


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
        ledger, entry = report.ledger.entry(path)
        if entry is not None and entry.get("dropped") and entry["sha256"] == expected:
            report.lines.append(f"{indent}{label} {path}  DROPPED as planned ({entry['dropped']}; sha256 "
                                f"{expected[:12]}… when dropped, {ledger}:{entry['line']})")
            return False  # nothing to follow, and nothing wrong
        removed = f"; {entry['removed']}, {ledger}:{entry['line']}" if entry is not None and entry.get("removed") else ""
        report.lines.append(f"{indent}{label} {path}  MISSING{removed}")
        report.problems.append(f"{path} (missing{removed})")
        return False
    actual = sha256_file(path)
    if actual != expected:
        report.lines.append(f"{indent}{label} {path}  CHANGED (recorded {expected[:12]}…, now {actual[:12]}…)")
        report.problems.append(f"{path} (sha256 recorded {expected}, now {actual})")
        return False
    report.lines.append(f"{indent}{label} {path}  sha256 {expected[:12]}… ok")
    return _check_ledger(path, actual, report, indent)


def _check_ledger(path: Path, actual: str, report: AuditReport, indent: str, *, required: bool = False) -> bool:
    """Compare a file with the latest line its writing job appended to the ledger (:mod:`sentrepro.records.ledger`).

    The bytes must be those the job wrote; a file with no line in an existing ledger is named when
    ``required`` (a metrics file or a table: always written by a job). Without any ledger (a tree written
    before ledgers, or by hand) the link is checked against recorded hashes only, and the audit says so.
    """
    ledger, entry = report.ledger.entry(path)
    if ledger is None or not ledger.is_file():
        if required:
            report.lines.append(f"{indent}  · no ledger for {path} (written outside the workflow or before "
                                "ledgers): checked against recorded hashes only")
        return True
    if entry is None:
        if required:
            report.lines.append(f"{indent}  · NOT IN LEDGER: no job recorded writing {path} in {ledger}"
                                + _torn_hint(path, report))
            report.problems.append(f"{path} (no job of {ledger} wrote it{_torn_hint(path, report)})")
        return not required
    if entry["sha256"] != actual:
        report.lines.append(f"{indent}  · EDITED AFTER ITS JOB: `sentrepro {entry['command']}` wrote sha256 "
                            f"{entry['sha256'][:12]}… at {entry['time']} ({ledger}:{entry['line']}), now {actual[:12]}…")
        report.problems.append(f"{path} (edited after its job: `sentrepro {entry['command']}` wrote sha256 "
                               f"{entry['sha256']} at {entry['time']}, {ledger} line {entry['line']}; now {actual})")
        return False
    report.lines.append(f"{indent}  · as written by `sentrepro {entry['command']}` at {entry['time']} "
                        f"({ledger}:{entry['line']})")
    return True


def _torn_hint(path: Path, report: AuditReport) -> str:
    """Where the ledger line of ``path`` may have been: skipped lines that were recording it."""
    lines = [f"{fault.ledger}:{fault.line}" for fault in report.ledger.faults_naming(path)]
    return f"; its line may be the skipped {', '.join(lines)}" if lines else ""


def _describe(prov: dict) -> str:
    code = prov.get("code", {})
    commit = (code.get("commit") or "unknown")[:12] + (" (dirty)" if code.get("dirty") else "")
    libs = prov.get("libraries", {})
    device = prov.get("device", {})
    gpu = f" ({device['gpu']})" if device.get("gpu") else ""
    if device.get("cpu_capability"):  # recorded since issue 45 (the CPU's kernel family decides a float's bits)
        gpu += f" [CPU {device.get('cpu') or 'unnamed'}, kernels {device['cpu_capability']}" + "".join(
            f", {name}={value}" for name, value in sorted((device.get("numerics_env") or {}).items())) + "]"
    return (f"step {prov.get('step')} | seed {prov.get('seed')} | code {commit} (sentrepro {code.get('package')}) | "
            f"python {libs.get('python')} torch {libs.get('torch')} transformers {libs.get('transformers')} "
            f"numpy {libs.get('numpy')} | {device.get('device')}{gpu} {prov.get('precision')} | "
            f"{prov.get('wall_seconds')} s on {prov.get('host')} at {prov.get('started')} | "
            f"SLURM job {prov.get('slurm_job_id') or '-'}"
            + (f" (CUDA_VISIBLE_DEVICES {prov['cuda_visible_devices']})" if prov.get("cuda_visible_devices") else ""))


def training_summary_lines(payload: dict) -> list[str]:
    """The selected step and a summary of the dev history and losses of a training summary (train.json)."""
    history = payload.get("history") or []
    lines = [f"selected step {payload.get('best_step')} of {payload.get('steps')} "
             f"(best STS-B dev Spearman {_num(payload.get('best_stsb_dev_spearman'))}; "
             f"{len(history)} dev evaluations)"]
    if history:
        shown = history if len(history) <= 8 else history[:3] + history[-3:]
        points = ", ".join(f"{h['step']}: {_num(h.get('stsb_dev_spearman'))}" for h in shown)
        gap = "" if len(history) <= 8 else f" (first and last 3 of {len(history)})"
        lines.append(f"dev history{gap}: {points}")
    if payload.get("loss_first") is not None:
        lines.append(f"loss {_num(payload['loss_first'], 4)} -> {_num(payload.get('loss_last'), 4)}"
                     + (f"; resumed from step {payload['resumed_from']}" if payload.get("resumed_from") else ""))
    return lines


def _num(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def job_log(path: Path) -> Path | None:
    """The Snakemake log of the job that wrote ``results/<exp>/runs/<b>/<m>/<run>/train.json``."""
    parts = path.parts
    if "runs" not in parts or path.name != "train.json":
        return None
    i = len(parts) - 1 - parts[::-1].index("runs")
    run_parts = parts[i + 1:-1]
    if len(run_parts) != 3:
        return None
    return Path(*parts[:i], "logs", "train", run_parts[0], run_parts[1], f"{run_parts[2]}.log")


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
    recorded = prov.get("code_fingerprint")
    stale = stale_description(recorded)
    if stale:
        report.lines.append(f"{indent}  · STALE {stale}")
        report.problems.append(f"{path} (stale: {stale})")
    elif recorded:
        report.lines.append(f"{indent}  · code fingerprint {recorded['fingerprint']} "
                            f"({', '.join(recorded['entries'])}, {len(recorded['modules'])} files) = today's code")
    else:
        report.lines.append(f"{indent}  · no code fingerprint recorded (written outside the sentrepro CLI)")
    if "best_step" in payload and "history" in payload:  # training summary
        for line in training_summary_lines(payload):
            report.lines.append(f"{indent}  · {line}")
        log = job_log(path)
        if log is not None and log.exists():
            lines = len(log.read_text(encoding="utf-8", errors="replace").splitlines())
            report.lines.append(f"{indent}  · training log: {log} ({lines} lines; written by the job, not hashed)")
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
    if payload.get("kind") == "model-snapshot":  # a backbone's fetched files (rule fetch_model), its inputs below
        weights = ", ".join(f"{e['path']} sha256 {e['sha256']}" for e in payload["files"] if e["role"] == "weights")
        report.lines.append(f"{indent}  · model snapshot of backbone '{payload.get('backbone')}': {payload.get('model')} "
                            f"at commit {payload.get('commit') or '- (local model)'} ({payload.get('pin')}, lock "
                            f"{payload.get('lock_status')}); weights {weights}")
    if "verification" in payload:  # download record
        report.lines.append(f"{indent}  · downloaded from {payload.get('url')} ({payload.get('verification')})")
    for entry in prov.get("inputs", []):
        child = local_path(entry["path"])
        if entry.get("package"):
            report.lines.append(f"{indent}  - {entry['path']} is a file of {entry['package']} {entry.get('version')}")
        if _verify(child, entry["sha256"], report, indent + "  - ", entry["role"] + ":"):
            _follow(child, report, depth + 1, seen)


def audit_cell(csv_path: Path, row: str, column: str) -> AuditReport:
    cell = find_cell(Path(csv_path), row, column)
    report = AuditReport(checked=1)  # the table itself
    report.lines.append(f"{cell['table']} | {cell['row']} | {cell['column']}: value {cell['value'] or '–'}"
                        f" (std {cell['std'] or '–'}, n={cell['n']}), paper {cell['reported'] or '–'}")
    _check_ledger(Path(csv_path), sha256_file(csv_path), report, "", required=True)
    entries = [e for e in cell["provenance"].split(";") if e]
    papers = [e.removeprefix("paper=") for e in entries if e.startswith("paper=")]
    candidates = [e.removeprefix("candidate=") for e in entries if e.startswith("candidate=")]
    incomplete = [e.removeprefix("incomplete=") for e in entries if e.startswith("incomplete=")]
    for where in papers:
        report.lines.append(f"- paper: {cell['reported']} transcribed from {where} (src/sentrepro/planning/reported.yaml)")
    if incomplete:
        report.lines.append(f"  no value: the row's runs lack {incomplete[0].replace(',', ', ')}, which this column "
                            "averages; an average over fewer columns is not shown beside the paper's")
        return report
    metrics = [e for e in entries if not e.startswith(("paper=", "candidate="))]
    if not metrics:
        report.lines.append("  reported-only cell: no metrics file (not run in this experiment)")
        return report
    seen: set[Path] = set()
    for source in metrics:
        path_text, _, digest = source.partition("#sha256=")
        path = Path(path_text)
        if _verify(path, digest, report, "- ", "metrics:") and _metrics_in_ledger(path, report):
            _follow(path, report, 0, seen)
    if candidates:
        report.lines.append(f"- best of {len(candidates) + 1} seeds: the value above is the selected seed; "
                            f"the others it was compared against:")
    for source in candidates:
        path_text, _, digest = source.partition("#sha256=")
        _verify(Path(path_text), digest, report, "  - ", "compared:")
    return report


def _metrics_in_ledger(path: Path, report: AuditReport) -> bool:
    """A metrics file a cell reads must be in its experiment's ledger (when there is one). Called after
    :func:`_verify` passed, so a ledger line that names it holds the hash the cell records (a cell built from an
    edited file fails there, as EDITED AFTER ITS JOB)."""
    ledger, entry = report.ledger.entry(path)
    if ledger is None or not ledger.is_file() or entry is not None:
        return True
    report.lines.append(f"  · NOT IN LEDGER: no job recorded writing {path} in {ledger}" + _torn_hint(path, report))
    report.problems.append(f"{path} (no job of {ledger} wrote it{_torn_hint(path, report)})")
    return False


# --- verdict rows (results/<exp>/verdicts.csv) ---------------------------------------------------------


def is_verdict_csv(csv_path: Path) -> bool:
    """A verdicts CSV (header starts with ``claim``) rather than a table's long CSV."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    return bool(header) and header[0] == "claim"


def find_verdict(csv_path: Path, claim: str) -> dict:
    """The verdict row of a claim id (exact, or a unique substring)."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    exact = [r for r in records if r["claim"] == claim]
    matches = exact or [r for r in records if claim.lower() in r["claim"].lower()]
    if len(matches) != 1:
        what = "no claim" if not matches else "several claims"
        raise AuditError(f"{csv_path}: {what} matching '{claim}'; claims: " + "; ".join(r["claim"] for r in records))
    return matches[0]


def audit_verdict(csv_path: Path, claim: str) -> AuditReport:
    """A verdict row: the claim and its source, then per side the cell, its seeds (value, used or not),
    and each seed's metrics file and per-pair scores, hash-checked, with the metrics files' chains."""
    record = find_verdict(Path(csv_path), claim)
    prov = json.loads(record["provenance"])
    report = AuditReport()
    report.lines.append(f"{record['claim']}: {record['text']}  ({record['source']}, claimed {record['direction']}"
                        + (f" by {record['claimed_magnitude']}" if record["claimed_magnitude"] else "") + ")")
    intervals = [(f"[{record[k + '_low']}, {record[k + '_high']}] " if record[k + "_low"] else "")
                 + record[k + "_method"] for k in ("seed", "items")]
    report.lines.append(f"verdict {record['verdict']}: ours {record['ours_delta'] or '–'}, paper "
                        f"{record['paper_delta'] or '–'}; seeds: {intervals[0] or '–'}; items: {intervals[1] or '–'}")
    claims_path, _, digest = prov["claims_file"].partition("#sha256=")
    _verify(local_path(claims_path), digest, report, "- ", "claims file:")
    seen: set[Path] = set()
    for key in ("a", "b"):
        side = prov[key]
        report.lines.append(f"- side {key}: {side['cell']} ({side['printed_row']}), statistic {side['statistic']}, "
                            f"paper number from {side['paper'] or '–'}")
        if not side["seeds"]:
            report.lines.append("  no run of ours for this side")
        for entry in side["seeds"]:
            report.lines.append(f"  - seed {entry['seed']}: {entry['value']:.4f}"
                                + (" (used)" if entry["used"] else " (compared, not used)"))
            path_text, _, digest = entry["metrics"].partition("#sha256=")
            if _verify(Path(path_text), digest, report, "    - ", "metrics:"):
                _follow(Path(path_text), report, 2, seen)
            if entry.get("items"):
                path_text, _, digest = entry["items"].partition("#sha256=")
                _verify(Path(path_text), digest, report, "    - ", "per-pair scores:")
    return report


# --- exported folders (sentrepro export) ------------------------------------------------------------------


def audit_export(folder: Path) -> AuditReport:
    """An exported folder: every file against the sha256 its records list (the weights export's and the model
    card's; no file unlisted), then each record's provenance chain -- the STS metrics file, the run's training
    summary and checkpoint files (or the backbone snapshot), the tables and verdicts the card quotes -- as for a
    table cell. A weights file linked to the run's checkpoint (or the snapshot) is hashed like any other."""

    folder = Path(folder)
    record_path = folder / EXPORT_RECORD
    if not record_path.exists():
        raise AuditError(f"{folder}: not an exported folder (no {EXPORT_RECORD}; `sentrepro export` writes it)")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    report = AuditReport()
    report.lines.append(f"export {record.get('name')}: {folder} ({len(record['folder_files'])} files)")
    records = [(record_path, record)]
    card_path = folder / CARD_RECORD
    if card_path.exists():
        records.append((card_path, json.loads(card_path.read_text(encoding="utf-8"))))
    else:
        report.lines.append(f"- no model card ({CARD_RECORD}): the folder's weights and code only")
    listed = {EXPORT_RECORD, CARD_RECORD}
    for _, payload in records:
        for rel, digest in sorted(payload["folder_files"].items()):
            how = payload.get("weights", {}).get(rel)
            label = f"file ({'linked to ' + how['source'] if how and how['how'] != 'copy' else 'copy'}):" if how \
                else "file:"
            _verify(folder / rel, digest, report, "- ", label)
        listed |= set(payload["folder_files"])
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        if path.relative_to(folder).as_posix() not in listed:
            report.checked += 1
            report.lines.append(f"- file: {path}  NOT IN THE RECORD")
            report.problems.append(f"{path} (not written by the export)")
    seen: set[Path] = set()
    for path, _ in records:
        _follow(path, report, 0, seen)
    return report
