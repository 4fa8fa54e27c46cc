"""A backbone's model resolved once, where a job starts: where its files are and what they are.

Each job that loads a backbone (tokenize, train, evaluate, export) calls :func:`resolve_model` at its entry
with the backbone's config slice and the snapshot manifest the workflow gives it, and passes the
:class:`ModelReference` down: the tokenizer and the encoder load from ``reference.location``, provenance
records ``reference.inputs``, and no module below resolves a location again.

Jobs load a fetched snapshot, never a name resolved at run time: the workflow runs them with
``HF_HUB_OFFLINE=1``, so nothing is downloaded on a compute node. A local model (tests, by-hand runs
without a manifest; ``pkg://<package>/<dir>`` for a model shipped inside a Python package, as the offline
demo's) loads from its own directory; a Hugging Face id without a manifest is refused rather than
silently resolved against the network or a cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sentrepro.data.sources import SourceError, local_path, resolve_url
from sentrepro.pretrained.names import HUB, MANIFEST, TINY, model_kind
from sentrepro.pretrained.snapshot import SnapshotError, open_snapshot


@dataclass(frozen=True)
class ModelReference:
    """A backbone's model as a job loads it."""

    model: str  # as the config names it: a Hugging Face id, a local directory or pkg://<package>/<dir>
    family: str | None  # bert, roberta, deberta... (None where the caller has no backbone slice)
    location: Path  # the directory the tokenizer and the encoder load from
    manifest: Path | None  # the snapshot's MANIFEST.json; None for a local model used in place
    revision: str | None  # the snapshot's commit; None for a local model
    inputs: tuple[tuple[Path, str], ...]  # provenance inputs (path, role)


def resolve_model(backbone: dict, manifest: str | Path | None) -> ModelReference:
    """The reference of ``backbone`` (its config slice: ``model``, ``family``): the snapshot ``manifest``
    describes (verified), or without one the local model's own directory and every file in it."""
    model, family = backbone["model"], backbone.get("family")
    if manifest:
        snapshot = open_snapshot(manifest)
        inputs = [(snapshot.manifest, "model manifest")] + [(path, "backbone weights") for path in snapshot.weights]
        return ModelReference(model, family, snapshot.directory, snapshot.manifest, snapshot.commit, tuple(inputs))
    if model_kind(model) in (HUB, TINY):
        what = "a Hugging Face id" if model_kind(model) == HUB else "a tiny model (rule tiny_model builds it)"
        raise SnapshotError(f"backbone '{model}' is {what}: jobs load it only from the snapshot "
                            f"fetch_model writes (pass its {MANIFEST} with --model-manifest)")
    location = local_directory(model)
    files = sorted(p for p in location.iterdir() if p.is_file() and not p.name.startswith(".")) \
        if location.is_dir() else []
    return ModelReference(model, family, location, None, None, tuple((path, "backbone file") for path in files))


def local_directory(model: str) -> Path:
    """A local model's directory: ``pkg://<package>/<dir>`` inside an installed package, else the path."""
    if model.startswith("pkg://"):
        try:
            path = local_path(resolve_url(model))
        except SourceError as exc:  # the package is not installed: one line naming the backbone
            raise SnapshotError(f"backbone {exc}") from None
        if path is None:
            raise SnapshotError(f"backbone '{model}': no such installed package directory")
        return path
    return Path(model)
