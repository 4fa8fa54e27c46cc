"""The tests' own set-up: every test process and workflow job runs with fixed thread counts (see conftest.py).

A float a test compares with a constant must not depend on the machine's core count or load; the tolerances
in tests/test_workflow_methods.py are measured for 1 and 2 threads (benchmarks/float_spread.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.workflow_helpers import THREAD_VARIABLES, fixed_thread_env


def test_this_process_runs_with_the_fixed_thread_count():
    import torch

    threads = os.environ["OMP_NUM_THREADS"]
    assert threads.isdigit() and all(os.environ[name] == threads for name in THREAD_VARIABLES)
    assert os.environ["OMP_DYNAMIC"] == os.environ["MKL_DYNAMIC"] == "FALSE"
    assert torch.get_num_threads() == int(threads)


def test_fixed_thread_env_takes_the_callers_count_else_one(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert {fixed_thread_env()[name] for name in THREAD_VARIABLES} == {"2"}
    assert {fixed_thread_env(3)[name] for name in THREAD_VARIABLES} == {"3"}
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert {fixed_thread_env()[name] for name in THREAD_VARIABLES} == {"1"}


def test_a_job_started_with_the_fixed_env_gets_that_many_torch_threads():
    env = {**os.environ, **fixed_thread_env(1)}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_a_job_records_torch_threads_only_when_it_used_torch():
    """provenance.device_info never imports torch itself (a data job would pay its start-up for a number that
    describes nothing it computed); a job that imported torch records its thread count."""
    script = ("import sys; from sentrepro.records.provenance import device_info; a = device_info(); "
              "print('torch' in sys.modules, 'torch_threads' in a); import torch; torch.set_num_threads(1); "
              "print(device_info()['torch_threads'])")
    out = subprocess.run([sys.executable, "-c", script], env={**os.environ, **fixed_thread_env(1)},
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["False False", "1"]
