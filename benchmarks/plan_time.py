"""Planning cost of the workflow: `snakemake -n` on the full paper matrix, and a no-op rerun of the demo.

Prints figures (medians of several runs); it asserts nothing. Usage, from the repository root:
    .venv/bin/python benchmarks/plan_time.py [--repeats 5]
The no-op figure needs a finished demo (`make demo`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stderr[-3000:]}")
    return elapsed, result.stdout + result.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        plan = [SNAKEMAKE, "-n", "--quiet", "rules", "-s", str(REPO / "Snakefile"), "-d", workdir,
                "--configfile", str(REPO / "config.yaml")]
        times = [timed(plan, REPO)[0] for _ in range(args.repeats)]
        jobs = timed(plan, REPO)[1].split("total")[-1].split()[0]
    print(f"snakemake -n, full paper config ({jobs} jobs): median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}, n={args.repeats})")
    dry = subprocess.run([SNAKEMAKE, "--profile", "profiles/demo", "-n"], cwd=REPO, capture_output=True, text=True)
    if "Nothing to be done" in dry.stdout + dry.stderr:
        noop = [SNAKEMAKE, "--profile", "profiles/demo"]
        times = [timed(noop, REPO)[0] for _ in range(args.repeats)]
        print(f"no-op rerun of the finished demo: median {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f}, n={args.repeats})")
    else:
        print("no-op rerun: skipped (the demo is not up to date: run `make demo` first)")


if __name__ == "__main__":
    main()
