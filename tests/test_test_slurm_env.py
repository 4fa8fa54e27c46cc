"""Tests outside tests/slurm start Snakemake without waiting for a SLURM controller (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time


def test_outside_tests_slurm_scontrol_fails_at_once_instead_of_waiting_for_a_controller():
    assert os.environ.get("SLURM_CONF") == os.devnull
    if shutil.which("scontrol") is None:
        return  # no SLURM client on this machine: the plugin's query fails at once anyway
    started = time.monotonic()
    done = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and time.monotonic() - started < 3
