"""The per-job fixed cost of a finished workflow run, apart from the work, and what a job's start-up is made of.

Two sources, printed side by side:

1. **From the run itself** (``--experiment results/<name>``): for every job that wrote a provenance record
   (training: ``runs/.../train.json``; evaluation: ``metrics/.../<suite>.json``), Snakemake's benchmark file
   gives the job's whole wall and CPU time (shell, interpreter, imports, the work, the ledger) and the
   provenance gives ``wall_seconds``, the time from the job's Provenance record opening (inputs hashed,
   model loaded, the work) to its closing. Their difference is the fixed cost paid outside the work: process
   start, imports, argument parsing, writing and recording the outputs. Medians per rule, and the totals.
2. **Measured here** (unless ``--no-startup``): median wall and CPU seconds of starting Python, of
   ``sentrepro --help``, and of importing what a training job and an evaluation job import, each a fresh
   process (``--repeat`` times).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/job_overhead.py --experiment results/rehearsal
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

IMPORTS = {
    "python (no imports)": "pass",
    "sentrepro CLI parser": "import sentrepro.cli as c; c.build_parser()",
    "a training job's imports": "import sentrepro.cli, sentrepro.training.job",
    "an evaluation job's imports (STS)": "import sentrepro.cli, sentrepro.evaluation.job, sentrepro.evaluation.sts_suite",
    "torch alone": "import torch",
    "torch + transformers models": "import torch, transformers; from transformers import AutoModel",
}


def read_benchmark(path: Path) -> tuple[float, float]:
    """(wall s, cpu s) of a Snakemake benchmark file (header + one line)."""
    header, values = path.read_text(encoding="utf-8").splitlines()[:2]
    row = dict(zip(header.split("\t"), values.split("\t")))
    return float(row["s"]), float(row["cpu_time"])


def provenance_of(experiment: Path, rule: str, relative: Path) -> Path | None:
    """The provenance-carrying output of the job whose benchmark file is ``<rule>/<relative>``."""
    run = relative.with_suffix("")
    if rule == "train":
        return experiment / "runs" / run / "train.json"
    if rule.startswith("evaluate_"):
        return experiment / "metrics" / run / f"{rule[len('evaluate_'):]}.json"
    return None


def from_run(experiment: Path) -> dict[str, list[tuple[float, float, float]]]:
    """rule -> [(job wall, job cpu, provenance wall)] of every job with both records."""
    found: dict[str, list] = defaultdict(list)
    for bench in sorted((experiment / "benchmarks").rglob("*.tsv")):
        rule = bench.relative_to(experiment / "benchmarks").parts[0]
        output = provenance_of(experiment, rule, bench.relative_to(experiment / "benchmarks" / rule))
        if output is None or not output.is_file():
            continue
        wall, cpu = read_benchmark(bench)
        work = json.loads(output.read_text(encoding="utf-8"))["provenance"]["wall_seconds"]
        found[rule].append((wall, cpu, work))
    if not found:
        raise SystemExit(f"{experiment}: no benchmark file with a provenance record beside it")
    return found


def startup(code: str, repeat: int) -> tuple[float, float]:
    """Median (wall, cpu) seconds of ``python -c code`` in a fresh process."""
    walls, cpus = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        before = _children_cpu()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - before)
    return statistics.median(walls), statistics.median(cpus)


def _children_cpu() -> float:
    import os

    times = os.times()
    return times.children_user + times.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", type=Path, default=Path("results/rehearsal"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-startup", action="store_true")
    args = parser.parse_args()

    runs = from_run(args.experiment)
    print(f"{args.experiment}: per rule, medians of the jobs (seconds)")
    print(f"{'rule':<26}{'jobs':>6}{'job wall':>10}{'job CPU':>10}{'work':>8}{'fixed':>8}{'fixed %':>9}")
    total_wall = total_fixed = 0.0
    for rule, rows in sorted(runs.items()):
        walls, cpus, works = zip(*rows)
        fixed = [w - k for w, _, k in rows]
        total_wall += sum(walls)
        total_fixed += sum(fixed)
        print(f"{rule:<26}{len(rows):>6}{statistics.median(walls):>10.2f}{statistics.median(cpus):>10.2f}"
              f"{statistics.median(works):>8.2f}{statistics.median(fixed):>8.2f}"
              f"{100 * statistics.median(f / w for f, w in zip(fixed, walls)):>8.0f}%")
    print(f"all {sum(len(r) for r in runs.values())} jobs: {total_wall:.0f} s of job wall, of which "
          f"{total_fixed:.0f} s ({100 * total_fixed / total_wall:.0f} %) outside the work")
    if args.no_startup:
        return
    print(f"\nstart-up of a fresh process, median of {args.repeat} (seconds)")
    for label, code in IMPORTS.items():
        wall, cpu = startup(code, args.repeat)
        print(f"{label:<40}{wall:>8.2f} wall{cpu:>8.2f} CPU")


if __name__ == "__main__":
    main()
