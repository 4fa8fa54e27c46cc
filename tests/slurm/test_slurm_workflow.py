"""The real workflow (the repository's Snakefile) through `snakemake --profile profiles/slurm` on the
single-node test cluster (cluster.py), and the same reduced config with the local executor.

Reduced config: tests.workflow_helpers.tiny_overlay (a tiny random BERT, 256 real Wikipedia sentences,
STS-B only), with SimCSE trained for 32 steps (STS-B dev every 4 steps, a resumable checkpoint every 2)
and the frozen-avg baseline. The targets are the two STS-B metrics files: they need every kind of rule a
paper run has (download, prepare, check and corpus on the submit host; tokenize, train and a grouped
evaluation job through sbatch). The paper tables would also need data sets the test mirror lacks.

The test node has 2 CPUs: the rules' sizes for real sites (tokenize 8 GB; evaluate_sts 2 CPUs and 8 GB,
summed over the members of a group job) are lowered on the command line (NODE_SIZING); the tiny
backbone's own `resources` ask for one GPU, as the paper backbones do. Everything else comes from the
profile. The node's GPUs are fake (character devices): SLURM allocates one and sets
CUDA_VISIBLE_DEVICES, but torch.cuda.is_available() is False on these CPU-only machines (CPU build of
torch), so training runs on the CPU and nothing ever touches the fake device.

Finished jobs stay visible to squeue/scontrol for MinJobAge (300 s), so every check of a run's jobs is
made by the tests right after that run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from tests.job_server import job_env, server_log
from tests.workflow_helpers import only_units, tiny_overlay, write_overlay

from .test_slurm_mini import load_profile, scontrol_job, snakemake_env, squeue_job

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
SLURM_PROFILE = REPO / "profiles" / "slurm"
LOCAL_PROFILE = REPO / "profiles" / "local"
WORKFLOW_TIMEOUT_S = 600  # a hung run fails the test instead of blocking CI
WAIT_TIMEOUT_S = 300

EXPERIMENT = "wfslurm"
STEPS, EVAL_STEPS, CHECKPOINT_EVERY = 32, 4, 2
TRAIN_RESOURCES = {"gpu": 1, "mem_mb": 1500, "runtime": 10, "cpus_per_task": 1}
NODE_SIZING = ["--set-resources", "tokenize:mem_mb=1000", "evaluate_sts:mem_mb=1000",
               "evaluate_sts:cpus_per_task=1"]

RUN_DIR = f"results/{EXPERIMENT}/runs/tiny-bert/simcse/seed1"
CORRUPT_RUN_DIR = f"results/{EXPERIMENT}/runs/tiny-bert-corrupt/simcse/seed1"
SIMCSE_METRICS = f"results/{EXPERIMENT}/metrics/tiny-bert/simcse/seed1/sts.json"
FROZEN_METRICS = f"results/{EXPERIMENT}/metrics/tiny-bert/frozen-avg/seed0/sts.json"
TARGETS = (SIMCSE_METRICS, FROZEN_METRICS)
# Output JSON of each job -> the rule that writes it.
CLUSTER_OUTPUTS = {
    "resources/tokenized/tiny-bert/wiki-sample/tokenized.json": "tokenize",
    f"{RUN_DIR}/train.json": "train",
    SIMCSE_METRICS: "evaluate_sts",
    FROZEN_METRICS: "evaluate_sts",
}
LOCAL_OUTPUTS = {
    "resources/downloads/wiki_sample/download.json": "download",
    "resources/data/wiki_sample/MANIFEST.json": "prepare_dataset",
    "resources/data/senteval/MANIFEST.json": "prepare_dataset",
    "resources/data/senteval/CHECKED.json": "check_dataset",
    "resources/corpus/wiki-sample/sentences.txt.json": "prepare_corpus",
}
# What a training run computed (train.json without timings and provenance).
RESULT_KEYS = ("steps", "total_steps", "best_step", "best_stsb_dev_spearman", "history", "loss_first",
               "loss_last", "loss_curve", "sentences", "threads")
# Group jobs have a UUID as their Snakemake job id, single jobs a number.
SUBMITTED = re.compile(r"Job \S+ has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")


# ----------------------------------------------------------------------------------------------
# Running the workflow
# ----------------------------------------------------------------------------------------------

@dataclass
class WorkflowRun:
    """One finished snakemake invocation of the repository's Snakefile in ``workdir``."""

    workdir: Path
    returncode: int
    output: str
    wall_s: float
    served: tuple[str, ...] = ()  # the job server's log lines of this run's served jobs (local reference run)

    def json(self, relative: str) -> dict:
        return json.loads((self.workdir / relative).read_text(encoding="utf-8"))

    def provenance(self, relative: str) -> dict:
        return self.json(relative)["provenance"]

    def submitted(self) -> dict[str, Path]:
        """SLURM job id -> the job's log file, as the executor announced each submission."""
        return {job_id: Path(log) for job_id, log in SUBMITTED.findall(self.output)}

    def job_of(self, log_part: str) -> str:
        """The SLURM job id whose log path contains ``log_part`` (exactly one)."""
        matches = [job_id for job_id, log in self.submitted().items() if log_part in str(log)]
        assert len(matches) == 1, f"not one SLURM job with '{log_part}' in its log path: {self.submitted()}"
        return matches[0]


