"""Atomic file writes and content hashing.

Every output of the workflow is written to a temporary sibling and renamed into place, so a
killed job never leaves a file that looks complete. Hashes are sha256 over the raw bytes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
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
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``target``; swap it in place of ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_json(target: str | os.PathLike, payload: Any) -> None:
    atomic_write_text(target, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def parse_yaml(stream) -> Any:
    """YAML (a string or an open file) parsed by PyYAML's safe loader, its C implementation (libyaml) where
    PyYAML was built with it: the same safe constructor, several times faster than the pure-Python one."""
    import yaml

    return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 (safe)


@functools.lru_cache(maxsize=16)
def read_validated_yaml(path: str, validate: Callable[[Any, Path], dict]) -> dict:
    """A package YAML file (reported numbers, claims) parsed and passed through its validator once per
    process: ``validate(data, path)`` raises naming the entry at fault."""
    with open(path, encoding="utf-8") as handle:
        return validate(parse_yaml(handle), Path(path))
