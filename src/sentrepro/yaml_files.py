"""Reading the package's YAML files: parsed once per content (through the content cache), validated once
per process."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Callable

from sentrepro.content_cache import cached_line


def parse_yaml(stream, name: str | None = None) -> Any:
    """YAML (a string or an open file) parsed by PyYAML's safe loader, its C implementation (libyaml) where
    PyYAML was built with it, through the content-addressed cache (:func:`cached_line`).

    Building Python objects from a YAML document is slow even with libyaml, and a plan reads some seventy
    package YAML files that rarely change, so a document whose value JSON represents exactly (mappings with
    string keys, lists, strings, finite numbers, booleans, null: every file of this project) is kept as one
    line of JSON keyed by its text. It is then returned as JSON gives it back, on the first parse too, so a
    cached and an uncached parse are equal in every respect (YAML aliases, for one, become copies rather
    than shared objects). A document JSON cannot represent exactly (a date, a set, a non-string key) is
    parsed every time and returned as PyYAML builds it.

    A syntax error is PyYAML's own exception with its marks naming the file (``name``, else the open file's
    name) instead of ``<unicode string>``; :func:`yaml_error_line` makes it one line ``file:line:col: ...``."""
    import yaml

    name = name or getattr(stream, "name", None)
    text = stream.read() if hasattr(stream, "read") else stream
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    key = hashlib.sha256(f"yaml\0{loader.__name__}\0{yaml.__version__}\0".encode() + text.encode("utf-8"))
    parsed: list = []

    def parse() -> str:
        data = yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
        parsed.append(data)
        return json.dumps(data, separators=(",", ":"), allow_nan=False) if _json_exact(data) else ""

    try:
        line = cached_line(key.hexdigest(), parse, lambda value: True)
    except yaml.YAMLError as exc:
        if name:  # libyaml's marks are read-only: each is replaced by a pure-Python one naming the file
            for attribute in ("context_mark", "problem_mark"):
                mark = getattr(exc, attribute, None)
                if mark is not None:
                    setattr(exc, attribute, yaml.Mark(str(name), mark.index, mark.line, mark.column, None, None))
        raise
    return json.loads(line) if line else (parsed[0] if parsed else yaml.load(text, Loader=loader))  # noqa: S506


def yaml_error_line(exc: Exception) -> str:
    """``file:line:col: YAML syntax error: <problem>`` of a PyYAML error raised by :func:`parse_yaml`, on one line."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return f"YAML error: {' '.join(str(exc).split())}"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: {problem}" + \
        (f" ({context})" if context else "")


def check_package_yaml(root: Path | None = None) -> int:
    """Parse every YAML and JSON file of the package (sidecars, specs, claims, reported numbers, the schema),
    so that a syntax error in any of them stops a workflow load at once, as :func:`yaml_error_line`'s one
    line, before code deep inside the plan meets it. Each parse goes through the content cache (a cache read
    for an unchanged file). Returns the number of files read."""
    root = Path(root) if root is not None else Path(__file__).parent
    files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    for path in files:
        with open(path, encoding="utf-8") as handle:
            parse_yaml(handle)
    return len(files)


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


@functools.lru_cache(maxsize=16)
def read_validated_yaml(path: str, validate: Callable[[Any, Path], dict]) -> dict:
    """A package YAML file (reported numbers, claims) parsed and passed through its validator once per
    process: ``validate(data, path)`` raises naming the entry at fault."""
    with open(path, encoding="utf-8") as handle:
        return validate(parse_yaml(handle), Path(path))
