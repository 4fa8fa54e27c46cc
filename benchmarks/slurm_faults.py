"""The rehearsal through SLURM under injected faults, seeded and replayable (issue 45).

Runs the rehearsal (config.yaml + profiles/rehearsal/overlay.yaml, or a slice of it) with
`snakemake --profile profiles/slurm` on the test cluster of tests/slurm/cluster.py (fake GPUs), and, at points
drawn from ``--seed``, injects faults while it runs:

  scancel            a running job ended by `scancel` (training jobs first)
  kill-9             the job's own `sentrepro` process killed with SIGKILL inside the job (training first)
  requeue            a running job requeued by `scontrol requeue`
  drain              the node drained (`scontrol update ... state=drain`) while jobs run on it, resumed later
  slurmd             slurmd stopped and started again while jobs run
  snakemake-kill-9   the Snakemake process itself killed with SIGKILL while its SLURM jobs keep running

After each fault it goes on as a user would and as docs/usage.md ("After a fault") says, nothing more: when
Snakemake has stopped, the same command again; when that says the directory is locked, `--unlock` and the
same command. Until the DAG completes. Then it checks **the invariant** against an undisturbed SLURM run of the
same config (``--reference``, made by ``--undisturbed``): every metrics file's results and every training
summary's results, the tables and the verdicts equal; the ledger has no record twice and no file without its
latest record; `sentrepro audit` of every table cell passes; no two jobs ever held one output's lock at once
(SENTREPRO_LOCK_JOURNAL); no lock file, half-written file (`.tmp` sibling) or job of ours is left. It prints
each fault's cost: the jobs that ran again after it, and what they would cost at paper scale
(`sentrepro cost`'s estimates for config.yaml).

    sudo .venv/bin/python benchmarks/slurm_faults.py --undisturbed --workdir /tmp/faults/reference
    sudo .venv/bin/python benchmarks/slurm_faults.py --seed 1 --workdir /tmp/faults/seed1 \\
        --reference /tmp/faults/reference

A run's digest (``--digest FILE``: each result file's hash, the commit, the slice, the kernels the jobs recorded)
stands in for its folder as a later run's ``--reference``: the committed ``benchmarks/slurm_faults_reference.json``
is the undisturbed whole rehearsal's, so a faulted run in a later sitting needs no second undisturbed run (the
rehearsal's results are the same from run to run on one library stack and one kernel family: the families slice
through SLURM equalled the local rehearsal). Float kernels differ between CPU families (AVX2, AVX-512; MKL on
Intel or AMD), so the jobs run with ``--numerics portable`` by default: torch's baseline kernels, MKL's
reproducible mode and oneDNN at SSE4.1, the same instructions on any x86-64 CPU. A reference computed with other
kernels (or ``--numerics native`` on another CPU) is refused in one line instead of compared file by file.

``--slice families`` runs the slice of tests/test_workflow_rehearsal.py (one block per backbone family, the
STS suite) instead of the whole rehearsal. Needs root (it starts the cluster, as tests/slurm do).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sentrepro.planning.rehearsal import OVERLAY  # noqa: E402
from tests.slurm import cluster as test_cluster  # noqa: E402
from tests.workflow_helpers import cluster_rule_commands, only_blocks, only_units, write_overlay  # noqa: E402

FAULTS = {"scancel": 10, "kill-9": 5, "requeue": 1, "drain": 1, "slurmd": 1, "snakemake-kill-9": 1}
SLICES = {
    "whole": {},
    "families": {  # tests/test_workflow_rehearsal.py's slice
        "matrix": only_blocks({
            "slice-bert": {"backbones": ["bert-base"], "methods": ["promptbert", "frozen-avg"], "seeds": [0]},
            "slice-roberta": {"backbones": ["roberta-large"], "methods": ["conpvp"], "seeds": [42]},
            "slice-deberta": {"backbones": ["deberta-base"], "methods": ["mocoutrl"], "seeds": [42]},
        }),
        "evaluation": {"suites": only_units("suites", ["sts"]), "figures": only_units("figures", [])},
    },
}
# The test node has 2 CPUs and a few GB: every cluster rule is sized down to fit it (a paper job asks for 8 CPUs).
NODE_CPUS, NODE_MEM_MB = 1, 1500
SUBMITTED = re.compile(r"Job \S+ has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")
FINISHED = re.compile(r"^Finished jobid: \S+ \(Rule: (\w+)\)$", re.M)
JOB_HEADER = re.compile(r"^\s*(?:local)?rule (\w+):$")
WILDCARDS = re.compile(r"^\s*wildcards: (.*)$")
MAX_ATTEMPTS = 60


def log(message: str) -> None:
    print(f"[faults {time.strftime('%H:%M:%S')}] {message}", flush=True)


# ----------------------------------------------------------------------------------------------
# The schedule
# ----------------------------------------------------------------------------------------------

@dataclass
class Fault:
    kind: str
    after_jobs: int  # injected once this many cluster jobs have finished (all attempts together)
    done: bool = False
    job: str | None = None
    rule: str | None = None
    wildcards: str | None = None
    at_s: float | None = None
    note: str = ""


def schedule(seed: int, cluster_jobs: int) -> list[Fault]:
    """The faults of ``seed``, each at a number of finished cluster jobs drawn uniformly from 0 to 90 % of them
    (a fault needs a job running on the cluster; one due while none runs waits for the next)."""
    rng = random.Random(seed)
    kinds = [kind for kind, count in FAULTS.items() for _ in range(count)]
    rng.shuffle(kinds)
    points = sorted(rng.randint(0, max(1, cluster_jobs * 9 // 10)) for _ in kinds)
    return [Fault(kind, point) for kind, point in zip(kinds, points)]


# ----------------------------------------------------------------------------------------------
# The workflow
# ----------------------------------------------------------------------------------------------

def cluster_rules() -> list[str]:
    """Every rule of the workflow that runs on the cluster, each suite's evaluation rule by name."""
    from sentrepro.planning import registry

    rules = set(cluster_rule_commands())
    if "evaluate_<suite>" in rules:
        rules = (rules - {"evaluate_<suite>"}) | {f"evaluate_{suite}" for suite in registry.suites()}
    return sorted(rules)


