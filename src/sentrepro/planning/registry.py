"""The registry of method kinds, evaluation suites and figures: the discovered units, checked once.

Light on purpose (yaml and syntax trees only, no torch): the Snakefile, the config validation, ``sentrepro
cost`` and the CLI read it before anything heavy is imported. The units themselves are found by
:mod:`sentrepro.code.units` (a ``<module>.units.yaml`` sidecar beside each implementing module, and plug-ins
declared through the ``sentrepro.code.units`` entry-point group); this module checks each one and derives what
must agree with the code: the schema's enums and per-kind parameter schemas (:func:`schema_fragments`),
the evaluation plan, the evaluation rules, the code entries of a job (:func:`job_entries`), the cost
estimate, the benchmark and test lists. Implementations are named ``<module>:<attribute>`` and imported
only when a job runs them (:func:`load_implementation`).
"""

from __future__ import annotations

import copy
import functools
import importlib
from dataclasses import dataclass

from sentrepro.code import units
from sentrepro.data.tasks import task_names

SUITE_DATA = ("source", "sts", "corpus")
SUITE_MODELS = ("checkpoint", "start")
CORPORA = ("sentences", "views")
PRECISIONS = ("fp16", "bf16", "fp32")
# Keys every suite block takes besides its own settings: they choose and schedule jobs, never results.
SCHEDULING_KEYS = ("runs", "resources")


# The keys a unit's sidecar entry may hold, per section (CONTRIBUTING.md describes each).
UNIT_KEYS = {
    "methods": {"implementation", "trains", "training_corpus", "authors_precision", "params", "cost", "benchmark"},
    "suites": {"implementation", "data", "settings_from", "model", "item_scores", "group", "resources", "cost",
               "settings"},
    "figures": {"implementation", "suite", "paper"},
}


class RegistryError(ValueError):
    """A unit's metadata is inconsistent; the message names its sidecar, entry and key."""


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
    origin: str = units.BUILT_IN


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
    origin: str = units.BUILT_IN


@dataclass(frozen=True)
class FigureEntry:
    name: str
    suite: str
    paper: str
    implementation: str
    origin: str = units.BUILT_IN


def _require(entry: dict, key: str, where: str):
    if key not in entry:
        raise RegistryError(f"{where}: missing '{key}'")
    return entry[key]


def _choice(value, allowed, where: str):
    if value not in allowed:
        raise RegistryError(f"{where}: '{value}' is not one of {', '.join(map(str, allowed))}")
    return value


def _discovered(section: str) -> dict[str, units.Unit]:
    """The discovered units of a section, each checked for keys its section does not know (a typo)."""
    try:
        found = units.discover()[section]
    except units.UnitError as exc:
        raise RegistryError(str(exc)) from None
    for unit in found.values():
        unknown = sorted(set(unit.metadata) - UNIT_KEYS[section])
        if unknown:
            raise RegistryError(f"{unit.where}: unknown key(s) {', '.join(unknown)} "
                                f"(allowed: {', '.join(sorted(UNIT_KEYS[section]))})")
    return found


def _params(unit: units.Unit, trains: bool) -> dict:
    """A kind's parameter schemas: the training loop's keys (``trainer``) for a trained kind, then its own."""
    own = unit.metadata.get("params") or {}
    if not isinstance(own, dict):
        raise RegistryError(f"{unit.where}.params: must map parameter names to JSON schemas")
    shared = units.shared_parameters().get("trainer", {}) if trains else {}
    clash = sorted(set(own) & set(shared))
    if clash:
        raise RegistryError(f"{unit.where}.params: {', '.join(clash)} are training-loop keys (training/loop.params.yaml)")
    return {**shared, **own}


@functools.lru_cache(maxsize=None)
def _method_params() -> dict[str, dict]:
    return {kind: _params(unit, bool(unit.metadata.get("trains"))) for kind, unit in _discovered("methods").items()}