class StartedWorkflow:
    """A snakemake process running in the background, its output going to a file."""

    def __init__(self, workdir: Path, args: list[str], targets: tuple[str, ...], env: dict[str, str] | None = None):
        self.workdir = workdir
        self.output_file = workdir.parent / f"{workdir.name}.snakemake.out"
        command = [sys.executable, "-m", "snakemake", *targets, "--snakefile", str(REPO / "Snakefile"),
                   "--directory", str(workdir), *args,
                   "--configfiles", str(REPO / "config.yaml"), str(workdir / "overlay.yaml")]
        self.started = time.monotonic()
        with open(self.output_file, "wb") as output:
            self.process = subprocess.Popen(command, cwd=workdir, env=env or workflow_env(), stdin=subprocess.DEVNULL,
                                            stdout=output, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.output_file.read_text(encoding="utf-8", errors="replace")

    def wait_until(self, condition: Callable[[], object], what: str, timeout_s: float = WAIT_TIMEOUT_S):
        """Poll ``condition`` until it returns something truthy; fail if snakemake ends first."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = condition()
            if found:
                return found
            if self.process.poll() is not None:
                pytest.fail(f"snakemake exited ({self.process.returncode}) before {what}:\n{self.output()[-4000:]}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"no {what} after {timeout_s:.0f} s:\n{self.output()[-4000:]}")
            time.sleep(0.1)

    def finish(self) -> WorkflowRun:
        try:
            self.process.wait(timeout=WORKFLOW_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"snakemake in {self.workdir} ran over {WORKFLOW_TIMEOUT_S} s:\n{self.output()[-4000:]}")
        return WorkflowRun(self.workdir, self.process.returncode, self.output(), time.monotonic() - self.started)

    def kill(self) -> None:
        """SIGKILL the session this class started (a SLURM run that hangs ignores SIGTERM)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def workflow_env() -> dict[str, str]:
    """No site settings, no GPU of the caller's; the venv's `sentrepro` first on PATH (jobs inherit it)."""
    env = snakemake_env({})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_workflow(workdir: Path, args: list[str], targets: tuple[str, ...] = TARGETS,
                 env: dict[str, str] | None = None) -> WorkflowRun:
    return StartedWorkflow(workdir, args, targets, env).finish()


def slurm_args(*extra: str) -> list[str]:
    return ["--profile", str(SLURM_PROFILE), *NODE_SIZING, *extra]


def result_of(summary: dict) -> dict:
    return {key: summary[key] for key in RESULT_KEYS}


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def dry_run_resources(output: str) -> dict[str, list[dict[str, str]]]:
    """rule -> the `resources:` of each of its jobs, from a dry run's job listing."""
    found: dict[str, list[dict[str, str]]] = {}
    rule = None
    for line in output.splitlines():
        header = re.match(r"\s*(?:local)?rule (\w+):$", line)
        if header:
            rule = header.group(1)
        resources = re.match(r"\s*resources: (.+)$", line)
        if resources and rule:
            found.setdefault(rule, []).append(dict(item.split("=", 1) for item in resources.group(1).split(", ")))
    return found


# ----------------------------------------------------------------------------------------------
# Fixtures: the reduced config and its runs
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_config(shared_data, tiny_models) -> dict:
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXPERIMENT, max_steps=STEPS)
    overlay["methods"]["simcse"]["params"]["eval_steps"] = EVAL_STEPS
    overlay["training"]["checkpoint_every"] = CHECKPOINT_EVERY
    overlay["evaluation"].update(suites=only_units("suites", ["sts"]), figures=only_units("figures", []))  # STS-B only
    overlay["backbones"]["tiny-bert"]["resources"] = dict(TRAIN_RESOURCES)
    return overlay


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tiny_config, tmp_path_factory, wall_times) -> WorkflowRun:
    workdir = tmp_path_factory.mktemp("wf-slurm")
    write_overlay(workdir, tiny_config)
    run = run_workflow(workdir, slurm_args())
    assert run.returncode == 0, f"snakemake --profile profiles/slurm failed:\n{run.output[-6000:]}"
    wall_times["reduced workflow, snakemake --profile profiles/slurm"] = run.wall_s
    return run


