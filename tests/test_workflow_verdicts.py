"""The verdict rule end to end on tiny BERT: every claim listed, intervals from seeds and STS pairs,
stand-in rows computed but "not judged" (never counted, no stand-in cell "within noise"), the causes
of "not run" named, the audit of a verdict row, and editing claims.yaml reruns only that rule.

Runs: SimCSE and PromptBERT with 3 seeds each (a Welch interval and a paired bootstrap for PromptBERT
Knowl 8's "+2.29 over SimCSE"), a manual prompt and last-layer averaging without fine-tuning (one
seed each: the paired bootstrap alone), all on tiny BERT standing in for BERT-base, on the 7 STS tasks
(the real files of ../shared/data): a claim on the Avg. needs all of them (like with like).
"""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sentrepro.records.audit import audit_verdict
from sentrepro.verdicts.claims import CLAIMS_PATH, load_claims
from tests.workflow_helpers import (REPO, copy_checkout, only_blocks, only_units, planned_jobs, snakemake, tiny_overlay,
                                    write_overlay)

pytestmark = pytest.mark.slow

EXP = "wfverdicts"
STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
SEEDS = [1, 2, 3]


@pytest.fixture(scope="module")
def verdict_run(tmp_path_factory, shared_data, tiny_models):
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXP)
    small = {"max_steps": 3, "eval_steps": 3, "batch_size": 8, "lr": 1e-4}
    overlay["methods"]["promptbert"] = {"params": dict(small), "per_backbone": {"tiny-bert": dict(small)}}
    overlay["matrix"] = only_blocks({"trained": {"backbones": ["tiny-bert"], "methods": ["simcse", "promptbert"], "seeds": SEEDS},
                                     "frozen": {"backbones": ["tiny-bert"], "methods": ["frozen-avg", "manual-prompt"], "seeds": [0]}})
    overlay["evaluation"]["suites"] = only_units("suites", ["sts"])
    overlay["evaluation"]["sts"] = {"tasks": list(STS_TASKS)}  # the paper's 7, from the senteval mirror
    overlay["evaluation"]["figures"] = only_units("figures", [])
    overlay["tables"] = []
    workdir = tmp_path_factory.mktemp("wf-verdicts")
    write_overlay(workdir, overlay)
    snakemake(workdir, timeout=1500)
    return workdir


def _rows(workdir) -> dict[str, dict]:
    with open(workdir / "results" / EXP / "verdicts.csv", newline="", encoding="utf-8") as handle:
        return {r["claim"]: r for r in csv.DictReader(handle)}


def test_every_claim_is_listed_and_stand_ins_are_labelled(verdict_run):
    text = (verdict_run / "results" / EXP / "verdicts.md").read_text(encoding="utf-8")
    claims = load_claims()
    for claim in claims["claims"] + claims["not_checked"]:
        assert f"`{claim['id']}`" in text or f"| {claim['id']} |" in text, claim["id"]
    assert "**Stand-in/synthetic run.**" in text
    assert "[tiny-bert in place of bert-base]" in text
    rows = _rows(verdict_run)
    assert list(rows) == [c["id"] for c in claims["claims"]]
    assert rows["conpvp-t3-vs-simcse-bert-base"]["verdict"] == "not run"       # no ConPVP run here
    assert rows["conpvp-t3-vs-simcse-bert-base"]["not_run_cause"] == "no run in this experiment"
    assert rows["promptbert-k8-manual-vs-flow"]["kind_b"] == "published"       # BERT-flow: its published number
    # every row with a number of ours is on tiny-bert: computed for the code path, never judged or counted
    computed = [r for r in rows.values() if r["ours_delta"]]
    assert computed and all(r["verdict"] == "not judged" and r["computed_verdict"] for r in computed)
    assert "Judged on the papers' backbones and real data: 0 — 0 holds, 0 reversed" in text
    assert "no run in this experiment" in text.split("Not run:", 1)[1].split(".", 1)[0]
    with open(verdict_run / "results" / EXP / "verdicts.cells.csv", newline="", encoding="utf-8") as handle:
        cells = list(csv.DictReader(handle))
    stand_in = [c for c in cells if "tiny-bert in place of" in c["row"] + c["column"]]
    assert stand_in and all(c["within_noise"] == "n/a" and "stand-in" in c["basis"] for c in stand_in)
    assert (verdict_run / "results" / EXP / "verdicts.html").read_text().count("<tr") > len(rows)


