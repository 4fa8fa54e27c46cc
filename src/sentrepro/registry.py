"""The registry of method kinds, evaluation suites and figures (``registry.yaml``), read once.

Light on purpose (yaml only, no torch): the Snakefile, the config validation, ``sentrepro cost`` and
the CLI read it before anything heavy is imported. Every list that must agree with the code is
derived from here: the schema's enums and per-kind parameter schemas (:func:`schema_fragments`), the
evaluation plan, the evaluation rules, the code fingerprints (:func:`implementation_module`), the
cost estimate, the benchmark and test lists. Implementations are named ``<module>:<attribute>`` and
imported only when a job runs them (:func:`load_implementation`).
"""

from __future__ import annotations

import copy
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path

from sentrepro.data.tasks import task_names
from sentrepro.fsutil import parse_yaml

# Package data this module reads (sentrepro.codedeps adds it to the code of every rule importing us).
PACKAGE_DATA = ("registry.yaml",)
REGISTRY_PATH = Path(__file__).resolve().parent / PACKAGE_DATA[0]

SUITE_DATA = ("source", "sts", "corpus")
SUITE_MODELS = ("checkpoint", "start")
CORPORA = ("sentences", "views")
PRECISIONS = ("fp16", "bf16", "fp32")
# Keys every suite block takes besides its own settings: they choose and schedule jobs, never results.
SCHEDULING_KEYS = ("runs", "resources")


class RegistryError(ValueError):
    """registry.yaml is inconsistent; the message names the entry and key."""


@dataclass(frozen=True)
class MethodEntry:
    kind: str
    implementation: str
    trains: bool
    training_corpus: str
    authors_precision: str | None
    params: tuple[str, ...]
    cost: dict
    benchmark: tuple[str, ...]


@dataclass(frozen=True)
class SuiteEntry:
    name: str
    implementation: str
    data: str
    model: str
    config_block: str  # the evaluation.<block> the suite reads (its own, or settings_from)
    item_scores: bool
    group: str | None
    resources: dict
    cost: dict
    settings: dict | None  # JSON schema fragment of its own block (None when it reads another's)


@dataclass(frozen=True)
class FigureEntry:
    name: str
    suite: str
    paper: str
    implementation: str


def _require(entry: dict, key: str, where: str):
    if key not in entry:
        raise RegistryError(f"{REGISTRY_PATH.name}: {where}: missing '{key}'")
    return entry[key]


def _choice(value, allowed, where: str):
    if value not in allowed:
        raise RegistryError(f"{REGISTRY_PATH.name}: {where}: '{value}' is not one of {', '.join(map(str, allowed))}")
    return value


@functools.lru_cache(maxsize=None)
def _raw() -> dict:
    with open(REGISTRY_PATH, encoding="utf-8") as handle:
        data = parse_yaml(handle)
    if not isinstance(data, dict):
        raise RegistryError(f"{REGISTRY_PATH}: the top level must be a mapping")
    return data


def _expand_params(names: list[str], where: str) -> tuple[str, ...]:
    raw = _raw()
    groups, known = raw.get("parameter_groups", {}), raw["parameters"]
    expanded: list[str] = []
    for name in names:
        for key in groups.get(name, [name]):
            if key not in known:
                raise RegistryError(f"{REGISTRY_PATH.name}: {where}: unknown parameter '{key}' (define it under "
                                    "`parameters`)")
            expanded.append(key)
    return tuple(dict.fromkeys(expanded))


@functools.lru_cache(maxsize=None)
def methods() -> dict[str, MethodEntry]:
    """kind -> entry, in registry order."""
    out = {}
    for kind, entry in _raw()["methods"].items():
        where = f"methods.{kind}"
        trains = bool(_require(entry, "trains", where))
        corpus = _choice(entry.get("training_corpus", "sentences"), CORPORA, f"{where}.training_corpus")
        precision = entry.get("authors_precision")
        if trains:
            _choice(precision, PRECISIONS, f"{where}.authors_precision")
        elif precision is not None:
            raise RegistryError(f"{REGISTRY_PATH.name}: {where}: a kind that does not train has no authors_precision")
        out[kind] = MethodEntry(kind, _require(entry, "implementation", where), trains, corpus, precision,
                                _expand_params(entry.get("params", []), f"{where}.params"), dict(entry.get("cost", {})),
                                tuple(entry.get("benchmark", [kind] if trains else [])))
    return out