@pytest.fixture(scope="module")
def local_run(tiny_config, tmp_path_factory, wall_times) -> WorkflowRun:
    workdir = tmp_path_factory.mktemp("wf-local")
    write_overlay(workdir, tiny_config)
    # The reference run's jobs are forked from the tests' job server (tests/job_server.py), as in the other
    # workflow tests; the cluster runs' jobs stay fresh processes under slurmd, so the comparisons below also
    # check that a served job computes what a fresh one does.
    env = job_env(workflow_env())
    logged = len(server_log(env))
    run = run_workflow(workdir, ["--profile", str(LOCAL_PROFILE), "--cores", "2"], env=env)
    assert run.returncode == 0, f"snakemake --profile profiles/local failed:\n{run.output[-6000:]}"
    run.served = tuple(line for line in server_log(env)[logged:] if line.startswith("served "))
    wall_times["reduced workflow, snakemake --profile profiles/local --cores 2"] = run.wall_s
    return run


@dataclass
class InterruptedRun:
    run: WorkflowRun
    requeued_job: str
    ledger_lines_before: int  # the experiment ledger's records copied from the local run


def corrupt_backbone(model_dir: Path, dest: Path) -> Path:
    """A copy of a backbone whose weights file is cut in half, as a broken download would leave it."""
    shutil.copytree(model_dir, dest)
    weights = dest / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    return dest


@pytest.fixture(scope="module")
def interrupted_run(slurm_cluster, local_run, tiny_config, tiny_models, tmp_path_factory) -> InterruptedRun:
    """One `--keep-going` run of two training jobs: SimCSE on tiny-bert, requeued by `scontrol requeue`
    once its first checkpoint exists, and the same on a backbone with corrupt weights, which fails.

    It starts from a copy of the local run (data and tokenized corpus done) without the SimCSE run
    directory, so training starts from scratch; the local run is the uninterrupted reference.
    """
    workdir = tmp_path_factory.mktemp("wf-requeue") / "work"
    shutil.copytree(local_run.workdir, workdir, symlinks=True)
    shutil.rmtree(workdir / RUN_DIR)
    copied_records = len(ledger_lines(workdir / "results" / EXPERIMENT / "ledger.jsonl"))
    overlay = copy.deepcopy(tiny_config)
    corrupt = corrupt_backbone(tiny_models["bert"], workdir.parent / "tiny-bert-corrupt")
    # The same tokenizer name: the corpus is tokenized once, with tiny-bert (first by name).
    overlay["backbones"]["tiny-bert-corrupt"] = {**overlay["backbones"]["tiny-bert"], "model": str(corrupt)}
    per_backbone = overlay["methods"]["simcse"]["per_backbone"]
    per_backbone["tiny-bert-corrupt"] = dict(per_backbone["tiny-bert"])
    overlay["matrix"]["corrupt"] = {"backbones": ["tiny-bert-corrupt"], "methods": ["simcse"], "seeds": [1]}
    write_overlay(workdir, overlay)

    started = StartedWorkflow(workdir, slurm_args("--keep-going"),
                              (f"{RUN_DIR}/train.json", f"{CORRUPT_RUN_DIR}/train.json"))
    try:  # the first `submitted` line of the tiny-bert training job gives its SLURM id
        job_id = started.wait_until(
            lambda: next((job for job, log in SUBMITTED.findall(started.output())
                          if "/rule_train/tiny-bert_simcse_seed1/" in log), None),
            "submission of the tiny-bert training job")
        checkpoint = workdir / RUN_DIR / "last" / "trainer_state.pt"
        started.wait_until(checkpoint.exists, f"checkpoint {checkpoint}")
        if (workdir / RUN_DIR / "train.json").exists():
            pytest.fail("training finished before it could be requeued; give it more steps (STEPS)")
        requeue = subprocess.run(["scontrol", "requeue", job_id], capture_output=True, text=True, check=False)
        assert requeue.returncode == 0, f"scontrol requeue {job_id} failed: {requeue.stderr}"
    except BaseException:  # pytest.fail raises a BaseException
        started.kill()
        raise
    return InterruptedRun(started.finish(), job_id, copied_records)