@functools.lru_cache(maxsize=None)
def methods() -> dict[str, MethodEntry]:
    """kind -> entry, in discovery order (built-in sidecars by path, then plug-ins)."""
    out = {}
    params = _method_params()
    for kind, unit in _discovered("methods").items():
        entry, where = unit.metadata, unit.where
        trains = bool(_require(entry, "trains", where))
        corpus = _choice(entry.get("training_corpus", "sentences"), CORPORA, f"{where}.training_corpus")
        precision = entry.get("authors_precision")
        if trains:
            _choice(precision, PRECISIONS, f"{where}.authors_precision")
        elif precision is not None:
            raise RegistryError(f"{where}: a kind that does not train has no authors_precision")
        out[kind] = MethodEntry(kind, unit.implementation, trains, corpus, precision, tuple(params[kind]),
                                dict(entry.get("cost", {})), tuple(entry.get("benchmark", [])), unit.origin)
    return out


@functools.lru_cache(maxsize=None)
def suites() -> dict[str, SuiteEntry]:
    """suite -> entry, in discovery order."""
    raw = _discovered("suites")
    out = {}
    for name, unit in raw.items():
        entry, where = unit.metadata, unit.where
        block = entry.get("settings_from", name)
        if block != name and (block not in raw or "settings" not in raw[block].metadata):
            raise RegistryError(f"{where}.settings_from: '{block}' is no suite with settings")
        if block == name and "settings" not in entry:
            raise RegistryError(f"{where}: needs `settings` (or settings_from)")
        out[name] = SuiteEntry(
            name, unit.implementation, _choice(_require(entry, "data", where), SUITE_DATA, f"{where}.data"),
            _choice(entry.get("model", "checkpoint"), SUITE_MODELS, f"{where}.model"), block,
            bool(entry.get("item_scores", False)), entry.get("group"), dict(_require(entry, "resources", where)),
            dict(_require(entry, "cost", where)), entry.get("settings") if block == name else None, unit.origin)
    return out


@functools.lru_cache(maxsize=None)
def figures() -> dict[str, FigureEntry]:
    out = {}
    for name, unit in _discovered("figures").items():
        entry, where = unit.metadata, unit.where
        suite_name = _choice(_require(entry, "suite", where), list(suites()), f"{where}.suite")
        out[name] = FigureEntry(name, suite_name, _require(entry, "paper", where), unit.implementation, unit.origin)
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
        raise RegistryError(f"{implementation}: module {module} has no '{attribute}'") from None


def unit_entry(section: str, name: str) -> str:
    """The code entry of a unit (``unit:method:simcse``): its module, its imports and its metadata."""
    {"methods": method, "suites": suite, "figures": figure}[section](name)  # unknown names fail here
    return units.unit_entry(section, name)


def job_entries(command_entry: str, kind: str, suite_name: str | None = None) -> list[str]:
    """The code entries of a job running one method (and one suite): the command (``cli:train``) plus the
    units it runs (``unit:method:<kind>``, ``unit:suite:<suite>``: each unit's module, that module's imports
    and the unit's own metadata, parameter schema included). The rule's ``params.code`` and the job's
    provenance both fingerprint exactly these, so adding a unit reruns nothing that exists and editing one
    reruns its jobs only (sentrepro.code.units)."""
    entries = [command_entry, unit_entry("methods", kind)]
    if suite_name is not None:
        entries.append(unit_entry("suites", suite_name))
    return list(dict.fromkeys(entries))


def parameter_group(name: str) -> tuple[str, ...]:
    """The keys of a shared parameter group (``trainer``: the training loop's, training/loop.params.yaml)."""
    groups = units.shared_parameters()
    if name not in groups:
        raise RegistryError(f"unknown parameter group '{name}' (known: {', '.join(groups)})")
    return tuple(groups[name])


def benchmark_methods() -> list[str]:
    """The config.yaml methods the benchmarks and the parity tests time: the ``benchmark`` lists of the
    kinds that declare one (a kind without one, e.g. defined only in a config overlay, is not timed)."""
    return [name for entry in methods().values() for name in entry.benchmark]


# --- the config schema's registry-derived parts ---------------------------------------------------


def parameter_schema(kind: str) -> dict:
    """JSON schema of ``methods.<name>.params`` for a kind: exactly the keys it lists."""
    method(kind)  # unknown kinds fail here, naming the known ones
    return {"type": "object", "additionalProperties": False,
            "properties": copy.deepcopy(_method_params()[kind])}


def _with_task_enums(node):
    """``{"enum_of": group}`` -> ``{"enum": <the group's task names (benchmark units)>}``, anywhere in ``node``."""
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
