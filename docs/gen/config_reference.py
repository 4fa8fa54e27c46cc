"""The configuration reference page, generated from the config schema and the units' sidecars.

``src/sentrepro/planning/config.schema.yaml`` is the one place a config key's type, default, allowed values and
description are written; the method kinds' parameters and the suites' settings are written once in their units'
sidecars (``*.units.yaml``, ``training/loop.params.yaml``) and filled into the schema by the registry. This module
walks that derived schema (:func:`sentrepro.planning.config.schema`) and each kind's parameter schema
(:func:`sentrepro.planning.registry.parameter_schema`) and renders one table row per key, so the page cannot
list a key the schema lacks or miss one it has. ``docs/gen/generate.py`` writes it; a test compares.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


def breakable(text: str) -> str:
    """Inline code that a narrow table cell may break after a dot or a slash (raw HTML: ``<code>`` with
    ``<wbr>``), so a long key or path wraps at its parts, not inside a name."""
    escaped = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
    return "<code>" + re.sub(r"([./])", r"\1<wbr>", escaped) + "</code>"


ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = "src/sentrepro/planning/config.schema.yaml"


@dataclass(frozen=True)
class Key:
    """One documented key: its dotted path (``<name>`` for a name the user chooses, ``[]`` for list items)."""

    path: str
    type: str
    default: str
    allowed: str
    description: str


def _deref(node: dict, root: dict) -> dict:
    """A ``$ref`` into ``$defs`` replaced by its target, the node's own keys (``default``) kept over it."""
    while isinstance(node, dict) and "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _alternatives(node: dict, root: dict) -> list[dict]:
    return [_deref(part, root) for part in node.get("oneOf", node.get("anyOf", []))]


def _type_of(node: dict, root: dict) -> str:
    parts = _alternatives(node, root)
    if parts:
        return " or ".join(dict.fromkeys(_type_of(part, root) for part in parts))
    if "enum" in node:
        kinds = {type(v).__name__ for v in node["enum"]}
        return {"str": "string", "bool": "boolean", "int": "integer", "float": "number"}.get(kinds.pop(), "value") \
            if len(kinds) == 1 else "value"
    declared = node.get("type")
    if isinstance(declared, list):
        return " or ".join(declared)
    if declared == "array":
        items = _deref(node.get("items", {}), root)
        return f"list of {_type_of(items, root)}" if items else "list"
    if declared:
        return declared
    if "properties" in node or "additionalProperties" in node:
        return "object"
    return "any"


def _code(value) -> str:
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


def _allowed(node: dict, root: dict) -> str:
    out = []
    for part in _alternatives(node, root) or [node]:
        if "enum" in part:
            out.append(", ".join(_code(v) for v in part["enum"]))
        if "const" in part:
            out.append(_code(part["const"]))
        if "pattern" in part:
            out.append(f"matches `{part['pattern']}`")
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"),
                          ("minItems", "items ≥"), ("minLength", "length ≥"), ("minProperties", "entries ≥")):
            if key in part:
                out.append(f"{sign} {part[key]}")
        if part.get("uniqueItems"):
            out.append("no repeats")
        items = _deref(part.get("items", {}), root) if part.get("type") == "array" else {}
        if items and ("enum" in items or "minimum" in items):
            out.append("each: " + _allowed(items, root))
    return "; ".join(o for o in out if o)


