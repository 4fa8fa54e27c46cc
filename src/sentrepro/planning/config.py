"""Configuration: load config files, validate them against the schema (with the registry's parts filled
in) and the cross references, and fill the schema's defaults.

The slices each rule depends on are cut by :mod:`sentrepro.runs` (the base layer) and
:mod:`sentrepro.planning.matrix` (the runs and the training slice, which need the registry): rules receive only
the slice they use (``params`` in Snakemake), so editing one method's learning rate reruns only that
method's jobs. This module is in the plan layer with the registry and the evaluation plan
(docs/architecture.md).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sentrepro.planning import registry
from sentrepro.runs import ConfigError, deep_merge
from sentrepro.planning.evaluations import check_plan
from sentrepro.planning.layers import Layers, load_yaml  # noqa: F401 - load_yaml: read here and by callers

# Package data this module reads (sentrepro.code.codedeps adds it to the code of every rule importing us): the
# schema ships inside the package, so an installed sentrepro validates configs without a checkout.
PACKAGE_DATA = ("config.schema.yaml",)
SCHEMA_PATH = Path(__file__).resolve().parent / PACKAGE_DATA[0]


def load_config(*paths: str | Path, command_line: dict | None = None) -> dict:
    """Load config files in order, each overlaying the previous one (then ``command_line`` values, as
    Snakemake's ``--config``), then validate; an error names the file (and line) that set the key."""
    layers = Layers.from_files(paths, command_line)
    config: dict = {}
    for layer in layers.layers:
        config = deep_merge(config, layer.data)
    return validate(config, layers)


@functools.lru_cache(maxsize=None)
def _schema_with_registry() -> dict:
    schema = load_yaml(SCHEMA_PATH)
    scheduling = {"runs": {"$ref": "#/$defs/run_filter"}, "resources": {"$ref": "#/$defs/resources"}}
    fragments = registry.schema_fragments(scheduling)
    method = schema["properties"]["methods"]["additionalProperties"]
    method["properties"]["kind"]["enum"] = fragments["kinds"]
    method["allOf"] = [_without_param_markers(part) for part in fragments["per_kind"]]
    evaluation = schema["properties"]["evaluation"]["properties"]
    for key in ("suites", "figures"):  # name -> true/false, one property per unit (an unknown name: unknown key)
        evaluation[key]["properties"] = {name: {"type": "boolean"} for name in fragments[key]}
    for name, block in fragments["suite_blocks"].items():
        if name in evaluation:
            raise ConfigError(f"{SCHEMA_PATH.name}: evaluation.{name} is defined there and by the registry")
        evaluation[name] = block
    return schema


def _without_param_markers(part: dict) -> dict:
    """A kind's ``if``/``then`` fragment with ``default`` and ``required`` taken off each parameter: they are
    filled and checked per kind (:func:`param_markers`), not by JSON schema inside a combinator."""
    part = copy.deepcopy(part)
    then = part["then"]["properties"]
    for schema_ in (then["params"], then["per_backbone"]["additionalProperties"]):
        for prop in schema_["properties"].values():
            if isinstance(prop, dict):
                prop.pop("default", None)
                prop.pop("required", None)
    return part


@functools.lru_cache(maxsize=None)
def param_markers(kind: str) -> tuple[dict, dict]:
    """(defaults, required) of a kind's ``params``: ``{key: default}`` from ``default:`` in its sidecar, and
    ``{key: where it is required}`` from ``required: true`` there, plus the training loop's keys that
    :class:`sentrepro.training.loop.TrainSettings` gives no default (for a kind that trains)."""
    params = registry.parameter_schema(kind)["properties"]
    defaults = {key: prop["default"] for key, prop in params.items() if isinstance(prop, dict) and "default" in prop}
    sidecar = _sidecar_of(kind)
    required = {key: f"kind '{kind}' ({sidecar})" for key, prop in params.items()
                if isinstance(prop, dict) and prop.get("required") is True}
    if registry.method(kind).trains:
        for key in training_loop_required():
            required.setdefault(key, "the training loop (sentrepro.training.loop.TrainSettings)")
    return defaults, required


def _sidecar_of(kind: str) -> str:
    """The sidecar file that defines a method kind (for an error naming it)."""
    from sentrepro.code import units

    unit = units.discover()["methods"].get(kind)
    return str(unit.sidecar) if unit is not None else "?"


@functools.lru_cache(maxsize=None)
def training_loop_required() -> tuple[str, ...]:
    """The method params the training loop cannot run without: the fields of ``TrainSettings`` (training/loop.py) that
    a method sets (``METHOD_PARAMS``) and that have no default. Read from the source with ``ast`` (the plan
    imports no torch), so the loop's own definition is the one place this is written."""
    import ast

    tree = ast.parse((Path(__file__).resolve().parents[1] / "training" / "loop.py").read_text(encoding="utf-8"))
    fields, method_params = [], ()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TrainSettings":
            fields = [item.target.id for item in node.body
                      if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is None]
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "METHOD_PARAMS" for t in node.targets):
            method_params = ast.literal_eval(node.value)
    return tuple(key for key in fields if key in method_params)


