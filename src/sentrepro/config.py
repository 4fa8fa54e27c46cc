"""Configuration: load, validate against the schema, and cut it into the slices each rule depends on.

Rules receive only the slice they use (``params`` in Snakemake), so editing one method's learning
rate changes only that method's training slice and reruns only its jobs.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type; the message names the key."""


@dataclass(frozen=True, order=True)
class Run:
    """One cell of the matrix: a backbone, a method, and a seed (``None`` for frozen baselines)."""

    backbone: str
    method: str
    seed: int | None

    @property
    def run_id(self) -> str:
        """Directory name of the run: ``seed42`` or ``frozen``."""
        return "frozen" if self.seed is None else f"seed{self.seed}"

    @property
    def path(self) -> str:
        return f"{self.backbone}/{self.method}/{self.run_id}"


def deep_merge(base: dict, overlay: dict) -> dict:
    """Recursively merge ``overlay`` into a copy of ``base`` (lists and scalars are replaced)."""
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load_yaml(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


def load_config(*paths: str | Path) -> dict:
    """Load config files in order, each overlaying the previous one, then validate."""
    config: dict = {}
    for path in paths:
        config = deep_merge(config, load_yaml(path))
    return validate(config)


def _schema() -> dict:
    return load_yaml(SCHEMA_PATH)


def _key_path(error) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def validate(config: dict) -> dict:
    """Validate ``config`` against the schema and the cross references; fill schema defaults.

    Raises ConfigError naming the offending key, e.g. ``methods.simcse.params.lerning_rate``.
    """
    validator = Draft202012Validator(_schema())
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
    from sentrepro.evaluation.plan import check_plan  # suites, figures and their sources/runs filters

    check_plan(config)
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
    sts_source = config.get("evaluation", {}).get("sts", {}).get("source")
    if sts_source is not None and sts_source not in sources:
        problems.append(f"evaluation.sts.source: unknown source '{sts_source}'")
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
    schema = _schema()
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


# --- slices ---------------------------------------------------------------------------------------


def runs(config: dict) -> list[Run]:
    """Every run of the matrix, deduplicated and sorted."""
    from sentrepro.methods import kind_trains  # torch-heavy; only when runs are listed

    found: set[Run] = set()
    for block in config["matrix"]:
        for backbone in block["backbones"]:
            for method in block["methods"]:
                if not kind_trains(config["methods"][method]["kind"]):
                    found.add(Run(backbone, method, None))
                else:
                    for seed in block["seeds"]:
                        found.add(Run(backbone, method, seed))
    return sorted(found, key=lambda r: (r.backbone, r.method, -1 if r.seed is None else r.seed))


def method_params(config: dict, method: str, backbone: str) -> dict:
    """The method's params with the backbone's overrides applied."""
    spec = config["methods"][method]
    return deep_merge(spec["params"], spec.get("per_backbone", {}).get(backbone, {}))


def backbone_slice(config: dict, backbone: str) -> dict:
    spec = dict(config["backbones"][backbone])
    spec.pop("resources", None)  # scheduling only, never changes results
    spec.pop("stands_in_for", None)  # labelling only
    return spec


def training_precision(config: dict, method: str) -> str:
    """``training.precision`` for one method: ``authors`` resolves to what the method's authors trained in
    (the method class's ``authors_precision``: fp16 AMP, or fp32 for MoCoUTRL); other values apply as given."""
    requested = config["training"]["precision"]
    if requested != "authors":
        return requested
    from sentrepro.methods import kind_authors_precision, kind_trains  # torch-heavy; only when slices are cut

    kind = config["methods"][method]["kind"]
    return kind_authors_precision(kind) if kind_trains(kind) else requested  # frozen runs never train


def train_slice(config: dict, run: Run) -> dict:
    """Everything a training job's result depends on (and nothing else).

    The precision is resolved per method (``training_precision``), so the slice names the precision
    itself: switching ``training.precision`` between ``authors`` and a value equal to some methods'
    authors' precision reruns only the others.
    """
    training = {k: v for k, v in config["training"].items() if k not in ("threads",)}
    training["precision"] = training_precision(config, run.method)
    return {
        "backbone": backbone_slice(config, run.backbone),
        "method": {"name": run.method, "kind": config["methods"][run.method]["kind"],
                   "params": method_params(config, run.method, run.backbone)},
        "seed": run.seed,
        "training": training,
        "corpus": corpus_slice(config),
    }


def corpus_slice(config: dict) -> dict:
    """The corpus section a corpus (and every training on it) depends on: ``line_split`` only matters to
    the ``lines`` reader, so it is left out for the others (changing it reruns nothing there)."""
    spec = dict(config["corpus"])
    if spec["reader"] != "lines":
        spec.pop("line_split", None)
    return spec


def sts_slice(config: dict) -> dict:
    return {"batch_size": config["evaluation"]["batch_size"], **config["evaluation"]["sts"]}


def source_slice(config: dict, name: str) -> dict:
    """A data source's spec, with the local mirror applied when configured.

    The mirror replaces the network only: sources with pkg:// or fixture:// URLs are never
    mirrored. A mirrored directory is staged as is (a multi-file source's pins are still checked
    against the staged files); a mirrored file keeps the source's format and sha256 pin.
    """
    spec = copy.deepcopy(config["data"]["sources"][name])
    mirror = config["data"].get("mirror")
    urls = [spec.get("url") or ""] + [entry.get("url") or "" for entry in spec.get("files") or []]
    if mirror and spec.get("mirror_path") and any(_is_network_url(url) for url in urls):
        # A relative mirror stays relative (to the working directory) in the rule's params, so a moved
        # project plans nothing: "file:<relative path>" (file:// URLs are absolute by definition).
        target = Path(mirror).expanduser() / spec["mirror_path"]
        if target.is_dir():
            spec["format"] = "directory"
        elif not target.is_file():
            raise ConfigError(f"data.mirror: {target} does not exist (data.sources.{name}.mirror_path is "
                              f"'{spec['mirror_path']}'); stage source '{name}' there or unset data.mirror")
        elif spec["format"] == "files":
            raise ConfigError(f"data.sources.{name}.mirror_path: {target} is a file, but source '{name}' has "
                              "several files; the mirror must hold them in a directory")
        spec["url"] = target.as_uri() if target.is_absolute() else "file:" + quote(target.as_posix())
        spec["mirrored"] = True
    return spec


def _is_network_url(url: str) -> bool:
    return url.split(":", 1)[0].lower() in ("http", "https")


# --- code fingerprints ----------------------------------------------------------------------------


def code_fingerprint(modules: Iterable[str]) -> str:
    """Superseded by :func:`sentrepro.codedeps.rule_code`: a rule's ``params.code`` is
    ``rule_code("cli:<the sentrepro command it runs>")`` (the Snakefile refuses anything else).

    Kept for rules written against the old hand-kept lists (paths relative to src/sentrepro): each
    listed module is taken as an entry point and its whole import closure is fingerprinted
    (normalised source, see codedeps), so such a rule is at least never stale; switch it to
    ``rule_code``, whose entry is the command the rule runs.
    """
    from sentrepro.codedeps import paths_fingerprint

    return paths_fingerprint(modules)


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
