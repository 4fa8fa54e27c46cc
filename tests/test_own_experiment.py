"""CONTRIBUTING.md's "Your own experiment", followed on a copy of a finished tiny run: a new method kind
(module + sidecar) and an overlay of at most 15 lines that names neither the base's matrix blocks nor its
suites. The tiny run's overlay stands in for the demo's (the "demo + my method" form: the finished
experiment's files, then mine). The same layers go to ``sentrepro check-config`` and ``snakemake``; the plan
is exactly the new run's jobs and the summary that shows it; the run then trains, appears in the demo
summary, and a second plan has nothing to do. The sidecar's ``default:`` is in the job's resolved spec.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.test_config_layers import MODULE, SIDECAR
from tests.workflow_helpers import copy_checkout, only_units, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

EXP = "wfown"
RUN = "tiny-bert/meancse/seed1"
# The user's whole overlay: a method of the new kind and one matrix block that runs it. Nothing else.
MY_OVERLAY = """\
# my.yaml: the finished experiment plus my method
methods:
  meancse:
    kind: meancse
    params: {temperature: 0.05, batch_size: 8, lr: 1.0e-4, max_steps: 4, eval_steps: 2}
matrix:
  mine: {backbones: [tiny-bert], methods: [meancse], seeds: [1]}
"""
# The new run's jobs and what shows it: training, STS at step 0 and after (the demo summary reads both), the
# demo summary (every trained run), and the target rule. No existing job, no table (no spec names meancse).
OWN_PLAN = {"train": 1, "evaluate_sts": 1, "evaluate_sts_start": 1, "demo_summary": 1, "all": 1}


@pytest.fixture(scope="module")
def finished(tmp_path_factory, shared_data, tiny_models):
    """A checkout copy and one finished tiny run of it (STS, a table, the demo summary)."""
    root = tmp_path_factory.mktemp("own")
    repo = copy_checkout(root / "checkout")
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXP)
    overlay["evaluation"]["suites"] = only_units("suites", ["sts"])
    overlay["evaluation"]["figures"] = only_units("figures", [])
    overlay["tables"] = ["sts_main"]
    overlay["demo_summary"] = {"enabled": True}
    write_overlay(root / "work", overlay)
    snakemake(root / "work", repo=repo)
    return repo, root / "work"


@pytest.fixture(scope="module")
def own(finished, tmp_path_factory):
    """The recipe on a copy of the finished run: the kind's two files, my.yaml; the plan, then the run."""
    root = tmp_path_factory.mktemp("own-copy")
    repo, workdir = root / "checkout", root / "work"
    shutil.copytree(finished[0], repo, symlinks=True)
    shutil.copytree(finished[1], workdir, symlinks=True)
    methods = repo / "src" / "sentrepro" / "methods"
    (methods / "meancse.py").write_text(MODULE)
    (methods / "meancse.units.yaml").write_text(SIDECAR.format(corpus_key="training_corpus"))
    mine = workdir / "my.yaml"
    mine.write_text(MY_OVERLAY)
    checked = subprocess.run([sys.executable, "-m", "sentrepro.cli", "check-config", "--configfiles",
                              str(workdir / "overlay.yaml"), str(mine)], cwd=repo, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(repo / "src")}, timeout=300)
    plan = planned_jobs(snakemake(workdir, "-n", repo=repo, overlay=workdir / "overlay.yaml", extra=[mine]))
    snakemake(workdir, repo=repo, extra=[mine])
    return repo, workdir, checked, plan


def test_the_overlay_is_short_and_restates_neither_matrix_nor_suites():
    assert len(MY_OVERLAY.splitlines()) <= 15
    assert "suites" not in MY_OVERLAY and "simcse:" not in MY_OVERLAY.replace("meancse:", "")
    assert "tiny-simcse" not in MY_OVERLAY and "tiny-frozen" not in MY_OVERLAY  # the base's block names


def test_check_config_reads_the_same_layers(own):
    _, _, checked, _ = own
    assert checked.returncode == 0, checked.stderr
    assert f"experiment '{EXP}', 3 runs" in checked.stdout  # the finished two and mine


def test_the_plan_is_the_new_run_and_what_shows_it(own):
    _, _, _, plan = own
    assert plan == OWN_PLAN


def test_the_new_run_trains_with_the_sidecar_default_and_shows_in_the_summary(own):
    repo, workdir, _, _ = own
    summary = json.loads((workdir / "results" / EXP / "runs" / RUN / "train.json").read_text())
    assert summary["steps"] == 4
    assert "meancse" in (workdir / "results" / EXP / "tables" / "demo_summary.csv").read_text()
    log = (workdir / "results" / EXP / "logs" / "train" / "tiny-bert" / "meancse" / "seed1.log")
    assert log.exists()
    planned = snakemake(workdir, "-n", "-p", "--forceall", f"results/{EXP}/runs/{RUN}/train.json", repo=repo,
                        extra=[workdir / "my.yaml"])
    spec = json.loads(planned.stdout.split("sentrepro train --spec '", 1)[1].split("'", 1)[0])
    assert spec["method"]["params"]["max_seq_length"] == 32  # the sidecar's default, in the job's spec
    assert planned_jobs(snakemake(workdir, "-n", repo=repo, extra=[workdir / "my.yaml"])) == {}
