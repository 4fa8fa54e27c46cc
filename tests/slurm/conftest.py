"""Fixtures for tests/slurm: one real SLURM cluster per test session, and wall-time reporting."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

import pytest

from .cluster import Cluster, ClusterSpec, ClusterUnavailable, down, exclusive_use, job_processes, up

WALL_TIMES = pytest.StashKey[dict]()


def _log(message: str) -> None:
    print(f"[slurm-cluster] {message}", file=sys.stderr, flush=True)


def _unavailable(reason: str) -> None:
    """Skip on a developer machine; under CI=true a missing cluster is a failure, never a skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the local SLURM cluster cannot run: {reason}", pytrace=False)
    pytest.skip(f"local SLURM cluster unavailable: {reason}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Cluster]:
    """Bring the single-node cluster up for the session; stop only the daemons started here."""
    spec = ClusterSpec.for_this_machine()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_use(spec, _log))
            cluster = up(spec, log=_log)
        except ClusterUnavailable as error:
            reason = str(error)  # skip/fail outside the handler: no chained traceback in the report
        else:
            reason = None
        if reason is not None:
            _unavailable(reason)
        stack.callback(down, cluster, log=_log)  # runs before the session lock is released
        yield cluster
    left = job_processes()
    assert not left, f"processes of SLURM jobs still running after the tests: {left}"


@pytest.fixture(scope="session")
def wall_times(request) -> dict[str, float]:
    """Workflow wall times (seconds) by label, printed in the terminal summary."""
    return request.config.stash.setdefault(WALL_TIMES, {})


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    times = config.stash.get(WALL_TIMES, {})
    if times:
        terminalreporter.section("workflow wall times (tests/slurm)")
        for label, seconds in times.items():
            terminalreporter.write_line(f"{label}: {seconds:.1f} s")
