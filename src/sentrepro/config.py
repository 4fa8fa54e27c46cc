"""Configuration: load config files, validate them against the schema (with the registry's parts filled
in) and the cross references, and fill the schema's defaults.

The slices each rule depends on are cut by :mod:`sentrepro.core` (the base layer) and
:mod:`sentrepro.matrix` (the runs and the training slice, which need the registry): rules receive only
the slice they use (``params`` in Snakemake), so editing one method's learning rate reruns only that
method's jobs. This module is in the plan layer with the registry and the evaluation plan
(docs/architecture.md).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from sentrepro import registry
from sentrepro.core import ConfigError, deep_merge
from sentrepro.evaluation.plan import check_plan
from sentrepro.fsutil import parse_yaml

# Package data this module reads (sentrepro.codedeps adds it to the code of every rule importing us): the
# schema ships inside the package, so an installed sentrepro validates configs without a checkout.
PACKAGE_DATA = ("config.schema.yaml",)
SCHEMA_PATH = Path(__file__).resolve().parent / PACKAGE_DATA[0]


def load_yaml(path: str | Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = parse_yaml(handle) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read this config file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


def load_config(*paths: str | Path) -> dict:
    """Load config files in order, each overlaying the previous one, then validate."""
    config: dict = {}
    for path in paths:
        config = deep_merge(config, load_yaml(path))
    return validate(config)


@functools.lru_cache(maxsize=None)
def _schema_with_registry() -> dict:
    schema = load_yaml(SCHEMA_PATH)
    scheduling = {"runs": {"$ref": "#/$defs/run_filter"}, "resources": {"$ref": "#/$defs/resources"}}
    fragments = registry.schema_fragments(scheduling)
    method = schema["properties"]["methods"]["additionalProperties"]
    method["properties"]["kind"]["enum"] = fragments["kinds"]
    method["allOf"] = fragments["per_kind"]
    evaluation = schema["properties"]["evaluation"]["properties"]
    evaluation["suites"]["items"]["enum"] = fragments["suites"]
    evaluation["figures"]["items"]["enum"] = fragments["figures"]
    for name, block in fragments["suite_blocks"].items():
        if name in evaluation:
            raise ConfigError(f"{SCHEMA_PATH.name}: evaluation.{name} is defined there and by the registry")
        evaluation[name] = block
    return schema


def schema() -> dict:
    """The config schema: src/sentrepro/config.schema.yaml with the registry's parts filled in (method
    kinds and each kind's params, suite and figure names, each suite's block)."""
    return copy.deepcopy(_schema_with_registry())


def _key_path(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def validate(config: dict) -> dict:
    """Validate ``config`` against the schema and the cross references; fill schema defaults.

    Raises ConfigError naming the offending key, e.g. ``methods.simcse.params.lerning_rate``.
    """
    validator = Draft202012Validator(_schema_with_registry())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        messages = []
        for error in errors[:10]:
            error = best_match([error])
            key = _key_path(error)
            if error.validator == "additionalProperties":
                unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
                for name in unknown:
                    full = f"{key}.{name}" if key != "<top level>" else name
                    messages.append(f"unknown config key '{full}'")
            else:
                messages.append(f"config key '{key}': {error.message}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(messages))
    _check_references(config)
    check_plan(config)  # suites, figures and their sources/runs filters
    return _with_defaults(config)


def _check_references(config: dict) -> None:
    problems = []
    sources = config["data"]["sources"]
    backbones = config["backbones"]
    methods = config["methods"]
    if config["corpus"]["source"] not in sources:
        problems.append(f"corpus.source: unknown source '{config['corpus']['source']}'")
    for name, method in methods.items():
        for backbone in method.get("per_backbone", {}):
            if backbone not in backbones:
                problems.append(f"methods.{name}.per_backbone.{backbone}: unknown backbone")
    for index, block in enumerate(config["matrix"]):
        for backbone in block["backbones"]:
            if backbone not in backbones:
                problems.append(f"matrix[{index}].backbones: unknown backbone '{backbone}'")
        for method in block["methods"]:
            if method not in methods:
                problems.append(f"matrix[{index}].methods: unknown method '{method}'")
    for key in ("dev_source",):
        value = config.get("training", {}).get(key)
        if value is not None and value not in sources:
            problems.append(f"training.{key}: unknown source '{value}'")
    problems += _data_source_problems(config)
    from sentrepro.pretrained.names import backbone_problems  # Hub id or local model; revision pins Hub ids only

    problems += backbone_problems(backbones)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


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


