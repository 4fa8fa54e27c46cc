"""The append-only ledger: which job wrote which bytes, kept outside the outputs, for the audit to trust.

A table cell's provenance records the sha256 of each metrics file *as the table builder found it*, so a
metrics file edited by hand and then tabled again looks consistent. The ledger breaks that circle: every
``sentrepro`` command that ends successfully appends one line per file it wrote (through the atomic
writers of :mod:`sentrepro.files`, which note each target) with the file's sha256, the command and the
time. ``sentrepro audit`` then checks each link of a cell's chain against the *latest* ledger line for
its path: a file whose bytes are not the ones its job wrote is named as edited after its job, and a
table cell whose recorded hash is not the ledger's is named as built from such a file.

Where: ``results/<experiment>/ledger.jsonl`` for anything under ``results/<experiment>/``; for other
paths inside the project, ``<first folder>/ledger.jsonl`` (``resources/ledger.jsonl``). Paths are recorded
relative to the project. A **shared store** (``resources_dir`` outside the project, shared by several
checkouts) keeps its own ``<store>/ledger.jsonl``, same format and locking, with paths relative to the
store: a command knows a store's root when the workflow names it (``SENTREPRO_STORE``, set from
``resources_dir``) or the command derives it (``fetch-model`` from the snapshot layout,
:func:`declare_store`); any reader (the audit) finds it as the nearest folder above the file that holds a
``ledger.jsonl``. Other files outside the project (a by-hand run writing to /tmp) are not recorded.

Concurrency: SLURM jobs of one experiment append at the same time, possibly over NFS. Each append takes
an exclusive ``fcntl.flock`` on the ledger and writes its lines in one ``os.write`` on an ``O_APPEND``
descriptor, so lines never interleave (the lock is what makes this hold on NFS, where ``O_APPEND`` alone
is not atomic). Nothing ever rewrites or truncates the file.

A torn tail (a crash or a full disk in the middle of an append leaves half a line with no newline) must not
swallow the next record: each append first ends an unterminated last line, under the same lock, so the
torn line stays a line of its own. The reader skips a line that is not a complete record and reports it
(:class:`Fault`: file, line, what it could read), and salvages a whole record glued onto a torn one by
appends made before this rule; the audit names each such line and goes on.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import functools
import json
import os
import re
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sentrepro.hashing import sha256_file
from sentrepro.files import disk_full, written_targets

LEDGER = "ledger.jsonl"
RESULTS = "results"
STORE_ENV = "SENTREPRO_STORE"  # roots of shared stores outside the project (os.pathsep-separated)
REQUIRED = ("path", "sha256")  # what makes a line a record

_DECLARED: list[Path] = []  # store roots this process's command derived (declare_store)


def declare_store(root: str | os.PathLike) -> None:
    """Name ``root`` as a shared store for this process: files written under it (outside the project) are
    recorded in ``<root>/ledger.jsonl``. Commands that know their store's layout call this."""
    root = Path(root).resolve()
    if root not in _DECLARED:
        _DECLARED.append(root)


def forget_stores() -> None:
    """Start a command with no declared store (each CLI command declares its own)."""
    _DECLARED.clear()


def _store_roots() -> list[Path]:
    named = [Path(p).resolve() for p in os.environ.get(STORE_ENV, "").split(os.pathsep) if p]
    return named + _DECLARED


def locate(path: str | os.PathLike) -> tuple[Path, str] | None:
    """(the ledger recording ``path``, the key it is recorded under), or None for an unrecorded path.

    Inside the project (the working directory): the experiment's or first folder's ledger, keyed by the
    path relative to the project. Outside: the ledger of the shared store holding it -- a named or declared
    store root, else the nearest folder above it with a ledger -- keyed relative to the store.
    """
    rel = project_relative(path)
    if rel is not None:
        if len(rel.parts) < 2:
            return None
        if rel.parts[0] == RESULTS:
            return (Path(*rel.parts[:2], LEDGER), rel.as_posix()) if len(rel.parts) > 2 else None
        return Path(rel.parts[0], LEDGER), rel.as_posix()
    absolute = Path(os.path.abspath(path)).resolve()
    roots = [r for r in _store_roots() if absolute.is_relative_to(r)]
    if roots:
        root = max(roots, key=lambda r: len(r.parts))  # the innermost named store
    else:
        root = next((folder for folder in absolute.parents if (folder / LEDGER).is_file()), None)
        if root is None:
            return None
    return root / LEDGER, absolute.relative_to(root).as_posix()


