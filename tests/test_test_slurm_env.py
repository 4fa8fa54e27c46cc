"""Test infrastructure: tests outside tests/slurm start Snakemake without waiting for a SLURM controller, and
the xdist work units keep each file (and all SLURM tests) on one worker, longest first (tests/conftest.py)."""

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


def test_the_slurm_tests_are_one_xdist_work_unit_and_every_other_file_its_own():
    """`make test` runs two xdist workers (tests/conftest.py): the SLURM tests must never run on both at once."""
    from tests.conftest import work_unit

    slurm = {work_unit(nodeid) for nodeid in ("tests/slurm/test_slurm_mini.py::test_a",
                                               "tests/slurm/test_slurm_workflow.py::test_b[x-y]",
                                               "tests/test_slurm_cleanup.py::test_c")}
    assert slurm == {"slurm"}
    assert work_unit("tests/test_workflow.py::test_d[a::b]") == "tests/test_workflow.py"
    assert work_unit("tests/test_workflow.py::test_e") != work_unit("tests/test_cost.py::test_e")


def test_work_units_are_handed_out_slurm_first_then_workflow_files_then_heavy_then_unit_tests():
    """Longest units first (tests/conftest.py): the classes come from each file's own module mark, and within a
    class the last run's times (pytest's cache) decide."""
    from pathlib import Path

    from tests.conftest import unit_cost_class, unit_order

    root = Path(__file__).resolve().parents[1]
    units = ["tests/test_config.py", "tests/test_perf_parity.py", "tests/test_workflow.py", "slurm",
             "tests/test_stats.py", "tests/test_workflow_verdicts.py"]
    ordered = sorted(units, key=lambda unit: unit_cost_class(unit, root))
    assert ordered == ["slurm", "tests/test_workflow.py", "tests/test_workflow_verdicts.py",
                       "tests/test_perf_parity.py", "tests/test_config.py", "tests/test_stats.py"]
    # the last run's seconds order units within a class (a unit not in the last run: as listed, after them)
    assert unit_order(units, root, {}) == ordered
    last = {"tests/test_stats.py": 7.0, "tests/test_config.py": 1.0, "tests/test_workflow_verdicts.py": 99.0,
            "tests/test_perf_parity.py": 500.0}
    assert unit_order(units, root, last) == ["slurm", "tests/test_workflow_verdicts.py", "tests/test_workflow.py",
                                             "tests/test_perf_parity.py", "tests/test_stats.py",
                                             "tests/test_config.py"]