def schema() -> dict:
    """The config schema: src/sentrepro/planning/config.schema.yaml with the registry's parts filled in (method
    kinds and each kind's params, suite and figure names, each suite's block)."""
    return copy.deepcopy(_schema_with_registry())


def _key_parts(error) -> tuple:
    return tuple(str(p) for p in error.absolute_path)


def _dotted(parts) -> str:
    return ".".join(map(str, parts)) if parts else "<top level>"


def _fail(problems: list[tuple[tuple, str]], layers: Layers | None) -> None:
    """Raise one ConfigError with one line per problem, each prefixed by the file (and line) of its key."""
    if problems:
        lines = [layers.locate(message, path) if layers and path else message for path, message in problems]
        raise ConfigError("\n".join(dict.fromkeys(lines)))


def validate(config: dict, layers: Layers | None = None) -> dict:
    """Validate ``config`` against the schema and the cross references; fill defaults; return the config in
    the form the workflow reads (:func:`_normalized`).

    Raises ConfigError, one line per problem, naming the offending key (e.g.
    ``unknown config key 'methods.simcse.params.lerning_rate'``), prefixed by the file and line that set it
    when ``layers`` says where each key came from (:class:`sentrepro.planning.layers.Layers`).
    """
    config = _without_removed(config)
    validator = Draft202012Validator(_schema_with_registry())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    problems: list[tuple[tuple, str]] = []
    for error in errors[:10]:
        error = best_match([error])
        parts = _key_parts(error)
        if error.validator == "additionalProperties":
            for name in sorted(set(error.instance) - set(error.schema.get("properties", {}))):
                problems.append((parts + (name,), f"unknown config key '{_dotted(parts + (name,))}'"))
        else:
            problems.append((parts, f"config key '{_dotted(parts)}': {error.message}"))
    _fail(problems, layers)
    _fail(_check_references(config), layers)
    _fail(_table_problems(config), layers)
    try:
        check_plan(_normalized(config))  # suites, figures and their sources/runs filters
    except ConfigError as error:
        _fail([(_leading_key(line), line) for line in _problem_lines(error)], layers)
    filled = _with_defaults(config)
    _fail(_missing_required(filled), layers)
    return _normalized(filled)


def _table_problems(config: dict) -> list[tuple[tuple, str]]:
    """Each table of ``tables`` has a spec, and the spec is valid for this config (its suites, methods and
    columns exist): a spec's own mistake names the spec file; an unknown table name, the config file."""
    from sentrepro.planning.table_specs import SpecError, available_specs, load_spec

    problems = []
    known = available_specs()
    for name in config.get("tables", []):
        if name not in known:
            problems.append((("tables",), f"tables: no table spec '{name}' (specs: {', '.join(known)})"))
            continue
        try:
            load_spec(name, config["methods"])
        except SpecError as error:
            problems.append(((), str(error)))
    return problems


