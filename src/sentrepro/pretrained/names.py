"""Which model snapshot a backbone's config names, and where it lives under the resources directory.

A backbone's ``model`` is a Hugging Face id (``bert-base-uncased``, ``microsoft/deberta-base``), a
local directory, ``pkg://<package>/<dir>`` (a model shipped in a Python package, the offline demo), or
``tiny://<tokenizer>/<size>`` (a tiny random model the workflow builds: the rehearsal's stand-ins,
:mod:`sentrepro.pretrained.tiny_names`), whose snapshot is ``.../tiny/``.
Hub models are fetched at ``revision`` (a 40-hex commit) into ``<resources>/models/<backbone>/<revision>/``;
with ``revision: null`` into ``.../unpinned/`` (trust on first use: the commit resolved first is recorded
and held to). Local models are copied into ``.../local/`` and held to the hashes of their first copy.
The directory name is derived from config alone, so the workflow knows every snapshot's path before
anything is fetched.
"""

from __future__ import annotations

import re
from pathlib import Path

MODELS_DIR = "models"
MANIFEST = "MANIFEST.json"
UNPINNED = "unpinned"
LOCAL = "local"
HUB = "hub"
TINY = "tiny"  # tiny://: built by the workflow's tiny_model rule, verified against its BUILD.json
COMMIT = re.compile(r"^[0-9a-f]{40}$")
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def model_kind(model: str) -> str:
    """``tiny`` for tiny://, ``local`` for pkg://, file:// and directory paths, ``hub`` for a Hugging Face id.

    An existing directory wins over a Hub id of the same spelling, as in ``from_pretrained``.
    """
    if model.startswith("tiny://"):
        return TINY
    if model.startswith(("pkg://", "file://", "/", "./", "../", "~")) or Path(model).expanduser().is_dir():
        return LOCAL
    if HUB_ID.match(model):
        return HUB
    raise ValueError(f"model {model!r} is neither a Hugging Face id (org/name), a local directory nor a pkg:// URL")


def snapshot_name(spec: dict) -> str:
    """The snapshot directory of a backbone: its revision, ``unpinned``, ``local`` or ``tiny``."""
    kind = model_kind(spec["model"])
    if kind in (LOCAL, TINY):
        return kind
    return spec.get("revision") or UNPINNED


def snapshot_manifest(resources_dir: str, backbone: str, spec: dict) -> str:
    """``<resources>/models/<backbone>/<snapshot>/MANIFEST.json``: the fetch_model rule's output."""
    return f"{resources_dir}/{MODELS_DIR}/{backbone}/{snapshot_name(spec)}/{MANIFEST}"


def resources_of(snapshot_dir: str | Path) -> Path | None:
    """The resources directory a snapshot directory lies in (the inverse of :func:`snapshot_manifest`'s
    layout), or None for a directory outside that layout (a by-hand fetch elsewhere)."""
    layout = Path(snapshot_manifest("<resources>", "<backbone>", {"model": "x", "revision": None})).parent
    below = len(layout.parts) - 1  # models/<backbone>/<snapshot>
    snapshot_dir = Path(snapshot_dir)
    if len(snapshot_dir.parts) <= below or snapshot_dir.parents[below - 2].name != layout.parts[1]:
        return None
    return snapshot_dir.parents[below - 1]


def backbone_problems(backbones: dict) -> list[str]:
    """Config errors of the backbones' model/revision pairs (a revision only pins a Hub model)."""
    problems = []
    for name, spec in backbones.items():
        try:
            kind = model_kind(spec["model"])
        except ValueError as error:
            problems.append(f"backbones.{name}.model: {error}")
            continue
        if kind == TINY:
            from sentrepro.pretrained.tiny_names import family_problem

            problem = family_problem(spec["model"], spec.get("family", ""))
            if problem:
                problems.append(f"backbones.{name}.model: {problem}")
        if kind in (LOCAL, TINY) and spec.get("revision"):
            problems.append(f"backbones.{name}.revision: '{spec['model']}' is a local model; a revision pins "
                            "Hugging Face models only (local files are held to the hashes of their first copy)")
    return problems


def fetch_spec(spec: dict) -> dict:
    """The part of a backbone's config its snapshot depends on: what to fetch, not where from."""
    return {"model": spec["model"], "revision": spec.get("revision")}
