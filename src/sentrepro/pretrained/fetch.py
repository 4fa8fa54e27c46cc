"""The ``fetch_model`` rule: put a backbone's files into ``<resources>/models/<backbone>/<snapshot>/``, verified.

Guarantees are those of data downloads (:mod:`sentrepro.data.download`, whose ``fetch`` moves every
byte here): streamed, resumed, retried, progress lines in the log, nothing under its final name
before it is verified. On top of that, per snapshot:

* **Pinned** (``revision`` = a commit): the Hub resolves the commit and lists each file's hash at it
  (LFS sha256, git blob id); every fetched file must match. A commit the Hub does not know, or a file
  that fails its hash, removes everything fetched and names the file.
* **Unpinned** (``revision: null``) and **local** models: trust on first use, as data sources with no
  sha256. The first fetch records the commit and every file's sha256 in a lock file
  (``.<snapshot>.lock.json`` next to the snapshot); every later fetch asks for that commit and must
  reproduce those hashes.
* The lock also makes a refetch free: a snapshot whose files still match it is reused without any
  network access (the rule reruns when its code changes, or when MANIFEST.json was deleted).
* Files are fetched into ``.<snapshot>.incoming/`` (kept after a network failure, so the next call
  resumes) and the directory is renamed into place only when every file verified.
* The whole fetch holds a file lock (``.<snapshot>.lock`` next to the snapshot): the same backbone
  fetched at once from several checkouts sharing ``resources/`` is fetched by one of them, and the
  others reuse its verified snapshot through the lock record.
* What a completed fetch wrote is never rewritten by a later one: a process that finds the snapshot
  complete (its MANIFEST.json a snapshot manifest listing exactly the lock's files, every file matching)
  verifies it and reuses it as it is, saying so in its log; MANIFEST.json stays byte-identical, since
  other checkouts have hashed it and depend on it. Snakemake removes a job's outputs before it runs it,
  so a checkout whose fetch job starts after another's finished would find MANIFEST.json and CONTENT.json
  gone: the fetch that writes them keeps a hard link to each in ``.<snapshot>.written/`` (next to the
  snapshot, like its lock), and a later
  fetch puts them back from there (same inode, bytes and mtime: nothing downstream in any checkout
  reruns) before checking the snapshot. A snapshot with no such record, or one written by other code
  (the rule reruns when its code changes), gets a new MANIFEST.

``MANIFEST.json`` records repo id, commit, origin, every file's path, role, size and sha256, and
provenance whose inputs are the snapshot files (so ``sentrepro audit`` verifies them like downloads).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from sentrepro.code.codedeps import stale_description
from sentrepro.data.download import (
    TRUST_ON_FIRST_USE,
    VERIFIED_BY_PIN,
    ChecksumMismatch,
    FetchSettings,
    fetch,
    locked,
)
from sentrepro.data.sources import local_path, resolve_url
from sentrepro.files import atomic_write_json, read_json
from sentrepro.hashing import sha256_file
from sentrepro.records.integrity import stamp_path, write_stamp
from sentrepro.pretrained.files import select_files
from sentrepro.pretrained.listing import (
    Listing,
    ModelSourceError,
    SourceFile,
    git_blob_sha1,
    hub_listing,
    local_listing,
    mirror_listing,
)
from sentrepro.pretrained.names import HUB, MANIFEST, TINY, fetch_spec, model_kind, snapshot_name, resources_of
from sentrepro.pretrained.snapshot import SNAPSHOT_KIND
from sentrepro.records.provenance import Provenance

LOG = logging.getLogger(__name__)


class ModelVerificationError(ChecksumMismatch):
    """A model file does not match its pin, its source's hash or its first-use record; nothing was kept."""


def lock_path(snapshot_dir: Path) -> Path:
    """The lock record of a snapshot: commit and file hashes it is held to (next to it, survives refetches)."""
    return snapshot_dir.with_name(f".{snapshot_dir.name}.lock.json")


def staging_path(snapshot_dir: Path) -> Path:
    return snapshot_dir.with_name(f".{snapshot_dir.name}.incoming")


