"""Atomic file writes and strict JSON.

Every output of the workflow is written to a temporary sibling and renamed into place, so a
killed job never leaves a file that looks complete.

The temporary siblings come from ``mkstemp``/``mkdtemp`` (modes 0600/0700, private to the writer);
they -- and every file and folder inside a temporary folder, whatever mode its writer gave it -- are given
the modes an ordinary ``open``/``mkdir`` would (0666/0777 less the umask) before they are renamed into
place, so a second user of a shared ``resources/`` can read what the first wrote.
A full disk is reported as :class:`DiskFullError` naming the file and the space free; JSON is written
strictly (a NaN or infinity is refused with the key that holds it, never written as ``NaN``) and read
with errors that name the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator


class DiskFullError(OSError):
    """No space left on the device while writing a file; the message names it and the space needed."""


def current_umask() -> int:
    """The process umask (read by setting and restoring it: os offers no read-only call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free to this user on the file system holding ``path`` (or its nearest existing parent)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def disk_full(target: str | os.PathLike, needed: int | None = None) -> DiskFullError:
    """The error for a write of ``target`` that ran out of space (``needed`` bytes, when known)."""
    want = f"needs about {_mib(needed)}, " if needed else ""
    return DiskFullError(errno.ENOSPC, f"no space left on the device writing {target}: {want}"
                         f"{_mib(free_bytes(Path(target).parent))} free there; free some space and rerun")


_WRITTEN: list[Path] = []  # targets of this process's atomic writes, for the ledger (sentrepro.records.ledger)


def written_targets() -> list[Path]:
    """Files and folders this process put in place with :func:`atomic_path` / :func:`atomic_dir`, in order."""
    return list(_WRITTEN)


def forget_written() -> None:
    """Start a new record of written targets (each CLI command records only its own)."""
    _WRITTEN.clear()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "", *, note: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success.

    On any exception the temporary file (or directory) is removed and ``target`` is untouched. ``note=False``:
    the ledger does not record it (a file put back as bytes the ledger already records for it).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if tmp.exists():
            os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
        if note:
            _WRITTEN.append(target)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(error, OSError) and error.errno == errno.ENOSPC and not isinstance(error, DiskFullError):
            raise disk_full(target) from error
        raise


def umask_modes(folder: Path) -> None:
    """Give ``folder`` and everything in it the modes an ordinary ``mkdir``/``open`` would: 0777/0666 less the
    umask (an executable file keeps its execute bits). ``mkdtemp`` makes the folder 0700, and some writers
    (safetensors' ``save_file``, hence ``save_pretrained``) create their files 0600 whatever the umask; a
    folder put in place by :func:`atomic_dir` (a run's ``best/``, an export) would otherwise be private."""
    mask = current_umask()
    os.chmod(folder, 0o777 & ~mask)
    for path in folder.rglob("*"):
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        wanted = (0o777 if path.is_dir() or mode & 0o111 else 0o666) & ~mask
        if mode & 0o777 != wanted:
            with contextlib.suppress(PermissionError):  # a hard link to another user's file (an export's weights)
                os.chmod(path, wanted)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``target``; swap it in place of ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        umask_modes(tmp)
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
        _WRITTEN.append(target)
    except BaseException as error:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC and not isinstance(error, DiskFullError):
            raise disk_full(target) from error
        raise


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    data = text.encode("utf-8")
    try:
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
    except DiskFullError as error:
        raise disk_full(target, len(data)) from error.__cause__


class NonFiniteError(ValueError):
    """A value to be written is NaN or infinite; the message names the file and the key."""


def nonfinite_keys(payload: Any, where: str = "") -> list[str]:
    """The key paths (``results.STS-B.reported``) of every NaN or infinite float inside ``payload``."""
    if isinstance(payload, float):
        return [] if math.isfinite(payload) else [where or "(top level)"]
    if isinstance(payload, dict):
        return [k for key, value in payload.items() for k in nonfinite_keys(value, f"{where}.{key}" if where else str(key))]
    if isinstance(payload, (list, tuple)):
        return [k for i, value in enumerate(payload) for k in nonfinite_keys(value, f"{where}[{i}]")]
    return []


def atomic_write_json(target: str | os.PathLike, payload: Any) -> None:
    """Write ``payload`` as JSON; a NaN or infinity anywhere is refused (:class:`NonFiniteError`), the target untouched."""
    bad = nonfinite_keys(payload)
    if bad:
        raise NonFiniteError(f"refusing to write {target}: non-finite value at {', '.join(bad[:5])}")
    atomic_write_text(target, json.dumps(payload, indent=2, sort_keys=True, default=str, allow_nan=False) + "\n")


class JSONFileError(json.JSONDecodeError):
    """A JSON file that does not parse; its message is one line ``<path>:<line>:<column>: <what>``."""

    def __init__(self, msg: str, doc: str, pos: int, path: str | os.PathLike = "<string>"):
        super().__init__(msg, doc, pos)
        self.path = str(path)
        self.args = (f"{path}:{self.lineno}:{self.colno}: JSON syntax error: {msg}",)

    def __reduce__(self):
        return self.__class__, (self.msg, self.doc, self.pos, self.path)


def read_json(path: str | os.PathLike) -> Any:
    """The parsed JSON file; a syntax error is a :class:`JSONFileError` naming the file, line and column."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(exc.msg, exc.doc, exc.pos, path) from None
