"""What verifying a run's ``best/`` against its ``train.json`` costs a reading job (issue 48).

Every evaluation and export job calls :func:`sentrepro.records.recorded.verify_best` before it loads a run.
Measured here, in one process, on a ``best/`` of the demo's MiniLM files and on one with a BERT-large-sized
weight file (1.34 GB of random bytes under ``--tmp``, removed after):

* stamps unchanged (every file as its train job left it): one ``stat`` per file, nothing read;
* stamps moved (a copy of the tree: new inodes), so every file is hashed in full, and found equal;
* for comparison, what the reading job hashed before this check: every file once, for its provenance
  (the check now hands its verified sha256 to the provenance, so that hash is no longer computed).

Usage: ``python benchmarks/verify_recorded.py [--large-bytes N] [--tmp DIR]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from verify_cost import minilm_files, write_random_file  # the same run (benchmarks/ is the script directory)

from sentrepro.hashing import sha256_file
from sentrepro.records import integrity
from sentrepro.records.recorded import content_record, verify_best

BERT_LARGE_BYTES = 1_340_000_000  # bert-large-uncased model.safetensors is 1.34 GB


def make_run(files: dict[str, Path], run_dir: Path) -> Path:
    """``run_dir/best`` holding copies of ``files`` and the ``train.json`` recording them, as a train job leaves it."""
    best = run_dir / "best"
    best.mkdir(parents=True)
    for name, source in files.items():
        shutil.copyfile(source, best / name)
    integrity._HASHED.clear()
    (run_dir / "train.json").write_text(json.dumps({"best_files": content_record(sorted(best.iterdir()))}))
    return run_dir


def timed(label: str, total_bytes: int, fn) -> None:
    integrity._HASHED.clear()  # a fresh job: nothing hashed yet in this process
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"| {label} | {total_bytes / 1e6:,.1f} MB | {wall:.4f} | {cpu:.4f} |")


def measure(name: str, run_dir: Path) -> None:
    files = sorted((run_dir / "best").iterdir())
    size = sum(p.stat().st_size for p in files)
    timed(f"{name}: verify_best, stamps unchanged", size, lambda: verify_best(run_dir))
    copy = run_dir.with_name(run_dir.name + "-copy")
    shutil.copytree(run_dir, copy)
    timed(f"{name}: verify_best, stamps moved (copied tree: full sha256)", size, lambda: verify_best(copy))
    timed(f"{name}: sha256 of every file (the reading job's provenance before)", size,
          lambda: [sha256_file(p) for p in files])
    shutil.rmtree(copy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large-bytes", type=int, default=BERT_LARGE_BYTES)
    parser.add_argument("--tmp", default="/tmp")
    args = parser.parse_args()
    minilm = minilm_files()
    work = Path(tempfile.mkdtemp(prefix="verify-recorded.", dir=args.tmp))
    try:
        print("| what | bytes | wall s | CPU s |\n|---|---:|---:|---:|")
        measure("MiniLM-L6 best/ (demo)", make_run(minilm, work / "minilm"))
        big = write_random_file(work / "large.safetensors", args.large_bytes)
        small = {k: v for k, v in minilm.items() if not k.endswith((".safetensors", ".bin"))}
        measure("BERT-large-sized best/", make_run({"model.safetensors": big, **small}, work / "large"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
