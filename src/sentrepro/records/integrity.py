"""What a job loads is what was recorded: files checked against their MANIFEST, and the plan's content stamps.

**Jobs.** A model snapshot's MANIFEST.json (rule fetch_model) and a prepared data source's MANIFEST.json
(rule prepare_dataset) record the sha256 of every file. Every job that loads a backbone or reads a data
set first checks each file it will use against that record (:func:`verify_files`) and fails with
:class:`IntegrityError` naming the file, the manifest and both hashes. The check is always on: hashing
runs at ~1.4 GB per CPU second (BENCHMARKS.md: the demo's MiniLM in 0.07 CPU s, a BERT-large sized 1.34 GB
file in 0.9 CPU s), small next to the job itself. Within one process a file is
hashed once (the memo key is its path, size, mtime_ns and inode, and lives only as long as the job).

**The plan.** Snakemake reruns a job when an *input* is newer than its outputs, and the rules take the
MANIFEST, not the files it lists. So each snapshot and data source also has a content stamp
(``CONTENT.json`` next to the MANIFEST, written by the rule that writes the MANIFEST) that the rules
take as input. When the workflow is loaded (also by ``snakemake -n``), :func:`refresh_stamp` compares each
listed file with the stamp: a file whose (size, mtime_ns, inode) is unchanged is not read; any other is
hashed. A changed sha256 rewrites the stamp (a newer mtime: every job that reads the files is planned
again, and fails naming the file until it is restored or refetched); an unchanged sha256 (a ``touch``, a
copy of the tree) updates the stamp's cache but restores its mtime, so nothing reruns.

Trade-off of that cache: a file rewritten with the same size and with its mtime and inode put back by
hand escapes the *plan* (not the jobs: a job that runs hashes every file). Hashing every file on every
workflow load would close that gap at the cost of seconds per backbone per ``snakemake`` call.
"""

from __future__ import annotations

import os
from pathlib import Path

from sentrepro.files import atomic_write_json, read_json
from sentrepro.hashing import sha256_file

STAMP = "CONTENT.json"

_HASHED: dict[tuple, str] = {}  # (path, size, mtime_ns, inode) -> sha256, this process only


class IntegrityError(RuntimeError):
    """A file a job would load differs from its manifest's record (or is gone); the message names it."""


def _stat_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def file_sha256(path: Path) -> str:
    """sha256 of ``path``, computed once per process for an unchanged (size, mtime_ns, inode)."""
    key = _stat_key(path)
    if key not in _HASHED:
        _HASHED[key] = sha256_file(path)
    return _HASHED[key]


def verify_files(directory: Path, expected: dict[str, str], manifest: Path) -> None:
    """Check every ``directory/<rel>`` against ``expected[rel]`` (sha256); raise naming the first that differs."""
    for rel, digest in expected.items():
        path = Path(directory) / rel
        if not path.is_file():
            raise IntegrityError(f"{path} (listed in {manifest}) is missing; restore it or rerun the rule "
                                 f"that wrote {manifest}")
        actual = file_sha256(path)
        if actual != digest:
            raise IntegrityError(f"{path} does not match {manifest}: sha256 is {actual}, recorded {digest}; the "
                                 f"file changed after it was fetched or prepared: restore it or delete {manifest} "
                                 "to fetch/prepare it again")


def dataset_files(manifest: Path, relative: str | None = None) -> dict[str, str]:
    """The ``{rel: sha256}`` a prepared data source records, limited to ``relative`` (a file or folder)."""
    files = read_json(manifest)["files"]
    if relative in (None, "", "."):
        return dict(files)
    prefix = relative.rstrip("/") + "/"
    return {rel: digest for rel, digest in files.items() if rel == relative or rel.startswith(prefix)}


def verify_dataset(manifest: Path, relative: str | None = None) -> None:
    """Verify a prepared data source's files (all, or those under ``relative``) against its MANIFEST."""
    manifest = Path(manifest)
    verify_files(manifest.parent / "files", dataset_files(manifest, relative), manifest)


def manifest_files(manifest: Path) -> dict[str, str]:
    """``{path relative to the manifest's folder: sha256}`` of a snapshot or a data source manifest."""
    payload = read_json(manifest)
    if isinstance(payload.get("files"), list):  # model snapshot: [{"path", "sha256", ...}]
        return {entry["path"]: entry["sha256"] for entry in payload["files"]}
    return {f"files/{rel}": digest for rel, digest in payload["files"].items()}


# --- the plan's content stamps -----------------------------------------------------------------------


def stamp_path(manifest: str | Path) -> Path:
    return Path(manifest).with_name(STAMP)


def _observed(directory: Path, files: dict[str, str], previous: dict) -> tuple[dict, bool]:
    """Per file: sha256 and stat key, hashing only files whose stat key moved. Returns (record, any hashed)."""
    record, hashed = {}, False
    for rel, recorded in files.items():
        path = directory / rel
        if not path.is_file():
            record[rel] = {"sha256": None, "stat": None}
            continue
        key = list(_stat_key(path)[1:])
        old = previous.get(rel) or {}
        if old.get("stat") == key and old.get("sha256"):
            record[rel] = old
        else:
            record[rel] = {"sha256": file_sha256(path), "stat": key}
            hashed = True
    return record, hashed


def write_stamp(manifest: str | Path) -> Path:
    """Write the content stamp of a freshly written manifest (its files as they are now)."""
    manifest = Path(manifest)
    record, _ = _observed(manifest.parent, manifest_files(manifest), {})
    atomic_write_json(stamp_path(manifest), {"manifest": manifest.name, "files": record})
    return stamp_path(manifest)


def refresh_stamp(manifest: str | Path) -> str | None:
    """Bring a stamp up to date with its files; returns a line naming the changed files (stamp rewritten,
    newer), or None when the content is what the stamp says (stamp mtime kept). A missing manifest or
    stamp is left to the rules that write them."""
    manifest, stamp = Path(manifest), stamp_path(manifest)
    if not manifest.is_file() or not stamp.is_file():
        return None
    try:
        previous = read_json(stamp).get("files", {})
        files = manifest_files(manifest)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # an unreadable manifest is the job's to report
    record, hashed = _observed(manifest.parent, files, previous)
    changed = sorted(rel for rel in record if record[rel]["sha256"] != (previous.get(rel) or {}).get("sha256"))
    if changed:
        atomic_write_json(stamp, {"manifest": manifest.name, "files": record})
        return f"{manifest.parent}: content changed since the last plan: {', '.join(changed)}"
    if hashed:  # same content, new stat keys (touched, copied, moved): cache them, keep the stamp's mtime
        st = stamp.stat()
        atomic_write_json(stamp, {"manifest": manifest.name, "files": record})
        os.utime(stamp, ns=(st.st_atime_ns, st.st_mtime_ns))
    return None