def _without_removed(config: dict) -> dict:
    """``config`` without the matrix blocks an overlay removed (``matrix: {<block>: null}``)."""
    matrix = config.get("matrix")
    if not isinstance(matrix, dict) or all(block is not None for block in matrix.values()):
        return config
    return {**config, "matrix": {name: block for name, block in matrix.items() if block is not None}}


def _normalized(config: dict) -> dict:
    """The config as the workflow reads it: the named matrix blocks as a list in file order, and
    ``evaluation.suites`` / ``figures`` as the list of names set to true. (The files name them so that an
    overlay can add, change or remove one; docs/configuration.md, "Config layers".)"""
    out = dict(config)
    out["matrix"] = list(config["matrix"].values())
    evaluation = out.get("evaluation")
    if isinstance(evaluation, dict):
        out["evaluation"] = dict(evaluation)
        for key in ("suites", "figures"):
            if isinstance(evaluation.get(key), dict):
                out["evaluation"][key] = [name for name, on in evaluation[key].items() if on]
    return out


def _problem_lines(error: ConfigError) -> list[str]:
    lines = [line.strip() for line in str(error).splitlines()]
    return [line for line in lines if line and line != "invalid configuration:"]


def _leading_key(line: str) -> tuple:
    """The dotted key a problem line starts with (``evaluation.suites: ...``), as a key path."""
    head = line.split(":", 1)[0].split(" ", 1)[0]
    return tuple(head.split(".")) if head else ()


def _missing_required(config: dict) -> list[tuple[tuple, str]]:
    """A required parameter (sidecar ``required: true``, or the training loop's) missing from a method the
    matrix runs, for a backbone it runs on (``params`` with that backbone's ``per_backbone``)."""
    problems = []
    used: dict[str, list[str]] = {}
    for block in config["matrix"].values():
        for method in block["methods"]:
            used.setdefault(method, []).extend(b for b in block["backbones"] if b not in used.get(method, []))
    for method, backbones in used.items():
        spec = config["methods"][method]
        _defaults, required = param_markers(spec["kind"])
        for key, by in required.items():
            lacking = [b for b in backbones if key not in {**spec["params"], **spec.get("per_backbone", {}).get(b, {})}]
            if lacking:
                problems.append((("methods", method, "params"),
                                 f"methods.{method}.params.{key}: missing, required by {by}"
                                 + (f" (for backbone {', '.join(lacking)})" if len(lacking) < len(backbones) else "")))
    return problems


def _check_references(config: dict) -> list[tuple[tuple, str]]:
    problems = []
    sources = config["data"]["sources"]
    backbones = config["backbones"]
    methods = config["methods"]
    if config["corpus"]["source"] not in sources:
        problems.append((("corpus", "source"), f"corpus.source: unknown source '{config['corpus']['source']}'"))
    for name, method in methods.items():
        for backbone in method.get("per_backbone", {}):
            if backbone not in backbones:
                problems.append((("methods", name, "per_backbone", backbone),
                                 f"methods.{name}.per_backbone.{backbone}: unknown backbone"))
    for index, block in config["matrix"].items():
        for backbone in block["backbones"]:
            if backbone not in backbones:
                problems.append((("matrix", index, "backbones"),
                                 f"matrix.{index}.backbones: unknown backbone '{backbone}'"))
        for method in block["methods"]:
            if method not in methods:
                problems.append((("matrix", index, "methods"), f"matrix.{index}.methods: unknown method '{method}'"))
    for key in ("dev_source",):
        value = config.get("training", {}).get(key)
        if value is not None and value not in sources:
            problems.append((("training", key), f"training.{key}: unknown source '{value}'"))
    problems += [(_leading_key(line), line) for line in _data_source_problems(config)]
    from sentrepro.pretrained.names import backbone_problems  # Hub id or local model; revision pins Hub ids only

    problems += [(_leading_key(line), line) for line in backbone_problems(backbones)]
    return problems


