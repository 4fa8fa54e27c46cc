"""`sentrepro cost`: job counts are the workflow's own plan (`snakemake -n`); hours follow the documented estimates."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from sentrepro.planning import registry
from sentrepro.planning.config import load_config
from sentrepro.planning.cost import CostError, estimate, load_estimates, training_steps
from sentrepro.planning.workflow import PlanError, find_snakefile, parse_job_stats, parse_jobs, plan
from tests.workflow_helpers import planned_jobs, snakemake, write_overlay

REPO = Path(__file__).resolve().parents[1]
# Planning the paper config (621 jobs) costs seconds of CPU per plan: the tests that read a plan are in the heavy
# tier (`make test` runs them; `make test-fast` leaves them out); the parser's unit test stays in the fast one.
PLANS = pytest.mark.heavy


@pytest.fixture(scope="module")
def paper_config() -> dict:
    return load_config(REPO / "config.yaml")


@pytest.fixture(scope="module")
def paper_jobs(tmp_path_factory) -> list:
    """The jobs of config.yaml as `sentrepro cost` plans them (one dry run, in an empty directory)."""
    return plan([REPO / "config.yaml"], tmp_path_factory.mktemp("plan"))


@PLANS
def test_paper_config_counts_are_the_jobs_snakemake_plans(paper_config, paper_jobs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no prepared corpus here: the known wiki1m size is used
    est = estimate(paper_config, jobs=paper_jobs)
    # the dry run as a user types it, parsed independently (its Job stats table)
    stats = planned_jobs(snakemake(tmp_path, "-n", overlay=write_overlay(tmp_path, {})))
    assert est.training_jobs == stats["train"] > 100
    evaluation_rules = {f"evaluate_{suite}" for suite in registry.suites()}  # evaluate.smk: a rule per suite
    assert est.evaluation_jobs == sum(count for rule, count in stats.items() if rule in evaluation_rules)
    others = {rule: n for rule, n in stats.items()
              if rule not in ("train", "all") and rule not in evaluation_rules}
    assert est.other_jobs == others
    assert est.other_jobs["tokenize"] == 5  # sentences and views corpora per vocabulary, not one per tokenizer
    assert est.total_hours == pytest.approx(est.training_hours + est.evaluation_hours)
    assert est.training_hours > 10


def test_plan_parsing_fails_loudly():
    assert parse_job_stats("Building DAG of jobs...\nNothing to be done (all requested files are present).") == {}
    with pytest.raises(PlanError, match="no 'Job stats' table"):
        parse_job_stats("Error in rule train")
    with pytest.raises(PlanError, match="Job stats table says"):
        parse_jobs("rule train:\n    wildcards: backbone=b\nJob stats:\njob count\n--- -----\ntrain 2\ntotal 2\n")


@PLANS
def test_simcse_bert_base_hours_follow_the_stated_assumptions(paper_config, paper_jobs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    estimates = load_estimates()
    line = next(t for t in estimate(paper_config, estimates, paper_jobs).training
                if (t.backbone, t.method) == ("bert-base", "simcse"))
    # wiki1m: 1,000,000 sentences at batch 64, one epoch; two dropout views per sentence; dev every 125 steps
    assert line.size == "base" and line.steps == math.ceil(1_000_000 / 64) == 15625
    per_step = 64 * 2 * estimates["seconds_per_sequence_pass"]["base"]  # registry: simcse's cost.encoder_passes 2
    assert line.seconds_per_step == pytest.approx(per_step)
    assert line.dev_evaluations == 15625 // 125
    expected = 15625 * per_step + 125 * estimates["seconds_per_dev_evaluation"]["base"]
    assert line.hours == pytest.approx(line.seeds * expected / 3600)
    large = next(t for t in estimate(paper_config, estimates, paper_jobs).training
                 if (t.backbone, t.method) == ("bert-large", "simcse"))
    assert large.size == "large" and large.seconds_per_step > line.seconds_per_step


@PLANS
def test_max_steps_wins_and_an_unknown_corpus_is_an_error_naming_the_key(paper_config, paper_jobs, tmp_path,
                                                                         monkeypatch):
    assert training_steps({"max_steps": 60, "batch_size": 32}, None, "x") == 60
    assert training_steps({"batch_size": 256, "epochs": 5}, 1000, "x") == 20
    config = copy.deepcopy(paper_config)
    config["corpus"]["name"] = "my-corpus"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CostError, match="corpus.max_sentences"):
        estimate(config, jobs=paper_jobs)


@PLANS
def test_cost_command_on_the_paper_config(paper_jobs, tmp_path, monkeypatch, capsys):
    from sentrepro.planning import workflow as workflow_plan
    from sentrepro.cli import main

    # config.yaml alone was planned by the same function for `paper_jobs` (checked above against the dry run as a
    # user types it): the command gets that plan back instead of a second identical dry run, after checking that
    # it asked for exactly that file; any other files (the demo overlay below) are planned for real.
    real_plan, calls = workflow_plan.plan, []

    def plan(configfiles, *args, **kwargs):
        calls.append([str(Path(p).resolve()) for p in configfiles])
        return paper_jobs if calls[-1] == [str(REPO / "config.yaml")] else real_plan(configfiles, *args, **kwargs)

    monkeypatch.setattr(workflow_plan, "plan", plan)
    monkeypatch.chdir(tmp_path)
    assert main(["cost", str(REPO / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Cost estimate for experiment 'paper'" in out and "cost_estimates.yaml" in out
    assert "bert-base      simcse" in out and "GPU-hours" in out and "reference GPU).\n\nDisk: " in out
    assert out.rstrip().endswith("(same file system as results/).")  # the disk part last, its assumptions with it
    assert main(["cost", str(REPO / "config.yaml"), str(REPO / "profiles" / "demo" / "overlay.yaml")]) == 0
    assert "experiment 'demo'" in capsys.readouterr().out
    assert calls == [[str(REPO / "config.yaml")], [str(REPO / "config.yaml"), str(REPO / "profiles/demo/overlay.yaml")]]


def test_the_snakefile_is_found_from_the_config_not_beside_the_package(tmp_path):
    """An installed package has no Snakefile beside it: the plan's Snakefile is the first one in the config
    file's folder or its parents (then the working directory's), and none is an error naming where it looked."""
    assert find_snakefile(REPO / "profiles" / "demo") == REPO / "Snakefile"
    assert find_snakefile(tmp_path, REPO / "workflow") == REPO / "Snakefile"
    with pytest.raises(PlanError, match=f"no Snakefile in {tmp_path}"):
        find_snakefile(tmp_path)
