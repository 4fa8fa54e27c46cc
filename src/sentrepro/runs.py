"""The bottom of the configuration: a run of the matrix, the config error, canonical JSON, and the config
slices each rule's jobs depend on that need nothing but the config.

The base layer (docs/architecture.md): it imports nothing of the package, so every module may import it.
What needs the registry to be read -- which runs the matrix has, the training slice with its resolved
precision -- is :mod:`sentrepro.planning.matrix`, in the plan layer; loading and validating a config is
:mod:`sentrepro.planning.config`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

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


# "0": a finished training job drops its resume state last/ (sentrepro.training.loop.drop_resume_state); "1" or unset:
# keeps it. The workflow sets it from training.keep_resume_state (workflow/rules/inputs/train.smk): what a job
# leaves on disk, never its result, so it travels outside the config slice and changing it reruns nothing.
BEST = "best"  # the best checkpoint's folder, in its run directory (what evaluation and export load)
TRAIN_SUMMARY = "train.json"  # a run's training summary, in its run directory (what evaluation reads of training)
# A byte copy of a finished run's train.json, beside it, that no rule declares: Snakemake removes train.json before
# it runs a training job again (a SLURM requeue of a finished job), never this; the job then adopts the run
# (sentrepro.training.job.adopt_finished_run) instead of training it again.
FINISHED_SUMMARY = "finished.json"

KEEP_RESUME_STATE = "SENTREPRO_KEEP_RESUME_STATE"


def deep_merge(base: dict, overlay: dict) -> dict:
    """Recursively merge ``overlay`` into a copy of ``base`` (lists and scalars are replaced)."""
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)


# --- slices ---------------------------------------------------------------------------------------


def method_params(config: dict, method: str, backbone: str) -> dict:
    """The method's params with the backbone's overrides applied."""
    spec = config["methods"][method]
    return deep_merge(spec["params"], spec.get("per_backbone", {}).get(backbone, {}))


def backbone_slice(config: dict, backbone: str) -> dict:
    spec = dict(config["backbones"][backbone])
    spec.pop("resources", None)  # scheduling only, never changes results
    spec.pop("stands_in_for", None)  # labelling only
    return spec


def corpus_slice(config: dict) -> dict:
    """The corpus section a corpus (and every training on it) depends on: ``line_split`` only matters to
    the ``lines`` reader, so it is left out for the others (changing it reruns nothing there)."""
    spec = dict(config["corpus"])
    if spec["reader"] != "lines":
        spec.pop("line_split", None)
    return spec


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