# "slurm": --profile profiles/slurm; "local": the same sizing on the local executor (the rehearsal's own
# profile settings: two cores, two GPUs' worth of training jobs at once), the reference a SLURM run must equal.
EXECUTOR = {"slurm": ["--profile", str(REPO / "profiles" / "slurm"), "--group-components", "evaluate=2"],
            "local": ["--cores", "2", "--resources", "gpu=2", "--rerun-incomplete"]}


def snakemake_command(workdir: Path, *extra: str) -> list[str]:
    sizing = [f"{rule}:{key}={value}" for rule in cluster_rules()
              for key, value in (("cpus_per_task", NODE_CPUS), ("mem_mb", NODE_MEM_MB))]
    executor = EXECUTOR[os.environ.get("SLURM_FAULTS_EXECUTOR", "slurm")]
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            *executor, "--set-resources", *sizing,
            "--configfiles", str(REPO / "config.yaml"), str(REPO / OVERLAY), str(workdir / "overlay.yaml"), *extra]


# The kernels the jobs compute with. "native": what torch, MKL and oneDNN pick on this CPU (a float's last bits
# differ between CPU families: the seed-1 run's reference from another machine differed in 517 files).
# "portable": torch's baseline kernels, MKL's reproducible mode, oneDNN at SSE4.1, the same instructions on any
# x86-64 CPU, so a digest made on one machine checks a run on another.
NUMERICS = {"native": {},
            "portable": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}}


def numerics_env() -> dict[str, str]:
    return NUMERICS[os.environ.get("SLURM_FAULTS_NUMERICS", "portable")]


def workflow_env(workdir: Path) -> dict[str, str]:
    from sentrepro.records.provenance import NUMERICS_VARIABLES

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SENTREPRO_SLURM_", "SNAKEMAKE_"))
           and k not in NUMERICS_VARIABLES}
    env.update(numerics_env())
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", SENTREPRO_LOCK_JOURNAL=str(workdir / "lock-journal.jsonl"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@dataclass
class Attempt:
    command: list[str]
    process: subprocess.Popen
    output_file: Path
    started: float

    def output(self) -> str:
        return self.output_file.read_text(encoding="utf-8", errors="replace")


