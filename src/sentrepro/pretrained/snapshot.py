"""What tokenize, train and evaluate jobs load: a fetched snapshot, never a name resolved at run time.

Jobs get the backbone's ``MANIFEST.json`` (written by ``fetch_model``) and load the directory it
sits in; the workflow runs them with ``HF_HUB_OFFLINE=1``, so nothing is downloaded on a compute
node. Local models (tests, by-hand runs without a manifest) load from their directory; a Hugging Face
id without a manifest is refused rather than silently resolved against the network or a cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sentrepro.fsutil import read_json
from sentrepro.integrity import IntegrityError, verify_files
from sentrepro.pretrained.files import WEIGHTS
from sentrepro.pretrained.names import HUB, MANIFEST, model_kind

SNAPSHOT_KIND = "model-snapshot"


class SnapshotError(RuntimeError):
    """A model manifest is not a snapshot, or its files are gone."""


@dataclass(frozen=True)
class Snapshot:
    manifest: Path
    directory: Path
    files: list[dict]

    @property
    def weights(self) -> list[Path]:
        """The weight files (each recorded in provenance with its sha256)."""
        return [self.directory / e["path"] for e in self.files if e["role"] == WEIGHTS]


def open_snapshot(manifest: str | Path) -> Snapshot:
    """The snapshot a MANIFEST.json describes, every listed file present with its recorded size and sha256
    (:func:`sentrepro.integrity.verify_files`: hashed once per process)."""
    manifest = Path(manifest)
    payload = read_json(manifest)
    if payload.get("kind") != SNAPSHOT_KIND:
        raise SnapshotError(f"{manifest} is not a model snapshot manifest (written by fetch_model)")
    directory = manifest.parent
    for entry in payload["files"]:
        path = directory / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["bytes"]:
            raise SnapshotError(f"{path} (listed in {manifest}) is missing or has changed size; rerun fetch_model")
    try:
        verify_files(directory, {entry["path"]: entry["sha256"] for entry in payload["files"]}, manifest)
    except IntegrityError as exc:
        raise SnapshotError(str(exc)) from exc
    return Snapshot(manifest, directory, payload["files"])


def model_location(model: str, manifest: str | Path | None) -> str:
    """The directory to load a backbone from: its snapshot, or (no manifest) a local model's own directory."""
    if manifest:
        return str(open_snapshot(manifest).directory)
    if model_kind(model) == HUB:
        raise SnapshotError(f"backbone '{model}' is a Hugging Face id: jobs load it only from the snapshot "
                            f"fetch_model writes (pass its {MANIFEST} with --model-manifest)")
    from sentrepro.backbones import resolve_model_path

    return resolve_model_path(model)


def model_inputs(model: str, manifest: str | Path | None) -> list[tuple[Path, str]]:
    """Provenance inputs of a job that loads a backbone: its manifest and each weight file
    (without a manifest: every file of the local model directory)."""
    if not manifest:
        from sentrepro.backbones import model_files

        return [(path, "backbone file") for path in model_files(model_location(model, None))]
    snapshot = open_snapshot(manifest)
    return [(snapshot.manifest, "model manifest")] + [(path, "backbone weights") for path in snapshot.weights]
