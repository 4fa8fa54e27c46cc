"""The content-addressed cache of what is derived from a file's content.

Code fingerprints and imports (sentrepro.code.codedeps) and parsed YAML (sentrepro.yaml_files) are
kept as one line each, keyed by a SHA-256 digest of the content with the kind of derivation, never a
modification time, so a changed file can never find a stale entry.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable

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