def start(workdir: Path, number: int, *extra: str) -> Attempt:
    output_file = workdir.parent / f"{workdir.name}.attempt{number:02d}.out"
    command = snakemake_command(workdir, *extra)
    with open(output_file, "wb") as out:
        process = subprocess.Popen(command, cwd=workdir, env=workflow_env(workdir), stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Attempt(command, process, output_file, time.monotonic())


def planned_jobs(workdir: Path) -> dict[str, int]:
    """Rule -> jobs of the dry run (Snakemake's job-stats table)."""
    done = subprocess.run(snakemake_command(workdir, "--dry-run", "--quiet", "rules"), cwd=workdir,
                          env=workflow_env(workdir), capture_output=True, text=True, check=False)
    counts = {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", done.stdout + done.stderr, re.M)}
    if done.returncode != 0 or "total" not in counts:
        raise SystemExit(f"the dry run failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return counts


def finished_cluster_jobs(output: str, rules: set[str]) -> int:
    return sum(1 for rule in FINISHED.findall(output) if rule in rules)


# ----------------------------------------------------------------------------------------------
# Faults
# ----------------------------------------------------------------------------------------------

def running_jobs() -> list[dict]:
    """Our running SLURM jobs: id, rule and wildcards (from the executor's comment)."""
    answer = subprocess.run(["squeue", "--noheader", "--states=RUNNING", "--format=%i|%j|%k"], capture_output=True,
                            text=True, check=False)
    jobs = []
    for line in answer.stdout.split():
        job, name, comment = line.split("|", 2)
        if name.startswith("sentrepro_"):
            rule, _, wildcards = comment.removeprefix("rule_").partition("_wildcards_")
            jobs.append({"job": job, "rule": rule, "wildcards": wildcards})
    return jobs


def job_worker(job: str) -> int | None:
    """The pid of the job's own `sentrepro` process (not the Snakemake inside the job, not a shell)."""
    answer = subprocess.run(["scontrol", "listpids", job], capture_output=True, text=True, check=False)
    for line in answer.stdout.splitlines()[1:]:
        pid = line.split()[0]
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"/sentrepro") for part in argv[:2]) and b"snakemake" not in b" ".join(argv):
            return int(pid)
    return None


TARGETED: set[str] = set()  # jobs a fault already hit: each fault takes a job no other fault took


def pick(rng: random.Random, prefer_train: bool) -> dict | None:
    jobs = [job for job in running_jobs() if job["job"] not in TARGETED]
    training = [job for job in jobs if job["rule"] == "train"]
    pool = training if prefer_train and training else jobs
    return rng.choice(pool) if pool else None


def restart_slurmd(spec: test_cluster.ClusterSpec) -> str:
    pids = test_cluster.find_pids("slurmd")
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while test_cluster.find_pids("slurmd") and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)
    with open(spec.log_dir / "slurmd.out", "ab") as out:
        process = subprocess.Popen(["/usr/sbin/slurmd", "-D", "-N", test_cluster.NODE_NAME], stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    test_cluster._record_started(spec, "slurmd", process.pid)
    return f"slurmd {pids} stopped, {process.pid} started"


def inject(fault: Fault, attempt: Attempt, rng: random.Random, spec: test_cluster.ClusterSpec,
           undrain: list) -> bool:
    """Inject ``fault`` now; False when it needs a running job and none runs (tried again later)."""
    if fault.kind in ("scancel", "kill-9", "requeue"):
        job = pick(rng, prefer_train=fault.kind != "scancel" or rng.random() < 0.5)
        if job is None:
            return False
        fault.job, fault.rule, fault.wildcards = job["job"], job["rule"], job["wildcards"]
        if fault.kind == "scancel":
            subprocess.run(["scancel", job["job"]], check=False)
        elif fault.kind == "requeue":
            done = subprocess.run(["scontrol", "requeue", job["job"]], capture_output=True, text=True, check=False)
            fault.note = done.stderr.strip()
        else:
            pid = job_worker(job["job"])
            if pid is None:  # the job's Snakemake has not started its command yet
                return False
            os.kill(pid, signal.SIGKILL)
            fault.note = f"pid {pid}"
    elif fault.kind == "drain":
        if not running_jobs():
            return False
        subprocess.run(["scontrol", "update", f"nodename={test_cluster.NODE_NAME}", "state=drain",
                        "reason=fault-harness"], check=True)
        undrain.append(time.monotonic() + rng.uniform(5, 30))
    elif fault.kind == "slurmd":
        if not running_jobs():
            return False
        fault.note = restart_slurmd(spec)
    elif fault.kind == "snakemake-kill-9":
        if not running_jobs():
            return False
        os.kill(attempt.process.pid, signal.SIGKILL)
    fault.done = True
    if fault.job:
        TARGETED.add(fault.job)
    return True


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------

@dataclass
class Report:
    seed: int | None
    slice: str
    planned_jobs: int
    attempts: list[dict] = field(default_factory=list)
    faults: list[dict] = field(default_factory=list)
    wall_s: float = 0.0
    reruns: dict = field(default_factory=dict)


METRICS_PIN = re.compile(r"#sha256=[0-9a-f]{64}")
LOGFILE_SECTION = re.compile(r"^Logfile [^\n]*:\n={20,}\n.*?^={20,}$", re.M | re.S)
JOBID = re.compile(r"^\s*jobid: (\S+)$")


def ran_jobs(output: str) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job an attempt started: each ``rule <name>:`` block of Snakemake's output (a
    group job's members indented) with its ``jobid:`` and ``wildcards:`` lines, once per job id. The failed
    jobs' logs Snakemake prints (``Logfile …:`` between rules of ``=``) and its error summaries (which list a
    group's members without wildcards) are not jobs started."""
    jobs: dict[str, tuple[str, str]] = {}
    rule = jobid = None
    for line in LOGFILE_SECTION.sub("", output).splitlines():
        header = JOB_HEADER.match(line)
        if header:
            rule, jobid = header.group(1), None
        elif not line.strip():
            rule = None
        elif rule and JOBID.match(line):
            jobid = JOBID.match(line).group(1)
        elif rule and jobid and WILDCARDS.match(line):
            jobs.setdefault(jobid, (rule, WILDCARDS.match(line).group(1).strip()))
    return list(jobs.values())


def run(workdir: Path, seed: int | None, slice_name: str) -> Report:
    spec = test_cluster.ClusterSpec.for_this_machine()
    test_cluster.up(spec, log=log)
    workdir.mkdir(parents=True, exist_ok=True)
    write_overlay(workdir, SLICES[slice_name])
    counts = planned_jobs(workdir)
    on_cluster = set(cluster_rules())
    total, cluster_total = counts["total"], sum(n for rule, n in counts.items() if rule in on_cluster)
    faults = schedule(seed, cluster_total) if seed is not None else []
    rng = random.Random(f"targets-{seed}")
    report = Report(seed, slice_name, total)
    log(f"{total} jobs planned, {cluster_total} on the cluster; faults: {[(f.kind, f.after_jobs) for f in faults]}")
    started = time.monotonic()
    finished_before = 0
    undrain: list[float] = []
    extra: tuple[str, ...] = ()
    for number in range(MAX_ATTEMPTS):
        attempt = start(workdir, number, *extra)
        extra = ()
        while attempt.process.poll() is None:
            time.sleep(1)
            finished = finished_before + finished_cluster_jobs(attempt.output(), on_cluster)
            for when in [t for t in undrain if t <= time.monotonic()]:
                subprocess.run(["scontrol", "update", f"nodename={test_cluster.NODE_NAME}", "state=resume"],
                               check=True)
                undrain.remove(when)
            due = next((f for f in faults if not f.done and f.after_jobs <= finished), None)
            if due is not None and inject(due, attempt, rng, spec, undrain):
                due.at_s = round(time.monotonic() - started, 1)
                log(f"fault {due.kind} after {finished} jobs: {due.job or ''} {due.rule or ''} {due.note}")
        output = attempt.output()
        finished_before += finished_cluster_jobs(output, on_cluster)
        locked = "Directory cannot be locked" in output
        report.attempts.append({"number": number, "rc": attempt.process.returncode,
                                "wall_s": round(time.monotonic() - attempt.started, 1), "locked": locked,
                                "jobs": ran_jobs(output), "after_faults": sum(f.done for f in faults)})
        log(f"attempt {number}: rc {attempt.process.returncode}, {len(ran_jobs(output))} jobs started")
        if attempt.process.returncode == 0 and all(f.done for f in faults):
            break
        if locked:  # what docs/usage.md says: --unlock, then the same command
            unlocked = subprocess.run(snakemake_command(workdir, "--unlock"), cwd=workdir, env=workflow_env(workdir),
                                      capture_output=True, text=True, check=False)
            assert unlocked.returncode == 0, unlocked.stderr[-2000:]
        if attempt.process.returncode == 0:  # finished before every fault was due: run again from the start
            log("the DAG completed before every fault was injected: the remaining faults are not run")
            break
    else:
        raise SystemExit(f"no complete run after {MAX_ATTEMPTS} attempts")
    for when in undrain:
        subprocess.run(["scontrol", "update", f"nodename={test_cluster.NODE_NAME}", "state=resume"], check=False)
    report.wall_s = round(time.monotonic() - started, 1)
    report.faults = [asdict(f) for f in faults]
    report.reruns = reruns(report)
    return report


def reruns(report: Report) -> dict:
    """The jobs that started more than once, each charged to the last fault injected before its second start."""
    seen: dict[tuple[str, str], int] = {}
    again: dict[str, list[str]] = {}
    for attempt in report.attempts:
        for job in attempt["jobs"]:
            seen[tuple(job)] = seen.get(tuple(job), 0) + 1
            if seen[tuple(job)] > 1:
                faults_before = [f for f in report.faults[: attempt["after_faults"]]]
                cause = f"{faults_before[-1]['kind']}@{faults_before[-1]['after_jobs']}" if faults_before else "none"
                again.setdefault(cause, []).append(f"{job[0]} {job[1]}")
    return again


# ----------------------------------------------------------------------------------------------
# The invariant
# ----------------------------------------------------------------------------------------------

def results_of(root: Path) -> dict[str, object]:
    """What a run computed, file by file: metrics' and training summaries' results without timings and
    provenance, the tables' CSVs and the verdicts' CSV whole."""
    found: dict[str, object] = {}
    experiment = root / "results" / "rehearsal"
    for path in sorted(experiment.rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        data = json.loads(path.read_text(encoding="utf-8"))
        if "/metrics/" in rel:
            found[rel] = data["results"]
        elif path.name == "train.json":  # without what says how this job went (its time, a resume) and stamps
            found[rel] = {k: v for k, v in data.items() if k not in (
                "provenance", "train_seconds_this_job", "resumed_from", "best_files", "resume_state",
                "unreadable_checkpoints")}
            found[rel]["best_files"] = {name: entry["sha256"] for name, entry in data["best_files"].items()}
    for path in sorted(experiment.glob("tables/*.csv")) + sorted(experiment.glob("verdicts*.csv")):
        # a cell's provenance pins its metrics file by sha256, and that file's provenance holds the job's
        # timings: the pin is a wall-clock cell; the file's results are compared above
        found[path.relative_to(root).as_posix()] = METRICS_PIN.sub("#sha256=…", path.read_text(encoding="utf-8"))
    return found


DIGEST_FORMAT = 2  # 2: with the kernels the results were computed with; 1 (before) has none


def kernel_label(capability: str, forced: dict[str, str]) -> str:
    """One kernel family as a digest names it: torch's capability, then each forcing variable (sorted)."""
    return capability + "".join(f" {k}={v}" for k, v in sorted(forced.items()))


def kernels_of(root: Path) -> dict[str, list[str]]:
    """The kernels a run's torch jobs recorded (provenance ``device``): each distinct kernel family with the
    variables that forced it, and the CPUs. Files from before these were recorded count for nothing."""
    kernels, cpus = set(), set()
    for path in sorted((root / "results" / "rehearsal").rglob("*.json")):
        if "/metrics/" not in path.as_posix() and path.name != "train.json":
            continue
        device = (json.loads(path.read_text(encoding="utf-8")).get("provenance") or {}).get("device") or {}
        if device.get("cpu_capability"):
            kernels.add(kernel_label(device["cpu_capability"], device.get("numerics_env") or {}))
            cpus.add(device.get("cpu") or "unnamed")
    return {"kernels": sorted(kernels), "cpus": sorted(cpus)}


def wrong_kernels(ours: dict[str, list[str]], numerics: str) -> list[str]:
    """The run asked for ``numerics`` and its jobs recorded other kernels (the variables did not reach them)."""
    if not ours["kernels"]:
        return ["no job recorded the kernels it computed with"]
    if numerics == "portable":
        expected = [kernel_label("DEFAULT", NUMERICS["portable"])]
        if ours["kernels"] != expected:
            return [f"--numerics portable asked for {expected}, the jobs recorded {ours['kernels']}"]
    elif any(" " in kernel for kernel in ours["kernels"]):  # a native family carries no forcing variable
        return [f"--numerics native, but the jobs recorded forced kernels {ours['kernels']}"]
    return []


def kernel_mismatch(ours: dict[str, list[str]], theirs: dict[str, list[str]] | None, reference: Path) -> list[str]:
    """Why the runs' files cannot be compared bit for bit, if they cannot: other kernels, or the same native
    kernels on other CPUs. Portable kernels (every family DEFAULT) compare across CPUs."""
    if len(ours["kernels"]) > 1:
        return [f"this run's jobs computed with {len(ours['kernels'])} kernel families ({ours['kernels']}): "
                "did the numerics variables reach every job?"]
    if theirs is None or not theirs["kernels"] or not ours["kernels"]:
        return []  # a reference from before kernels were recorded: compared as it is
    portable = all(kernel.startswith("DEFAULT") for kernel in ours["kernels"])
    if ours["kernels"] != theirs["kernels"] or (not portable and ours["cpus"] != theirs["cpus"]):
        return [f"{reference}: computed with kernels {theirs['kernels']} on {theirs['cpus']}, this run with "
                f"{ours['kernels']} on {ours['cpus']}; float results differ by kernel family, so no file is "
                "compared (make both runs with --numerics portable, or the reference on this machine)"]
    return []


def digest_of(found: dict[str, object]) -> dict[str, str]:
    """Each file's results (``results_of``) as a sha256 of their canonical JSON: what a run computed, small enough
    to commit, so that a faulted run in a later sitting is checked against an undisturbed one without holding its
    folder (a session's machine does not keep it)."""
    import hashlib

    return {name: hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
            for name, value in sorted(found.items())}


def write_digest(workdir: Path, path: Path, slice_name: str, seed: int | None) -> dict:
    """Write the run's digest to ``path``: the commit and slice it ran, and each result file's hash."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    digest = {"format": DIGEST_FORMAT, "commit": commit, "slice": slice_name, "seed": seed,
              "files": digest_of(results_of(workdir)), **kernels_of(workdir)}
    from sentrepro.files import atomic_write_text

    atomic_write_text(path, json.dumps(digest, indent=1, sort_keys=True) + "\n")
    return digest


def reference_digest(reference: Path) -> dict[str, str]:
    """The per-file hashes of a reference: an undisturbed run's folder, or the digest file one wrote."""
    if reference.is_dir():
        return digest_of(results_of(reference))
    return _digest_file(reference)["files"]


def reference_kernels(reference: Path) -> dict[str, list[str]] | None:
    """The kernels of a reference's results (None: a digest of format 1 does not say)."""
    if reference.is_dir():
        return kernels_of(reference)
    data = _digest_file(reference)
    return {"kernels": data["kernels"], "cpus": data["cpus"]} if data["format"] >= 2 else None


def _digest_file(reference: Path) -> dict:
    data = json.loads(reference.read_text(encoding="utf-8"))
    if (not isinstance(data, dict) or data.get("format") not in (1, DIGEST_FORMAT)
            or not isinstance(data.get("files"), dict) or not data["files"]
            or (data["format"] >= 2 and not all(isinstance(data.get(key), list) for key in ("kernels", "cpus")))):
        raise SystemExit(f"{reference}: not a digest of format 1 or {DIGEST_FORMAT} with files (write one with "
                         "--digest)")
    return data


def compare_common(workdir: Path, other: Path) -> tuple[int, list[str]]:
    """The metrics files and training summaries both runs hold (another config sharing runs, e.g. the whole local
    rehearsal): how many, and those that differ. A run's results depend on its own config slice only."""
    mismatch = kernel_mismatch(kernels_of(workdir), reference_kernels(other), other)
    if mismatch:
        return 0, mismatch
    ours, theirs = digest_of(results_of(workdir)), reference_digest(other)
    common = [name for name in sorted(set(ours) & set(theirs)) if not name.endswith(".csv")]
    return len(common), [f"{name}: differs from {other}" for name in common if ours[name] != theirs[name]]


def invariant(workdir: Path, reference: Path | None) -> list[str]:
    """Every way the faulted run differs from what an undisturbed run leaves, one line each (empty: it holds)."""
    problems = []
    mismatch = kernel_mismatch(kernels_of(workdir), reference_kernels(reference) if reference else None, reference)
    problems += mismatch
    if reference is not None and not mismatch:
        ours, theirs = digest_of(results_of(workdir)), reference_digest(reference)
        problems += [f"{name}: only in the reference run" for name in sorted(set(theirs) - set(ours))]
        problems += [f"{name}: only in the faulted run" for name in sorted(set(ours) - set(theirs))]
        problems += [f"{name}: differs from the reference run" for name in sorted(set(ours) & set(theirs))
                     if ours[name] != theirs[name]]
    problems += ledger_problems(workdir)
    problems += lock_overlaps(workdir / "lock-journal.jsonl")
    for path in workdir.rglob("*"):
        if path.name.endswith(".lock") and path.name.startswith(".") and "/.snakemake/" not in str(path):
            problems.append(f"{path.relative_to(workdir)}: a lock file left behind")
        if ".tmp" in path.name and "/.snakemake/" not in str(path):
            problems.append(f"{path.relative_to(workdir)}: a half-written file left behind")
    left = [job for job in running_jobs()] + [l for l in subprocess.run(
        ["squeue", "--noheader", "--states=PENDING,SUSPENDED", "--format=%j"], capture_output=True, text=True,
        check=False).stdout.split() if l.startswith("sentrepro_")]
    problems += [f"a SLURM job still queued or running: {job}" for job in left]
    for table in sorted((workdir / "results" / "rehearsal" / "tables").glob("*.csv")):
        if table.name.endswith(".seeds.csv"):
            continue
        problems += audit_every_cell(workdir, table)
    return problems


def ledger_problems(workdir: Path) -> list[str]:
    """A record appended twice by one job, or a file of the run whose latest record is not its content."""
    from sentrepro.hashing import sha256_file

    problems = []
    for ledger in [workdir / "results" / "rehearsal" / "ledger.jsonl", workdir / "resources" / "rehearsal" /
                   "ledger.jsonl"]:
        if not ledger.is_file():
            continue
        latest: dict[str, dict] = {}
        seen = set()
        for number, line in enumerate(ledger.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:  # a line torn by a job killed while appending: the ledger's reader skips and
                continue        # names it (issue 36); what the job wrote is written again by its rerun
            # one job incarnation (a requeued job is another: SLURM_RESTART_COUNT) writing the same bytes twice
            key = (record["path"], record["sha256"], record.get("command"), record.get("slurm_job_id"),
                   record.get("slurm_restart_count"), record.get("dropped"), record.get("removed"), record.get("host"))
            if key in seen and not record.get("removed"):
                problems.append(f"{ledger.name}:{number}: {record['path']} recorded twice by one job")
            seen.add(key)
            latest[record["path"]] = record
        for path, record in latest.items():
            file = workdir / path
            if record.get("dropped") or record.get("removed"):
                continue
            if not file.is_file():
                problems.append(f"{path}: recorded in {ledger.name} but gone")
            elif sha256_file(file) != record["sha256"]:
                problems.append(f"{path}: not what {ledger.name} last recorded")
    return problems


def lock_overlaps(journal: Path) -> list[str]:
    """Two holders of one output's lock at the same time (from the jobs' lock journal)."""
    if not journal.is_file():
        return [f"{journal}: no lock journal (was SENTREPRO_LOCK_JOURNAL set?)"]
    held: dict[str, list[tuple[float, float, str]]] = {}
    opened: dict[tuple[str, str], float] = {}
    for line in journal.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        key = (event["output"], event["holder"])
        if event["event"] == "acquired":
            opened[key] = event["time"]
        elif key in opened:
            held.setdefault(event["output"], []).append((opened.pop(key), event["time"], event["holder"]))
    problems = []
    for output, spans in held.items():
        spans.sort()
        for (start_a, end_a, who_a), (start_b, _, who_b) in zip(spans, spans[1:]):
            if start_b < end_a:
                problems.append(f"{output}: held by {who_a} and {who_b} at once")
    return problems


def audit_every_cell(workdir: Path, table: Path) -> list[str]:
    """`sentrepro audit` of every cell of ``table`` that has a provenance, in this process (the audit's own code,
    as the command runs it: one process per cell cost 1-2 s each, and the whole rehearsal has 922 cells)."""
    from sentrepro.records.audit import AuditError, audit_cell

    with open(table, encoding="utf-8", newline="") as handle:
        cells = [(row["row"], row["column"]) for row in csv.DictReader(handle) if row["provenance"]]
    problems = []
    here = Path.cwd()
    os.chdir(workdir)  # the audit resolves a table's provenance paths from the run's folder, as the command does
    try:
        for row, column in cells:
            try:
                report = audit_cell(table.relative_to(workdir), row, column)
            except AuditError as exc:
                problems.append(f"audit {table.name} {row!r} {column!r}: {exc}")
                continue
            if not report.ok:
                problems.append(f"audit {table.name} {row!r} {column!r}: {report.text().strip()[-300:]}")
    finally:
        os.chdir(here)
    return problems


# ----------------------------------------------------------------------------------------------
# Cost at paper scale
# ----------------------------------------------------------------------------------------------

def paper_hours(job: str) -> float:
    """GPU-hours of one job at paper scale (sentrepro cost's estimates for config.yaml); 0 for CPU jobs."""
    from sentrepro.planning import registry
    from sentrepro.planning.config import load_config
    from sentrepro.planning.cost import _training_line, corpus_sentences, load_estimates, size_class

    rule, _, wildcards = job.partition(" ")
    fields = dict(item.split("=", 1) for item in wildcards.split(", ") if "=" in item)
    if (rule == "train" or rule.startswith("evaluate_")) and "backbone" not in fields:
        raise ValueError(f"no backbone in the wildcards of job {job!r}")
    config = load_config(REPO / "config.yaml")
    estimates = load_estimates()
    if rule == "train":
        line = _training_line(config, fields["backbone"], fields["method"], 1, corpus_sentences(config, estimates),
                              estimates)
        return line.seconds_per_run / 3600 if line.gpu else 0.0
    if rule.startswith("evaluate_") and rule.removeprefix("evaluate_") in registry.suites():
        backbone = fields["backbone"]
        size = size_class(backbone, config["backbones"][backbone], estimates)
        return registry.suite(rule.removeprefix("evaluate_")).cost[size] / 3600
    return 0.0


def check_only(workdir: Path, reference: Path | None) -> int:
    """The invariant of a finished run again (after a change to the check itself), without running anything."""
    problems = invariant(workdir, reference)
    print("invariant: " + ("holds" if not problems else f"{len(problems)} problems"))
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, help="the fault schedule's seed")
    parser.add_argument("--undisturbed", action="store_true", help="no faults: the reference run")
    parser.add_argument("--workdir", type=Path, required=True, help="a new folder for the run")
    parser.add_argument("--reference", type=Path, help="an --undisturbed run's workdir, or the --digest file it "
                        "wrote (benchmarks/slurm_faults_reference.json), to compare with")
    parser.add_argument("--digest", type=Path, help="write the run's digest here: each result file's hash, the "
                        "commit and the slice (a later run's --reference)")
    parser.add_argument("--slice", choices=sorted(SLICES), default="whole")
    parser.add_argument("--numerics", choices=sorted(NUMERICS), default="portable", help="the jobs' kernels: "
                        "portable (the same on any x86-64 CPU, so a digest from another machine checks this run) "
                        "or native (this CPU's fastest; compare only with a reference made on this machine)")
    parser.add_argument("--local", action="store_true", help="with --undisturbed: the local executor, same sizing")
    parser.add_argument("--report", type=Path, help="write the report as JSON here")
    parser.add_argument("--common", type=Path, help="a run of another config (the whole local rehearsal's folder, "
                        "or a digest): its metrics files and training summaries that this run also has must be equal")
    parser.add_argument("--check-only", action="store_true", help="check the invariant of the finished run in "
                        "--workdir against --reference; run nothing")
    args = parser.parse_args(argv)
    if args.check_only:
        if args.digest:
            write_digest(args.workdir.resolve(), args.digest, args.slice, args.seed)
        return check_only(args.workdir.resolve(), args.reference.resolve() if args.reference else None)
    if (args.seed is None) == (not args.undisturbed):
        parser.error("give --seed N or --undisturbed")
    if args.local and not args.undisturbed:
        parser.error("--local runs no faults: give --undisturbed")
    if args.local:
        os.environ["SLURM_FAULTS_EXECUTOR"] = "local"
    os.environ["SLURM_FAULTS_NUMERICS"] = args.numerics
    if args.workdir.exists() and any(args.workdir.iterdir()):
        parser.error(f"{args.workdir} is not empty")
    with test_cluster.exclusive_use(test_cluster.ClusterSpec.for_this_machine(), log):
        report = run(args.workdir.resolve(), None if args.undisturbed else args.seed, args.slice)
        if args.report:  # what ran, before anything that reads it can fail
            args.report.write_text(json.dumps(asdict(report), indent=1), encoding="utf-8")
        if args.digest:
            write_digest(args.workdir.resolve(), args.digest, args.slice, report.seed)
        problems = invariant(args.workdir.resolve(), args.reference.resolve() if args.reference else None)
    problems += [f"fault {f['kind']} (due after {f['after_jobs']} cluster jobs) was never injected: the DAG "
                 "completed first" for f in report.faults if not f["done"]]
    problems += wrong_kernels(kernels_of(args.workdir.resolve()), args.numerics)
    print(f"\n{report.planned_jobs} jobs, {len(report.attempts)} Snakemake runs, {report.wall_s:.0f} s wall")
    for fault in report.faults:
        print(f"  {fault['kind']:<17} after {fault['after_jobs']:>4} jobs at {fault['at_s']} s: "
              f"{fault['job'] or ''} {fault['rule'] or ''} {fault['wildcards'] or ''} {fault['note']}".rstrip())
    for cause, jobs in report.reruns.items():
        hours = sum(paper_hours(job) for job in jobs)
        print(f"  ran again after {cause}: {len(jobs)} jobs, at most {hours:.2f} GPU-hours at paper scale (a "
              f"whole job each; a training that resumed from its checkpoint costs the steps since): {jobs}")
    if args.common:
        shared, differ = compare_common(args.workdir.resolve(), args.common.resolve())
        print(f"  {shared} metrics files and training summaries shared with {args.common}: {len(differ)} differ")
        problems += differ
    print("invariant: " + ("holds" if not problems else f"{len(problems)} problems"))
    for problem in problems:
        print(f"  {problem}")
    if args.report:
        args.report.write_text(json.dumps({**asdict(report), "problems": problems}, indent=1), encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