def _cell(text) -> str:
    """Table-cell text: one line, pipes escaped, ``<`` and ``>`` outside code spans written as entities (so that
    ``results/<experiment>/`` is not read as an HTML tag)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;").replace(">", "&gt;") for i, part in enumerate(parts))


def _children(node: dict, root: dict) -> list[tuple[str, dict, bool]]:
    """(suffix, child schema, required) of an object or list node: its named properties, ``<name>`` for
    ``additionalProperties``, ``[]`` for the items of a list of objects (each alternative of a ``oneOf``)."""
    out = []
    for part in _alternatives(node, root) or [node]:
        required = set(part.get("required", []))
        for name, child in part.get("properties", {}).items():
            out.append((f".{name}", _deref(child, root), name in required))
        extra = part.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out.append((".<name>", _deref(extra, root), False))
        items = _deref(part.get("items", {}), root) if part.get("type") == "array" else {}
        if items.get("properties"):
            out.append(("[]", items, False))
    return out


def keys(node: dict, root: dict, prefix: str, required: bool = False) -> list[Key]:
    """Every key under ``node`` (itself first when ``prefix`` is set), depth first in schema order; a key its
    parent requires says "required" where a default would stand."""
    node = _deref(node, root)
    found = []
    if prefix:
        default = _code(node["default"]) if "default" in node else ("required" if required else "")
        found.append(Key(prefix, _type_of(node, root), default, _allowed(node, root), node.get("description", "")))
    for suffix, child, child_required in _children(node, root):
        found += keys(child, root, f"{prefix}{suffix}" if prefix else suffix.lstrip("."), child_required)
    return found


def schema_keys() -> list[Key]:
    """Every key of the derived config schema, method parameters apart (they depend on the method's kind)."""
    from sentrepro.planning.config import schema

    root = schema()
    return keys(root, root, "")


def kind_keys() -> dict[str, tuple[str, list[Key]]]:
    """kind -> (its sidecar, relative to the repository; its parameters), defaults and requirements as the
    config's validation fills and checks them (:func:`sentrepro.planning.config.param_markers`)."""
    from sentrepro.code import units
    from sentrepro.planning import registry
    from sentrepro.planning.config import param_markers

    discovered = units.discover()["methods"]
    out = {}
    for kind in registry.methods():
        params = registry.parameter_schema(kind)
        defaults, required = param_markers(kind)
        rows = []
        for key in keys(params, params, ""):
            name = key.path.split(".")[0]
            default = key.default or (_code(defaults[name]) if name in defaults and name == key.path else "")
            if name == key.path and name in required:
                default = f"required ({required[name]})"
            rows.append(Key(key.path, key.type, default, key.allowed, key.description))
        sidecar = Path(str(discovered[kind].sidecar))
        try:
            sidecar = sidecar.resolve().relative_to(ROOT)
        except ValueError:  # a plug-in's sidecar, outside the checkout
            pass
        out[kind] = (str(sidecar), rows)
    return out


def _table(rows: list[Key]) -> list[str]:
    lines = ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    lines += [f"| {breakable(k.path)} | {_cell(k.type)} | {_cell(k.default)} | {_cell(k.allowed)} | {_cell(k.description)} |"
              for k in rows]
    return lines


def render() -> str:
    """The page's Markdown."""
    from sentrepro.planning.config import schema

    root = schema()
    lines = [
        "<!-- generated by docs/gen/generate.py from the config schema and the units' sidecars: do not edit -->",
        "# Configuration reference",
        "",
        f"Every key a config may set, generated from `{SCHEMA_FILE}` with the registry's parts filled in "
        "(method kinds, suites and figures from the units' sidecars, task names from the benchmark units). "
        "A key left out takes its default when the config is validated; an unknown key is an error naming "
        "its file and line. How the files combine: [Configuration](../configuration.md).",
        "",
        "`<name>` stands for a name you choose (a data source, a backbone, a method, a matrix block); `[]` for "
        "each entry of a list. A cell left empty: the schema says nothing there.",
        "",
    ]
    rows = keys(root, root, "")
    top_required = set(root.get("required", []))
    rows = [Key(k.path, k.type, "required", k.allowed, k.description) if k.path in top_required else k for k in rows]
    for top in root["properties"]:
        lines += [f"## `{top}`", ""]
        lines += _table([k for k in rows if k.path == top or k.path.startswith((f"{top}.", f"{top}["))])
        lines.append("")
    lines += ["## Method parameters, per kind", "",
              "`methods.<name>.params` (and each `methods.<name>.per_backbone.<backbone>`) takes exactly the keys "
              "of the method's `kind`. A trained kind takes the training loop's keys "
              "(`src/sentrepro/training/loop.params.yaml`) beside its own.", ""]
    for kind, (sidecar, kind_rows) in kind_keys().items():
        lines += [f"### `{kind}`", "", f"Sidecar: `{sidecar}`.", ""]
        lines += _table(kind_rows) if kind_rows else ["No parameters."]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
