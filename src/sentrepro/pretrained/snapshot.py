"""A fetched snapshot, as its ``MANIFEST.json`` (written by ``fetch_model``) describes it: the directory,
every file present with its recorded size and sha256, the weight files and the commit.

Jobs do not open snapshots themselves: :func:`sentrepro.pretrained.reference.resolve_model` does, once, at
a job's entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sentrepro.files import read_json
from sentrepro.records.integrity import IntegrityError, verify_files
from sentrepro.pretrained.files import WEIGHTS

SNAPSHOT_KIND = "model-snapshot"


class SnapshotError(RuntimeError):
    """A model manifest is not a snapshot, or its files are gone."""


@dataclass(frozen=True)
class Snapshot:
    manifest: Path
    directory: Path
    files: list[dict]
    commit: str | None = None  # the Hub commit the files were fetched at (None: a local directory's copy)

    @property
    def weights(self) -> list[Path]:
        """The weight files (each recorded in provenance with its sha256)."""
        return [self.directory / e["path"] for e in self.files if e["role"] == WEIGHTS]


def open_snapshot(manifest: str | Path) -> Snapshot:
    """The snapshot a MANIFEST.json describes, every listed file present with its recorded size and sha256
    (:func:`sentrepro.records.integrity.verify_files`: hashed once per process)."""
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
    return Snapshot(manifest, directory, payload["files"], payload.get("commit"))