def _data_source_problems(config: dict) -> list[str]:
    """Each source's ``check`` block is consistent, and the STS suite reads a checked source of its variant."""
    from sentrepro.data.check import CheckConfigError, text_variant

    problems = []
    sources = config["data"]["sources"]
    variants = {}
    for name, spec in sources.items():
        if spec["format"] == "files" and not spec.get("files"):
            problems.append(f"data.sources.{name}.files: format 'files' needs the list of files")
        if spec["format"] != "files" and spec.get("files"):
            problems.append(f"data.sources.{name}.files: only a source of format 'files' lists files")
        if spec.get("check"):
            try:
                variants[name] = text_variant(name, spec["check"])
            except CheckConfigError as error:
                problems.append(str(error))
    sts = config.get("evaluation", {}).get("sts", {})
    source, variant = sts.get("source"), sts.get("variant")
    if source in sources and not sources[source].get("check"):
        problems.append(f"evaluation.sts.source: source '{source}' has no 'check' block, so its data would be "
                        "evaluated without being parsed and count-checked first")
    elif source in variants and variant is not None and variants[source] not in (None, variant):
        problems.append(f"evaluation.sts.variant: '{variant}', but source '{source}' holds the "
                        f"'{variants[source]}' text (data.sources.{source}.check.text_variant)")
    return problems


def _with_defaults(config: dict) -> dict:
    """A copy of ``config`` with every ``default:`` of the schema filled in where the key is absent.

    The schema is the one place a default is written; code reads filled values (``cfg[key]``).
    """
    schema = _schema_with_registry()
    config = copy.deepcopy(config)
    _fill_defaults(config, schema, schema)
    for spec in config.get("methods", {}).values():  # a kind's `default:` params (recorded in every slice of the run)
        defaults, _required = param_markers(spec["kind"])
        for key, value in defaults.items():
            spec["params"].setdefault(key, copy.deepcopy(value))
    return config


def _fill_defaults(instance: Any, schema: dict, root: dict) -> None:
    """Fill ``schema``'s property defaults into ``instance`` in place, then descend into its values.

    Walks ``properties``, ``additionalProperties`` maps (data.sources.*, backbones.*) and array ``items``,
    following ``$ref`` into ``$defs``. An absent object is created only where the schema gives it a default.
    A default inside a combinator (``oneOf``, ``if``/``then``, ...) would be ambiguous: it raises.
    """
    schema = _deref(schema, root)
    for keyword in _COMBINATORS:
        if _has_default(schema.get(keyword)):
            raise ConfigError(f"{SCHEMA_PATH}: a default inside '{keyword}' cannot be filled unambiguously; "
                              "give it on the property itself")
    if isinstance(instance, dict):
        properties = {key: _deref(sub, root) for key, sub in schema.get("properties", {}).items()}
        for key, sub in properties.items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
        for key, value in instance.items():
            sub = properties.get(key, schema.get("additionalProperties"))
            if isinstance(sub, dict):
                _fill_defaults(value, sub, root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for item in instance:
            _fill_defaults(item, schema["items"], root)


_COMBINATORS = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")


def _has_default(node: Any) -> bool:
    if isinstance(node, dict):
        return "default" in node or any(_has_default(value) for value in node.values())
    return isinstance(node, list) and any(_has_default(value) for value in node)


def _deref(schema: dict, root: dict) -> dict:
    """``schema`` with a local ``$ref`` (``#/$defs/name``) replaced by its target; sibling keywords such as
    ``default`` are kept and win."""
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ConfigError(f"{SCHEMA_PATH}: only local $refs are supported, not {ref!r}")
        target = root
        for part in ref[2:].split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


