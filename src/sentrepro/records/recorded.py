"""Files one job wrote and another reads, checked against the writer's own record before they are used.

A training job's ``best/`` checkpoint is recorded in its ``train.json``, a tokenized corpus's ``ids.npy``
and ``offsets.npy`` in its ``tokenized.json``. The writer records, per file, its sha256, its size and a
**stamp**: ``[size, mtime_ns, inode]`` as the file stood when the writer hashed it (:func:`content_record`).
A reader calls :func:`verify_recorded` before it loads anything: a file that is gone, a file the record does
not list, or a file whose content differs stops the job with :class:`IntegrityError` (one line naming the
file, the record, its writer and what differs).

**Cost.** A file whose stat still equals its stamp is not read: any write in place moves its mtime (and a
rename over it its inode), so an unchanged stamp means the bytes the writer hashed. Any other file (a copy
of the tree, a ``touch``, an older record without stamps, an edit) is hashed in full (~1.4 GB per CPU second,
:mod:`sentrepro.records.integrity`), and only a differing sha256 fails. So a reader of an untouched
``best/`` costs one ``stat`` per file (``benchmarks/verify_recorded.py`` measures both paths). The one gap
is the stamp's: a file rewritten to the same size with its mtime put back by hand *and* on the same inode
passes unread; the audit (``sentrepro audit``) still hashes it.

The sha256 each file was verified at is returned, so the reader's provenance records it without hashing
the file a second time.
"""

from __future__ import annotations

from pathlib import Path

from sentrepro.files import read_json
from sentrepro.records.integrity import IntegrityError, file_sha256
from sentrepro.runs import BEST, TRAIN_SUMMARY


def stamp_of(path: Path) -> list[int]:
    """``[size, mtime_ns, inode]``: what tells, without reading it, that a file is still the one hashed."""
    st = Path(path).stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def content_record(paths: list[Path], sha256: dict[Path, str] | None = None) -> dict[str, dict]:
    """``{file name: {sha256, bytes, stamp}}`` of ``paths`` as they are now (for a writer's record).
    ``sha256``: digests the writer already computed, to hash no file twice."""
    known = sha256 or {}
    record = {}
    for path in sorted(Path(p) for p in paths):
        stamp = stamp_of(path)
        digest = known.get(path) or file_sha256(path)
        record[path.name] = {"sha256": digest, "bytes": stamp[0], "stamp": stamp}
    return record


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"


def verify_recorded(directory: Path, files: dict[str, dict], record: Path, writer: str, fix: str,
                    complete: bool = False) -> dict[Path, str]:
    """Check ``directory/<name>`` against ``files[name]`` (``{sha256, bytes, stamp?}``) as :func:`content_record`
    wrote it; return ``{path: sha256}``. ``record``: the file holding ``files`` (named in errors), ``writer``:
    the job that wrote both, ``fix``: what to do. ``complete``: the directory must hold nothing else (a
    checkpoint folder: a stray file there would be loaded)."""
    directory = Path(directory)
    verified: dict[Path, str] = {}
    for name, entry in sorted(files.items()):
        path = directory / name
        where = f"{path}: written by {writer} and recorded in {record}"
        if not path.is_file():
            raise IntegrityError(f"{where} (sha256 {_short(entry.get('sha256'))}, {entry.get('bytes')} bytes), "
                                 f"is missing; {fix}")
        stamp = stamp_of(path)
        if entry.get("stamp") == stamp and entry.get("sha256"):
            verified[path] = entry["sha256"]
            continue
        actual = file_sha256(path)
        if actual != entry.get("sha256"):
            size = (f"{stamp[0]} bytes, recorded {entry.get('bytes')}" if stamp[0] != entry.get("bytes")
                    else f"same size {stamp[0]} bytes")
            raise IntegrityError(f"{where}, differs: sha256 {_short(actual)}, recorded {_short(entry.get('sha256'))} "
                                 f"({size}); the file changed after its job wrote it: {fix}")
        verified[path] = actual
    if complete:
        extra = sorted(p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")
                       and p.name not in files)
        if extra:
            raise IntegrityError(f"{directory / extra[0]}: not recorded in {record} by {writer} "
                                 f"({len(extra)} such file{'s' * (len(extra) > 1)} in {directory}); "
                                 f"remove it or {fix}")
    return verified


