"""extract_archive / stage_directory / build_manifest on archives built on the fly and on real data."""

from __future__ import annotations

import bz2
import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from sentrepro.data.extract import (
    ExtractError,
    UnsafeArchiveMember,
    build_manifest,
    extract_archive,
    stage_directory,
)

MEMBERS = {
    "STS/STS12-en-test/STS.input.MSRpar.txt": b"a sentence\tanother sentence\n",
    "STS/STS12-en-test/STS.gs.MSRpar.txt": b"4.2\n",
    "readme.txt": "Unicode text: caf\u00e9\n".encode(),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _assert_extracted(dest: Path, returned: list[Path]) -> None:
    assert returned == sorted(dest / name for name in MEMBERS)
    for name, data in MEMBERS.items():
        assert (dest / name).read_bytes() == data


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.mark.parametrize("mode, name", [("w:gz", "data.tar.gz"), ("w:gz", "data.tgz"), ("w", "data.tar"),
                                        ("w:bz2", "data.tar.bz2"), ("w:xz", "data.tar.xz")])
def test_tar_variants_extract_all_members(tmp_path, mode, name):
    archive = _write_tar(tmp_path / name, MEMBERS, mode)
    dest = tmp_path / "out"
    _assert_extracted(dest, extract_archive(archive, dest))
    assert _siblings(dest) == sorted([name, "out"])  # no temporary directory left behind


def test_zip_extracts_all_members(tmp_path):
    archive = _write_zip(tmp_path / "data.zip", MEMBERS)
    dest = tmp_path / "out"
    _assert_extracted(dest, extract_archive(archive, dest))


def test_format_is_sniffed_from_bytes_not_name(tmp_path):
    archive = _write_zip(tmp_path / "file_downloaded", MEMBERS)  # the WOS URL's file name
    dest = tmp_path / "out"
    _assert_extracted(dest, extract_archive(archive, dest))


def test_single_bz2_file_is_decompressed_under_its_stem(tmp_path):
    archive = tmp_path / "sentences.txt.bz2"
    archive.write_bytes(bz2.compress(b"one\ntwo\n"))
    dest = tmp_path / "out"
    assert extract_archive(archive, dest) == [dest / "sentences.txt"]
    assert (dest / "sentences.txt").read_bytes() == b"one\ntwo\n"


def test_extracting_again_replaces_the_old_directory(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "stale.txt").write_text("from an older archive")
    extract_archive(_write_zip(tmp_path / "data.zip", MEMBERS), dest)
    assert not (dest / "stale.txt").exists()
    assert sorted(build_manifest(dest)) == sorted(MEMBERS)


@pytest.mark.parametrize("member", ["../evil.txt", "ok/../../evil.txt", "/tmp/evil.txt"])
def test_tar_traversal_member_is_refused(tmp_path, member):
    archive = _write_tar(tmp_path / "bad.tar.gz", {"fine.txt": b"x", member: b"pwned"})
    dest = tmp_path / "box" / "out"
    with pytest.raises(UnsafeArchiveMember) as caught:
        extract_archive(archive, dest)
    assert str(archive) in str(caught.value) and repr(member) in str(caught.value)
    assert not dest.exists() and not (tmp_path / "evil.txt").exists() and not (tmp_path / "box" / "evil.txt").exists()


def test_zip_traversal_member_is_refused(tmp_path):
    archive = _write_zip(tmp_path / "bad.zip", {"fine.txt": b"x", "../evil.txt": b"pwned"})
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveMember, match=r"\.\./evil\.txt"):
        extract_archive(archive, dest)
    assert not dest.exists() and not (tmp_path / "evil.txt").exists()


def test_tar_symlink_pointing_outside_is_refused(tmp_path):
    archive = tmp_path / "link.tar"
    with tarfile.open(archive, "w") as tar:
        link = tarfile.TarInfo("data/passwd")
        link.type = tarfile.SYMTYPE
        link.linkname = "../../etc/passwd"
        tar.addfile(link)
    with pytest.raises(UnsafeArchiveMember, match="points outside"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["tar.gz", "zip", "bz2"])
