"""The SLURM test cluster ends every process its jobs caused (no cluster needed for these)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from tests.slurm.cluster import CLUSTER_NAME, end_job_processes, job_processes

MARK = "sentrepro-cleanup-test"


def _spawn(env_extra: dict[str, str], detach: bool) -> subprocess.Popen:
    env = {**os.environ, **env_extra}
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env,
                            start_new_session=detach)


def _wait_visible(pid: int) -> None:
    deadline = time.monotonic() + 10
    while pid not in job_processes(MARK) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_detached_job_step_is_found_and_ended_but_other_processes_are_not():
    step = _spawn({"SLURM_CLUSTER_NAME": MARK, "SLURM_JOB_ID": "42"}, detach=True)
    bystander = _spawn({"SLURM_CLUSTER_NAME": "another-cluster", "SLURM_JOB_ID": "7"}, detach=True)
    try:
        _wait_visible(step.pid)
        found = job_processes(MARK)
        assert step.pid in found and bystander.pid not in found
        assert end_job_processes(lambda message: None, MARK, grace_s=2) == []
        step.wait(timeout=5)
        assert step.returncode is not None and job_processes(MARK) == []
        assert bystander.poll() is None, "a process of another cluster was killed"
    finally:
        for process in (step, bystander):
            process.kill()
            process.wait()


def test_a_process_without_a_job_id_is_not_a_job_process():
    process = _spawn({"SLURM_CLUSTER_NAME": MARK}, detach=False)
    try:
        time.sleep(0.3)
        assert process.pid not in job_processes(MARK)
    finally:
        process.kill()
        process.wait()


def test_a_slurmstepd_is_the_test_clusters_only_and_another_name_leaves_it_alone(tmp_path):
    """A slurmstepd carries no cluster name: under the test cluster's name it is a job process, under any other it
    is not, and ending another name's processes leaves it running. (This file once ended every job step of a
    rehearsal running beside it on the test cluster.) Asserted before any kill, so the test cannot end a real one."""
    fake = tmp_path / "slurmstepd"
    shutil.copy(shutil.which("sleep"), fake)
    step = subprocess.Popen([str(fake), "120"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while step.pid not in job_processes(CLUSTER_NAME) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert step.pid in job_processes(CLUSTER_NAME)
        assert step.pid not in job_processes(MARK)
        assert end_job_processes(lambda message: None, MARK, grace_s=1) == []
        assert step.poll() is None, "a slurmstepd was ended under another cluster's name"
    finally:
        step.kill()
        step.wait()
