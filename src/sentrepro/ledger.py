"""The append-only ledger: which job wrote which bytes, kept outside the outputs, for the audit to trust.

A table cell's provenance records the sha256 of each metrics file *as the table builder found it*, so a
metrics file edited by hand and then tabled again looks consistent. The ledger breaks that circle: every
``sentrepro`` command that ends successfully appends one line per file it wrote (through the atomic
writers of :mod:`sentrepro.fsutil`, which note each target) with the file's sha256, the command and the
time. ``sentrepro audit`` then checks each link of a cell's chain against the *latest* ledger line for
its path: a file whose bytes are not the ones its job wrote is named as edited after its job, and a
table cell whose recorded hash is not the ledger's is named as built from such a file.

Where: ``results/<experiment>/ledger.jsonl`` for anything under ``results/<experiment>/``; for other
paths inside the project, ``<first folder>/ledger.jsonl`` (``resources/ledger.jsonl``); files outside
the project (a by-hand run writing to /tmp) are not recorded. Paths are recorded relative to the project.

Concurrency: SLURM jobs of one experiment append at the same time, possibly over NFS. Each append takes
an exclusive ``fcntl.flock`` on the ledger and writes its lines in one ``os.write`` on an ``O_APPEND``
descriptor, so lines never interleave (the lock is what makes this hold on NFS, where ``O_APPEND`` alone
is not atomic). Nothing ever rewrites or truncates the file.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
from pathlib import Path

from sentrepro.fsutil import sha256_file, written_targets

LEDGER = "ledger.jsonl"
RESULTS = "results"


def ledger_for(path: str | os.PathLike) -> Path | None:
    """The ledger that records ``path`` (relative to the project, the working directory), or None."""
    rel = project_relative(path)
    if rel is None or len(rel.parts) < 2:
        return None
    if rel.parts[0] == RESULTS:
        return Path(*rel.parts[:2], LEDGER) if len(rel.parts) > 2 else None
    return Path(rel.parts[0], LEDGER)


def project_relative(path: str | os.PathLike) -> Path | None:
    path = Path(path)
    if not path.is_absolute():
        return path if ".." not in path.parts else None
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return None


def _files(target: Path) -> list[Path]:
    if target.is_dir():
        return sorted(p for p in target.rglob("*") if p.is_file())
    return [target] if target.is_file() else []


def append(ledger: Path, records: list[dict]) -> None:
    """Append ``records`` as JSON lines to ``ledger`` under an exclusive lock, in one write."""
    if not records:
        return
    ledger.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode("utf-8")
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        written = os.write(fd, data)
        while written < len(data):  # a short write (signal, quota): finish it while still holding the lock
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock


def record_outputs(command: str, targets: list[Path] | None = None) -> int:
    """Append a line per file the command wrote (default: every atomic write target of this process).
    Returns the number of lines."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    by_ledger: dict[Path, list[dict]] = {}
    seen: set[Path] = set()
    for target in targets if targets is not None else written_targets():
        for path in _files(Path(target)):
            rel = project_relative(path)
            ledger = ledger_for(path)
            if rel is None or ledger is None or rel in seen or rel.name == LEDGER:
                continue
            seen.add(rel)
            by_ledger.setdefault(ledger, []).append({
                "path": rel.as_posix(), "sha256": sha256_file(path), "bytes": path.stat().st_size,
                "command": command, "time": now, "host": socket.gethostname(),
                "slurm_job_id": os.environ.get("SLURM_JOB_ID")})
    for ledger, records in by_ledger.items():
        append(ledger, records)
    return sum(len(r) for r in by_ledger.values())


def record_dropped(files: list[dict], command: str, reason: str) -> int:
    """Append a ``dropped`` line per file a command removed on purpose (``[{path, sha256, bytes}]``, the bytes
    it had): the latest line of the path then says it was dropped, and why, so the audit reports it as dropped,
    not missing. Returns the number of lines."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    by_ledger: dict[Path, list[dict]] = {}
    for entry in files:
        rel, ledger = project_relative(entry["path"]), ledger_for(entry["path"])
        if rel is None or ledger is None:
            continue
        by_ledger.setdefault(ledger, []).append({
            "path": rel.as_posix(), "sha256": entry["sha256"], "bytes": entry["bytes"], "command": command,
            "time": now, "host": socket.gethostname(), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "dropped": reason})
    for ledger, records in by_ledger.items():
        append(ledger, records)
    return sum(len(r) for r in by_ledger.values())


def read_ledger(ledger: Path) -> dict[str, dict]:
    """path -> its latest ledger line (a later job's write supersedes an earlier one)."""
    latest: dict[str, dict] = {}
    if not ledger.is_file():
        return latest
    with open(ledger, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{ledger}:{number}: not a ledger line ({exc.msg})") from None
            latest[record["path"]] = {**record, "line": number}
    return latest


class LedgerView:
    """The latest ledger entry of any project path, reading each ledger once."""

    def __init__(self) -> None:
        self._ledgers: dict[Path, dict[str, dict]] = {}

    def entry(self, path: str | os.PathLike) -> tuple[Path | None, dict | None]:
        ledger = ledger_for(path)
        if ledger is None:
            return None, None
        if ledger not in self._ledgers:
            self._ledgers[ledger] = read_ledger(ledger)
        return ledger, self._ledgers[ledger].get(project_relative(path).as_posix())