def test_truncated_archive_raises_naming_it_and_leaves_nothing(tmp_path, kind):
    big = {f"part{i}.txt": hashlib.sha512(str(i).encode()).hexdigest().encode() * 400 for i in range(20)}
    if kind == "tar.gz":
        archive = _write_tar(tmp_path / "data.tar.gz", big)
    elif kind == "zip":
        archive = _write_zip(tmp_path / "data.zip", big)
    else:
        archive = tmp_path / "data.txt.bz2"
        archive.write_bytes(bz2.compress(b"".join(big.values())))
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])
    dest = tmp_path / "out"
    with pytest.raises(ExtractError) as caught:
        extract_archive(archive, dest)
    assert str(archive) in str(caught.value)
    assert _siblings(archive) == [archive.name]


def test_zip_with_corrupted_member_bytes_is_refused(tmp_path):
    archive = _write_zip(tmp_path / "data.zip", {"a.txt": b"hello world " * 100})
    data = bytearray(archive.read_bytes())
    data[40] ^= 0xFF  # inside the first member's compressed data
    archive.write_bytes(bytes(data))
    with pytest.raises(ExtractError, match="data.zip"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unknown_format_is_refused(tmp_path):
    archive = tmp_path / "notes.txt"
    archive.write_text("just text, not an archive\n")
    with pytest.raises(ExtractError, match="not a recognised format"):
        extract_archive(archive, tmp_path / "out")


def test_build_manifest_hashes_every_regular_file_sorted_and_skips_temp_files(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_bytes(b"zz")
    (tmp_path / "a.txt").write_bytes(b"aa")
    (tmp_path / ".gitattributes").write_bytes(b"hidden but real")
    (tmp_path / ".a.txt.part").write_bytes(b"half a download")
    (tmp_path / "b" / ".z.txt.k2j3h4.tmp").write_bytes(b"half a write")
    manifest = build_manifest(tmp_path)
    assert list(manifest) == [".gitattributes", "a.txt", "b/z.txt"]
    assert manifest["b/z.txt"] == _sha(b"zz") and manifest["a.txt"] == _sha(b"aa")


def test_stage_directory_copies_tree_without_temp_files(tmp_path):
    src = tmp_path / "mirror"
    (src / "STS").mkdir(parents=True)
    (src / "STS" / "x.txt").write_bytes(b"x")
    (src / "STS" / ".x.txt.part").write_bytes(b"partial")
    staged = stage_directory(src, tmp_path / "work" / "data")
    assert staged == [tmp_path / "work" / "data" / "STS" / "x.txt"]
    assert build_manifest(tmp_path / "work" / "data") == {"STS/x.txt": _sha(b"x")}


def test_stage_directory_refuses_missing_source_and_nesting(tmp_path):
    with pytest.raises(ExtractError, match="does not exist"):
        stage_directory(tmp_path / "absent", tmp_path / "out")
    (tmp_path / "src").mkdir()
    with pytest.raises(ExtractError, match="inside"):
        stage_directory(tmp_path / "src", tmp_path / "src" / "copy")


def _manifest_rows(shared_data: Path, prefix: str) -> dict[str, str]:
    lines = (shared_data / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    column = {name: i for i, name in enumerate(lines[0].split("\t"))}
    rows = [line.split("\t") for line in lines[1:]]
    return {r[column["local_path"]][len(prefix):]: r[column["sha256"]]
            for r in rows if r[column["local_path"]].startswith(prefix)}


def test_real_mirror_staged_and_tarred_round_trips_to_its_published_hashes(shared_data, tmp_path):
    prefix = "senteval/STS/STS12-en-test/"
    expected = _manifest_rows(shared_data, prefix)
    assert expected, f"no {prefix} rows in MANIFEST.tsv"
    staged_dir = tmp_path / "staged"
    stage_directory(shared_data / prefix, staged_dir)
    assert {k: v for k, v in build_manifest(staged_dir).items() if k in expected} == expected

    archive = tmp_path / "sts12.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(staged_dir, arcname="STS12-en-test")
    extract_archive(archive, tmp_path / "unpacked")
    unpacked = build_manifest(tmp_path / "unpacked" / "STS12-en-test")
    assert {k: v for k, v in unpacked.items() if k in expected} == expected
