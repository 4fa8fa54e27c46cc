"""The data steps the workflow runs: download a source, prepare it into a verified tree, build a corpus.

``download``: fetch a source's file(s) (http/https/file URL; pkg:// and fixture:// resolved) into
``<resources>/downloads/<name>/`` and write ``download.json`` (URLs, sha256, how each was verified).
A source is one file (``format`` file/tar/zip/bz2) or several (``format: files``, each entry of
``files`` landing at its ``path``). With no sha256 pinned, the first download's hash is kept next
to the file (``.<file>.first-use.sha256``) and every later download of that file must match it:
trust on first use, stated in the record. Unpinned fixture:// files are the exception
(verification ``generated``): the workflow regenerates them whenever their generator's code changes.
``prepare``: extract the archive, copy the file(s), or stage a local directory (a mirror) into
``<resources>/data/<name>/files/`` and write ``MANIFEST.json`` listing every file's sha256, with the
download record as input. Staged mirror files that a source pins (``files[].sha256``) are checked
against their pins. A tree holding one top-level directory only is unwrapped, so readers see
``STS/``, ``SICK/`` ... at the top whatever the archive's wrapping.
``build_corpus``: read the training sentences out of a prepared source into one text file (the
``lines`` reader cuts lines by ``corpus.line_split``, :mod:`sentrepro.data.lines`; the record states the
sentence count under both rules).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sentrepro.data.download import (
    TRUST_ON_FIRST_USE,
    VERIFIED_BY_PIN,
    ChecksumMismatch,
    FetchSettings,
    fetch,
)
from sentrepro.data.extract import build_manifest, extract_archive, stage_directory
from sentrepro.data.sources import default_filename, fixture_generator, join_url, local_path, resolve_url
from sentrepro.files import atomic_dir, atomic_path, atomic_write_json, atomic_write_text, read_json
from sentrepro.hashing import sha256_file
from sentrepro.records.recorded import CORPUS_FILES, content_record
from sentrepro.records.integrity import verify_dataset, write_stamp
from sentrepro.records.provenance import Provenance

LOG = logging.getLogger(__name__)

FILES = "files"
MANIFEST = "MANIFEST.json"
DOWNLOAD_RECORD = "download.json"
MULTI_FILE_FORMAT = "files"
GENERATED = "generated"  # verification of an unpinned fixture:// file
ARCHIVE_FORMATS = ("tar", "zip", "bz2")


class PinMismatch(ValueError):
    """A staged mirror file does not hash to the sha256 its source pins."""


@dataclass(frozen=True)
class SourceFile:
    """One file of a source: where it lands (relative path), where it comes from, its pin (or None)."""

    path: str
    url: str
    sha256: str | None


def source_files(name: str, spec: dict) -> list[SourceFile]:
    """The files a source consists of.

    ``format: files``: every ``files`` entry, its URL given or ``url`` (the base) joined with its
    path. Any other format: the one file at ``url``, named ``filename`` or the URL's last part.
    """
    if spec["format"] != MULTI_FILE_FORMAT:
        return [SourceFile(spec.get("filename") or default_filename(spec["url"]), spec["url"], spec.get("sha256"))]
    entries = spec.get("files") or []
    if not entries:
        raise ValueError(f"data.sources.{name}: format 'files' needs a non-empty 'files' list")
    found: list[SourceFile] = []
    for index, entry in enumerate(entries):
        where = f"data.sources.{name}.files[{index}]"
        path = safe_relative_path(entry.get("path", ""), where)
        url = entry.get("url") or (join_url(spec["url"], path) if spec.get("url") else None)
        if url is None:
            raise ValueError(f"{where} ({path}): no url, and the source has no base url to join the path to")
        found.append(SourceFile(path, url, entry.get("sha256")))
    paths = [item.path for item in found]
    if len(set(paths)) != len(paths):
        raise ValueError(f"data.sources.{name}.files: a path appears twice ({sorted(paths)})")
    return found


def safe_relative_path(path: str, where: str) -> str:
    """``path`` as a clean relative posix path; absolute paths and ``..`` are refused."""
    posix = PurePosixPath(path.replace("\\", "/"))
    if not path or posix.is_absolute() or ".." in posix.parts or str(posix) in ("", "."):
        raise ValueError(f"{where}: path {path!r} must be a relative path inside the source, without '..'")
    return str(posix)


def first_use_record(dest: Path) -> Path:
    """Where the sha256 of an unpinned file's first download is kept, next to the file."""
    return dest.with_name(f".{dest.name}.first-use.sha256")


