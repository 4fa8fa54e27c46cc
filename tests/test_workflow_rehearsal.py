"""A slice of the rehearsal through the real rules: one block per backbone family, on the rehearsal's own overlay.

config.yaml + profiles/rehearsal/overlay.yaml (unchanged) + a slice that keeps three small blocks: PromptBERT
on the tiny uncased BERT (the paper's BERT templates), ConPVP on the tiny RoBERTa-large (RoBERTa's templates
and its Table 2 batch of 256) and MoCoUTRL on the tiny DeBERTa (WordNet views), plus a frozen baseline. Every
job runs as the rehearsal runs it: tiny models built and fetched, fixtures downloaded, checked and parsed, two
training steps, the STS suite on the synthetic SentEval STS, the tables and the verdicts. The whole rehearsal
(`make rehearsal`) is not in the test suite: it takes half an hour on two cores (BENCHMARKS.md).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sentrepro.planning.rehearsal import OVERLAY
from tests.workflow_helpers import REPO, only_blocks, only_units, snakemake, write_overlay

pytestmark = pytest.mark.slow

SLICE = {
    "matrix": only_blocks({
        "slice-bert": {"backbones": ["bert-base"], "methods": ["promptbert", "frozen-avg"], "seeds": [0]},
        "slice-roberta": {"backbones": ["roberta-large"], "methods": ["conpvp"], "seeds": [42]},
        "slice-deberta": {"backbones": ["deberta-base"], "methods": ["mocoutrl"], "seeds": [42]},
    }),
    "evaluation": {"suites": only_units("suites", ["sts"]), "figures": only_units("figures", [])},
}
RUNS = {("bert-base", "promptbert", "seed0"): "bert-uncased/base", ("bert-base", "frozen-avg", "frozen"): "bert-uncased/base",
        ("roberta-large", "conpvp", "seed42"): "roberta/large", ("deberta-base", "mocoutrl", "seed42"): "deberta/base"}


@pytest.fixture(scope="module")
def rehearsal_slice(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("wf-rehearsal")
    snakemake(workdir, overlay=REPO / OVERLAY, extra=[write_overlay(workdir, SLICE)], timeout=1500)
    return workdir / "results" / "rehearsal"


def test_each_family_trains_two_steps_on_its_tiny_stand_in(rehearsal_slice):
    for (backbone, method, run), tiny in RUNS.items():
        metrics = json.loads((rehearsal_slice / "metrics" / backbone / method / run / "sts.json").read_text())
        config = metrics["provenance"]["config"]
        assert config["backbone"]["model"] == f"tiny://{tiny}"
        assert set(metrics["results"]) >= {"STS12", "STS16", "STSBenchmark", "SICKRelatedness", "avg"}
        if run == "frozen":
            continue
        summary = json.loads((rehearsal_slice / "runs" / backbone / method / run / "train.json").read_text())
        assert summary["steps"] == 2 and [h["step"] for h in summary["history"]] == [2]
        assert summary["provenance"]["config"]["method"]["params"]["batch_size"] == \
            {"promptbert": 256, "conpvp": 256, "mocoutrl": 8}[method]  # the paper's, not the rehearsal's


def test_every_filled_cell_says_it_is_a_tiny_stand_in(rehearsal_slice):
    with open(rehearsal_slice / "tables" / "sts_main.csv", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["value"]]
    assert len(rows) >= 2 * 8  # sts_main shows the slice's BERT-base runs (PromptBERT, frozen avg.)
    assert all("tiny random" in row["row"] for row in rows)
    table3 = (rehearsal_slice / "tables" / "conpvp_table3.md").read_text(encoding="utf-8")
    assert "[tiny random roberta/large in place of roberta-large]" in table3


def test_no_verdict_of_a_rehearsal_is_judged(rehearsal_slice):
    from sentrepro.verdicts.stats import HOLDS, INCONCLUSIVE, REVERSED

    page = (rehearsal_slice / "verdicts.md").read_text(encoding="utf-8")
    assert "Judged on the papers' backbones and real data: 0 — 0 holds" in page
    with open(rehearsal_slice / "verdicts.csv", encoding="utf-8") as handle:
        verdicts = {row["verdict"] for row in csv.DictReader(handle)}
    assert verdicts and not verdicts & {HOLDS, REVERSED, INCONCLUSIVE}


def test_an_audit_of_a_rehearsal_cell_passes_and_names_the_stand_in(rehearsal_slice, monkeypatch, capsys):
    from sentrepro.cli import main

    monkeypatch.chdir(rehearsal_slice.parents[1])  # the workflow's directory: provenance paths are relative to it
    table = Path("results/rehearsal/tables/mocoutrl_table1.csv")
    with open(table, encoding="utf-8") as handle:
        row = next(r for r in csv.DictReader(handle) if r["value"] and "tiny random deberta/base" in r["row"])
    assert main(["audit", str(table), row["row"], row["column"]]) == 0
    assert "tiny random deberta/base in place of deberta-base" in capsys.readouterr().out
    assert main(["audit", str(table), "--random", "3", "--seed", "1"]) == 0  # make rehearsal's own check
    assert capsys.readouterr().out.count("ok   results/rehearsal/tables/mocoutrl_table1.csv") == 3
