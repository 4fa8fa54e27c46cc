"""Unpack a downloaded archive, or stage a local mirror directory, atomically and safely.

Formats are recognised from the file's first bytes, not its name, because some upstream URLs
end in names like ``file_downloaded`` (the WOS zip on Mendeley Data). Supported: zip; tar,
optionally gzip/bzip2/xz compressed (``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``); and a single
gzip/bzip2/xz compressed file (``.bz2`` and friends), which is decompressed to the archive's name
minus its compression suffix.

Everything is written into a temporary sibling of ``dest_dir`` (``files.atomic_dir``) and
renamed into place only when every member has been written, so a corrupt or truncated archive
leaves no ``dest_dir`` behind. Members with absolute paths, ``..`` components, links that point
outside the archive, or device/fifo entries are refused before anything is written.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import posixpath
import re
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable

from sentrepro.hashing import CHUNK, sha256_file
from sentrepro.files import atomic_dir

_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_COMPRESSED_MAGICS: dict[bytes, tuple[str, Callable[..., BinaryIO]]] = {
    b"\x1f\x8b": (".gz", gzip.open),
    b"BZh": (".bz2", bz2.open),
    b"\xfd7zXZ\x00": (".xz", lzma.open),
}
# Errors that mean "the archive's bytes are bad", as opposed to programming errors.
_CORRUPT_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, OSError)
# Hidden work files of files.atomic_path/atomic_dir and download.fetch: ".<name>.<random>.tmp",
# ".<name>.old", ".<name>.part". They are never part of a data set.
_TEMP_ARTIFACT = re.compile(r"^\..+\.(tmp|old|part)$")


class ExtractError(RuntimeError):
    """An archive or local mirror could not be unpacked; the message names the archive (and member)."""


class UnsafeArchiveMember(ExtractError):
    """A member would be written outside the destination (absolute path, ``..``, escaping link)."""


def is_temp_artifact(name: str) -> bool:
    """True for the hidden half-written files our atomic writers and downloader leave while working."""
    return bool(_TEMP_ARTIFACT.match(name))


def extract_archive(archive: Path, dest_dir: Path) -> list[Path]:
    """Unpack ``archive`` into ``dest_dir`` (replacing it); return the extracted regular files, sorted."""
    archive, dest_dir = Path(archive), Path(dest_dir)
    if not archive.is_file():
        raise ExtractError(f"archive {archive} does not exist or is not a regular file")
    kind = _sniff_format(archive)
    try:
        with atomic_dir(dest_dir) as tmp:
            if kind == "zip":
                _extract_zip(archive, tmp)
            elif kind == "tar":
                _extract_tar(archive, tmp)
            else:
                _extract_compressed_file(archive, tmp, kind)
            relative = _regular_files(tmp)
    except ExtractError:
        raise
    except _CORRUPT_ARCHIVE_ERRORS as exc:
        raise ExtractError(f"archive {archive} could not be extracted, it is probably corrupt or truncated "
                           f"({type(exc).__name__}: {exc}); nothing was written to {dest_dir}") from exc
    return [dest_dir / rel for rel in relative]


def stage_directory(src_dir: Path, dest_dir: Path) -> list[Path]:
    """Copy a pre-staged local directory tree (a local mirror) into ``dest_dir``, atomically.

    Symbolic links are followed (their contents are copied), so the staged tree stays valid if the
    mirror moves. Hidden temp files of interrupted writes are not copied. Returns the staged
    regular files, sorted.
    """
    src_dir, dest_dir = Path(src_dir), Path(dest_dir)
    if not src_dir.is_dir():
        raise ExtractError(f"local mirror directory {src_dir} does not exist or is not a directory")
    src_real, dest_real = src_dir.resolve(), dest_dir.resolve()
    if dest_real.is_relative_to(src_real) or src_real.is_relative_to(dest_real):
        raise ExtractError(f"cannot stage {src_dir} into {dest_dir}: one lies inside the other "
                           "(staging replaces the destination)")
    with atomic_dir(dest_dir) as tmp:
        shutil.copytree(src_dir, tmp, symlinks=False, dirs_exist_ok=True,
                        ignore=lambda _dir, names: [n for n in names if is_temp_artifact(n)])
        relative = _regular_files(tmp)
    return [dest_dir / rel for rel in relative]


def build_manifest(root: Path) -> dict[str, str]:
    """Map every regular file under ``root`` (relative posix path) to its sha256, sorted by path.

    Hidden temp files of interrupted writes are skipped: they are not part of the data.
    """
    root = Path(root)
    if not root.is_dir():
        raise ExtractError(f"cannot build a manifest of {root}: not a directory")
    return {rel: sha256_file(root / rel) for rel in _regular_files(root)}


def _regular_files(root: Path) -> list[str]:
    """Relative posix paths of the regular files under ``root``, sorted, temp artefacts excluded."""
    found = []
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not is_temp_artifact(d)]
        for name in files:
            path = Path(current) / name
            if not is_temp_artifact(name) and path.is_file():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _sniff_format(archive: Path) -> str:
    """"zip", "tar", or a compression suffix (".gz", ".bz2", ".xz") for a single compressed file."""
    with open(archive, "rb") as handle:
        head = handle.read(512)
    if head.startswith(_ZIP_MAGICS):
        return "zip"
    for magic, (suffix, opener) in _COMPRESSED_MAGICS.items():
        if head.startswith(magic):
            return "tar" if _compressed_holds_tar(archive, opener) else suffix
    if head[257:262] == b"ustar" or tarfile.is_tarfile(archive):
        return "tar"
    raise ExtractError(f"archive {archive} is not a recognised format "
                       "(zip, tar, tar.gz/tgz, tar.bz2, tar.xz, or a single .gz/.bz2/.xz file)")


def _compressed_holds_tar(archive: Path, opener: Callable[..., BinaryIO]) -> bool:
    """Whether the decompressed stream starts with a tar header (ustar magic or a valid v7 header)."""
    try:
        with opener(archive, "rb") as stream:
            block = stream.read(512)
    except _CORRUPT_ARCHIVE_ERRORS as exc:
        raise ExtractError(f"archive {archive} is corrupt or truncated ({type(exc).__name__}: {exc})") from exc
    if len(block) < 512:
        return False
    if block[257:262] == b"ustar":
        return True
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
        return True
    except tarfile.HeaderError:
        return False


def _check_member_name(archive: Path, name: str) -> None:
    """Refuse names that would land outside the destination."""
    posix = name.replace("\\", "/")
    if posix.startswith("/") or re.match(r"^[A-Za-z]:", posix):
        raise UnsafeArchiveMember(f"archive {archive}: member {name!r} has an absolute path; refusing to extract")
    if ".." in PurePosixPath(posix).parts:
        raise UnsafeArchiveMember(f"archive {archive}: member {name!r} contains '..' (path traversal); "
                                  "refusing to extract")


def _check_tar_member(archive: Path, member: tarfile.TarInfo) -> None:
    _check_member_name(archive, member.name)
    if member.ischr() or member.isblk() or member.isfifo():
        raise UnsafeArchiveMember(f"archive {archive}: member {member.name!r} is a device or fifo; "
                                  "refusing to extract")
    if member.issym() or member.islnk():
        target = member.linkname
        # Symlink targets are relative to the link's directory, hard-link targets to the archive root.
        base = posixpath.dirname(member.name) if member.issym() else ""
        resolved = posixpath.normpath(posixpath.join(base, target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise UnsafeArchiveMember(f"archive {archive}: link member {member.name!r} -> {target!r} points "
                                      "outside the archive; refusing to extract")


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()  # reads every header: a truncated tar fails here, before writing
        for member in members:
            _check_tar_member(archive, member)
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:  # Python < 3.11.4: the checks above are the whole defence
            tar.extractall(dest, members=members)


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        for info in infos:
            _check_member_name(archive, info.filename)
        # Reading each member verifies its CRC; a bad one raises BadZipFile.
        for info in infos:
            target = dest / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink, CHUNK)


def _extract_compressed_file(archive: Path, dest: Path, suffix: str) -> None:
    _, opener = next(entry for entry in _COMPRESSED_MAGICS.values() if entry[0] == suffix)
    name = archive.name[: -len(suffix)] if archive.name.endswith(suffix) and archive.name != suffix else None
    target = dest / (name or f"{archive.name}.decompressed")
    with opener(archive, "rb") as source, open(target, "wb") as sink:
        shutil.copyfileobj(source, sink, CHUNK)