# --- the records this project's readers check -----------------------------------------------------------

BEST_ROLE = "best checkpoint file (output)"  # how train.json's provenance lists each best/ file
TOKEN_FILES = "token_files"  # the key of the tokenize job's content_record in meta.json and tokenized.json


def verify_best(run_dir: Path) -> dict[Path, str]:
    """Verify a run's ``best/`` against the ``train.json`` that recorded it (every file, nothing else).

    A summary written before it carried ``best_files`` stamps lists each file's sha256 among its
    provenance inputs (role ``best checkpoint file (output)``); those are hashed in full."""
    run_dir = Path(run_dir)
    summary_path = run_dir / TRAIN_SUMMARY
    summary = read_json(summary_path)
    files = summary.get("best_files")
    if not isinstance(files, dict):
        files = {Path(entry["path"]).name: {"sha256": entry["sha256"], "bytes": entry.get("bytes")}
                 for entry in (summary.get("provenance") or {}).get("inputs", []) if entry.get("role") == BEST_ROLE}
    fix = f"rerun its training (snakemake --forcerun {summary_path})"
    if not files:
        raise IntegrityError(f"{summary_path}: records no file of {run_dir / BEST}/, so it cannot be verified; {fix}")
    return verify_recorded(run_dir / BEST, files, summary_path, "the train job", fix, complete=True)


def verify_tokenized(directory: Path, record_name: str = "tokenized.json") -> dict[Path, str]:
    """Verify a tokenized corpus (``ids.npy``, ``offsets.npy``) against the ``tokenized.json`` its tokenize
    job wrote beside it."""
    directory = Path(directory)
    record = directory / record_name
    files = read_json(record).get(TOKEN_FILES)
    fix = f"rerun its tokenize job (snakemake --forcerun {record})"
    if not isinstance(files, dict) or not files:
        raise IntegrityError(f"{record}: records no hashes of the token files beside it (written by an older "
                             f"version), so they cannot be verified; {fix}")
    return verify_recorded(directory, files, record, "the tokenize job", fix)


def add_verified_input(prov, path: Path, role: str, sha256: str | None) -> dict:
    """Record ``path`` as an input of ``prov`` (a :class:`~sentrepro.records.provenance.Provenance`) at the sha256
    it was just verified at, without hashing it again; a file not verified here is hashed as usual."""
    from sentrepro.records.provenance import project_path

    if sha256 is None:
        return prov.add_input(path, role)
    entry = {"role": role, **project_path(path), "sha256": sha256, "bytes": Path(path).stat().st_size}
    prov.inputs.append(entry)
    return entry


CORPUS_FILES = "corpus_files"  # the key of a corpus job's content_record in its <corpus>/sentences.txt.json


def verify_corpus(sentences_file: Path) -> dict[Path, str]:
    """Verify a training corpus text (``prepare_corpus``'s ``sentences.txt``; for MoCoUTRL's views, ``build_views``'
    ``sentences.txt`` and ``views.tsv``) against the record its job wrote beside it, ``sentences.txt.json``."""
    sentences_file = Path(sentences_file)
    record = Path(f"{sentences_file}.json")
    payload = read_json(record)
    writer = f"the {(payload.get('provenance') or {}).get('step') or 'corpus'} job"
    fix = f"rerun it (snakemake --forcerun {sentences_file})"
    files = payload.get(CORPUS_FILES)
    if not isinstance(files, dict) or sentences_file.name not in files:
        raise IntegrityError(f"{record}: records no hash of {sentences_file.name} (written by an older version), "
                             f"so it cannot be verified; {fix}")
    return verify_recorded(sentences_file.parent, files, record, writer, fix)
