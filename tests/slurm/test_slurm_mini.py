"""The repository's `slurm` profile against a real single-node SLURM cluster (see cluster.py).

The mini workflow (mini/Snakefile) runs the way a user runs the real one: from its own directory,
`snakemake --profile <repo>/profiles/slurm`, so every setting comes from the profile itself.
Finished jobs stay visible to `squeue --states=all` for MinJobAge (300 s), which is how the
tests confirm job IDs without slurmdbd/sacct.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from snakemake.cli import get_profile_dir
from snakemake.profiles import ProfileConfigFileParser

from .cluster import CPU_PARTITION, DEFAULT_PARTITION, FAKE_GPU_TYPE, GPU_PARTITION

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
SLURM_PROFILE = REPO / "profiles" / "slurm"
LOCAL_PROFILE = REPO / "profiles" / "local"
MINI = Path(__file__).resolve().parent / "mini"
SNAKEMAKE_TIMEOUT_S = 300  # a hang (e.g. a status command that never answers) fails instead of blocking
SITE_VARIABLES = ("PARTITION", "ACCOUNT", "GPU_PARTITION", "GPU_MODEL", "STATUS_COMMAND")
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")
SLURM_DEFAULT_MIN_JOB_AGE_S = 300


@dataclass
class Run:
    """One finished snakemake invocation in a copy of the mini workflow."""

    workdir: Path
    returncode: int
    output: str
    wall_s: float

    def values(self, rule: str) -> dict[str, str]:
        """KEY=VALUE lines the rule's job wrote into results/<rule>.txt."""
        lines = (self.workdir / "results" / f"{rule}.txt").read_text(encoding="utf-8").splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def submitted_logs(self) -> dict[str, Path]:
        """SLURM job id -> the job's log file, as the executor announced each submission."""
        return {job_id: Path(log) for job_id, log in SUBMITTED.findall(self.output)}


def load_profile(path: Path) -> dict:
    """The profile as Snakemake parses it (YTE templates rendered against the current environment)."""
    with open(path / "config.yaml", encoding="utf-8") as handle:
        return dict(ProfileConfigFileParser().parse(handle))


def snakemake_env(site: dict[str, str]) -> dict[str, str]:
    """This process's environment minus anything that would steer the run from outside the test."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("SLURM_", "SENTREPRO_SLURM_", "SNAKEMAKE_PROFILE"))}
    env.update({f"SENTREPRO_SLURM_{name}": value for name, value in site.items()})
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def run_snakemake(workdir: Path, args: list[str], site: dict[str, str] | None = None) -> Run:
    command = [sys.executable, "-m", "snakemake", *args]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=workdir, env=snakemake_env(site or {}), capture_output=True,
                              text=True, timeout=SNAKEMAKE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as error:
        # Captured output arrives as bytes (or None) on a timeout, whatever `text=` says.
        output = "".join(part.decode(errors="replace") if isinstance(part, bytes) else part or ""
                         for part in (error.stdout, error.stderr))
        pytest.fail(f"`{' '.join(command)}` in {workdir} ran over {SNAKEMAKE_TIMEOUT_S} s:\n{output[-4000:]}")
    return Run(workdir, done.returncode, done.stdout + done.stderr, time.monotonic() - started)


def fresh_mini(tmp_path_factory, name: str) -> Path:
    workdir = tmp_path_factory.mktemp(name) / "mini"
    shutil.copytree(MINI, workdir)
    return workdir


def squeue_job(job_id: str) -> dict[str, str]:
    """State, name, comment and partition of a job, finished ones included."""
    fields = ("state", "name", "comment", "partition")
    answer = subprocess.run(["squeue", "--noheader", "--states=all", "--jobs", job_id,
                             "--format=%T|%j|%k|%P"], capture_output=True, text=True, check=False)
    assert answer.returncode == 0, f"squeue --jobs {job_id} failed: {answer.stderr}"
    lines = answer.stdout.strip().splitlines()
    assert len(lines) == 1, f"squeue knows no single job {job_id}: {answer.stdout!r}"
    return dict(zip(fields, lines[0].split("|")))


def scontrol_job(job_id: str) -> dict[str, str]:
    answer = subprocess.run(["scontrol", "--oneliner", "show", "job", job_id], capture_output=True,
                            text=True, check=False)
    assert answer.returncode == 0, f"scontrol show job {job_id} failed: {answer.stderr}"
    return dict(item.split("=", 1) for item in answer.stdout.split() if "=" in item)


def assert_ran_under_slurm(run: Run, rule: str, cluster) -> str:
    """The rule's output names a job that SLURM ran for this rule and whose log the profile kept."""
    job_id = run.values(rule)["SLURM_JOB_ID"]
    assert job_id.isdigit(), f"results/{rule}.txt has no SLURM job id: {run.values(rule)}"
    job = squeue_job(job_id)
    assert job["state"] == "COMPLETED", f"job {job_id} ({rule}): {job}"
    assert job["comment"] == f"rule_{rule}", f"job {job_id} was not submitted for rule {rule}: {job}"
    assert job["name"].startswith("sentrepro_"), f"job {job_id} lacks the profile's name prefix: {job}"
    log = run.submitted_logs()[job_id]
    assert log == run.workdir / "results" / "slurm_logs" / f"rule_{rule}" / f"{job_id}.log"
    assert log.is_file(), f"log of successful job {job_id} was deleted despite keep-successful-logs"
    jobcomp = cluster.spec.jobcomp_file.read_text(encoding="utf-8")
    assert re.search(rf"\bJobId={job_id}\b.*\bJobState=COMPLETED\b", jobcomp), f"job {job_id} not in {jobcomp}"
    return job_id