# ----------------------------------------------------------------------------------------------
# Which job ran where (no cluster needed for the dry run)
# ----------------------------------------------------------------------------------------------

def test_site_gpu_settings_reach_gpu_jobs_only(tiny_config, tmp_path):
    write_overlay(tmp_path, tiny_config)
    site = {"PARTITION": "cpu", "GPU_PARTITION": "gpu", "GPU_MODEL": "a100"}
    command = [sys.executable, "-m", "snakemake", *TARGETS, "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(tmp_path), "--profile", str(SLURM_PROFILE), "--dry-run",
               "--configfiles", str(REPO / "config.yaml"), str(tmp_path / "overlay.yaml")]
    env = {**workflow_env(), **{f"SENTREPRO_SLURM_{name}": value for name, value in site.items()}}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    resources = dry_run_resources(done.stdout + done.stderr)
    [train] = resources["train"]
    assert (train["gpu"], train["gpu_model"], train["slurm_partition"]) == ("1", "a100", "gpu"), train
    for rule in ("tokenize", "evaluate_sts"):
        for job in resources[rule]:
            assert job["slurm_partition"] == "cpu", (rule, job)
            assert "gpu_model" not in job and job.get("gpu", "0") == "0", (rule, job)
    assert "Group job evaluate" in done.stdout + done.stderr, "evaluate_sts jobs are not grouped"


# ----------------------------------------------------------------------------------------------
# The reduced workflow through SLURM
# ----------------------------------------------------------------------------------------------

def test_every_cluster_job_went_through_sbatch_and_local_rules_did_not(slurm_run):
    submitted = slurm_run.submitted()
    job_ids = {}
    for output, rule in CLUSTER_OUTPUTS.items():
        job_id = slurm_run.provenance(output)["slurm_job_id"]
        assert job_id in submitted, f"{output} ({rule}) names job {job_id}, not one sbatch returned: {submitted}"
        job = squeue_job(job_id)
        assert job["state"] == "COMPLETED", (output, job)
        assert job["name"].startswith("sentrepro_"), f"job {job_id} lacks the profile's name prefix: {job}"
        job_ids[output] = job_id
    # Exactly tokenize, train and one job for both evaluations (grouped), nothing else.
    assert job_ids[SIMCSE_METRICS] == job_ids[FROZEN_METRICS], "the two evaluations were not grouped"
    assert set(job_ids.values()) == set(submitted) and len(submitted) == 3, (job_ids, submitted)
    assert squeue_job(job_ids[SIMCSE_METRICS])["comment"].startswith("rule_evaluate")
    for output, rule in LOCAL_OUTPUTS.items():
        assert slurm_run.provenance(output)["slurm_job_id"] is None, f"{output} ({rule}) ran under SLURM"
        assert f"localrule {rule}:" in slurm_run.output, rule


