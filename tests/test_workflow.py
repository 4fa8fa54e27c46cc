"""The workflow end to end on a tiny config: DAG, rerun-only-what-changed, tables and the audit chain."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentrepro.audit import audit_cell
from tests.workflow_helpers import REPO, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, shared_data, tiny_models):
    """One complete run of the workflow; tests below reuse (copies of) it."""
    workdir = tmp_path_factory.mktemp("wf")
    write_overlay(workdir, {**tiny_overlay(shared_data, tiny_models), "demo_summary": {"enabled": True}})
    snakemake(workdir)
    return workdir


def test_tables_written_with_reported_numbers(finished_run):
    table = finished_run / "results" / "wftest" / "tables" / "sts_main.csv"
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["table", "row", "column", "value", "std", "n", "reported", "provenance"]
    simcse = [r for r in rows if r["row"].startswith("BERT-base SimCSE") and r["column"] == "STS-B"]
    assert len(simcse) == 1 and simcse[0]["value"] and simcse[0]["reported"] == "76.85"
    assert "tiny-bert in place of bert-base" in simcse[0]["row"]
    assert simcse[0]["provenance"].startswith("results/wftest/metrics/tiny-bert/simcse/seed1/sts.json#sha256=")
    assert (finished_run / "results" / "wftest" / "tables" / "sts_main.md").read_text().count("|") > 20


def test_second_run_does_nothing(finished_run):
    assert planned_jobs(snakemake(finished_run, "-n")) == {}


def _edit_overlay(workdir, edit):
    path = workdir / "overlay.yaml"
    overlay = yaml.safe_load(path.read_text())
    edit(overlay)
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))


def test_learning_rate_change_reruns_only_that_training(finished_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    _edit_overlay(workdir, lambda o: o["methods"]["simcse"]["per_backbone"]["tiny-bert"].update(lr=5e-5))
    jobs = planned_jobs(snakemake(workdir, "-n"))
    # the step-0 evaluation reads the method's params too (they may shape the untrained model), and the summary
    assert jobs == {"train": 1, "evaluate_sts": 1, "evaluate_sts_start": 1, "demo_summary": 1,
                    "table": len(tables_reading("simcse")), "all": 1}


def test_unrelated_change_reruns_nothing(finished_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)

    def edit(overlay):
        overlay["methods"]["simcse"]["per_backbone"]["bert-large"] = {"lr": 2e-5}  # a backbone not in the matrix
        overlay["backbones"]["tiny-bert"]["resources"] = {"mem_mb": 1234}  # scheduling only

    _edit_overlay(workdir, edit)
    assert planned_jobs(snakemake(workdir, "-n")) == {}


def test_audit_chain_and_tamper_detection(finished_run, tmp_path, monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    table = workdir / "results" / "wftest" / "tables" / "sts_main.csv"
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    text = report.text()
    assert report.ok, text
    for needle in ("metrics: results/wftest/metrics/tiny-bert/simcse/seed1/sts.json", "training summary",
                   "tokenized corpus", "dataset manifest", "download record", "STS-B dev", "best checkpoint"):
        assert needle in text
    # tamper with a raw data file deep in the chain: the audit names it
    tampered = workdir / "resources" / "corpus" / "wiki-sample" / "sentences.txt"
    tampered.write_text(tampered.read_text() + "an extra sentence\n")
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert not report.ok
    assert any("resources/corpus/wiki-sample/sentences.txt" in p for p in report.problems)


def test_step0_score_recorded_and_demo_summary_built(finished_run, tmp_path, monkeypatch):
    """Each run records its untrained dev score; the summary table, its audit chain and the job times exist."""
    results = finished_run / "results" / "wftest"
    summary = json.loads((results / "runs" / "tiny-bert" / "simcse" / "seed1" / "train.json").read_text())
    assert summary["history"][0]["step"] == 0 and summary["best_step"] > 0
    assert summary["start_stsb_dev_spearman"] == summary["history"][0]["stsb_dev_spearman"]
    assert summary["provenance"]["config"]["training"]["eval_at_start"] is True
    log = (results / "logs" / "train" / "tiny-bert" / "simcse" / "seed1.log").read_text()
    assert "[train tiny-bert/simcse/seed1] step 0 (before training): STS-B dev spearman" in log
    assert "[train tiny-bert/simcse/seed1] step 4/4 (100%)" in log
    start = json.loads((results / "metrics" / "tiny-bert" / "simcse" / "seed1" / "sts_start.json").read_text())
    assert start["provenance"]["step"] == "evaluate_sts_start" and "STSBenchmark" in start["results"]
    with open(results / "tables" / "demo_summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["row"] for r in rows} == {"simcse (tiny-bert, seed 1)"}  # trained runs only
    assert {r["column"] for r in rows} >= {"STS-B test before", "STS-B test after", "change", "training steps"}
    assert "| simcse (tiny-bert, seed 1) |" in (results / "tables" / "demo_summary.md").read_text()
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    report = audit_cell(Path("results/wftest/tables/demo_summary.csv"), "simcse", "STS-B test before")
    assert report.ok and "metrics/tiny-bert/simcse/seed1/sts_start.json" in report.text(), report.text()
    times = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "times", "results/wftest", "resources"],
                           capture_output=True, text=True, check=True).stdout
    for step in ("train", "evaluate_sts_start", "demo_summary", "tokenize", "total"):
        assert f"\n{step} " in "\n" + times, times


def test_dry_run_of_full_paper_config_lists_each_download_once(tmp_path):
    overlay = write_overlay(tmp_path, {})
    result = snakemake(tmp_path, "-n", "--quiet", "rules", overlay=overlay)
    jobs = planned_jobs(result)
    # every data source is fetched by one job (tests/test_data_workflow.py checks each is listed once)
    assert jobs["download"] >= len({"wiki1m", "senteval", "clustering", "wos"})
    assert jobs["check_dataset"] == len({"senteval", "clustering", "wos"})
    # one cache per (vocabulary, corpus), shared by every run that needs it: the sentences corpus for
    # bert-base-uncased (BERT base + large) and roberta-base (RoBERTa base + large); MoCoUTRL's views corpus
    # for the three backbones it runs on (deberta-base, bert-base, roberta-base)
    assert jobs["tokenize"] == 5
    assert jobs["train"] > 10 * jobs["tokenize"]
    assert jobs["train"] >= 16


# --- paper tables, the audit of a real cell, the report -------------------------------------------


def tables_reading(method: str, backbone: str = "bert-base", suite: str = "sts") -> list[str]:
    """The tables of config.yaml with a cell read from (backbone, method, suite)."""
    from sentrepro.tables.plan import cell_keys
    from sentrepro.tables.spec import load_spec

    names = yaml.safe_load((REPO / "config.yaml").read_text())["tables"]
    return [n for n in names if (backbone, method, suite) in cell_keys(load_spec(n))]


def test_every_table_written_in_every_format(finished_run):

    tables = finished_run / "results" / "wftest" / "tables"
    for name in yaml.safe_load((REPO / "config.yaml").read_text())["tables"]:
        for suffix in (".md", ".csv", ".seeds.csv", ".tex", ".html"):
            assert (tables / f"{name}{suffix}").stat().st_size > 0, f"{name}{suffix}"
        with open(tables / f"{name}.csv", newline="") as handle:
            assert next(csv.reader(handle)) == ["table", "row", "column", "value", "std", "n", "reported",
                                                "provenance"]
    markdown = (tables / "conpvp_table3.md").read_text()
    assert "best of N seeds (N = 1" in markdown and "tiny-bert fills the bert-base cells" in markdown
    assert "| BERT-base ConSERT † (reported only) | – (64.64†) |" in markdown
    assert r"\toprule" in (tables / "conpvp_table3.tex").read_text()


def test_audit_of_a_paper_table_cell_prints_the_chain_and_names_a_changed_checkpoint(finished_run, tmp_path,
                                                                                      monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    table = workdir / "results" / "wftest" / "tables" / "conpvp_table3.csv"
    report = audit_cell(table, "BERT-base SimCSE", "Avg.")
    text = report.text()
    assert report.ok, text
    for needle in ("paper: 76.25 transcribed from conpvp-paper.txt:104",
                   "metrics: results/wftest/metrics/tiny-bert/simcse/seed1/sts.json",
                   "training summary: results/wftest/runs/tiny-bert/simcse/seed1/train.json",
                   "selected step ", "dev history", "training log: results/wftest/logs/train/tiny-bert/simcse/seed1.log",
                   "config slice:", "| code ", "torch ", "SLURM job -", "tokenized corpus:", "download record",
                   "best checkpoint file"):
        assert needle in text, needle
    checkpoint = next((workdir / "results" / "wftest" / "runs" / "tiny-bert" / "simcse" / "seed1" / "best")
                      .glob("*.safetensors"))
    checkpoint.write_bytes(checkpoint.read_bytes() + b"\0")
    report = audit_cell(table, "BERT-base SimCSE", "Avg.")
    assert not report.ok
    assert any(str(checkpoint.relative_to(workdir)) in problem for problem in report.problems), report.problems


def test_report_command_builds_a_self_contained_report_with_every_table(finished_run, tmp_path):

    out = tmp_path / "report.html"
    snakemake(finished_run, "--report", str(out))
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or "<html" in html[:2000]
    assert "sentrepro regenerates the experiment tables" in html  # workflow/report/workflow.rst
    for name in yaml.safe_load((REPO / "config.yaml").read_text())["tables"]:
        assert f"{name}.html" in html, name
    assert "ConPVP Table 3: Spearman correlation" in html  # a table caption (workflow/report/tables/*.rst)
    assert "demo_summary.html" in html
    for figure in (finished_run / "results" / "wftest" / "figures").glob("*.png"):
        assert figure.name in html, figure.name
