"""Atomic file writes and content hashing.

Every output of the workflow is written to a temporary sibling and renamed into place, so a
killed job never leaves a file that looks complete. Hashes are sha256 over the raw bytes.

The temporary siblings come from ``mkstemp``/``mkdtemp`` (modes 0600/0700, private to the writer);
they are given the modes an ordinary ``open``/``mkdir`` would (0666/0777 less the umask) before they
are renamed into place, so a second user of a shared ``resources/`` can read what the first wrote.
A full disk is reported as :class:`DiskFullError` naming the file and the space free; JSON is written
strictly (a NaN or infinity is refused with the key that holds it, never written as ``NaN``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


_WRITTEN: list[Path] = []  # targets of this process's atomic writes, for the ledger (sentrepro.ledger)


def written_targets() -> list[Path]:
    """Files and folders this process put in place with :func:`atomic_path` / :func:`atomic_dir`, in order."""
    return list(_WRITTEN)


def forget_written() -> None:
    """Start a new record of written targets (each CLI command records only its own)."""
    _WRITTEN.clear()


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success.

    On any exception the temporary file (or directory) is removed and ``target`` is untouched.
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
        _WRITTEN.append(target)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(error, OSError) and error.errno == errno.ENOSPC and not isinstance(error, DiskFullError):
            raise disk_full(target) from error
        raise


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``target``; swap it in place of ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~current_umask())
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
    """A JSON file that does not parse; its message starts with the file's path."""


def read_json(path: str | os.PathLike) -> Any:
    """The parsed JSON file; a syntax error is a :class:`JSONFileError` naming the file, line and column."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(f"{path}: {exc.msg}", exc.doc, exc.pos) from None


def parse_yaml(stream) -> Any:
    """YAML (a string or an open file) parsed by PyYAML's safe loader, its C implementation (libyaml) where
    PyYAML was built with it, through the content-addressed cache (:func:`cached_line`).

    Building Python objects from a YAML document is slow even with libyaml, and a plan reads some seventy
    package YAML files that rarely change, so a document whose value JSON represents exactly (mappings with
    string keys, lists, strings, finite numbers, booleans, null: every file of this project) is kept as one
    line of JSON keyed by its text. It is then returned as JSON gives it back, on the first parse too, so a
    cached and an uncached parse are equal in every respect (YAML aliases, for one, become copies rather
    than shared objects). A document JSON cannot represent exactly (a date, a set, a non-string key) is
    parsed every time and returned as PyYAML builds it."""
    import yaml

    text = stream.read() if hasattr(stream, "read") else stream
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    key = hashlib.sha256(f"yaml\0{loader.__name__}\0{yaml.__version__}\0".encode() + text.encode("utf-8"))
    parsed: list = []

    def parse() -> str:
        data = yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
        parsed.append(data)
        return json.dumps(data, separators=(",", ":"), allow_nan=False) if _json_exact(data) else ""

    line = cached_line(key.hexdigest(), parse, lambda value: True)
    return json.loads(line) if line else (parsed[0] if parsed else yaml.load(text, Loader=loader))  # noqa: S506


def _json_exact(value: Any) -> bool:
    """Whether JSON gives ``value`` back equal and of the same types (what :func:`parse_yaml` may cache)."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _json_exact(item) for key, item in value.items())
    if kind is list:
        return all(_json_exact(item) for item in value)
    if kind is float:
        return math.isfinite(value)
    return kind in (str, int, bool, type(None))


# The content-addressed cache of what is derived from a file's content: code fingerprints and imports
# (sentrepro.codedeps), parsed YAML (parse_yaml). Keys are SHA-256 digests of the content with the kind of
# derivation, never a modification time, so a changed file can never find a stale entry.
CONTENT_CACHE_ENV = "SENTREPRO_FP_CACHE"
_ENTRY = re.compile(r"([0-9a-f]{64}) ([0-9a-f]{16}) ([^\n]*)\n")


def content_cache_dir() -> Path | None:
    """``$SENTREPRO_FP_CACHE``, else ``$XDG_CACHE_HOME/sentrepro/fingerprints`` (``~/.cache/...``); None
    when ``SENTREPRO_FP_CACHE=off``."""
    configured = os.environ.get(CONTENT_CACHE_ENV)
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sentrepro" / "fingerprints"


def cached_line(key: str, compute: Callable[[], str], valid: Callable[[str], Any]) -> str:
    """``compute()`` (a string without newlines) for ``key`` (64 hex digits), through the cache: an entry
    that reads back as ``<its own key> <checksum of key and value> <value>`` and is ``valid`` is returned;
    anything else (missing, truncated, garbled, another key's) is recomputed and written again, atomically.
    A cache that cannot be read or written only costs time."""
    directory = content_cache_dir()
    if directory is None:
        return compute()
    path = directory / key[:2] / key
    try:
        match = _ENTRY.fullmatch(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        match = None
    if match and match.group(1) == key and match.group(2) == _entry_check(key, match.group(3)) \
            and valid(match.group(3)):
        return match.group(3)
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(f"{key} {_entry_check(key, value)} {value}\n")
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass
    return value


def _entry_check(key: str, value: str) -> str:
    return hashlib.sha256(f"{key} {value}".encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=16)
def read_validated_yaml(path: str, validate: Callable[[Any, Path], dict]) -> dict:
    """A package YAML file (reported numbers, claims) parsed and passed through its validator once per
    process: ``validate(data, path)`` raises naming the entry at fault."""
    with open(path, encoding="utf-8") as handle:
        return validate(parse_yaml(handle), Path(path))