def download(name: str, spec: dict, out_dir: Path, *, progress: bool = True,
             settings: FetchSettings | None = None, fixtures_dir: Path | None = None) -> dict:
    """Fetch every file of the source into ``out_dir`` and record how each was verified."""
    settings = settings or FetchSettings()
    out_dir = Path(out_dir)
    prov = Provenance(step="download", config={"name": name, **spec})
    items = source_files(name, spec)
    entries = []
    for index, item in enumerate(items, start=1):
        if len(items) > 1:
            LOG.info("%s: file %d of %d: %s", name, index, len(items), item.path)
        entries.append(_download_file(item, out_dir, progress, settings, fixtures_dir))
        prov.add_input(out_dir / item.path, "downloaded file")
    kinds = {entry["verification"] for entry in entries}
    record = {
        "name": name,
        "url": spec.get("url"),
        "files": entries,
        "verification": kinds.pop() if len(kinds) == 1 else TRUST_ON_FIRST_USE,
        "synthetic": spec.get("synthetic", False),
    }
    if spec["format"] != MULTI_FILE_FORMAT:
        only = entries[0]
        record.update(file=only["path"], resolved_url=only["resolved_url"], sha256=only["sha256"],
                      bytes=only["bytes"], resumed=only["resumed"])
    record["provenance"] = prov.finish()
    atomic_write_json(out_dir / DOWNLOAD_RECORD, record)
    return record


def _download_file(item: SourceFile, out_dir: Path, progress: bool, settings: FetchSettings,
                   fixtures_dir: Path | None) -> dict:
    """Fetch one file; without a pin, hold it to the hash recorded on its first download."""
    dest = out_dir / item.path
    if fixture_generator(item.url) and not item.sha256:
        return _copy_fixture(item, dest, progress, settings, fixtures_dir)
    record_path = first_use_record(dest)
    first_use = None if item.sha256 or not record_path.is_file() else record_path.read_text().strip()
    url = resolve_url(item.url, fixtures_dir)
    try:
        result = fetch(url, dest, item.sha256 or first_use, progress=progress, **settings.as_kwargs())
    except ChecksumMismatch as exc:
        if first_use is None:
            raise
        raise ChecksumMismatch(
            f"{exc}. No sha256 is pinned for {item.url}; the expected hash is the one recorded on its first "
            f"download ({record_path}). If the upstream file really changed, inspect it, then pin its new "
            f"sha256 in the config (or delete {record_path}) and rerun"
        ) from exc
    entry = {"path": item.path, "url": item.url, "resolved_url": url, "sha256": result.sha256,
             "bytes": result.bytes, "resumed": result.resumed}
    if item.sha256:
        entry["verification"] = VERIFIED_BY_PIN
    else:
        entry["verification"] = TRUST_ON_FIRST_USE
        entry["first_use"] = ("matches the hash recorded on first use" if first_use else
                              "first download: hash recorded for later downloads to match")
        entry["first_use_record"] = str(record_path)
        if first_use is None:
            atomic_write_text(record_path, result.sha256 + "\n")
    return entry


def _copy_fixture(item: SourceFile, dest: Path, progress: bool, settings: FetchSettings,
                  fixtures_dir: Path | None) -> dict:
    """Fetch an unpinned generated fixture: no first-use record, since it changes when its generator does."""
    url = resolve_url(item.url, fixtures_dir)
    generated = sha256_file(local_path(url))  # the copy must be intact; the fixture itself has no pin
    LOG.info("%s: synthetic fixture (sha256 %s), trusted as the output of its generator", item.url, generated)
    result = fetch(url, dest, generated, progress=progress, **settings.as_kwargs())
    return {"path": item.path, "url": item.url, "resolved_url": url, "sha256": result.sha256, "bytes": result.bytes,
            "resumed": False, "verification": GENERATED,
            "note": "synthetic fixture written by the workflow's fixture rule (sentrepro fixture); its provenance is "
                    "the generator code, so no first-use hash is kept"}