@functools.lru_cache(maxsize=None)
def suites() -> dict[str, SuiteEntry]:
    """suite -> entry, in registry order."""
    raw = _raw()["suites"]
    out = {}
    for name, entry in raw.items():
        where = f"suites.{name}"
        block = entry.get("settings_from", name)
        if block != name and (block not in raw or "settings" not in raw[block]):
            raise RegistryError(f"{REGISTRY_PATH.name}: {where}.settings_from: '{block}' is no suite with settings")
        if block == name and "settings" not in entry:
            raise RegistryError(f"{REGISTRY_PATH.name}: {where}: needs `settings` (or settings_from)")
        out[name] = SuiteEntry(
            name, _require(entry, "implementation", where), _choice(_require(entry, "data", where), SUITE_DATA,
                                                                     f"{where}.data"),
            _choice(entry.get("model", "checkpoint"), SUITE_MODELS, f"{where}.model"), block,
            bool(entry.get("item_scores", False)), entry.get("group"), dict(_require(entry, "resources", where)),
            dict(_require(entry, "cost", where)), entry.get("settings") if block == name else None)
    return out


@functools.lru_cache(maxsize=None)
def figures() -> dict[str, FigureEntry]:
    out = {}
    for name, entry in _raw()["figures"].items():
        where = f"figures.{name}"
        suite = _choice(_require(entry, "suite", where), list(suites()), f"{where}.suite")
        out[name] = FigureEntry(name, suite, _require(entry, "paper", where), _require(entry, "implementation", where))
    return out


def _lookup(entries: dict, name: str, what: str):
    if name not in entries:
        raise ValueError(f"unknown {what} '{name}' (known: {', '.join(entries)})")
    return entries[name]


def method(kind: str) -> MethodEntry:
    return _lookup(methods(), kind, "method kind")


def suite(name: str) -> SuiteEntry:
    return _lookup(suites(), name, "evaluation suite")


def figure(name: str) -> FigureEntry:
    return _lookup(figures(), name, "figure")


def implementation_module(implementation: str) -> str:
    """``sentrepro.methods.simcse`` of ``sentrepro.methods.simcse:SimCSE``."""
    return implementation.split(":", 1)[0]


def load_implementation(implementation: str):
    """Import ``<module>:<attribute>`` and return the attribute."""
    module, _, attribute = implementation.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except AttributeError:
        raise RegistryError(f"{REGISTRY_PATH.name}: {implementation}: module {module} has no '{attribute}'") from None


def job_entries(command_entry: str, kind: str, suite_name: str | None = None) -> list[str]:
    """The code entries of a job running one method (and one suite): the command (``cli:train``) plus the
    modules the registry imports on demand for it. The rule's ``params.code`` and the job's provenance
    both fingerprint exactly these, so editing one method's (or suite's) module reruns its jobs only."""
    entries = [command_entry, implementation_module(method(kind).implementation)]
    if suite_name is not None:
        entries.append(implementation_module(suite(suite_name).implementation))
    return list(dict.fromkeys(entries))


def parameter_group(name: str) -> tuple[str, ...]:
    """The keys of a ``parameter_groups`` entry (``trainer``: the training loop's keys)."""
    return _expand_params([name], f"parameter_groups.{name}")


def benchmark_methods() -> list[str]:
    """The config.yaml methods the benchmarks and the parity tests time: each trained kind's recipes."""
    return [name for entry in methods().values() for name in entry.benchmark]


# --- the config schema's registry-derived parts ---------------------------------------------------


def parameter_schema(kind: str) -> dict:
    """JSON schema of ``methods.<name>.params`` for a kind: exactly the keys it lists."""
    known = _raw()["parameters"]
    return {"type": "object", "additionalProperties": False,
            "properties": {key: copy.deepcopy(known[key]) for key in method(kind).params}}


def _with_task_enums(node):
    """``{"enum_of": group}`` -> ``{"enum": <the group's names in data/tasks.yaml>}``, anywhere in ``node``."""
    if isinstance(node, dict):
        if "enum_of" in node:
            rest = {k: v for k, v in node.items() if k != "enum_of"}
            return {**rest, "enum": task_names(node["enum_of"])}
        return {key: _with_task_enums(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_with_task_enums(value) for value in node]
    return node


def suite_block_schema(name: str, scheduling: dict) -> dict:
    """JSON schema of ``evaluation.<name>``: the suite's settings plus the ``scheduling`` keys."""
    settings = _with_task_enums(copy.deepcopy(suite(name).settings))
    properties = {**settings.get("properties", {}), **copy.deepcopy(scheduling)}
    schema = {"type": "object", "additionalProperties": False, "properties": properties}
    for key in ("description", "required"):
        if key in settings:
            schema[key] = settings[key]
    return schema


def schema_fragments(scheduling: dict) -> dict:
    """What the config schema takes from the registry: kind/suite/figure enums, per-kind params, suite blocks."""
    kinds = list(methods())
    per_kind = [{"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                 "then": {"properties": {"params": parameter_schema(kind),
                                         "per_backbone": {"additionalProperties": parameter_schema(kind)}}}}
                for kind in kinds]
    blocks = {name: suite_block_schema(name, scheduling) for name, entry in suites().items() if entry.settings}
    return {"kinds": kinds, "per_kind": per_kind, "suites": list(suites()), "figures": list(figures()),
            "suite_blocks": blocks}