def test_slurm_logs_are_kept_where_the_profile_says(slurm_run):
    logdir = slurm_run.workdir / load_profile(SLURM_PROFILE)["slurm-logdir"]
    for job_id, log in slurm_run.submitted().items():
        assert log.is_relative_to(logdir), f"log of job {job_id} is not under {logdir}: {log}"
        assert log.name == f"{job_id}.log" and log.is_file(), f"log of job {job_id} was not kept: {log}"
        assert "Finished jobid" in log.read_text(encoding="utf-8"), log


def test_training_job_gets_a_fake_gpu_and_trains_on_the_cpu(slurm_run):
    train = slurm_run.json(f"{RUN_DIR}/train.json")
    provenance = train["provenance"]
    assert scontrol_job(provenance["slurm_job_id"])["TresPerJob"] == "gres:gpu:1"
    assert re.fullmatch(r"\d+(,\d+)*", provenance["cuda_visible_devices"] or ""), provenance
    # CPU build of torch: the fake GPU is allocated but never used.
    assert provenance["device"]["device"] == "cpu" and train["threads"] == TRAIN_RESOURCES["cpus_per_task"]
    for output in ("resources/tokenized/tiny-bert/wiki-sample/tokenized.json", SIMCSE_METRICS):
        assert slurm_run.provenance(output)["cuda_visible_devices"] is None, f"{output}: no GPU was requested"


def test_slurm_and_local_runs_compute_the_same(slurm_run, local_run):
    assert not local_run.submitted()
    # the reference's training and evaluations were served jobs; the cluster's ran as fresh processes
    served_commands = {json.loads(line.split(" ", 2)[2])[0] for line in local_run.served}  # "served <pid> <argv>"
    assert {"train", "evaluate"} <= served_commands, local_run.served
    for output in [*CLUSTER_OUTPUTS, *LOCAL_OUTPUTS]:
        assert local_run.provenance(output)["slurm_job_id"] is None, output
    assert result_of(slurm_run.json(f"{RUN_DIR}/train.json")) == result_of(local_run.json(f"{RUN_DIR}/train.json"))
    assert files_of(slurm_run.workdir / RUN_DIR / "best") == files_of(local_run.workdir / RUN_DIR / "best")
    for metrics in TARGETS:
        assert slurm_run.json(metrics)["results"] == local_run.json(metrics)["results"], metrics


# ----------------------------------------------------------------------------------------------
# Failure and preemption (one --keep-going run, see interrupted_run)
# ----------------------------------------------------------------------------------------------

def test_failing_job_is_reported_with_its_log_and_fails_the_run(interrupted_run):
    run = interrupted_run.run
    assert run.returncode != 0, f"snakemake succeeded although a training job failed:\n{run.output[-4000:]}"
    job_id = run.job_of("/rule_train/tiny-bert-corrupt_simcse_seed1/")
    assert f"SLURM-job '{job_id}' failed, SLURM status is: 'FAILED'" in run.output
    assert squeue_job(job_id)["state"] == "FAILED"
    slurm_log = run.submitted()[job_id]
    logdir = run.workdir / load_profile(SLURM_PROFILE)["slurm-logdir"]
    assert slurm_log == logdir / "rule_train" / "tiny-bert-corrupt_simcse_seed1" / f"{job_id}.log"
    assert "Error in rule train" in slurm_log.read_text(encoding="utf-8")
    rule_log = run.workdir / f"results/{EXPERIMENT}/logs/train/tiny-bert-corrupt/simcse/seed1.log"
    assert "SafetensorError" in rule_log.read_text(encoding="utf-8")
    # show-failed-logs: the rule's log is printed with the error, where the user sees it.
    assert "SafetensorError" in run.output
    assert not (run.workdir / CORRUPT_RUN_DIR / "train.json").exists()