# ----------------------------------------------------------------------------------------------
# The profile itself (no cluster needed)
# ----------------------------------------------------------------------------------------------

def test_profile_name_slurm_resolves_from_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)
    found = get_profile_dir("slurm")
    assert found is not None, "`snakemake --profile slurm` finds no profile from the repository root"
    assert found[1].resolve() == SLURM_PROFILE / "config.yaml"


def test_profile_without_site_settings_leaves_choice_to_the_cluster(monkeypatch):
    for name in SITE_VARIABLES:
        monkeypatch.delenv(f"SENTREPRO_SLURM_{name}", raising=False)
    profile = load_profile(SLURM_PROFILE)
    assert profile["executor"] == "slurm"
    assert profile["slurm-status-command"] == "squeue"
    assert not [entry for entry in profile["default-resources"]
                if entry.startswith(("slurm_partition", "slurm_account"))]
    assert "set-resources" not in profile
    # squeue polling is only used while MinJobAge >= 3 x the first polling interval.
    assert 3 * int(profile["slurm-init-seconds-before-status-checks"]) <= SLURM_DEFAULT_MIN_JOB_AGE_S


def test_profile_takes_site_settings_from_environment(monkeypatch):
    site = {"PARTITION": "all", "ACCOUNT": "123456", "STATUS_COMMAND": "sacct",
            "GPU_PARTITION": "gpu", "GPU_MODEL": "a100"}
    for name, value in site.items():
        monkeypatch.setenv(f"SENTREPRO_SLURM_{name}", value)
    profile = load_profile(SLURM_PROFILE)
    # Quoted, so that Snakemake's expression evaluation keeps them strings ('all' is a Python builtin).
    assert "slurm_partition='all'" in profile["default-resources"]
    assert "slurm_account='123456'" in profile["default-resources"]
    assert profile["slurm-status-command"] == "sacct"
    # GPU settings belong to GPU jobs only, which the workflow's rules pick; never to every job.
    assert not [entry for entry in profile["default-resources"] if entry.startswith(("gpu", "gres"))]
    assert "set-resources" not in profile


# ----------------------------------------------------------------------------------------------
# The real cluster
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mini_run(slurm_cluster, tmp_path_factory, wall_times) -> Run:
    """The whole mini workflow through SLURM, no site settings (the test cluster needs none)."""
    run = run_snakemake(fresh_mini(tmp_path_factory, "slurm"), ["--profile", str(SLURM_PROFILE)])
    assert run.returncode == 0, f"snakemake --profile slurm failed:\n{run.output[-4000:]}"
    wall_times["mini workflow, snakemake --profile profiles/slurm"] = run.wall_s
    return run


