"""One writer per output: a job holds an exclusive lock on what it writes for as long as it runs.

The case it exists for: Snakemake on a login node is killed (a dropped SSH session, a reboot) while its SLURM
jobs keep running. The user restarts it (``--unlock``, then the same command); the outputs of the jobs still
running are incomplete to the new Snakemake, which submits each of them again. Without a lock the orphaned job
and its resubmitted twin would write the same run directory at once (two trainings appending to one ``last/``).

With it, the twin **waits** for the orphan (one line saying whose job it waits for), and then **adopts** the
orphan's output where the orphan finished it and it is exactly what the twin would compute (same config slice,
same code fingerprint, every recorded input unchanged on disk); otherwise it computes the output itself, resuming
from whatever checkpoint the orphan left. Two jobs never write one output at the same time.

The lock is a POSIX record lock (``fcntl.lockf``: NFS carries it between nodes) on a hidden file beside the
output, ``.<name>.lock``, which holds who holds it (host, pid, SLURM job id, since when). The kernel releases the
lock when its holder dies however it dies, so a killed job never leaves a held lock; the holder removes the file
when it is done, and a file left by a killed job is taken over by the next writer of that output.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Callable, Iterator

LOCK_SUFFIX = ".lock"
POLL_SECONDS = 1.0
# While it waits, the job repeats its line this often (a SLURM log shows it is alive, not hung).
REPEAT_SECONDS = 600.0
# File systems without record locks (Lustre mounted without -o flock) answer with one of these.
NO_LOCKS = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP)
# Where set, every take and release of a lock is appended here as a JSON line: the fault harness
# (benchmarks/slurm_faults.py) checks from it that no two jobs ever held one output at once.
JOURNAL = "SENTREPRO_LOCK_JOURNAL"

Log = Callable[[str], None]


def lock_path(output: str | os.PathLike) -> Path:
    """The lock file of an output file or folder: ``<parent>/.<name>.lock``."""
    output = Path(output)
    return output.parent / f".{output.name}{LOCK_SUFFIX}"


def holder_record(command: str) -> dict:
    """Who holds a lock: what a waiting job prints."""
    return {"command": command, "host": socket.gethostname(), "pid": os.getpid(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "since": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def describe_holder(text: str) -> str:
    """One phrase naming a lock's holder from its file's text (a file being written may be empty or torn)."""
    try:
        holder = json.loads(text)
        who = f"sentrepro {holder['command']} (pid {holder['pid']} on {holder['host']}"
        if holder.get("slurm_job_id"):
            who += f", SLURM job {holder['slurm_job_id']}"
        return f"{who}, since {holder['since']})"
    except (ValueError, KeyError, TypeError):
        return "another job (its lock file names no holder yet)"


def _journal(event: str, output: str | os.PathLike) -> None:
    journal = os.environ.get(JOURNAL)
    if not journal:
        return
    holder = f"{socket.gethostname()}:{os.getpid()}:{os.environ.get('SLURM_JOB_ID') or '-'}"
    line = json.dumps({"event": event, "output": os.path.abspath(output), "holder": holder, "time": time.time()})
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open at ``fd`` (its last holder may have removed it meanwhile)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def acquire(output: str | os.PathLike, command: str, log: Log, *, poll_s: float = POLL_SECONDS,
            repeat_s: float = REPEAT_SECONDS) -> tuple[int | None, float]:
    """Take the output's lock, waiting for its holder; returns the open lock fd (None where the file system
    keeps no locks) and the seconds waited (0.0: the lock was free at once)."""
    path = lock_path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    said, waited = None, False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            locked = _try_lock(fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in NO_LOCKS:
                log(f"note: {path.parent} keeps no file locks ({exc.strerror}); nothing stops a second job "
                    f"writing {output} at the same time")
                return None, 0.0
            raise
        if locked and _same_file(fd, path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder_record(command)).encode(), 0)
            _journal("acquired", output)
            return fd, (time.monotonic() - started if waited else 0.0)
        waited = True  # held by another job, or its file just replaced by a holder that let go
        if not locked and (said is None or time.monotonic() - said >= repeat_s):
            holder = describe_holder(path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")
            log(f"waiting for {holder} to finish writing {output}: a job of an earlier Snakemake run still "
                "running (one writer per output; this job goes on when it ends)")
            said = time.monotonic()
        os.close(fd)
        time.sleep(poll_s if not locked else 0)


def release(output: str | os.PathLike, fd: int | None) -> None:
    """Remove the lock file, then let go of the lock (in that order: a waiter that opened the old file sees
    it is gone and opens the new one)."""
    if fd is None:
        return
    _journal("released", output)
    with contextlib.suppress(FileNotFoundError):
        if _same_file(fd, lock_path(output)):
            os.unlink(lock_path(output))
    os.close(fd)


@contextlib.contextmanager
def one_writer(output: str | os.PathLike, command: str, log: Log) -> Iterator[float]:
    """Hold the output's lock for the block; yields the seconds spent waiting for an earlier holder."""
    fd, waited = acquire(output, command, log)
    try:
        yield waited
    finally:
        release(output, fd)