def prepare(name: str, spec: dict, out_dir: Path, download_record: Path | None) -> dict:
    """Turn downloaded file(s) or a local directory into ``out_dir/files`` + ``out_dir/MANIFEST.json``."""
    out_dir = Path(out_dir)
    files_dir = out_dir / FILES
    prov = Provenance(step="prepare_dataset", config={"name": name, **spec})
    fmt = spec["format"]
    pins_checked = 0
    if fmt == "directory":
        source_dir = local_path(resolve_url(spec["url"]))
        if source_dir is None:
            raise ValueError(f"data.sources.{name}: format 'directory' needs a file:// or pkg:// URL")
        stage_directory(source_dir, files_dir)
        pins_checked = _check_staged_pins(name, spec, source_dir, files_dir)
    else:
        if download_record is None:
            raise ValueError(f"data.sources.{name}: format '{fmt}' needs a download record")
        record = read_json(download_record)
        prov.add_input(download_record, "download record")
        downloads = Path(download_record).parent
        if fmt in ARCHIVE_FORMATS:
            extract_archive(downloads / record["file"], files_dir)
        else:
            with atomic_dir(files_dir) as tmp:
                for entry in record["files"]:
                    target = tmp / entry["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(downloads / entry["path"], target)
    unwrapped = _unwrap_single_directory(files_dir)
    files = build_manifest(files_dir)
    manifest = {
        "name": name,
        "files": files,
        "unwrapped": unwrapped,
        "synthetic": spec.get("synthetic", False),
        "provenance": prov.finish(),
    }
    if fmt == "directory":
        manifest["staged_from"] = str(source_dir)
        manifest["pins_checked"] = pins_checked
    atomic_write_json(out_dir / MANIFEST, manifest)
    write_stamp(out_dir / MANIFEST)  # what the plan compares the files with (sentrepro.records.integrity)
    LOG.info("%s: %d files prepared in %s", name, len(files), files_dir)
    return manifest


def _check_staged_pins(name: str, spec: dict, source_dir: Path, files_dir: Path) -> int:
    """Check staged mirror files against the sha256 pins of the source's ``files`` list.

    A mirror replaces the download, not the verification: a pinned file that is missing or
    differs removes the staged tree and raises ``PinMismatch``. Returns the number checked.
    """
    pinned = [item for item in source_files(name, {**spec, "format": MULTI_FILE_FORMAT})
              if item.sha256] if spec.get("files") else []
    for item in pinned:
        staged = files_dir / item.path
        problem = None
        if not staged.is_file():
            problem = "is missing"
        else:
            actual = sha256_file(staged)
            if actual != item.sha256.lower():
                problem = f"has sha256 {actual}, not the pinned {item.sha256}"
        if problem:
            shutil.rmtree(files_dir, ignore_errors=True)
            raise PinMismatch(f"local mirror of source '{name}': {source_dir / item.path} {problem} "
                              f"(data.sources.{name}.files, path {item.path}); nothing was prepared")
    return len(pinned)


def _unwrap_single_directory(files_dir: Path) -> str | None:
    """If ``files_dir`` holds exactly one directory and nothing else, lift its content up one level."""
    entries = [p for p in files_dir.iterdir() if not p.name.startswith(".")]
    if len(entries) != 1 or not entries[0].is_dir():
        return None
    inner = entries[0]
    holder = files_dir.with_name(f".{files_dir.name}.unwrap")
    shutil.rmtree(holder, ignore_errors=True)
    inner.rename(holder)
    files_dir.rmdir()
    holder.rename(files_dir)
    return inner.name


def dataset_file(manifest_path: Path, relative: str) -> Path:
    """Path of a file (or folder) inside a prepared source, its bytes checked against the manifest's sha256."""
    manifest = read_json(manifest_path)
    path = Path(manifest_path).parent / FILES / relative
    if relative not in manifest["files"] and not path.is_dir():
        raise FileNotFoundError(f"{relative} is not part of prepared source '{manifest['name']}' ({manifest_path})")
    verify_dataset(Path(manifest_path), relative)
    return path


def build_corpus(spec: dict, manifest_path: Path, out_file: Path) -> dict:
    """Write the training sentences (one per line) and ``<out_file>.json`` with their provenance."""
    prov = Provenance(step="prepare_corpus", config=spec)
    prov.add_input(manifest_path, "dataset manifest")
    source_file = dataset_file(manifest_path, spec["file"])
    prov.add_input(source_file, "corpus source file")
    counts = None
    if spec["reader"] == "wikidump":
        from sentrepro.data.wikidump import wikidump_sentences

        sentences = wikidump_sentences(source_file)
    else:
        from sentrepro.data.lines import count_lines, read_lines

        rule = spec.get("line_split", "splitlines")
        sentences = read_lines(source_file, rule)
        counts = count_lines(source_file)  # the whole file under both rules, whatever max_sentences keeps
    count = 0
    with atomic_path(out_file) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            for sentence in sentences:
                if spec.get("max_sentences") and count >= spec["max_sentences"]:
                    break
                handle.write(sentence.replace("\n", " ") + "\n")
                count += 1
    record = {"sentences": count, CORPUS_FILES: content_record([Path(out_file)]), "provenance": prov.finish()}
    if counts is not None:
        record.update(line_split=rule, source_lines=counts)
    atomic_write_json(Path(str(out_file) + ".json"), record)
    return record
