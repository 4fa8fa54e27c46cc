"""`sentrepro cost`: job counts match the workflow's own plan; hours follow the documented estimates."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from sentrepro.config import load_config, runs
from sentrepro.cost import CostError, estimate, load_estimates, training_steps

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper_config() -> dict:
    return load_config(REPO / "config.yaml")


def test_paper_config_counts_every_training_and_evaluation_job(paper_config, tmp_path, monkeypatch):
    from sentrepro.evaluation.plan import enabled_suites, suite_runs
    from sentrepro.methods import kind_trains

    monkeypatch.chdir(tmp_path)  # no prepared corpus here: the known wiki1m size is used
    est = estimate(paper_config)
    trained = [r for r in runs(paper_config) if kind_trains(paper_config["methods"][r.method]["kind"])]
    assert est.training_jobs == len(trained) > 100
    suites = set(enabled_suites(paper_config)) | {"sts"}
    assert est.evaluation_jobs == sum(len(suite_runs(paper_config, s)) for s in suites)
    assert {line.suite for line in est.evaluation} == suites
    assert est.total_hours == pytest.approx(est.training_hours + est.evaluation_hours)
    assert est.training_hours > 10


def test_simcse_bert_base_hours_follow_the_stated_assumptions(paper_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    estimates = load_estimates()
    line = next(t for t in estimate(paper_config, estimates).training
                if (t.backbone, t.method) == ("bert-base", "simcse"))
    # wiki1m: 1,000,000 sentences at batch 64, one epoch; two dropout views per sentence; dev every 125 steps
    assert line.size == "base" and line.steps == math.ceil(1_000_000 / 64) == 15625
    per_step = 64 * estimates["encoder_passes"]["simcse"] * estimates["seconds_per_sequence_pass"]["base"]
    assert line.seconds_per_step == pytest.approx(per_step)
    assert line.dev_evaluations == 15625 // 125
    expected = 15625 * per_step + 125 * estimates["seconds_per_dev_evaluation"]["base"]
    assert line.hours == pytest.approx(line.seeds * expected / 3600)
    large = next(t for t in estimate(paper_config, estimates).training
                 if (t.backbone, t.method) == ("bert-large", "simcse"))
    assert large.size == "large" and large.seconds_per_step > line.seconds_per_step


def test_max_steps_wins_and_an_unknown_corpus_is_an_error_naming_the_key(paper_config, tmp_path, monkeypatch):
    assert training_steps({"max_steps": 60, "batch_size": 32}, None, "x") == 60
    assert training_steps({"batch_size": 256, "epochs": 5}, 1000, "x") == 20
    config = copy.deepcopy(paper_config)
    config["corpus"]["name"] = "my-corpus"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CostError, match="corpus.max_sentences"):
        estimate(config)


def test_cost_command_on_the_paper_config(tmp_path, monkeypatch, capsys):
    from sentrepro.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["cost", str(REPO / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Cost estimate for experiment 'paper'" in out and "cost_estimates.yaml" in out
    assert "bert-base      simcse" in out and "GPU-hours" in out and out.rstrip().endswith("reference GPU).")
    assert main(["cost", str(REPO / "config.yaml"), str(REPO / "profiles" / "demo" / "overlay.yaml")]) == 0
    assert "experiment 'demo'" in capsys.readouterr().out