def ledger_for(path: str | os.PathLike) -> Path | None:
    """The ledger that records ``path`` (see :func:`locate`), or None."""
    found = locate(path)
    return found[0] if found else None


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
    """Append ``records`` as JSON lines to ``ledger`` under an exclusive lock, in one write; a torn last line
    (no newline: a crash mid-append) is ended first, under the same lock, so no record is glued onto it."""
    if not records:
        return
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode("utf-8")
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(ledger, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            written = os.write(fd, data)
            while written < len(data):  # a short write (signal, quota): finish it while still holding the lock
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock
    except OSError as exc:  # os.write's errors carry no path: name the ledger (a torn tail is ended by the next append)
        if exc.errno == errno.ENOSPC:
            raise disk_full(ledger, len(data)) from exc
        raise OSError(exc.errno, f"cannot append to the ledger {ledger}: {exc.strerror}", str(ledger)) from exc


def writer() -> dict:
    """Who writes a record: the host and SLURM job, and the job's incarnation where SLURM restarted it
    (:func:`slurm_restart_count`). A requeued job that writes a file again writes it a second time: its records
    say so, and are never one record appended twice."""
    job = os.environ.get("SLURM_JOB_ID")
    fields = {"host": socket.gethostname(), "slurm_job_id": job}
    restarts = slurm_restart_count(job)
    if restarts:
        fields["slurm_restart_count"] = restarts
    return fields


def slurm_restart_count(job: str | None) -> str | None:
    """How many times SLURM restarted ``job`` (requeued it), as text; None for a first incarnation or no job.

    SLURM sets ``SLURM_RESTART_COUNT`` in a restarted job's batch step, but Snakemake's slurm-jobstep executor
    strips every ``SLURM_*`` variable but the job's identity before its ``srun`` runs the rule, so a rule's
    command never sees it (issue 45's seed-1 run: a requeued evaluation's second writes carried no count). There
    the count is read from ``scontrol show job`` (its ``Restarts=``), once per process."""
    restarts = os.environ.get("SLURM_RESTART_COUNT")
    if restarts:
        return restarts
    if not job:
        return None
    return _scontrol_restarts(job)


@functools.lru_cache(maxsize=None)
def _scontrol_restarts(job: str) -> str | None:
    """``Restarts=`` of ``scontrol show job <job>``; None when it is 0, or when scontrol is absent, fails or
    does not answer within 15 s (no controller to ask: nothing can be said of the job's incarnation)."""
    try:
        shown = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, timeout=15,
                               check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return None
    found = re.search(r"\bRestarts=(\d+)\b", shown.stdout)
    if found is None:
        raise ValueError(f"scontrol show job {job}: no Restarts= field in what it printed: {shown.stdout[:300]!r}")
    return found.group(1) if found.group(1) != "0" else None


def latest_write(path: str | os.PathLike) -> dict | None:
    """The latest ledger line of ``path`` where it records a write (None: unrecorded, dropped or removed)."""
    entry = LedgerView().entry(path)[1]
    return None if entry is None or entry.get("dropped") or entry.get("removed") else entry


def record_outputs(command: str, targets: list[Path] | None = None) -> int:
    """Append a line per file the command wrote (default: every atomic write target of this process).
    Returns the number of lines."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    by_ledger: dict[Path, list[dict]] = {}
    seen: set[tuple[Path, str]] = set()
    for target in targets if targets is not None else written_targets():
        for path in _files(Path(target)):
            found = locate(path)
            if found is None or found in seen or path.name == LEDGER:
                continue
            seen.add(found)
            ledger, key = found
            by_ledger.setdefault(ledger, []).append({
                "path": key, "sha256": sha256_file(path), "bytes": path.stat().st_size,
                "command": command, "time": now, **writer()})
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
        found = locate(entry["path"])
        if found is None:
            continue
        ledger, key = found
        by_ledger.setdefault(ledger, []).append({
            "path": key, "sha256": entry["sha256"], "bytes": entry["bytes"], "command": command,
            "time": now, **writer(), "dropped": reason})
    for ledger, records in by_ledger.items():
        append(ledger, records)
    return sum(len(r) for r in by_ledger.values())


def record_removed(ledgers: list[Path], reason: str) -> int:
    """Append a ``removed`` line for every path whose latest line in ``ledgers`` records a write, and whose file
    is gone: an output its job recorded and did not keep. A command records its outputs only when it succeeds,
    but Snakemake may still fail the job afterwards (its log's pipe failing on a full disk, an output
    missing, a scheduler's time limit) and then removes the outputs; the Snakefile's ``onerror`` calls this
    so that the ledger's latest word on each such path is that it was removed, and why. Paths are keyed as
    :func:`locate` keys them (project ledgers: relative to the project; a store's: to the store). Returns
    the number of lines."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    appended = 0
    for ledger in map(Path, ledgers):
        if not ledger.is_file():
            continue
        base = Path() if project_relative(ledger) is not None else ledger.parent
        gone = [entry for key, entry in sorted(read_ledger(ledger).items())
                if not entry.get("dropped") and not entry.get("removed") and not (base / key).exists()]
        append(ledger, [{"path": entry["path"], "sha256": entry["sha256"], "bytes": entry.get("bytes"),
                         "command": entry.get("command"), "time": now, **writer(), "removed": reason}
                        for entry in gone])
        appended += len(gone)
    return appended


@dataclass(frozen=True)
class Fault:
    """A ledger line that is not a complete record: skipped by the reader, named by the audit."""

    ledger: Path
    line: int
    reason: str
    text: str  # what could be read of it (shortened)
    path: str | None = None  # the file it was recording, where that much of it survived

    def describe(self) -> str:
        where = f"{self.ledger}:{self.line}" if self.line else f"{self.ledger}"
        names = f", it was recording {self.path}" if self.path else ""
        return f"{where}: {self.reason}, skipped{names} (could read: {self.text})"


_PATH = re.compile(r'"path": "((?:[^"\\]|\\.)*)"')
SHOWN = 80  # characters of a faulty line shown


def _is_record(value) -> bool:
    """A JSON value with the fields of a record (a loop, not all(...): this runs once per ledger line)."""
    if not isinstance(value, dict):
        return False
    for key in REQUIRED:
        if not isinstance(value.get(key), str):
            return False
    return True


def _record(text: str) -> dict | None:
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        return None
    return record if _is_record(record) else None


def _fault(ledger: Path, number: int, reason: str, text: str) -> Fault:
    shown = text if len(text) <= SHOWN else text[:SHOWN] + "…"
    match = _PATH.search(text)
    return Fault(ledger, number, reason, repr(shown), json.loads(f'"{match.group(1)}"') if match else None)


def _salvaged(text: str) -> tuple[str, dict] | None:
    """A whole record glued after a torn one (``<torn>{...}``, as appends before the torn-tail rule left
    them): (the torn part, the record), or None."""
    for at in (i for i, char in enumerate(text) if char == "{" and i > 0):
        record = _record(text[at:])
        if record is not None:
            return text[:at], record
    return None


def scan_ledger(ledger: Path) -> tuple[dict[str, dict], list[Fault]]:
    """path -> its latest ledger line (a later job's write supersedes an earlier one), and the lines that
    are not records (torn, unparsable, not UTF-8), each skipped and reported."""
    latest: dict[str, dict] = {}
    faults: list[Fault] = []
    if not ledger.is_file():
        return latest, faults
    data = ledger.read_bytes()
    try:  # decoded at once (a line that is not UTF-8 makes it line by line, below)
        lines: list = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        try:  # the common case first: a whole record
            record = json.loads(raw)
        except ValueError:  # not JSON, or not UTF-8
            record = None
        if not _is_record(record):
            if not raw.strip():
                continue
            # the last piece has no newline after it: an append cut short
            record = _examine(ledger, number, raw, number == len(lines), faults)
            if record is None:
                continue
        latest[record["path"]] = {**record, "line": number}
    return latest, faults


def _examine(ledger: Path, number: int, raw: str | bytes, unterminated: bool, faults: list[Fault]) -> dict | None:
    """A line that is not a record: add its fault; return a whole record glued after a torn one, if any."""
    try:
        text = (raw if isinstance(raw, str) else raw.decode("utf-8")).strip()
    except UnicodeDecodeError as exc:
        faults.append(_fault(ledger, number, f"not UTF-8 ({exc.reason} at byte {exc.start})",
                             raw.decode("utf-8", "replace")))
        return None
    salvaged = None if unterminated else _salvaged(text)
    if salvaged is None:
        reason = "a torn last line (an append cut short)" if unterminated else "not a ledger record"
        faults.append(_fault(ledger, number, reason, text))
        return None
    torn, record = salvaged
    faults.append(_fault(ledger, number, f"a torn record with a whole one glued after it (kept: {record['path']})",
                         torn))
    return record


def read_ledger(ledger: Path) -> dict[str, dict]:
    """path -> its latest ledger line; lines that are not records are skipped (:func:`scan_ledger` names them)."""
    return scan_ledger(ledger)[0]


@dataclass
class LedgerView:
    """The latest ledger entry of any recorded path, reading each ledger once; ``faults`` collects the
    skipped lines of every ledger read (an unreadable ledger is one fault)."""

    faults: list[Fault] = field(default_factory=list)
    _ledgers: dict[Path, dict[str, dict]] = field(default_factory=dict)

    def entry(self, path: str | os.PathLike) -> tuple[Path | None, dict | None]:
        found = locate(path)
        if found is None:
            return None, None
        ledger, key = found
        if ledger not in self._ledgers:
            try:
                self._ledgers[ledger], faults = scan_ledger(ledger)
            except OSError as exc:
                self._ledgers[ledger], faults = {}, [Fault(ledger, 0, f"cannot read it ({exc.strerror})", "''")]
            self.faults.extend(faults)
        return ledger, self._ledgers[ledger].get(key)

    def faults_naming(self, path: str | os.PathLike) -> list[Fault]:
        """The skipped lines of ``path``'s ledger that were recording ``path``."""
        found = locate(path)
        return [f for f in self.faults if found and f.ledger == found[0] and f.path == found[1]]