def fetch_model(backbone: str, spec: dict, snapshot_dir: Path, *, mirror: str | Path | None = None,
                settings: FetchSettings | None = None, progress: bool = True) -> dict:
    """Fetch (or reuse) backbone ``backbone``'s snapshot into ``snapshot_dir``; return its MANIFEST (written
    by this call, or, with ``reused`` set, the one a complete earlier fetch wrote, left untouched)."""
    settings = settings or FetchSettings()
    snapshot_dir = Path(snapshot_dir)
    spec = fetch_spec(spec)
    expected_name = snapshot_name(spec)
    if snapshot_dir.name != expected_name:
        raise ValueError(f"backbone '{backbone}': its snapshot directory is '{expected_name}', not "
                         f"'{snapshot_dir.name}' ({snapshot_dir})")
    with locked(snapshot_dir, "fetch of this model snapshot"):  # several checkouts may share resources/
        return _fetch_model_locked(backbone, spec, snapshot_dir, mirror, settings, progress)


def _fetch_model_locked(backbone: str, spec: dict, snapshot_dir: Path, mirror, settings: FetchSettings,
                        progress: bool) -> dict:
    prov = Provenance(step="fetch_model", config={"backbone": backbone, **spec})
    tiny = model_kind(spec["model"]) == TINY
    lock = None if tiny else _read_lock(snapshot_dir, spec)
    _restore_written(snapshot_dir)
    complete = _complete_manifest(snapshot_dir, lock)
    if complete is not None:
        if not stamp_path(snapshot_dir / MANIFEST).is_file():
            write_stamp(snapshot_dir / MANIFEST)  # the plan's stamp only, where it is missing
        LOG.info("%s: %s is complete: %s and its %d files verified against the lock %s; reused as written, "
                 "nothing rewritten", backbone, snapshot_dir, MANIFEST, len(lock["files"]), lock_path(snapshot_dir))
        return {**complete, "reused": True}
    if lock is not None and _snapshot_matches(snapshot_dir, lock):
        LOG.info("%s: %s already holds the %d files of its lock %s; nothing fetched", backbone, snapshot_dir,
                 len(lock["files"]), lock_path(snapshot_dir))
        files, listing_info, lock_status = lock["files"], lock["source"], "matched; snapshot reused, nothing fetched"
    else:
        listing = _tiny_listing(spec, snapshot_dir) if tiny else _listing(spec, mirror, lock, settings)
        files = _fetch_into_place(backbone, spec, listing, snapshot_dir, lock, settings, progress)
        listing_info = {"origin": listing.origin, "location": listing.location, "repo_id": listing.repo_id,
                        "commit": listing.commit}
        lock_status = "matched" if lock is not None else \
            "checked against the tiny model's BUILD.json" if tiny else "recorded by this fetch"
        if lock is None and not tiny:
            atomic_write_json(lock_path(snapshot_dir), {**spec, "commit": listing.commit, "source": listing_info,
                                                        "files": files})
    for entry in files:
        prov.inputs.append({"role": f"model {entry['role']}", "path": str(snapshot_dir / entry["path"]),
                            "sha256": entry["sha256"], "bytes": entry["bytes"]})
    manifest = {
        "kind": SNAPSHOT_KIND,
        "backbone": backbone,
        "model": spec["model"],
        "revision": spec["revision"],
        "repo_id": listing_info["repo_id"],
        "commit": listing_info["commit"],
        "source": listing_info,
        "pin": VERIFIED_BY_PIN if spec["revision"] or tiny else TRUST_ON_FIRST_USE,
        "lock": str(lock_path(snapshot_dir)),
        "lock_status": lock_status,
        "weights_format": _weights_format(files),
        "files": files,
        "provenance": prov.finish(),
    }
    atomic_write_json(snapshot_dir / MANIFEST, manifest)
    write_stamp(snapshot_dir / MANIFEST)  # what the plan compares the files with (sentrepro.records.integrity)
    _keep_written(snapshot_dir)
    return manifest


def written_path(snapshot_dir: Path) -> Path:
    """Where a snapshot's writer keeps hard links to the MANIFEST and stamp it wrote (next to the snapshot)."""
    return snapshot_dir.with_name(f".{snapshot_dir.name}.written")


def _kept(snapshot_dir: Path) -> list[tuple[Path, Path]]:
    """(output, its kept link) for MANIFEST.json and CONTENT.json."""
    return [(snapshot_dir / name, written_path(snapshot_dir) / name)
            for name in (MANIFEST, stamp_path(snapshot_dir / MANIFEST).name)]


def _keep_written(snapshot_dir: Path) -> None:
    """Link the MANIFEST and stamp just written into :func:`written_path` (replacing older links)."""
    written_path(snapshot_dir).mkdir(exist_ok=True)
    for output, kept in _kept(snapshot_dir):
        kept.unlink(missing_ok=True)
        try:
            os.link(output, kept)
        except OSError as exc:  # a file system without hard links: a later fetch then writes its own MANIFEST
            LOG.info("cannot keep %s as %s (%s): a fetch that finds it removed writes a new one", output, kept, exc)


