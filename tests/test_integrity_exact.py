"""Exact behaviour of records/integrity.py: data-source file selection, manifest paths, and the plan's
content stamps (CONTENT.json layout, which refreshes rewrite the stamp, and the changed-files line).

Expected values are derived by hand from the documented stamp format, with hashlib for the digests."""

from __future__ import annotations

import hashlib
import json
import os

from sentrepro.records import integrity


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _source(tmp_path, contents: dict[str, bytes], listed: dict[str, bytes] | None = None):
    """A prepared data source: files/<rel> written from ``contents``, MANIFEST listing ``listed`` (default all)."""
    listed = contents if listed is None else listed
    for rel, data in contents.items():
        path = tmp_path / "files" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"files": {rel: _sha(data) for rel, data in listed.items()}}))
    return manifest


def _stat(path) -> list:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def test_dataset_files_folder_prefix_is_the_exact_folder_name(tmp_path):
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"files": {"subX/a": "1", "sub/b": "2", "subXY/c": "3"}}))
    assert integrity.dataset_files(manifest, "subX") == {"subX/a": "1"}
    assert integrity.dataset_files(manifest, "subX/") == {"subX/a": "1"}


def test_manifest_files_of_a_data_source_are_under_files(tmp_path):
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"files": {"a.txt": "d1", "x/b.txt": "d2"}}))
    assert integrity.manifest_files(manifest) == {"files/a.txt": "d1", "files/x/b.txt": "d2"}


def test_write_stamp_records_sha_and_size_mtime_inode_and_missing_files(tmp_path):
    manifest = _source(tmp_path, {"b.txt": b"hello"}, listed={"a_gone.txt": b"x", "b.txt": b"hello",
                                                               "c_gone.txt": b"y"})
    stamp = integrity.write_stamp(manifest)
    assert stamp == tmp_path / "CONTENT.json"
    payload = json.loads(stamp.read_text())
    assert payload == {
        "manifest": "MANIFEST.json",
        "files": {
            "files/a_gone.txt": {"sha256": None, "stat": None},
            "files/b.txt": {"sha256": _sha(b"hello"), "stat": _stat(tmp_path / "files" / "b.txt")},
            "files/c_gone.txt": {"sha256": None, "stat": None},
        },
    }


def test_refresh_with_nothing_moved_leaves_the_stamp_file_untouched(tmp_path):
    manifest = _source(tmp_path, {"a.txt": b"one", "b.txt": b"two"})
    stamp = integrity.write_stamp(manifest)
    before = (stamp.stat().st_ino, stamp.stat().st_mtime_ns, stamp.read_text())
    assert integrity.refresh_stamp(manifest) is None
    assert (stamp.stat().st_ino, stamp.stat().st_mtime_ns, stamp.read_text()) == before


def test_refresh_after_touch_caches_new_stat_and_keeps_stamp_mtime(tmp_path):
    manifest = _source(tmp_path, {"a.txt": b"one"})
    stamp = integrity.write_stamp(manifest)
    old_mtime = stamp.stat().st_mtime_ns
    target = tmp_path / "files" / "a.txt"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert integrity.refresh_stamp(manifest) is None
    assert stamp.stat().st_mtime_ns == old_mtime
    assert json.loads(stamp.read_text()) == {
        "manifest": "MANIFEST.json",
        "files": {"files/a.txt": {"sha256": _sha(b"one"), "stat": _stat(target)}},
    }


def test_refresh_after_content_change_names_files_and_rewrites_stamp(tmp_path):
    manifest = _source(tmp_path, {"a.txt": b"one", "b.txt": b"two", "c.txt": b"three"})
    stamp = integrity.write_stamp(manifest)
    (tmp_path / "files" / "c.txt").write_bytes(b"THREE!")
    (tmp_path / "files" / "a.txt").write_bytes(b"ONE!")
    line = integrity.refresh_stamp(manifest)
    assert line == f"{tmp_path}: content changed since the last plan: files/a.txt, files/c.txt"
    files = {rel: tmp_path / rel for rel in ("files/a.txt", "files/b.txt", "files/c.txt")}
    assert json.loads(stamp.read_text()) == {
        "manifest": "MANIFEST.json",
        "files": {
            "files/a.txt": {"sha256": _sha(b"ONE!"), "stat": _stat(files["files/a.txt"])},
            "files/b.txt": {"sha256": _sha(b"two"), "stat": _stat(files["files/b.txt"])},
            "files/c.txt": {"sha256": _sha(b"THREE!"), "stat": _stat(files["files/c.txt"])},
        },
    }
