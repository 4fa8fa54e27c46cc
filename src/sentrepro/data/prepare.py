"""The data steps the workflow runs: download a source, prepare it into a verified tree, build a corpus.

``download``: fetch a source's file (http/https/file URL, pkg:// resolved) into
``<resources>/downloads/<name>/`` and write ``download.json`` (URL, sha256, how it was verified).
``prepare``: extract the archive, copy the file, or stage a local directory into
``<resources>/data/<name>/files/`` and write ``MANIFEST.json`` listing every file's sha256, with the
download record as input. A tree holding one top-level directory only is unwrapped, so readers see
``STS/``, ``SICK/`` ... at the top whatever the archive's wrapping.
``build_corpus``: read the training sentences out of a prepared source into one text file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sentrepro.data.download import fetch
from sentrepro.data.extract import build_manifest, extract_archive, stage_directory
from sentrepro.data.sources import default_filename, local_path, resolve_url
from sentrepro.fsutil import atomic_dir, atomic_path, atomic_write_json, read_json
from sentrepro.provenance import Provenance

FILES = "files"
MANIFEST = "MANIFEST.json"
DOWNLOAD_RECORD = "download.json"


def needs_download(spec: dict) -> bool:
    """Directory sources (local mirrors, package-shipped trees) are staged without a download step."""
    return spec["format"] != "directory"


def download(name: str, spec: dict, out_dir: Path, *, progress: bool = True) -> dict:
    """Fetch the source's single file into ``out_dir`` and record how it was verified."""
    prov = Provenance(step="download", config={"name": name, **spec})
    url = resolve_url(spec["url"])
    filename = spec.get("filename") or default_filename(url)
    result = fetch(url, Path(out_dir) / filename, spec.get("sha256"), progress=progress)
    record = {
        "name": name,
        "url": spec["url"],
        "resolved_url": url,
        "file": filename,
        "sha256": result.sha256,
        "bytes": result.bytes,
        "verification": result.verification,
        "resumed": result.resumed,
        "synthetic": spec.get("synthetic", False),
    }
    prov.add_input(result.path, "downloaded file")
    record["provenance"] = prov.finish()
    atomic_write_json(Path(out_dir) / DOWNLOAD_RECORD, record)
    return record


def prepare(name: str, spec: dict, out_dir: Path, download_record: Path | None) -> dict:
    """Turn a downloaded file or a local directory into ``out_dir/files`` + ``out_dir/MANIFEST.json``."""
    out_dir = Path(out_dir)
    files_dir = out_dir / FILES
    prov = Provenance(step="prepare_dataset", config={"name": name, **spec})
    fmt = spec["format"]
    if fmt == "directory":
        source_dir = local_path(resolve_url(spec["url"]))
        if source_dir is None:
            raise ValueError(f"data.sources.{name}: format 'directory' needs a file:// or pkg:// URL")
        stage_directory(source_dir, files_dir)
    else:
        if download_record is None:
            raise ValueError(f"data.sources.{name}: format '{fmt}' needs a download record")
        record = read_json(download_record)
        prov.add_input(download_record, "download record")
        downloaded = Path(download_record).parent / record["file"]
        if fmt in ("tar", "zip", "bz2"):
            extract_archive(downloaded, files_dir)
        else:
            with atomic_dir(files_dir) as tmp:
                shutil.copyfile(downloaded, tmp / record["file"])
    unwrapped = _unwrap_single_directory(files_dir)
    files = build_manifest(files_dir)
    manifest = {
        "name": name,
        "files": files,
        "unwrapped": unwrapped,
        "synthetic": spec.get("synthetic", False),
        "provenance": prov.finish(),
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


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
    """Path of a file inside a prepared source, checked against its manifest."""
    manifest = read_json(manifest_path)
    path = Path(manifest_path).parent / FILES / relative
    if relative not in manifest["files"] and not path.is_dir():
        raise FileNotFoundError(f"{relative} is not part of prepared source '{manifest['name']}' ({manifest_path})")
    return path


def build_corpus(spec: dict, manifest_path: Path, out_file: Path) -> dict:
    """Write the training sentences (one per line) and ``<out_file>.json`` with their provenance."""
    prov = Provenance(step="prepare_corpus", config=spec)
    prov.add_input(manifest_path, "dataset manifest")
    source_file = dataset_file(manifest_path, spec["file"])
    prov.add_input(source_file, "corpus source file")
    if spec["reader"] == "wikidump":
        from sentrepro.data.wikidump import wikidump_sentences

        sentences = wikidump_sentences(source_file)
    else:
        sentences = _read_lines(source_file)
    count = 0
    with atomic_path(out_file) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            for sentence in sentences:
                if spec.get("max_sentences") and count >= spec["max_sentences"]:
                    break
                handle.write(sentence.replace("\n", " ") + "\n")
                count += 1
    record = {"sentences": count, "provenance": prov.finish()}
    atomic_write_json(Path(str(out_file) + ".json"), record)
    return record


def _read_lines(path: Path):
    """Lines of a one-sentence-per-line file, as ``datasets``' text loader yields them."""
    with open(path, encoding="utf-8", newline=None) as handle:
        for line in handle:
            yield line.rstrip("\n")