def test_requeued_training_resumes_from_its_checkpoint_and_matches_an_uninterrupted_run(interrupted_run,
                                                                                         local_run):
    run, job_id = interrupted_run.run, interrupted_run.requeued_job
    summary = run.json(f"{RUN_DIR}/train.json")
    resumed = summary["resumed_from"]
    assert isinstance(resumed, int) and 0 < resumed < STEPS and resumed % CHECKPOINT_EVERY == 0, summary
    assert summary["provenance"]["slurm_job_id"] == job_id
    job = scontrol_job(job_id)
    assert (job["JobState"], job["Restarts"], job["Requeue"]) == ("COMPLETED", "1", "1"), job
    # The ledger names the incarnation that wrote the summary: the slurm-jobstep executor strips
    # SLURM_RESTART_COUNT before its srun, so the count comes from scontrol (issue 45's seed-1 run).
    written = ledger_lines(run.workdir / "results" / EXPERIMENT / "ledger.jsonl")[interrupted_run.ledger_lines_before:]
    records = [r for r in written if r.get("path") == f"{RUN_DIR}/train.json"]
    assert [(r.get("slurm_job_id"), r.get("slurm_restart_count")) for r in records] == [(job_id, "1")], records
    rule_log = (run.workdir / f"results/{EXPERIMENT}/logs/train/tiny-bert/simcse/seed1.log").read_text()
    assert f"resumed from step {resumed}" in rule_log
    # The profile's --open-mode=append: the job's log keeps both attempts.
    slurm_log = run.submitted()[job_id].read_text(encoding="utf-8")
    assert "DUE TO JOB REQUEUE" in slurm_log, slurm_log[-3000:]
    first_attempt, second_attempt = slurm_log.split("DUE TO JOB REQUEUE", 1)
    assert "rule train:" in first_attempt and "Finished jobid" in second_attempt, slurm_log[-3000:]
    reference = local_run.json(f"{RUN_DIR}/train.json")
    assert reference["resumed_from"] is None
    assert result_of(summary) == result_of(reference)
    assert files_of(run.workdir / RUN_DIR / "best") == files_of(local_run.workdir / RUN_DIR / "best")


# ----------------------------------------------------------------------------------------------
# Snakemake killed while its SLURM jobs run (issue 45): the user's restart, one writer per output
# ----------------------------------------------------------------------------------------------

@dataclass
class OrphanedRun:
    """The run restarted after its Snakemake was killed; the orphaned training job and its resubmitted twin."""

    run: WorkflowRun
    locked_out: WorkflowRun  # the first restart, before `--unlock`
    orphan: str
    twin: str
    ledger_lines_before: int  # the experiment ledger's records copied from the reference run


def our_jobs(states: str) -> list[str]:
    """The cluster's jobs in ``states`` (squeue's comma list) whose name carries the profile's prefix."""
    answer = subprocess.run(["squeue", "--noheader", f"--states={states}", "--format=%i|%j"], capture_output=True,
                            text=True, check=True)
    return [line.split("|")[0] for line in answer.stdout.split() if "|sentrepro_" in line]


def ledger_lines(ledger: Path) -> list[dict]:
    """Every record of a ledger (one JSON object a line; a line that does not parse fails the test)."""
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def orphaned_run(slurm_cluster, local_run, tiny_config, tmp_path_factory) -> OrphanedRun:
    """Snakemake `kill -9`ed while its training job runs on the cluster; then what docs/usage.md tells a user
    ("After a fault"): the same command (which says the directory is locked), `--unlock`, the same command.

    The orphan is held (`scontrol suspend`) from just before the kill until its resubmitted twin has said it
    waits for it, so the restart always meets a job still writing its output, however fast the machine.
    """
    workdir = tmp_path_factory.mktemp("wf-orphan") / "work"
    shutil.copytree(local_run.workdir, workdir, symlinks=True)
    shutil.rmtree(workdir / RUN_DIR)
    (workdir / SIMCSE_METRICS).unlink()
    copied = len(ledger_lines(workdir / f"results/{EXPERIMENT}/ledger.jsonl"))
    targets = (SIMCSE_METRICS,)
    first = StartedWorkflow(workdir, slurm_args(), targets)
    orphan = None
    try:
        orphan = first.wait_until(
            lambda: next((job for job, log in SUBMITTED.findall(first.output())
                          if "/rule_train/tiny-bert_simcse_seed1/" in log), None), "submission of the training job")
        first.wait_until((workdir / RUN_DIR / "last" / "trainer_state.pt").exists, "the first checkpoint")
        held = subprocess.run(["scontrol", "suspend", orphan], capture_output=True, text=True, check=False)
        assert held.returncode == 0, f"scontrol suspend {orphan}: {held.stderr}"
        os.kill(first.process.pid, signal.SIGKILL)  # Snakemake alone: its SLURM job goes on
        first.process.wait()
        locked_out = run_workflow(workdir, slurm_args(), targets)
        unlocked = run_workflow(workdir, slurm_args("--unlock"), targets)
        assert unlocked.returncode == 0, unlocked.output[-3000:]
        restarted = StartedWorkflow(workdir, slurm_args(), targets)
        twin = restarted.wait_until(
            lambda: next((job for job, log in SUBMITTED.findall(restarted.output())
                          if "/rule_train/tiny-bert_simcse_seed1/" in log), None), "resubmission of the training job")
        twin_log = workdir / load_profile(SLURM_PROFILE)["slurm-logdir"] / "rule_train" / "tiny-bert_simcse_seed1"
        restarted.wait_until(lambda: "waiting for" in (twin_log / f"{twin}.log").read_text(errors="replace")
                             if (twin_log / f"{twin}.log").exists() else False, "the twin waiting for the orphan")
        resumed = subprocess.run(["scontrol", "resume", orphan], capture_output=True, text=True, check=False)
        assert resumed.returncode == 0, f"scontrol resume {orphan}: {resumed.stderr}"
        return OrphanedRun(restarted.finish(), locked_out, orphan, twin, copied)
    except BaseException:
        first.kill()
        if orphan:
            subprocess.run(["scancel", orphan], check=False)
        raise