def test_seed_and_item_intervals_of_a_claim_with_three_seeds_per_side(verdict_run):
    row = _rows(verdict_run)["promptbert-k8-vs-simcse-bert-base"]
    assert row["verdict"] == "not judged" and row["kind_a"] == row["kind_b"] == "trained"
    assert row["computed_verdict"] in ("holds", "reversed", "inconclusive", "inconclusive — underpowered")
    assert row["seed_method"].startswith("Welch's t, n=3 vs 3")
    assert row["items_method"].startswith("paired bootstrap over items, 1000 resamples, seed 0, 7 task(s): ")
    assert float(row["seed_low"]) <= float(row["ours_delta"]) <= float(row["seed_high"])
    assert row["paper_delta"] == "+2.29"
    # ours is the difference of the seed means the metrics files report ...
    metrics = verdict_run / "results" / EXP / "metrics" / "tiny-bert"
    means = {}
    for method in ("promptbert", "simcse"):
        scores = []
        for seed in SEEDS:
            payload = json.loads((metrics / method / f"seed{seed}" / "sts.json").read_text())
            scores.append(payload["results"]["avg"]["reported"])  # the claim's column: Avg. of the 7 tasks
            # ... and the kept per-pair cosines give back each reported number exactly
            with np.load(metrics / method / f"seed{seed}" / "sts.pairs.npz") as pairs:
                rho = scipy_stats.spearmanr(pairs["STSBenchmark/cosine"], pairs["STSBenchmark/gold"]).statistic
            assert 100 * rho == pytest.approx(payload["results"]["STSBenchmark"]["reported"], abs=1e-6)
            assert payload["item_scores"]["tasks"]["STSBenchmark"] == 1379 and len(payload["item_scores"]["tasks"]) == 7
        means[method] = np.mean(scores)
    assert float(row["ours_delta"]) == pytest.approx(means["promptbert"] - means["simcse"], abs=0.005)
    provenance = json.loads(row["provenance"])
    assert [s["seed"] for s in provenance["a"]["seeds"]] == SEEDS and all(s["items"] for s in provenance["a"]["seeds"])


def test_two_frozen_sides_rely_on_the_paired_bootstrap(verdict_run):
    row = _rows(verdict_run)["promptbert-k8-manual-vs-avg"]
    assert row["kind_a"] == row["kind_b"] == "deterministic"
    assert row["seed_low"] == "" and "both sides are constants" in row["seed_method"]
    assert row["items_low"] and row["items_method"].startswith("paired bootstrap")


def test_audit_traces_a_verdict_row(verdict_run, tmp_path, monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(verdict_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    report = audit_verdict(workdir / "results" / EXP / "verdicts.csv", "promptbert-k8-vs-simcse-bert-base")
    text = report.text()
    assert report.ok, text
    for needle in ("promptbert-paper.txt:187", "side a: promptbert_knowl8 | PromptBERT-base | Avg.",
                   "seed 3:", "(used)", "per-pair scores: results/wfverdicts/metrics/tiny-bert/promptbert/seed1/"
                   "sts.pairs.npz", "training summary", "claims file:"):
        assert needle in text, needle
    pairs = workdir / "results" / EXP / "metrics" / "tiny-bert" / "simcse" / "seed2" / "sts.pairs.npz"
    pairs.write_bytes(pairs.read_bytes() + b"tampered")
    report = audit_verdict(workdir / "results" / EXP / "verdicts.csv", "promptbert-k8-vs-simcse-bert-base")
    assert not report.ok and any("simcse/seed2/sts.pairs.npz" in p for p in report.problems)


def test_editing_claims_reruns_only_the_verdicts(verdict_run, tmp_path):
    """Edited in a copy of the checkout: the real claims.yaml is never touched, so a workflow another test
    worker is running meanwhile never sees the edit."""
    repo = copy_checkout(tmp_path / "checkout")
    workdir = tmp_path / "copy"
    shutil.copytree(verdict_run, workdir, symlinks=True)
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}
    claims = repo / CLAIMS_PATH.relative_to(REPO)
    original = claims.read_text(encoding="utf-8")
    claims.write_text(original.replace("ConPVP beats PromptBERT on BERT-base (STS Avg.)",
                                       "ConPVP beats PromptBERT on BERT-base (STS Avg.), edited"), encoding="utf-8")
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {"verdicts": 1, "all": 1}
    claims.write_text(original, encoding="utf-8")
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}
