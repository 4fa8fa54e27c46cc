"""The rehearsal runs the paper config's own DAG: the check that it does, from two dry runs.

``profiles/rehearsal/overlay.yaml`` changes what the jobs of ``config.yaml`` run on (tiny:// backbones,
fixtures, a capped training budget), never which jobs run. :func:`dag_differences` compares the two
plans job for job: the same rules with the same wildcards, the same number of times, apart from

* the jobs that make the rehearsal's inputs (:data:`REHEARSAL_ONLY_RULES`: the tiny models and the
  synthetic fixtures), which the paper plan cannot have, and
* the wildcards that name where a backbone's files come from (:data:`SOURCE_WILDCARDS`: a fetch's snapshot
  is a Hub revision or ``unpinned`` in the paper, ``tiny`` in the rehearsal), not what the job computes.

``sentrepro rehearsal-check`` (run first by ``make rehearsal``) and ``tests/test_rehearsal.py`` use it, so
an overlay that drops or adds a block, a method, a suite or a table is caught before anything runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sentrepro.planning.workflow import PlannedJob, plan

REHEARSAL_ONLY_RULES = ("tiny_model", "fixture")
SOURCE_WILDCARDS = {"fetch_model": ("snapshot",)}
OVERLAY = Path("profiles") / "rehearsal" / "overlay.yaml"


def job_key(job: PlannedJob) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(rule, sorted wildcards) of a planned job, without the wildcards that name a source."""
    ignored = SOURCE_WILDCARDS.get(job.rule, ())
    return job.rule, tuple(sorted((k, v) for k, v in job.wildcards.items() if k not in ignored))


def describe(key: tuple[str, tuple[tuple[str, str], ...]]) -> str:
    rule, wildcards = key
    return f"{rule}({', '.join(f'{k}={v}' for k, v in wildcards)})" if wildcards else rule


def dag_differences(paper: list[PlannedJob], rehearsal: list[PlannedJob]) -> list[str]:
    """One line per job the two plans do not share (with how many times each plans it); empty when the
    rehearsal plans the paper's DAG job for job. A plan without any job raises: nothing was compared."""
    if not paper or not rehearsal:
        raise ValueError("a plan with no jobs: nothing to compare (was the dry run read?)")
    wanted = Counter(job_key(job) for job in paper)
    got = Counter(job_key(job) for job in rehearsal if job.rule not in REHEARSAL_ONLY_RULES)
    lines = []
    for key in sorted(set(wanted) | set(got)):
        if wanted[key] != got[key]:
            lines.append(f"{describe(key)}: paper plans it {wanted[key]}x, the rehearsal {got[key]}x")
    return lines


def check(config: str | Path = "config.yaml", overlay: str | Path = OVERLAY, workdir: str | Path | None = None
          ) -> tuple[list[PlannedJob], list[PlannedJob], list[str]]:
    """Plan ``config`` alone and with ``overlay`` on top (``snakemake -n --forceall``, as `sentrepro cost`
    plans); return both plans and their :func:`dag_differences`."""
    paper = plan([config], workdir)
    rehearsal = plan([config, overlay], workdir)
    return paper, rehearsal, dag_differences(paper, rehearsal)
