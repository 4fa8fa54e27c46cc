"""The evaluation plan: which suites, runs and figures a config asks for, and its error messages."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from sentrepro.planning.config import ConfigError, load_config, load_yaml, validate
from sentrepro.planning.matrix import runs
from sentrepro.planning import evaluations as plan
from sentrepro.evaluation.subsets import SubsetLog, subset_rows

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper_config() -> dict:
    return load_config(REPO / "config.yaml")


def test_runs_filter_selects_backbones_and_methods(paper_config):
    config = copy.deepcopy(paper_config)
    config["evaluation"]["clustering"]["runs"] = {"backbones": ["bert-base"], "methods": ["simcse", "frozen-cls"]}
    clustering = plan.suite_runs(config, "clustering")
    assert {(r.backbone, r.method) for r in clustering} == {("bert-base", "simcse"), ("bert-base", "frozen-cls")}
    assert clustering == [r for r in runs(config) if r.backbone == "bert-base" and r.method in ("simcse", "frozen-cls")]
    config["evaluation"]["clustering"]["runs"] = {"methods": ["frozen-cls"]}
    assert {r.backbone for r in plan.suite_runs(config, "clustering")} == {"bert-base", "roberta-base"}
    config["evaluation"]["clustering"]["runs"] = None  # null = every run (how an overlay lifts a filter)
    assert plan.suite_runs(config, "clustering") == runs(config) == plan.suite_runs(config, "sts")


def test_every_enabled_suite_and_figure_of_the_paper_config_is_planned(paper_config):
    suites = plan.enabled_suites(paper_config)
    assert suites[0] == "sts" and "transfer" in suites
    for suite in suites:
        assert plan.suite_runs(paper_config, suite), f"suite {suite} selects no run"
    for figure in plan.enabled_figures(paper_config):
        assert figure in suites


def test_suite_settings_leave_out_scheduling_and_carry_sts_for_analyses(paper_config):
    settings = plan.suite_settings(paper_config, "transfer")
    assert "runs" not in settings and "resources" not in settings
    assert settings["mode"] == "test" and settings["batch_size"] == 128
    assert plan.suite_settings(paper_config, "tsne")["sts"]["stsb_dir"] == "STS/STSBenchmark"
    assert plan.suite_source(paper_config, "tsne") == paper_config["evaluation"]["sts"]["source"]
    assert plan.suite_source(paper_config, "anisotropy") is None


def _broken(_paper_config, edit) -> str:
    config = load_yaml(REPO / "config.yaml")  # the file's form (named blocks, suites as name: true)
    edit(config)
    with pytest.raises(ConfigError) as error:
        validate(config)
    return str(error.value)


def test_config_errors_name_the_key(paper_config):
    message = _broken(paper_config, lambda c: c["evaluation"]["transfer"].update(source="nowhere"))
    assert "evaluation.transfer.source: unknown source 'nowhere'" in message
    message = _broken(paper_config, lambda c: c["evaluation"]["clustering"]["runs"].update(backbones=["bert-xl"]))
    assert "evaluation.clustering.runs.backbones: unknown backbone 'bert-xl'" in message
    message = _broken(paper_config, lambda c: c["evaluation"].update(figures={"tsne": True}, suites={"sts": True}))
    assert "figure 'tsne' needs suite 'tsne'" in message
    message = _broken(paper_config, lambda c: c["evaluation"]["wos"].update(levl="level1"))
    assert "evaluation.wos.levl" in message


def test_subset_rows_are_stratified_sorted_and_reproducible():
    labels = np.array([0] * 80 + [1] * 20)
    rows = subset_rows(labels, 30, seed=3)
    assert len(rows) == 30 and np.all(np.diff(rows) > 0)
    assert np.sum(labels[rows] == 1) == 6  # the 80/20 ratio survives
    assert np.array_equal(rows, subset_rows(labels, 30, seed=3))
    assert np.array_equal(subset_rows(labels, None, seed=3), np.arange(100))
    assert np.array_equal(subset_rows(labels, 500, seed=3), np.arange(100))


def test_subset_log_records_what_was_cut():
    log = SubsetLog(10, 0)
    log.take("MR", "all", np.array([0, 1] * 20))
    log.take("TREC", "test", np.array([0, 1, 2]))
    assert log.record() == {"max_samples": 10, "seed": 0, "applied": True,
                            "sizes": {"MR": {"all": [10, 40]}, "TREC": {"test": [3, 3]}}}
    assert SubsetLog(None, 0).record()["applied"] is False


def test_a_figure_whose_suite_selects_no_run_is_not_drawn():
    config = load_yaml(REPO / "config.yaml")
    config["evaluation"]["tsne"]["runs"] = {"methods": ["frozen-cls"], "backbones": ["bert-large"]}
    config = validate(config)  # not an error: overlays with other backbones must still plan
    assert "tsne" in plan.enabled_figures(config) and "tsne" not in plan.drawable_figures(config)
    assert "cosine_gold" in plan.drawable_figures(config)
