"""Planning cost of the workflow, in CPU seconds (user + system of the process and its children).

Prints figures (medians of several runs); it asserts nothing. Usage, from the repository root:
    .venv/bin/python benchmarks/plan_time.py [--repeats 3] [--repo PATH] [--demo-dir DIR]

What is measured, each in a fresh process:

* ``snakemake -n --quiet rules`` and the default ``snakemake -n`` on the paper config (config.yaml alone,
  as tests/test_workflow.py's paper-config dry run plans it), with the fingerprint cache cold (an empty
  ``SENTREPRO_FP_CACHE`` directory before every run) and warm (the second plan with the same cache);
* a no-op rerun (``snakemake`` with nothing to do) of a finished workflow: the demo's
  (``--profile profiles/demo``) when it is finished, else ``--demo-dir DIR`` (a finished working directory
  with an ``overlay.yaml``, as tests/workflow_helpers.py writes);
* ``sentrepro check-config`` and ``sentrepro registry`` start-up;
* the floor: ``snakemake -n --quiet rules`` of a one-rule workflow (Snakemake's own start: its import, its
  plugins', the SLURM executor's pandas among them, and its set-up), which no workflow plans below.

CPU time, not wall: the machine is shared, and CPU seconds are what a busy machine does not inflate much
(each line also prints the load average, 1/5/15 minutes, when it was taken).
``--repo`` measures another checkout (its ``src`` is put first on ``PYTHONPATH``), so that two commits can
be compared in one sitting with the same interpreter and packages.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def cpu_run(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """(CPU seconds of the child processes, wall seconds, output) of one command; fails loudly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, result.stdout + result.stderr


def report(label: str, samples: list[tuple[float, float]]) -> None:
    cpu = [s[0] for s in samples]
    wall = [s[1] for s in samples]
    load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{label}: CPU median {statistics.median(cpu):.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f}); "
          f"wall median {statistics.median(wall):.2f} s; n={len(samples)}; load average now {load}", flush=True)


def empty_overlay(workdir: Path) -> Path:
    """An empty overlay: the plan is config.yaml's own (as tests/test_workflow.py's paper-config dry run)."""
    path = workdir / "overlay.yaml"
    path.write_text("{}\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    parser.add_argument("--demo-dir", type=Path, help="a finished working directory with an overlay.yaml")
    args = parser.parse_args()
    repo = args.repo.resolve()
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "OMP_NUM_THREADS": "1",
           "PATH": f"{BIN}:{os.environ['PATH']}"}
    snakemake = str(BIN / "snakemake")
    print(f"checkout: {repo} ({subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=repo, capture_output=True, text=True).stdout.strip()})")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        overlay = empty_overlay(tmp)
        base = [snakemake, "-s", str(repo / "Snakefile"), "-d", str(tmp / "work"), "-n"]
        configs = ["--configfiles", str(repo / "config.yaml"), str(overlay)]
        for label, extra in (("snakemake -n --quiet rules", ["--quiet", "rules"]), ("snakemake -n", [])):
            cold, warm = [], []
            jobs = "?"
            for index in range(args.repeats):
                cache = tmp / f"fp-cache-{label.count(' ')}-{index}"
                run_env = {**env, "SENTREPRO_FP_CACHE": str(cache)}
                cpu, wall, out = cpu_run(base + extra + configs, repo, run_env)
                cold.append((cpu, wall))
                cpu, wall, out = cpu_run(base + extra + configs, repo, run_env)
                warm.append((cpu, wall))
                jobs = out.split("total")[-1].split()[0] if "total" in out else "?"
            report(f"{label}, paper config ({jobs} jobs), cold fingerprint cache", cold)
            report(f"{label}, paper config ({jobs} jobs), warm (second plan)", warm)

        finished = None
        if args.demo_dir:
            finished = [snakemake, "-s", str(repo / "Snakefile"), "-d", str(args.demo_dir), "--cores", "2",
                        "--configfiles", str(repo / "config.yaml"), str(args.demo_dir / "overlay.yaml")]
            where = f"the finished workflow in {args.demo_dir}"
        else:
            demo = [snakemake, "--profile", "profiles/demo"]
            dry = subprocess.run(demo + ["-n"], cwd=repo, env=env, capture_output=True, text=True)
            if "Nothing to be done" in dry.stdout + dry.stderr:
                finished, where = demo, "the finished demo"
        if finished is None:
            print("no-op rerun: skipped (the demo is not finished: run `make demo`, or pass --demo-dir)")
        else:
            cpu_run(finished, repo, env)  # warms the fingerprint cache; must plan nothing
            samples = []
            for _ in range(args.repeats):
                cpu, wall, out = cpu_run(finished, repo, env)
                if "Nothing to be done" not in out:
                    raise SystemExit(f"the no-op rerun of {where} is not a no-op:\n{out[-3000:]}")
                samples.append((cpu, wall))
            report(f"no-op rerun of {where}", samples)

        floor = tmp / "one-rule"
        floor.mkdir()
        (floor / "Snakefile").write_text('rule one:\n    output: "one.txt"\n    shell: "touch {output}"\n',
                                         encoding="utf-8")
        report("floor: snakemake -n --quiet rules of a one-rule workflow",
               [cpu_run([snakemake, "-n", "--quiet", "rules"], floor, env)[:2] for _ in range(args.repeats)])

        sentrepro = str(BIN / "sentrepro")
        for label, cmd in (("sentrepro check-config", [sentrepro, "check-config", "config.yaml", str(overlay)]),
                           ("sentrepro registry", [sentrepro, "registry"])):
            report(f"{label} start-up", [cpu_run(cmd, repo, env)[:2] for _ in range(args.repeats)])


if __name__ == "__main__":
    main()