def _restore_written(snapshot_dir: Path) -> None:
    """Put back a MANIFEST or stamp that was removed (Snakemake removes a job's outputs before running it)
    from the links its writer kept; whether they still describe the snapshot is checked next. Not when the
    kept MANIFEST was written by other code than this (the rule reruns when its code changes): then this
    fetch writes a new one, so that the audit does not find the snapshot's record stale for ever."""
    pairs = _kept(snapshot_dir)
    if not snapshot_dir.is_dir() or pairs[0][0].exists() or not pairs[0][1].is_file():
        return  # no snapshot (a refetch), its MANIFEST still there, or none kept
    try:
        recorded = read_json(pairs[0][1]).get("provenance", {}).get("code_fingerprint")
    except (OSError, ValueError, AttributeError):
        return
    stale = stale_description(recorded)
    if stale:
        LOG.info("%s was written by other code (%s): this fetch writes a new one", pairs[0][1], stale)
        return
    for output, kept in pairs:
        if not output.exists() and kept.is_file():
            os.link(kept, output)
            LOG.info("%s was removed since it was written (by Snakemake before this job?): put back from %s, "
                     "unchanged", output, kept)


def _read_lock(snapshot_dir: Path, spec: dict) -> dict | None:
    path = lock_path(snapshot_dir)
    if not path.is_file():
        return None
    lock = read_json(path)
    if lock.get("model") != spec["model"] or (spec["revision"] and lock.get("commit") != spec["revision"]):
        raise ModelVerificationError(
            f"{path} records {lock.get('model')}@{lock.get('commit')}, but the config asks for "
            f"{spec['model']}@{spec['revision'] or 'its first-use commit'}; delete the lock file to record anew")
    return lock


def _complete_manifest(snapshot_dir: Path, lock: dict | None) -> dict | None:
    """The MANIFEST of a complete snapshot (a snapshot manifest listing exactly the lock's files, each file
    matching), or None: then this fetch writes one."""
    path = snapshot_dir / MANIFEST
    if lock is None or not path.is_file():
        return None
    try:
        manifest = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("kind") != SNAPSHOT_KIND \
            or not isinstance(manifest.get("files"), list):
        return None
    listed = {(e.get("path"), e.get("sha256")) for e in manifest["files"] if isinstance(e, dict)}
    if listed != {(e["path"], e["sha256"]) for e in lock["files"]}:
        return None
    return manifest if _snapshot_matches(snapshot_dir, lock) else None


def _snapshot_matches(snapshot_dir: Path, lock: dict) -> bool:
    """The snapshot holds every locked file with its locked sha256."""
    for entry in lock["files"]:
        path = snapshot_dir / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            return False
    return True


def _tiny_listing(spec: dict, snapshot_dir: Path) -> Listing:
    """A tiny model's files as its build wrote them (``<resources>/tiny-models/<name>/``), each with the
    sha256 and size its BUILD.json records: the fetch holds every file to its builder's record."""
    from sentrepro.pretrained.tiny_names import BUILD_RECORD, build_dir, read_build_record

    resources = resources_of(snapshot_dir)
    if resources is None:
        raise ModelSourceError(f"{snapshot_dir}: a tiny model's snapshot lives at <resources>/models/<backbone>/tiny")
    directory = build_dir(resources, spec["model"])
    record = read_build_record(directory)
    built = local_listing(directory)
    recorded = {entry["path"]: entry for entry in record["files"]}
    files = {}
    for path, item in built.files.items():
        if path == BUILD_RECORD:
            continue
        if path not in recorded:
            raise ModelVerificationError(f"{directory / path} is not listed in {directory / BUILD_RECORD}; rebuild "
                                         "the tiny model (rule tiny_model)")
        files[path] = SourceFile(path, item.url, recorded[path]["bytes"], recorded[path]["sha256"], None)
    missing = sorted(set(recorded) - set(files))
    if missing:
        raise ModelVerificationError(f"{directory}: {', '.join(missing)} listed in {BUILD_RECORD} are missing; "
                                     "rebuild the tiny model (rule tiny_model)")
    return Listing("tiny random model (rule tiny_model)", str(directory), None, None, files)


