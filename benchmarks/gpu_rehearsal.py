"""The rehearsal's training jobs on a GPU, in the authors' precision: one job per (method kind, family).

On CPU the rehearsal computes in fp32 whatever the config says; the paper runs train in fp16 AMP with loss
scaling (MoCoUTRL in fp32: ``training.precision: authors``). This script takes the rehearsal's own `train`
commands, exactly as Snakemake would run them (``snakemake --profile profiles/rehearsal -n -p --forcerun
train``), one per (method kind, backbone family), and runs them where a GPU is, so that every method's
precision path (autocast, GradScaler, the non-finite check) meets every family once before the paper run.

    # here, after `make rehearsal` has built resources/rehearsal/:
    .venv/bin/python benchmarks/gpu_rehearsal.py prepare            # writes .gpu-carry/rehearsal_jobs.json
    # on the GPU machine (carry .gpu-carry and resources/rehearsal/{tokenized,models,data/senteval}):
    PYTHONPATH=src python3 benchmarks/gpu_rehearsal.py run --out $OUT/gpu_rehearsal.json

``run`` prints one line per job (device, precision, steps, final loss, best dev Spearman, job seconds) and
writes them all to one JSON; ``--device cpu`` is refused by nothing, so the same command works without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

JOBS = Path(".gpu-carry/rehearsal_jobs.json")
TRAIN = re.compile(r"sentrepro train --spec .*")


def planned_train_commands() -> list[str]:
    """Every train job's shell command of the rehearsal, as Snakemake prints it in a dry run."""
    result = subprocess.run(["snakemake", "--profile", "profiles/rehearsal", "-n", "-p", "--forcerun", "train",
                             "--until", "train"], capture_output=True, text=True, check=True)
    commands = [match.group(0) for match in TRAIN.finditer(result.stdout)]
    if not commands:
        raise SystemExit("no `sentrepro train` command in the dry run:\n" + result.stdout[-2000:])
    return commands


def _without_dirname(words: list[str]) -> list[str]:
    """The rule's ``$(dirname path)`` arguments resolved (the shell is not used to run the jobs)."""
    out, skip = [], False
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "$(dirname":
            out.append(str(Path(words[index + 1].rstrip(")")).parent))
            skip = True
        else:
            out.append(word)
    return out


def one_per_kind_and_family(commands: list[str]) -> list[dict]:
    """The first job (by backbone, method, seed) of each (method kind, backbone family)."""
    chosen: dict[tuple[str, str], dict] = {}
    for command in sorted(commands):
        words = _without_dirname(shlex.split(command.split(" 2>&1")[0].split(" >>")[0]))
        spec = json.loads(words[words.index("--spec") + 1])
        key = (spec["method"]["kind"], spec["backbone"]["family"])
        chosen.setdefault(key, {"kind": key[0], "family": key[1], "method": spec["method"]["name"],
                                "model": spec["backbone"]["model"], "argv": words[2:]})
    return [chosen[key] for key in sorted(chosen)]


def run_job(job: dict, run_root: Path) -> dict:
    """Run one train job as ``python -m sentrepro.cli train ...`` (no console script is installed there), its
    run directory moved under ``run_root`` (never a run of the workflow's own results)."""
    argv = [sys.executable, "-m", "sentrepro.cli", "train", *job["argv"]]
    at = argv.index("--run-dir") + 1
    argv[at] = str(run_root / argv[at])
    run_dir = Path(argv[at])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    row = {**{k: job[k] for k in ("kind", "family", "method", "model")}, "exit": done.returncode,
           "job_seconds": round(seconds, 2)}
    summary_path = run_dir / "train.json"
    if done.returncode != 0 or not summary_path.is_file():
        row["error"] = (done.stderr or done.stdout)[-1500:]
        return row
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    prov = summary["provenance"]
    row.update(device=prov.get("device"), precision=prov.get("precision"), steps=summary.get("steps"),
               final_loss=(summary.get("loss_curve") or [None])[-1],
               best_dev=summary.get("best_stsb_dev_spearman"), work_seconds=prov.get("wall_seconds"))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["prepare", "run"])
    parser.add_argument("--jobs", type=Path, default=JOBS)
    parser.add_argument("--out", type=Path, default=Path("gpu_rehearsal.json"))
    parser.add_argument("--run-root", type=Path, default=Path("/tmp/gpu-rehearsal"), help="where the runs go")
    parser.add_argument("--only", type=int, help="the first N jobs only (a smoke run)")
    args = parser.parse_args()
    if args.mode == "prepare":
        jobs = one_per_kind_and_family(planned_train_commands())
        args.jobs.parent.mkdir(parents=True, exist_ok=True)
        args.jobs.write_text(json.dumps(jobs, indent=1), encoding="utf-8")
        print(f"{len(jobs)} jobs -> {args.jobs}: " + ", ".join(f"{j['method']}/{j['family']}" for j in jobs))
        return
    rows = []
    for job in json.loads(args.jobs.read_text(encoding="utf-8"))[:args.only]:
        row = run_job(job, args.run_root)
        rows.append(row)
        print("RESULT " + json.dumps(row), flush=True)
    args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    failed = [r for r in rows if r["exit"] != 0]
    print(f"{len(rows) - len(failed)} of {len(rows)} jobs finished" + (f"; FAILED: {failed}" if failed else ""))


if __name__ == "__main__":
    main()
