"""The jobs the workflow plans for a config, read from Snakemake's own dry run.

``sentrepro cost`` counts jobs from this plan, so it cannot disagree with ``snakemake -n``: it runs
``snakemake -n --forceall`` (every job, as on a fresh checkout) on the workflow's Snakefile with
exactly the given config files (``--replace-workflow-config``: the Snakefile's default config.yaml is
not merged in) and reads each job's rule and wildcards. The per-rule counts are checked against the
dry run's "Job stats" table; output that cannot be read raises :class:`PlanError`, never "no jobs".

The Snakefile is found, not assumed beside the package (an installed package has none): the first
``Snakefile`` in the config file's directory or one of its parents, else in the working directory or one
of its parents (:func:`find_snakefile`). Nothing else in the package needs it: validating a config
(``sentrepro check-config``) reads only package data.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

SNAKEFILE = "Snakefile"
_JOB = re.compile(r"^\s*(?:local)?rule (\w+):\s*$")
_WILDCARDS = re.compile(r"^\s*wildcards: (.*)$")


class PlanError(RuntimeError):
    """The dry run failed or its output could not be read; the message quotes it."""


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    wildcards: dict


def parse_job_stats(text: str) -> dict[str, int]:
    """Rule -> count from a dry run's "Job stats" table; {} for "Nothing to be done"; else PlanError."""
    if "Job stats:" not in text:
        if "Nothing to be done" in text:
            return {}
        raise PlanError("no 'Job stats' table and no 'Nothing to be done' in the dry run:\n" + text[-3000:])
    counts: dict[str, int] = {}
    for line in text.split("Job stats:", 1)[1].splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    if not counts:
        raise PlanError("an empty 'Job stats' table in the dry run:\n" + text[-3000:])
    return counts


def parse_jobs(text: str) -> list[PlannedJob]:
    """Every job block (``rule <name>:`` with its ``wildcards:`` line) of a dry run, checked against the
    "Job stats" table of the same output."""
    jobs: list[PlannedJob] = []
    rule = None
    wildcards: dict = {}
    for line in text.splitlines():
        start = _JOB.match(line)
        if start:
            if rule is not None:
                jobs.append(PlannedJob(rule, wildcards))
            rule, wildcards = start.group(1), {}
            continue
        found = _WILDCARDS.match(line)
        if found and rule is not None:
            wildcards = dict(item.split("=", 1) for item in found.group(1).split(", "))
    if rule is not None:
        jobs.append(PlannedJob(rule, wildcards))
    stats = parse_job_stats(text)
    counted = dict(Counter(job.rule for job in jobs))
    if counted != stats:
        raise PlanError(f"the dry run lists jobs {counted} but its Job stats table says {stats}")
    return jobs


def find_snakefile(*starts: str | Path) -> Path:
    """The workflow's Snakefile: the first ``Snakefile`` in a start directory or one of its parents, the
    starts tried in order; :class:`PlanError` naming them when there is none."""
    tried = []
    for start in starts:
        folder = Path(start).resolve()
        for candidate in [folder, *folder.parents]:
            if (candidate / SNAKEFILE).is_file():
                return candidate / SNAKEFILE
        tried.append(str(folder))
    raise PlanError(f"no {SNAKEFILE} in {' or '.join(tried)} or their parents: run this in the workflow's "
                    "directory (a sentrepro checkout), or keep the config file inside it")


def plan(configfiles: list[str | Path], workdir: str | Path | None = None, *, timeout: int = 600,
         snakefile: str | Path | None = None) -> list[PlannedJob]:
    """Every job ``snakemake -n --forceall`` plans for ``configfiles`` (later files overlay earlier ones),
    run in ``workdir`` (default: the current directory, where relative config paths are resolved), with
    ``snakefile`` (default: :func:`find_snakefile` from the first config file's directory, then the
    working directory)."""
    if snakefile is None:
        snakefile = find_snakefile(Path(configfiles[0]).resolve().parent, os.getcwd())
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir or os.getcwd()),
               "-n", "--forceall", "--cores", "1", "--replace-workflow-config",
               "--configfiles", *[str(Path(p).resolve()) for p in configfiles]]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    text = result.stdout + result.stderr
    if result.returncode != 0:
        raise PlanError(f"snakemake -n failed ({result.returncode}):\n{text[-4000:]}")
    return parse_jobs(text)


def plan_config(config: dict, workdir: str | Path | None = None) -> list[PlannedJob]:
    """:func:`plan` for a config already loaded (written to a temporary file for Snakemake)."""
    with tempfile.TemporaryDirectory(prefix="sentrepro-plan-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return plan([path], workdir, snakefile=find_snakefile(workdir or os.getcwd()))
