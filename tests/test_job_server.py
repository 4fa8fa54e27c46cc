"""The tests' fork server for workflow jobs (tests/job_server.py): a served job is the command it stands in for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.job_server import job_env, server_log
from tests.workflow_helpers import fixed_thread_env

pytestmark = pytest.mark.heavy  # the server imports torch and transformers (~10 s of CPU)

BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    return {**os.environ, **fixed_thread_env(), "PATH": f"{BIN}:{os.environ['PATH']}"}


def _run(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_served_job_prints_and_exits_as_the_command_itself(tmp_path):
    served_env = job_env(_env())
    table = tmp_path / "t.csv"
    table.write_text("table,row,column,value,std,n,reported,provenance\n", encoding="utf-8")
    config = Path(__file__).resolve().parents[1] / "config.yaml"
    commands = ["HF_HUB_OFFLINE=1 sentrepro audit t.csv", "HF_HUB_OFFLINE=1 sentrepro audit t.csv nope nope",
                f"HF_HUB_OFFLINE=1 sentrepro registry {config}", "HF_HUB_OFFLINE=1 sentrepro no-such-command"]
    before = len(server_log(served_env))
    codes = set()
    for command in commands:
        fresh, served = _run(command, _env(), tmp_path), _run(command, served_env, tmp_path)
        assert (served.returncode, served.stdout, served.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
        codes.add(fresh.returncode)
    assert codes == {0, 2}
    log = server_log(served_env)[before:]
    assert [line.split(" ", 2)[0] for line in log] == ["served"] * len(commands)
    assert json.loads(log[0].split(" ", 2)[2]) == ["audit", "t.csv"]


def test_a_job_whose_import_time_environment_differs_runs_fresh(tmp_path):
    served_env = job_env(_env())
    before = len(server_log(served_env))
    config = Path(__file__).resolve().parents[1] / "config.yaml"
    plain = _run(f"sentrepro registry {config}", served_env, tmp_path)  # no HF_HUB_OFFLINE=1: the server has it
    threads = _run(f"HF_HUB_OFFLINE=1 OMP_NUM_THREADS=3 sentrepro registry {config}", served_env, tmp_path)
    assert plain.returncode == threads.returncode == 0 and plain.stdout == threads.stdout != ""
    assert server_log(served_env)[before:] == ["refused HF_HUB_OFFLINE", "refused OMP_NUM_THREADS"]


def test_without_a_server_the_shim_runs_the_command(tmp_path):
    env = job_env(_env())
    env["SENTREPRO_TEST_JOB_SERVER"] = str(tmp_path / "no-such-socket")
    result = _run(f"HF_HUB_OFFLINE=1 sentrepro registry {Path(__file__).resolve().parents[1] / 'config.yaml'}",
                  env, tmp_path)
    assert result.returncode == 0 and "Method kinds" in result.stdout
