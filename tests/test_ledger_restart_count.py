"""The incarnation a ledger record names: SLURM_RESTART_COUNT where the job's command sees it, else scontrol's
``Restarts=`` (Snakemake's slurm-jobstep executor strips SLURM_* before its srun runs the rule). A fake scontrol on
PATH stands in for the cluster."""

from __future__ import annotations

import os
import stat

import pytest

from sentrepro.records import ledger


@pytest.fixture
def scontrol(tmp_path, monkeypatch):
    """Write the fake scontrol's answer (its stdout and exit status) for the next lookup."""
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    ledger._scontrol_restarts.cache_clear()

    def answer(stdout: str, status: int = 0) -> None:
        script = tmp_path / "scontrol"
        script.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/asked\ncat <<'END'\n{stdout}\nEND\nexit {status}\n",
                          encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        ledger._scontrol_restarts.cache_clear()

    yield answer
    ledger._scontrol_restarts.cache_clear()


SHOWN = "JobId=265 JobName=sentrepro_evaluate\n   JobState=RUNNING Reason=None Dependency=(null)\n   Requeue=1 Restarts={n} BatchFlag=1 Reboot=0 ExitCode=0:0"


def test_a_requeued_jobs_count_comes_from_scontrol_when_the_environment_lacks_it(scontrol, tmp_path, monkeypatch):
    scontrol(SHOWN.format(n=2))
    monkeypatch.setenv("SLURM_JOB_ID", "265")
    assert ledger.writer()["slurm_restart_count"] == "2" and ledger.writer()["slurm_job_id"] == "265"
    assert (tmp_path / "asked").read_text().split() == ["show", "job", "265"]


def test_a_first_incarnation_and_a_job_outside_slurm_record_no_count(scontrol, monkeypatch):
    scontrol(SHOWN.format(n=0))
    monkeypatch.setenv("SLURM_JOB_ID", "265")
    assert "slurm_restart_count" not in ledger.writer()
    monkeypatch.delenv("SLURM_JOB_ID")
    assert ledger.slurm_restart_count(None) is None


def test_the_environments_count_wins_and_scontrol_is_not_asked(scontrol, tmp_path, monkeypatch):
    scontrol(SHOWN.format(n=5))
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert ledger.slurm_restart_count("265") == "1" and not (tmp_path / "asked").exists()


def test_no_controller_to_ask_records_no_count_and_an_answer_without_the_field_raises(scontrol):
    scontrol("slurm_load_jobs error: Invalid job id specified", status=1)
    assert ledger.slurm_restart_count("265") is None
    scontrol("JobId=265 JobState=RUNNING")
    with pytest.raises(ValueError, match="scontrol show job 265: no Restarts= field"):
        ledger.slurm_restart_count("265")