def _listing(spec: dict, mirror, lock: dict | None, settings: FetchSettings) -> Listing:
    """Where the files come from: the Hub (or the mirror) at the pinned or locked commit, or a local directory."""
    if model_kind(spec["model"]) != HUB:
        url = resolve_url(spec["model"] if "://" in spec["model"] else Path(spec["model"]).expanduser().resolve().as_uri())
        return local_listing(local_path(url))
    commit = spec["revision"] or (lock or {}).get("commit")
    if mirror:
        return mirror_listing(Path(mirror), spec["model"], commit)
    return hub_listing(spec["model"], commit, **settings.as_kwargs())


def _fetch_into_place(backbone: str, spec: dict, listing: Listing, snapshot_dir: Path, lock: dict | None,
                      settings: FetchSettings, progress: bool) -> list[dict]:
    """Fetch the selected files into the staging directory, verify all, rename it to ``snapshot_dir``."""
    where = f"{listing.repo_id or spec['model']}" + (f" at commit {listing.commit}" if listing.commit else "")
    staging = staging_path(snapshot_dir)
    if not staging.exists() and snapshot_dir.is_dir():
        os.replace(snapshot_dir, staging)  # files of an earlier snapshot are reused where they still verify
    staging.mkdir(parents=True, exist_ok=True)
    (staging / MANIFEST).unlink(missing_ok=True)
    try:
        fmt, chosen = select_files(list(listing.files), f"{where} ({listing.location})")
        locked = {entry["path"]: entry for entry in (lock or {}).get("files", [])}
        if lock is not None and set(locked) != set(chosen):
            raise ModelVerificationError(
                f"{backbone}: {where} now offers files {sorted(chosen)}, but its first-use record "
                f"{lock_path(snapshot_dir)} lists {sorted(locked)}; nothing was kept")
        LOG.info("%s: %s from %s (%s weights): %s", backbone, where, listing.location, fmt, ", ".join(chosen))
        entries = []
        for index, (path, role) in enumerate(chosen.items(), start=1):
            LOG.info("%s: file %d of %d: %s", backbone, index, len(chosen), path)
            entries.append(_fetch_one(backbone, where, listing.files[path], role, staging, locked.get(path),
                                      settings, progress))
    except (ModelVerificationError, ChecksumMismatch, ModelSourceError, ValueError):
        shutil.rmtree(staging, ignore_errors=True)  # a wrong pin or a bad file leaves nothing behind
        raise
    for extra in [p for p in staging.iterdir() if p.name not in chosen]:
        shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
    if snapshot_dir.exists():
        shutil.rmtree(snapshot_dir)
    os.replace(staging, snapshot_dir)
    return entries


def _fetch_one(backbone: str, where: str, item: SourceFile, role: str, staging: Path, locked: dict | None,
               settings: FetchSettings, progress: bool) -> dict:
    """Fetch one file, checked against every hash known for it: the first-use record, the source's claims."""
    dest = staging / item.path
    if locked and item.sha256 and locked["sha256"] != item.sha256:
        raise ModelVerificationError(f"{backbone}: {item.path} of {where} is listed with sha256 {item.sha256}, but "
                                     f"its first-use record says {locked['sha256']}; nothing was kept")
    pin = (locked or {}).get("sha256") or item.sha256
    if dest.is_file() and item.git_sha1 and git_blob_sha1(dest) != item.git_sha1:
        dest.unlink()  # a stale copy; fetch again
    try:
        result = fetch(item.url, dest, pin, progress=progress, **settings.as_kwargs())
    except ChecksumMismatch as exc:
        raise ModelVerificationError(f"{backbone}: {item.path} of {where} failed verification: {exc}; "
                                     "nothing was kept") from exc
    checked = []
    if item.sha256:
        checked.append("sha256 listed by the source")
    if locked:
        checked.append("sha256 of the first-use record")
    if item.git_sha1:
        actual = git_blob_sha1(dest)
        if actual != item.git_sha1:
            raise ModelVerificationError(f"{backbone}: {item.path} of {where} has git blob id {actual}, but the "
                                         f"source lists {item.git_sha1}; nothing was kept")
        checked.append("git blob id listed by the source")
    if item.bytes is not None and result.bytes != item.bytes:
        raise ModelVerificationError(f"{backbone}: {item.path} of {where} has {result.bytes} bytes, the source "
                                     f"lists {item.bytes}; nothing was kept")
    return {"path": item.path, "role": role, "sha256": result.sha256, "bytes": result.bytes, "url": item.url,
            "checked_against": checked or ["nothing yet: sha256 recorded on first use"]}


def _weights_format(files: list[dict]) -> str:
    weights = [entry["path"] for entry in files if entry["role"] == "weights"]
    return "safetensors" if any(p.endswith(".safetensors") for p in weights) else "pytorch"