def test_cluster_jobs_ran_under_slurm_and_local_rule_did_not(mini_run, slurm_cluster):
    assert mini_run.values("fetch") == {"SLURM_JOB_ID": "none"}
    job_ids = {assert_ran_under_slurm(mini_run, rule, slurm_cluster) for rule in ("tokenize", "train")}
    assert len(job_ids) == 2
    assert set(mini_run.submitted_logs()) == job_ids, "only tokenize and train may be submitted"
    assert "localrule fetch:" in mini_run.output
    # No site settings: every job lands in the cluster's default partition.
    for rule in ("tokenize", "train"):
        assert mini_run.values(rule)["SLURM_JOB_PARTITION"] == DEFAULT_PARTITION, rule


def test_gpu_job_gets_a_fake_gpu(mini_run):
    train = mini_run.values("train")
    assert re.fullmatch(r"\d+(,\d+)*", train["CUDA_VISIBLE_DEVICES"]), train
    assert scontrol_job(train["SLURM_JOB_ID"])["TresPerJob"] == "gres:gpu:1"


def test_site_settings_from_environment_reach_sbatch(slurm_cluster, tmp_path_factory):
    site = {"PARTITION": CPU_PARTITION, "GPU_PARTITION": GPU_PARTITION, "GPU_MODEL": FAKE_GPU_TYPE}
    run = run_snakemake(fresh_mini(tmp_path_factory, "site"), ["--profile", str(SLURM_PROFILE)], site=site)
    assert run.returncode == 0, f"snakemake with site settings {site} failed:\n{run.output[-4000:]}"
    tokenize, train = run.values("tokenize"), run.values("train")
    assert tokenize["SLURM_JOB_PARTITION"] == CPU_PARTITION
    assert squeue_job(tokenize["SLURM_JOB_ID"])["partition"] == CPU_PARTITION
    assert train["SLURM_JOB_PARTITION"] == GPU_PARTITION
    assert squeue_job(train["SLURM_JOB_ID"])["partition"] == GPU_PARTITION
    assert scontrol_job(train["SLURM_JOB_ID"])["TresPerJob"] == f"gres:gpu:{FAKE_GPU_TYPE}:1"
    assert train["CUDA_VISIBLE_DEVICES"] != "none"


def test_failing_job_fails_the_run_and_keeps_its_log(slurm_cluster, tmp_path_factory):
    run = run_snakemake(fresh_mini(tmp_path_factory, "fail"),
                        ["--profile", str(SLURM_PROFILE), "results/fail.txt"])
    assert run.returncode != 0, f"snakemake succeeded although rule fail exits 3:\n{run.output[-4000:]}"
    assert "SLURM status is: 'FAILED'" in run.output
    [(job_id, log)] = run.submitted_logs().items()
    logdir = run.workdir / load_profile(SLURM_PROFILE)["slurm-logdir"]
    assert log == logdir / "rule_fail" / f"{job_id}.log"
    assert "sentrepro-mini: deliberate failure on stderr" in log.read_text(encoding="utf-8")
    assert squeue_job(job_id)["state"] == "FAILED"
    assert not (run.workdir / "results" / "fail.txt").exists()


def test_local_profile_runs_everything_here(tmp_path_factory, wall_times):
    run = run_snakemake(fresh_mini(tmp_path_factory, "local"),
                        ["--profile", str(LOCAL_PROFILE), "--cores", "2"])
    assert run.returncode == 0, f"snakemake --profile profiles/local failed:\n{run.output[-4000:]}"
    for rule in ("fetch", "tokenize", "train"):
        assert run.values(rule)["SLURM_JOB_ID"] == "none", rule
    assert not run.submitted_logs()
    wall_times["mini workflow, snakemake --profile profiles/local --cores 2"] = run.wall_s
