"""How far the floats of a seeded CPU training run move when only the arithmetic's order changes.

`tests/test_workflow_methods.py` compares, per method and backbone, three Spearman x100 values of a tiny run
(STS-B dev at step 0, dev of the selected step, STS-B test of best/) with constants. A tiny random encoder
gives many near-tied cosines, so a rank statistic moves when the floating-point reduction order changes:
another thread count, another CPU instruction set (torch's ATen kernels, oneDNN, MKL), another machine.
This script runs that very workflow (`tests/method_runs.py`) once per environment below, training every
run from scratch and evaluating it, and prints each value's spread (max - min over the environments). The test's
tolerance must sit above the largest spread printed here.

Prints figures; asserts nothing. From the repository root (about 3-8 min of CPU per environment):
    .venv/bin/python benchmarks/float_spread.py [--workdir /tmp/float-spread] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SENTREPRO_SHARED_DATA", REPO.parent / "shared" / "data"))

# name -> environment. The first is the reference the others retrain from (data and tokenization reused).
# ATEN_CPU_CAPABILITY picks torch's own vectorised kernels; ONEDNN_MAX_CPU_ISA and MKL_ENABLE_INSTRUCTIONS cap
# the instruction set of oneDNN and MKL (a machine without AVX-512 takes those paths); MKL_CBWR=COMPATIBLE is
# MKL's most conservative code path, which a different CPU vendor can also land on. Snakemake sets every job's
# OMP/MKL/OpenBLAS threads to the rule's `threads:` (1), so a job gets 2 torch threads the way a SLURM job
# does: from SLURM_CPUS_PER_TASK (`backbones.configure_threads`).
ENVIRONMENTS = {
    "1 thread": {"OMP_NUM_THREADS": "1"},
    "2 threads": {"OMP_NUM_THREADS": "2", "SLURM_CPUS_PER_TASK": "2"},
    "1 thread, AVX2 kernels": {"OMP_NUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2",
                               "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "2 threads, baseline x86-64 kernels": {"OMP_NUM_THREADS": "2", "SLURM_CPUS_PER_TASK": "2",
                                           "ATEN_CPU_CAPABILITY": "default",
                                           "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "1 thread, MKL_CBWR=COMPATIBLE": {"OMP_NUM_THREADS": "1", "MKL_CBWR": "COMPATIBLE"},
}
VALUES = ("dev at step 0", "dev selected", "STS-B test")


def with_threads(env: dict[str, str]) -> dict[str, str]:
    from tests.workflow_helpers import fixed_thread_env

    return {**fixed_thread_env(env["OMP_NUM_THREADS"]), **env}


def run_all(workdir: Path, names: list[str]) -> dict[str, dict[tuple[str, str], tuple[float, float, float]]]:
    sys.path.insert(0, str(REPO))
    from tests.method_runs import EXP, RUNS, methods_overlay, observed, targets
    from tests.tiny_models import build_tiny_bert, build_tiny_deberta, build_tiny_roberta
    from tests.workflow_helpers import snakemake, write_overlay

    text = (SHARED_DATA / "wiki" / "wiki1m_for_simcse.first1280000bytes.txt").read_text(encoding="utf-8")
    sample = text.split("\n")[:-1][:3000]  # as the tests' tiny_models fixture builds them
    models = workdir / "models"
    if not models.is_dir():
        build_tiny_bert(models / "tiny-bert"), build_tiny_roberta(models / "tiny-roberta", sample)
        build_tiny_deberta(models / "tiny-deberta", sample)
    tiny = {"bert": models / "tiny-bert", "roberta": models / "tiny-roberta", "deberta": models / "tiny-deberta"}
    base = workdir / "base"
    write_overlay(base, methods_overlay(SHARED_DATA, tiny))
    values = {}
    for index, name in enumerate(names):
        env = with_threads(ENVIRONMENTS[name])
        if index == 0:
            snakemake(base, *targets(), timeout=7200, env=env)
            where = base
        else:
            where = workdir / f"env{index}"
            shutil.rmtree(where, ignore_errors=True)
            shutil.copytree(base, where, symlinks=True)
            # train from scratch: a forced rerun of the same settings and code would resume the finished last/
            for produced in ("runs", "metrics"):
                shutil.rmtree(where / "results" / EXP / produced)
            snakemake(where, *targets(), timeout=7200, env=env)
        values[name] = {run: observed(where, *run) for run in RUNS}
        print(f"done: {name}", file=sys.stderr, flush=True)
    return values


def spreads(values: dict) -> dict[tuple[str, str], list[float]]:
    runs = next(iter(values.values())).keys()
    return {run: [max(v[run][i] for v in values.values()) - min(v[run][i] for v in values.values())
                  for i in range(len(VALUES))] for run in runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/float-spread"))
    parser.add_argument("--only", nargs="*", choices=list(ENVIRONMENTS), default=list(ENVIRONMENTS))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    values = run_all(args.workdir, args.only)
    spread = spreads(values)
    names = list(values)
    print("| run | value | " + " | ".join(names) + " | spread |")
    print("|---|---|" + "---:|" * (len(names) + 1))
    for run, per_value in spread.items():
        for i, label in enumerate(VALUES):
            cells = " | ".join(f"{values[n][run][i]:.4f}" for n in names)
            print(f"| {run[0]} {run[1]} | {label} | {cells} | {per_value[i]:.4f} |")
    largest = [max(s[i] for s in spread.values()) for i in range(len(VALUES))]
    print("largest spread: " + ", ".join(f"{label} {x:.4f}" for label, x in zip(VALUES, largest)))
    record = {"environments": {n: ENVIRONMENTS[n] for n in names},
              "values": {n: {f"{b}/{m}": v for (b, m), v in values[n].items()} for n in names},
              "largest_spread": dict(zip(VALUES, largest))}
    (args.workdir / "float_spread.json").write_text(json.dumps(record, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
