"""Adopting an output another job already finished: the second half of one writer per output.

A job that had to wait for an earlier holder of its output (:mod:`sentrepro.records.job_lock`; the orphaned
SLURM job of a killed Snakemake) may find, once it holds the lock, that the orphan finished the very output it
was about to compute. It takes that output as its own only when the output's record proves it is exactly this
job's result: the record (the JSON every job writes, with its ``provenance`` block) was written under the same
config slice (``--spec``) and the same code fingerprint, and every input it lists still has the sha256 it was
read at (for a training run that includes each file of ``best/``). Anything else -- no record, a torn or
foreign one, another spec, changed code, a changed input -- and the job computes the output itself.

Adopting writes nothing: the orphan's own ledger lines already record the files, so the ledger holds no
duplicate.
"""

from __future__ import annotations

from pathlib import Path

from sentrepro.code.codedeps import running_record
from sentrepro.files import read_json
from sentrepro.records.integrity import file_sha256
from sentrepro.records.provenance import local_path
from sentrepro.runs import canonical_json


def _changed_input(inputs: list) -> str | None:
    """The first recorded input that is gone or no longer has its recorded sha256 (None: all as recorded)."""
    for entry in inputs:
        path = local_path(entry["path"])
        if not path.is_file():
            return f"{entry['path']} is gone"
        if file_sha256(path) != entry["sha256"]:
            return f"{entry['path']} changed"
    return None


def why_not_adoptable(record: Path, spec: dict) -> str | None:
    """None when ``record`` (an output's JSON) is exactly what a job with ``spec`` and the running code would
    write; otherwise why not, in a few words."""
    if not record.is_file():
        return f"{record} does not exist"
    try:
        provenance = read_json(record)["provenance"]
        if canonical_json(provenance["config"]) != canonical_json(spec):
            return f"{record} was written with other settings"
        if provenance.get("code_fingerprint") != running_record():
            return f"{record} was written by other code"
        return _changed_input(provenance["inputs"])
    except (ValueError, KeyError, TypeError, OSError) as exc:  # torn, foreign or unreadable: compute it anew
        return f"{record} is not a finished record ({type(exc).__name__}: {exc})"
