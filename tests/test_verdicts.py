"""Verdicts built from constructed metrics files: sides read as the tables read them, best-of-N and
mean statistics, the paired bootstrap over several tasks, clear gain / loss / overlap, rendering."""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sentrepro.evaluation.item_scores import pairs_path, write_pairs
from sentrepro.fsutil import atomic_write_json
from sentrepro.verdicts.build import build_verdicts
from sentrepro.verdicts.claims import load_claims
from sentrepro.verdicts.render import to_csv, to_html, to_markdown

BACKBONES = {"bert-base": {"stands_in_for": "bert-base"}, "roberta-large": {"stands_in_for": "roberta-large"}}
TASKS = {"STS12": 120, "STS13": 90, "STS14": 110, "STS15": 100, "STS16": 80, "STSBenchmark": 150,
         "SICKRelatedness": 130}


def _gold(task: str) -> np.ndarray:
    return np.random.default_rng(sum(map(ord, task))).uniform(0, 5, TASKS[task]).round(1)


def write_run(root: Path, backbone: str, method: str, seed: int, noise: float, tasks=TASKS) -> Path:
    """A metrics file whose reported numbers are computed from its own per-pair cosines."""
    rng = np.random.default_rng(1000 * seed + len(method))
    per_task, results = {}, {}
    for task in tasks:
        gold = _gold(task)
        cosine = gold / 5 + rng.normal(0, noise, len(gold))
        per_task[task] = (cosine, gold)
        rho = scipy_stats.spearmanr(cosine.astype(np.float32), gold.astype(np.float32)).statistic
        results[task] = {"spearman": rho, "reported": 100 * rho}
    results["avg"] = {"reported": float(np.mean([results[t]["reported"] for t in tasks]))}
    path = root / backbone / method / f"seed{seed}" / "sts.json"
    record = write_pairs(pairs_path(path), per_task)
    atomic_write_json(path, {"suite": "sts", "results": results, "item_scores": record,
                             "provenance": {"config": {"run": {"backbone": backbone, "method": method, "seed": seed}},
                                            "inputs": []}})
    return path


@pytest.fixture()
def runs(tmp_path):
    files = []
    for seed in (1, 2, 3, 4):
        files.append(write_run(tmp_path, "bert-base", "conpvp", seed, noise=0.15))       # clearly better
        files.append(write_run(tmp_path, "bert-base", "simcse", seed, noise=0.6))
        files.append(write_run(tmp_path, "roberta-large", "conpvp", seed, noise=0.30))   # overlapping
        files.append(write_run(tmp_path, "roberta-large", "conpvp-manual", seed, noise=0.30 + 0.001 * seed))
    return files


def _by_id(result):
    return {r.claim["id"]: r for r in result.claims}


def test_clear_gain_best_of_n_with_both_intervals(runs):
    result = _by_id(build_verdicts(load_claims(), runs, BACKBONES, "unit"))
    r = result["conpvp-t3-vs-simcse-bert-base"]
    assert r.a.statistic == "best" and r.verdict == "holds"
    # ours = the best seed by Avg. on each side, the number the table shows
    best = {m: max(r_.cell.per_seed.values()) for m, r_ in (("a", r.a), ("b", r.b))}
    assert r.ours_delta == pytest.approx(best["a"] - best["b"])
    assert r.seed.method == "seed-bootstrap" and r.items.method == "paired-bootstrap"
    assert r.items.estimate == pytest.approx(r.ours_delta, abs=1e-4)   # per-pair cosines give back the table
    assert "7 task(s): SICKRelatedness, STS12, STS13" in r.items.detail and r.labels == []
    assert r.magnitude_inside == {"seed-bootstrap": False, "paired-bootstrap": False}   # +2.60 is far off


def test_a_partial_average_is_never_judged_and_the_note_names_the_missing_tasks(tmp_path):
    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    files = [write_run(tmp_path, "bert-base", method, seed, noise, tasks=two)
             for seed in (1, 2) for method, noise in (("conpvp", 0.15), ("simcse", 0.6))]
    result = build_verdicts(load_claims(), files, BACKBONES, "unit")
    r = _by_id(result)["conpvp-t3-vs-simcse-bert-base"]
    # the table leaves an Avg. over 2 of 7 tasks empty (like with like), so the claim on it is not judged
    assert r.verdict == "not run" and r.ours_delta is None and r.magnitude_inside == {}
    assert "Avg. left empty: ours lacks STS12, STS13, STS14, STS15, STS16" in " ".join(r.notes)
    noise = {(c.cell.table, c.cell.row, c.cell.column): c for c in result.cells}
    assert ("conpvp_table3", "BERT-base SimCSE", "Avg.") not in noise
    assert noise[("conpvp_table3", "BERT-base SimCSE", "STS-B")].noise is not None


def test_clear_loss_is_reversed_and_overlap_inconclusive(runs):
    claims = copy.deepcopy(load_claims())
    target = next(c for c in claims["claims"] if c["id"] == "conpvp-t3-vs-simcse-bert-base")
    target["a"], target["b"] = target["b"], target["a"]
    result = _by_id(build_verdicts(claims, runs, BACKBONES, "unit"))
    assert result["conpvp-t3-vs-simcse-bert-base"].verdict == "reversed"
    overlap = result["conpvp-t4-continuous-vs-manual"]          # Table 4: mean of 4 seeds, near-identical runs
    assert overlap.seed.method == "welch-t" and overlap.verdict == "inconclusive"
    assert result["conpvp-t4-negative-prototypes"].verdict == "not run"


def test_renderings_list_every_claim_and_the_cell_noise(runs):
    result = build_verdicts(load_claims(), runs, BACKBONES, "unit")
    md = to_markdown(result)
    for claim in load_claims()["claims"]:
        assert f"| {claim['id']} |" in md
    assert "## Cells within the noise of the paper's number" in md and "## Statements not checked" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert len(rows) == len(load_claims()["claims"])
    gain = next(r for r in rows if r["claim"] == "conpvp-t3-vs-simcse-bert-base")
    assert gain["verdict"] == "holds" and gain["paper_delta"] == "+2.60" and gain["source"] == "conpvp-paper.txt:152"
    noise = {(c.cell.table, c.cell.row, c.cell.column): c for c in result.cells}
    cell = noise[("conpvp_table4", "RoBERTa-large ConPVP", "Avg.")]
    assert cell.noise is not None and cell.noise.basis.startswith("paper std 0.32, our seed std")
    assert "<table>" in to_html(result)