def test_snakemake_killed_while_its_jobs_run_loses_nothing_and_never_races(orphaned_run, local_run):
    run, orphan, twin = orphaned_run.run, orphaned_run.orphan, orphaned_run.twin
    # what the user met, and what the restart said
    assert orphaned_run.locked_out.returncode != 0
    assert "Directory cannot be locked" in orphaned_run.locked_out.output, orphaned_run.locked_out.output[-3000:]
    assert run.returncode == 0, run.output[-6000:]
    twin_log = run.submitted()[twin].read_text(encoding="utf-8")
    assert f"SLURM job {orphan}" in twin_log, twin_log[-3000:]
    # one writer: the twin took the orphan's finished run instead of writing the run directory beside it
    assert "adopted" in twin_log, twin_log[-3000:]
    summary = run.json(f"{RUN_DIR}/train.json")
    assert summary["provenance"]["slurm_job_id"] == orphan
    assert squeue_job(orphan)["state"] == "COMPLETED" and squeue_job(twin)["state"] == "COMPLETED"
    # the same results as the undisturbed run
    assert result_of(summary) == result_of(local_run.json(f"{RUN_DIR}/train.json"))
    assert files_of(run.workdir / RUN_DIR / "best") == files_of(local_run.workdir / RUN_DIR / "best")
    assert run.json(SIMCSE_METRICS)["results"] == local_run.json(SIMCSE_METRICS)["results"]
    # the ledger: since the kill, one record per file the training wrote (none lost, none twice), each the file
    # as it is now, written by the orphan's job
    ledger = run.workdir / f"results/{EXPERIMENT}/ledger.jsonl"
    records = [r for r in ledger_lines(ledger)[orphaned_run.ledger_lines_before:]
               if r.get("command") == "train" and not r.get("dropped") and not r.get("removed")]
    written = sorted([f"{RUN_DIR}/train.json", f"{RUN_DIR}/finished.json",  # its copy, the run's last file
                      *(f"{RUN_DIR}/best/{name}" for name in files_of(run.workdir / RUN_DIR / "best"))])
    assert sorted(r["path"] for r in records if "/last/" not in r["path"]) == written, records
    for record in records:
        if "/last/" not in record["path"]:
            digest = hashlib.sha256((run.workdir / record["path"]).read_bytes()).hexdigest()
            assert (digest, record["slurm_job_id"]) == (record["sha256"], orphan), record
    # nothing left to clean up by hand: no lock file, no job of ours still queued, running or suspended
    assert not [p for p in run.workdir.rglob(".*.lock")], list(run.workdir.rglob(".*.lock"))
    assert not our_jobs("PENDING,RUNNING,SUSPENDED,COMPLETING"), our_jobs("PENDING,RUNNING,SUSPENDED,COMPLETING")
