"""The demo's closing table, the training progress line and the per-step job times (small inputs)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from sentrepro.records.audit import audit_cell
from sentrepro.tables.demo_summary import COLUMNS, SummaryError, paper_context, write_summary
from sentrepro.records.job_times import BenchmarkError, collect, format_times
from sentrepro.training.progress import StepProgress
from sentrepro.planning.reported import load_reported


def _metrics(path, spearman, inputs=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"suite": "sts", "results": {"STSBenchmark": {"reported": spearman}},
                                "provenance": {"step": "evaluate_sts", "inputs": list(inputs)}}))
    return path


def _run(tmp_path, method="promptbert", before=37.4, after=79.1):
    root = tmp_path / "results" / method
    train = root / "train.json"
    train.parent.mkdir(parents=True)
    train.write_text(json.dumps({"steps": 30, "train_seconds_this_job": 61.25, "history": [],
                                 "provenance": {"step": "train", "inputs": []}}))
    return {"backbone": "minilm", "method": method, "seed": 42, "train": str(train),
            "before": str(_metrics(root / "sts_start.json", before)), "after": str(_metrics(root / "sts.json", after))}


def test_paper_context_comes_from_the_table_specs_on_the_first_stand_in_with_a_row():
    reported = load_reported()
    value, backbone = paper_context("promptbert", ["bert-base", "roberta-base"], reported)
    assert (value.value, backbone, value.where) == (81.60, "bert-base", "conpvp-paper.txt:106")
    value, backbone = paper_context("mocoutrl", ["bert-base", "deberta-base"], reported)  # published on DeBERTa only
    assert (value.value, backbone) == (82.12, "deberta-base")
    assert paper_context("frozen-cls", ["bert-base"], reported) is None


def test_summary_rows_csv_markdown_and_audit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = [_run(tmp_path), _run(tmp_path, "conpvp", 47.0, 66.5)]
    write_summary(runs, {"minilm": ["bert-base"]}, tmp_path / "demo_summary", "demo")
    records = list(csv.DictReader(io.StringIO((tmp_path / "demo_summary.csv").read_text())))
    assert list(records[0]) == ["table", "row", "column", "value", "std", "n", "reported", "provenance"]
    cell = {(r["row"], r["column"]): r for r in records}
    row = "promptbert (minilm, seed 42)"
    assert [c for (r, c) in cell if r == row] == list(COLUMNS)
    assert float(cell[row, "change"]["value"]) == pytest.approx(79.1 - 37.4)
    assert cell[row, "STS-B test before"]["provenance"].startswith(runs[0]["before"] + "#sha256=")
    context = cell[row, "paper STS-B (context)"]
    assert (context["value"], context["reported"]) == ("", "81.60")
    assert context["provenance"] == "paper=conpvp-paper.txt:106"
    markdown = (tmp_path / "demo_summary.md").read_text()
    assert ("| promptbert (minilm, seed 42) | 37.40 | 79.10 | +41.70 | 30 | 61.2 "
            "| 81.60 (bert-base, conpvp-paper.txt:106) |") in markdown
    report = audit_cell(tmp_path / "demo_summary.csv", "conpvp", "change")
    assert report.ok and "sts_start.json" in report.text() and "sts.json" in report.text()
    # a changed input is named by the audit
    _metrics(tmp_path / "results" / "conpvp" / "sts_start.json", 12.0)
    assert not audit_cell(tmp_path / "demo_summary.csv", "conpvp", "change").ok


def test_summary_names_the_file_without_a_score(tmp_path):
    run = _run(tmp_path)
    (tmp_path / "results" / "promptbert" / "sts.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(SummaryError, match=r"sts\.json: no key results\.STSBenchmark\.reported"):
        write_summary([run], {}, tmp_path / "out", "demo")
    with pytest.raises(SummaryError, match="no trained runs"):
        write_summary([], {}, tmp_path / "out", "demo")


def test_progress_prints_at_most_every_interval_and_at_the_end():
    now = [0.0]
    out = io.StringIO()
    progress = StepProgress("minilm/promptbert/seed42", every_s=10, stream=out, clock=lambda: now[0])
    for step in range(1, 31):
        now[0] += 2.0
        progress(step, 30)
    lines = out.getvalue().splitlines()
    assert lines[0] == "[train minilm/promptbert/seed42] step 6/30 (20%), 10 s, about 40 s left"
    assert lines[-1] == "[train minilm/promptbert/seed42] step 30/30 (100%), 58 s"
    assert len(lines) == 6


def test_job_times_sum_snakemake_benchmarks_per_step(tmp_path):
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for rel, wall, cpu in [("train/minilm/simcse/seed42.tsv", 60.5, 110.0),
                           ("train/minilm/conpvp/seed42.tsv", 90.0, 170.0),
                           ("table/sts_main.tsv", 2.0, 1.5), ("demo_summary.tsv", 1.0, 0.5)]:
        path = tmp_path / "results" / "benchmarks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{wall}\t0:01:00\t1\t1\t1\t1\t0\t0\t50\t{cpu}\n")
    steps = collect([tmp_path / "results", tmp_path / "resources"])
    assert [(s.step, s.jobs, s.wall_s, s.cpu_s) for s in steps] == [("train", 2, 150.5, 280.0), ("table", 1, 2.0, 1.5),
                                                                     ("demo_summary", 1, 1.0, 0.5)]
    assert steps[0].longest == "train/minilm/conpvp/seed42"
    assert "total                       4    153.5    282.0" in format_times(steps, [tmp_path])
    bad = tmp_path / "results" / "benchmarks" / "table" / "bad.tsv"
    bad.write_text("wall\n3\n")
    with pytest.raises(BenchmarkError, match=r"bad\.tsv: no column 's'"):
        collect([tmp_path / "results"])
