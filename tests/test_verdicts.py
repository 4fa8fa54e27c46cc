"""Verdicts built from constructed metrics files: sides read as the tables read them, best-of-N and
mean statistics, the paired bootstrap over several tasks, clear gain / loss / overlap, rendering; the
rule's guards: one-seed trained sides, synthetic and stand-in cells, the tie claim's margin, constants
(frozen and published sides), underpowered claims, the causes of "not run"."""

from __future__ import annotations

import copy
import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from sentrepro.evaluation.item_scores import pairs_path, write_pairs
from sentrepro.files import atomic_write_json
from sentrepro.verdicts.build import NOT_DECIDABLE, NOT_JUDGED, UNDERPOWERED, build_verdicts
from sentrepro.verdicts.claims import load_claims
from sentrepro.verdicts.render import counts, summary, to_csv, to_html, to_markdown

BACKBONES = {"bert-base": {"stands_in_for": "bert-base"}, "roberta-large": {"stands_in_for": "roberta-large"}}
TASKS = {"STS12": 120, "STS13": 90, "STS14": 110, "STS15": 100, "STS16": 80, "STSBenchmark": 150,
         "SICKRelatedness": 130}


def _gold(task: str) -> np.ndarray:
    return np.random.default_rng(sum(map(ord, task))).uniform(0, 5, TASKS[task]).round(1)


def _provenance(root: Path, backbone: str, method: str, seed, trained: bool, synthetic: bool) -> tuple[dict, list]:
    """The run block and inputs: a trained run names its training summary (as evaluation/job.py does)."""
    inputs = []
    if trained:
        inputs.append({"role": "training summary", "path": str(root / backbone / method / f"seed{seed}" / "train.json")})
    if synthetic:
        manifest = root / "synthetic-sts.json"
        atomic_write_json(manifest, {"synthetic": True, "name": "synthetic-sts"})
        inputs.append({"role": "dataset", "path": str(manifest)})
    return {"config": {"run": {"backbone": backbone, "method": method, "seed": seed}}, "inputs": inputs}, inputs


def write_run(root: Path, backbone: str, method: str, seed: int, noise: float, tasks=TASKS, *, trained=True,
              synthetic=False) -> Path:
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
    provenance, _ = _provenance(root, backbone, method, seed, trained, synthetic)
    atomic_write_json(path, {"suite": "sts", "results": results, "item_scores": record, "provenance": provenance})
    return path


def write_summary(root: Path, backbone: str, method: str, seed, suite: str, results: dict, *,
                  trained=True) -> Path:
    """A metrics file with given numbers and no per-pair scores (transfer, WOS, or an STS Avg. given)."""
    path = root / backbone / method / f"seed{seed}" / f"{suite}.json"
    provenance, _ = _provenance(root, backbone, method, seed, trained, False)
    atomic_write_json(path, {"suite": suite, "results": results, "provenance": provenance})
    return path


def _sts(avg: float) -> dict:
    """STS results whose Avg. is ``avg`` (every task at that value, so the average is like with like)."""
    return {**{t: {"reported": avg} for t in TASKS}, "avg": {"reported": avg}}


def _with_spread(mean: float, std: float) -> list[float]:
    """Four seed values with exactly this mean and population std (the papers' ±)."""
    return [mean + std, mean - std, mean + std, mean - std]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Four seeds of four runs (module-scoped: every test only reads these files)."""
    root = tmp_path_factory.mktemp("runs")
    files = []
    for seed in (1, 2, 3, 4):
        files.append(write_run(root, "bert-base", "conpvp", seed, noise=0.15))       # clearly better
        files.append(write_run(root, "bert-base", "simcse", seed, noise=0.6))
        files.append(write_run(root, "roberta-large", "conpvp", seed, noise=0.30))   # overlapping
        files.append(write_run(root, "roberta-large", "conpvp-manual", seed, noise=0.30 + 0.001 * seed))
    return files


@pytest.fixture(scope="module")
def runs_verdicts(runs):
    """``build_verdicts`` of the shipped claims on ``runs``, computed once for the tests that only read it."""
    return build_verdicts(load_claims(), runs, BACKBONES, "unit")


def _by_id(result):
    return {r.claim["id"]: r for r in result.claims}


def test_clear_gain_best_of_n_with_both_intervals(runs_verdicts):
    result = _by_id(runs_verdicts)
    r = result["conpvp-t3-vs-simcse-bert-base"]
    assert r.a.statistic == "best" and r.verdict == "holds"
    # ours = the best seed by Avg. on each side, the number the table shows
    best = {m: max(r_.cell.per_seed.values()) for m, r_ in (("a", r.a), ("b", r.b))}
    assert r.ours_delta == pytest.approx(best["a"] - best["b"])
    assert r.seed.method == "seed-bootstrap" and r.items.method == "paired-bootstrap"
    assert r.items.estimate == pytest.approx(r.ours_delta, abs=1e-4)   # per-pair cosines give back the table
    assert "7 task(s): SICKRelatedness, STS12, STS13" in r.items.detail and r.labels == []
    assert r.magnitude_inside == {"seed-bootstrap": False, "paired-bootstrap": False}   # +2.60 is far off
    assert set(r.magnitude.values()) == {"ours larger"}                  # apart from the sign: ours is larger
    assert r.a.kind == r.b.kind == "trained" and r.mdd is not None
    # beside the coarse best-of-4 bootstrap, the means of the same seeds (Welch's t, against scipy)
    want = scipy_stats.ttest_ind(list(r.a.cell.per_seed.values()), list(r.b.cell.per_seed.values()),
                                 equal_var=False).confidence_interval(0.95)
    assert (r.gate.low, r.gate.high) == pytest.approx((want.low, want.high))


def test_a_partial_average_is_never_judged_and_the_note_names_the_missing_tasks(tmp_path):
    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    files = [write_run(tmp_path, "bert-base", method, seed, noise, tasks=two)
             for seed in (1, 2) for method, noise in (("conpvp", 0.15), ("simcse", 0.6))]
    result = build_verdicts(load_claims(), files, BACKBONES, "unit")
    r = _by_id(result)["conpvp-t3-vs-simcse-bert-base"]
    # the table leaves an Avg. over 2 of 7 tasks empty (like with like), so the claim on it is not judged
    assert r.verdict == "not run" and r.ours_delta is None and r.magnitude_inside == {}
    assert "Avg. left empty: ours lacks STS12, STS13, STS14, STS15, STS16" in r.why
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
    assert overlap.seed.method == "welch-t" and overlap.verdict.startswith("inconclusive")
    assert result["conpvp-t4-negative-prototypes"].verdict == "not run"


def test_renderings_list_every_claim_and_the_cell_noise(runs_verdicts):
    result = runs_verdicts
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
    assert cell.noise is not None and cell.noise.basis.startswith("paper se 0.18 (std 0.32, n=4); our se")
    # the standard error of a mean of 4 seeds, not the seed std: 0.32 / sqrt(3)
    assert cell.noise.sd ** 2 == pytest.approx((0.32 / np.sqrt(3)) ** 2 + (cell.cell.std / np.sqrt(3)) ** 2)
    assert "<table>" in to_html(result)


def test_one_trained_seed_per_side_is_not_decidable(tmp_path):
    files = [write_run(tmp_path, "bert-base", m, 1, n) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t3-vs-simcse-bert-base"]
    # the per-pair interval alone is clear, but it ignores training-seed variance
    assert r.items is not None and r.items.low > 0
    assert r.verdict == NOT_DECIDABLE and r.seed is None
    assert "trained side with 1 seed" in r.why and "BERT-base SimCSE" in r.why


def test_two_trained_seeds_per_side_are_not_decidable(tmp_path):
    # with 2 seeds a side "every seed of a beats every seed of b" happens 1 time in 6 with no true difference
    files = [write_summary(tmp_path, "roberta-large", m, seed, "sts", _sts(v))
             for m, values in (("conpvp", (80.1, 80.3)), ("conpvp-manual", (78.0, 78.2)))
             for seed, v in enumerate(values, start=1)]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t4-continuous-vs-manual"]
    assert r.verdict == NOT_DECIDABLE and r.seed is None and "with 2 seed(s): below 3 seeds" in r.why


def test_best_of_n_holds_only_when_the_means_of_the_same_seeds_agree(tmp_path):
    # one lucky seed of a: the bootstrap of best-of-4 clears 0, the means of the seeds do not
    values = {"conpvp": (80.0, 79.8, 79.6, 70.0), "simcse": (77.0, 76.8, 76.6, 76.4)}
    files = [write_summary(tmp_path, "bert-base", m, seed, "sts", _sts(v))
             for m, vs in values.items() for seed, v in enumerate(vs, start=1)]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t3-vs-simcse-bert-base"]
    assert r.seed.method == "seed-bootstrap" and r.seed.low > 0            # alone it would say "holds"
    want = scipy_stats.ttest_ind(values["conpvp"], values["simcse"], equal_var=False).confidence_interval(0.95)
    assert (r.gate.low, r.gate.high) == pytest.approx((want.low, want.high)) and want.low < 0
    assert r.verdict != "holds" and r.verdict.startswith("inconclusive")
    assert "welch-t" not in r.magnitude                                   # the stated size is of best-of-N


def test_the_same_runs_frozen_are_decided_by_the_items_interval(tmp_path):
    files = [write_run(tmp_path, "bert-base", m, 1, n, trained=False) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t3-vs-simcse-bert-base"]
    assert r.a.kind == r.b.kind == "deterministic" and r.seed is None and r.verdict == "holds"
    assert "both sides are constants" in r.seed_note


def test_synthetic_and_stand_in_claims_are_computed_but_never_judged_or_counted(tmp_path):
    synthetic = [write_run(tmp_path / "s", "bert-base", m, seed, n, synthetic=True)
                 for seed in (1, 2, 3, 4) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    stand_in = [write_run(tmp_path / "t", "tiny", m, seed, n)
                for seed in (1, 2, 3, 4) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    for files, backbones, label in ((synthetic, BACKBONES, "SYNTHETIC data: synthetic-sts"),
                                    (stand_in, {**BACKBONES, "tiny": {"stands_in_for": "bert-base"}},
                                     "tiny in place of bert-base")):
        result = build_verdicts(load_claims(), files, backbones, "unit")
        r = _by_id(result)["conpvp-t3-vs-simcse-bert-base"]
        assert r.computed == "holds" and r.verdict == NOT_JUDGED and label in r.labels
        found = counts(result)
        assert "holds" not in found and found[NOT_JUDGED] >= 1
        assert "Judged on the papers' backbones and real data: 0 — 0 holds" in summary(result)
        cells = [c for c in result.cells if c.cell.table == "conpvp_table3"]
        assert cells and all(c.noise is None for c in cells)              # never "within noise"
        assert all(("synthetic" in c.reason) or ("stand-in" in c.reason) for c in cells)
        assert f"**{NOT_JUDGED} (computed: holds)" in to_markdown(result)


def test_the_papers_own_table4_numbers_make_the_tie_claim_hold_under_its_margin(tmp_path):
    files = []
    for method, (mean, std) in (("conpvp-no-proto", (77.28, 0.25)), ("simcse", (77.37, 0.88))):
        for seed, value in enumerate(_with_spread(mean, std), start=1):
            files.append(write_summary(tmp_path, "roberta-large", method, seed, "sts", _sts(value)))
    claims = load_claims()
    r = _by_id(build_verdicts(claims, files, BACKBONES, "unit"))["conpvp-t4-prompts-alone-no-gain"]
    assert r.seed.method == "welch-t" and (r.seed.low, r.seed.high) == pytest.approx((-1.65, 1.47), abs=0.005)
    # margin 0.67 (the smallest gain the paper calls real): 4 seeds cannot show so tight a tie
    assert r.verdict == UNDERPOWERED and r.claim["margin"] == pytest.approx(0.67) and r.mdd > 0.67
    wide = copy.deepcopy(claims)                      # the old margin 1.69 (one run's spread) let it hold
    next(c for c in wide["claims"] if c["id"] == "conpvp-t4-prompts-alone-no-gain")["margin"] = 1.69
    assert _by_id(build_verdicts(wide, files, BACKBONES, "unit"))["conpvp-t4-prompts-alone-no-gain"].verdict == "holds"


def _table4_gains_called_real(claims) -> list[float]:
    """The paper's own Table 4 differences behind the 'greater' claims of conpvp-paper.txt:160."""
    from sentrepro.tables.build import paper_value
    from sentrepro.planning.reported import load_reported
    from sentrepro.planning.table_specs import cell_selector, load_spec
    from sentrepro.verdicts.claims import sides

    spec, reported, gains = load_spec("conpvp_table4"), load_reported(), []
    for claim in claims["claims"]:
        if claim["table"] != "conpvp_table4" or claim["line"] != 160 or claim["direction"] != "greater":
            continue
        values = []
        for side in sides(claim):
            row = next(r for r in spec["rows"] if r["label"] == side.row)
            column = next(c for c in spec["columns"] if c["label"] == side.column)
            values.append(paper_value(reported, spec, row, column, cell_selector(spec, row, column)["key"]).value)
        gains.append(values[0] - values[1])
    return gains


def test_the_tie_margin_is_the_smallest_gain_the_paper_calls_real_and_its_hold_rate_is_stated():
    claims = load_claims()
    claim = next(c for c in claims["claims"] if c["id"] == "conpvp-t4-prompts-alone-no-gain")
    gains = _table4_gains_called_real(claims)
    assert len(gains) == 3 and claim["margin"] == pytest.approx(min(gains), abs=0.005)
    # how often an exact reproduction (the paper's means and stds, 4 seeds a side) holds under it
    from sentrepro.verdicts.stats import HOLDS, seed_intervals, verdict
    rng, reps, held = np.random.default_rng(5), 2000, 0
    for _ in range(reps):
        a = rng.normal(77.28, 0.25 * np.sqrt(4 / 3), 4)              # population std -> sample sigma
        b = rng.normal(77.37, 0.88 * np.sqrt(4 / 3), 4)
        held += verdict(seed_intervals(a, b, "mean"), "no_gain", margin=claim["margin"]) == HOLDS
    stated = float(re.search(r"holds about (\d+) %", claim["margin_why"]).group(1)) / 100
    assert abs(held / reps - stated) <= 3 * np.sqrt(stated * (1 - stated) / reps)


def test_paper_spread_for_an_exact_reproduction_is_underpowered(tmp_path):
    files = []
    for method, (mean, std) in (("conpvp", (79.90, 0.32)), ("conpvp-manual", (79.18, 0.49))):
        for seed, value in enumerate(_with_spread(mean, std), start=1):
            files.append(write_summary(tmp_path, "roberta-large", method, seed, "sts", _sts(value)))
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t4-continuous-vs-manual"]
    assert r.seed.low < 0 < r.seed.high and r.verdict == UNDERPOWERED
    assert r.mdd > 0.72 and "n=4" in r.mdd_basis
    # the same seeds could show the paper's 1.41 for negative prototypes: a tie there is plainly inconclusive
    files += [write_summary(tmp_path, "roberta-large", "conpvp-no-neg", seed, "sts", _sts(value))
              for seed, value in enumerate(_with_spread(79.90, 0.32), start=1)]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t4-negative-prototypes"]
    assert r.mdd < 1.41 and r.seed.low < 0 < r.seed.high and r.verdict == "inconclusive"


def test_a_std_claim_gets_the_power_of_a_std_difference(tmp_path):
    # 10 seeds a side with the paper's stds (0.15 vs 0.86): power on the stds, not on the means
    files = []
    for method, (mean, std) in (("promptbert", (78.54, 0.15)), ("simcse", (75.42, 0.86))):
        values = [mean + std * (1 if i % 2 else -1) for i in range(10)]
        files += [write_summary(tmp_path, "bert-base", method, seed, "sts", _sts(v)) for seed, v in enumerate(values)]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["promptbert-k9-stability"]
    sample = [std * np.sqrt(10 / 9) for std in (0.15, 0.86)]
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    from sentrepro.verdicts.stats import spread_factor
    assert r.mdd == pytest.approx(z * spread_factor("std", 10) * np.hypot(*sample), rel=1e-6)
    assert "of the difference of the std over seeds" in r.mdd_basis
    # the verdict needs the F interval of the variance ratio too (the bootstrap of a std alone runs above 2.5 %)
    assert r.gate.method == "variance-ratio-f" and r.gate in r.intervals() and r.gate.high < 0
    assert r.verdict == "holds" and "variance-ratio-f" not in r.magnitude


def test_two_deterministic_sides_get_the_power_of_their_items_interval(tmp_path):
    files = [write_run(tmp_path, "bert-base", m, 1, n, trained=False) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["conpvp-t3-vs-simcse-bert-base"]
    z = scipy_stats.norm.ppf(0.975)
    assert r.mdd == pytest.approx((z + scipy_stats.norm.ppf(0.8)) * (r.items.high - r.items.low) / (2 * z))
    assert r.mdd > 0 and "test-set interval" in r.mdd_basis


def test_a_frozen_side_against_four_seeds_gets_a_one_sample_interval(tmp_path):
    acc = [87.9, 88.4, 88.1, 87.6]
    files = [write_summary(tmp_path, "deberta-base", "mocoutrl", seed, "wos", {"acc": a, "f1": a - 1})
             for seed, a in enumerate(acc, start=1)]
    files.append(write_summary(tmp_path, "deberta-base", "frozen-avg", None, "wos", {"acc": 85.71, "f1": 85.61},
                               trained=False))
    result = build_verdicts(load_claims(), files, BACKBONES, "unit")
    r = _by_id(result)["mocoutrl-t2-wos-accuracy"]
    assert (r.a.kind, r.b.kind) == ("trained", "deterministic") and r.seed.method == "one-sample-t"
    want = scipy_stats.ttest_1samp(np.array(acc) - 85.71, 0.0).confidence_interval(0.95)
    assert (r.seed.low, r.seed.high) == pytest.approx((want.low, want.high)) and r.verdict == "holds"
    assert "the paper is inconsistent: precision goes the other way" in " ".join(r.notes)
    # the frozen WOS cell is not deterministic (the probe's seed and split) and one probe measures no spread:
    # it is not compared, rather than read "not within noise" at any gap above rounding (se 0 before issue 33)
    frozen = next(c for c in result.cells if c.cell.table == "mocoutrl_table2" and c.cell.row == "DeBERTa-base"
                  and c.cell.column == "Acc")
    assert frozen.noise is None and "wos evaluation is random" in frozen.reason


CLUSTERING_SETS = ("AgNews", "Biomedical", "GoogleNews-S", "GoogleNews-T", "GoogleNews-TS", "SearchSnippets",
                   "StackOverflow", "Tweet")


def test_a_frozen_clustering_cell_carries_the_noise_of_its_kmeans_restarts(tmp_path):
    paper = dict(zip(CLUSTERING_SETS, (79.56, 32.46, 54.35, 47.12, 61.61, 64.04, 21.87, 45.35)))
    results = {}
    for name, value in paper.items():
        restarts = [value + 1.5 + (0.8 if i % 2 else -0.8) for i in range(10)]      # mean paper + 1.5, std 0.8
        results[name] = {"acc": restarts, "acc_std": float(np.std(restarts)), "seeds": list(range(10)),
                         "reported": float(np.mean(restarts))}
    results["avg"] = {"reported": float(np.mean([r["reported"] for r in results.values()]))}
    files = [write_summary(tmp_path, "bert-base", "frozen-avg", None, "clustering", results, trained=False)]
    cells = build_verdicts(load_claims(), files, BACKBONES, "unit").cells
    ag = next(c for c in cells if c.cell.table == "conpvp_table6" and c.cell.column == "AG"
              and c.cell.row.startswith("BERT-base BERT"))
    se = 0.8 / np.sqrt(9)                                   # population std over 10 restarts -> se of their mean
    assert ag.noise.sd == pytest.approx(np.sqrt(2) * se, abs=1e-3) and "10 KMeans restarts" in ag.noise.basis
    assert not ag.noise.within                              # 1.5 points off: more than 1.96 x 0.38
    avg = next(c for c in cells if c.cell.table == "conpvp_table6" and c.cell.column == "Avg."
               and c.cell.row.startswith("BERT-base BERT"))
    assert avg.noise.sd == pytest.approx(np.sqrt(2) * se / np.sqrt(8), abs=1e-3)


def test_a_dagger_row_quoting_a_mean_is_compared_with_our_mean(tmp_path):
    # ConPVP Table 3's BERT-base PromptBERT row is PromptBERT's mean of 10 seeds; the table shows our best of 4
    files = [write_run(tmp_path, "bert-base", "promptbert", seed, noise=0.3 + 0.05 * seed) for seed in (1, 2, 3, 4)]
    cells = build_verdicts(load_claims(), files, BACKBONES, "unit").cells
    cell = next(c for c in cells if c.cell.table == "conpvp_table3" and c.cell.row == "BERT-base PromptBERT"
                and c.cell.column == "Avg.")
    assert cell.noise.basis.startswith("like with like: our mean of 4 seeds against the paper's mean")
    assert cell.noise.delta == pytest.approx(cell.cell.summary.mean - 78.54)
    assert cell.cell.value != cell.cell.summary.mean                      # the table's best of 4 is not used


def test_a_reported_only_side_is_tested_as_the_published_constant(runs_verdicts):
    result = runs_verdicts
    r = _by_id(result)["conpvp-t3-vs-consert-bert-base"]
    assert r.b.kind == "published" and r.b.ours == pytest.approx(72.74)
    assert r.seed.method == "one-sample-bootstrap" and "constant 72.74" in r.seed.detail
    # and the one-sample t of the seeds' mean, which the verdict needs too (a mean is at most its best)
    assert r.gate.method == "one-sample-t" and r.gate in r.intervals()
    assert r.items is None and "published number" in r.items_note and r.verdict in ("holds", "reversed", "inconclusive")
    assert r.ours_delta == pytest.approx(r.a.ours - 72.74)


def test_a_frozen_sts_side_against_a_published_number_gets_an_item_interval(tmp_path):
    # manual prompt on frozen BERT-base against BERT-flow's published 66.55: before issue 33 "no interval"
    files = [write_run(tmp_path, "bert-base", "manual-prompt", 1, 0.15, trained=False)]
    r = _by_id(build_verdicts(load_claims(), files, BACKBONES, "unit"))["promptbert-k8-manual-vs-flow"]
    assert (r.a.kind, r.b.kind) == ("deterministic", "published") and r.seed is None
    assert r.items.method == "item-bootstrap-vs-constant" and "constant 66.55" in r.items.detail
    assert r.items.estimate == pytest.approx(r.a.ours - 66.55, abs=1e-4)   # the per-pair scores give the table back
    assert r.verdict == "holds" and r.items.low > 0                         # ours is far above 66.55 here


def test_two_exact_population_numbers_decide_without_items(tmp_path):
    backbones = {b: {"stands_in_for": b} for b in ("bert-base", "bert-base-cased", "roberta-base")}
    files = [write_summary(tmp_path, backbone, "static-avg", None, "anisotropy", {"static_token": {"reported": v}},
                           trained=False)
             for backbone, v in (("bert-base", 0.4445), ("bert-base-cased", 0.1465), ("roberta-base", 0.0235))]
    result = build_verdicts(load_claims(), files, backbones, "unit")
    r = _by_id(result)["promptbert-k4-anisotropy-uncased-vs-cased"]
    assert r.exact.method == "exact" and r.exact.low == r.exact.high == pytest.approx(0.298)
    assert r.verdict == "holds" and "whole input embedding matrix" in r.exact.detail
    assert _by_id(result)["promptbert-k4-anisotropy-cased-vs-roberta"].verdict == "holds"


def test_not_run_is_split_into_named_causes(tmp_path, runs_verdicts):
    result = runs_verdicts
    by_id = _by_id(result)
    assert by_id["conpvp-t4-negative-prototypes"].cause == "no run in this experiment"
    assert by_id["promptbert-k8-manual-vs-flow"].cause == "no run in this experiment"
    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    partial = [write_run(tmp_path / "p", "bert-base", m, seed, n, tasks=two)
               for seed in (1, 2) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    r = _by_id(build_verdicts(load_claims(), partial, BACKBONES, "unit"))["conpvp-t3-vs-simcse-bert-base"]
    assert r.verdict == "not run" and r.cause == "average left empty"
    text = summary(result)
    assert "no run in this experiment" in text and "Multiplicity:" in text
    # the cause of the side with no run comes first: side a (w/o c+ & c-) has none, b an empty average
    partial_b = [write_run(tmp_path / "q", "roberta-large", "simcse", seed, 0.3, tasks=two) for seed in (1, 2, 3)]
    r = _by_id(build_verdicts(load_claims(), partial_b, BACKBONES, "unit"))["conpvp-t4-prompts-alone-no-gain"]
    assert r.verdict == "not run" and r.cause == "no run in this experiment"


def test_multiplicity_counts_judged_claims_only_as_an_upper_bound_with_holm(runs_verdicts, tmp_path):
    family = [r for r in runs_verdicts.claims if r.verdict not in ("not run", NOT_JUDGED)]
    text = summary(runs_verdicts)
    bound = min(1.0, 0.025 * len(family))
    assert f"{len(family)} judged claims" in text and f"at most {bound:.0%}" in text and "97 claims, each" not in text
    rows = {row["claim"]: row for row in csv.DictReader(io.StringIO(to_csv(runs_verdicts)))}
    assert rows["conpvp-t3-vs-simcse-bert-base"]["holm"] == "holds"
    assert all(rows[r.claim["id"]]["p_value"] for r in family)
    # Holm against scipy-free hand steps: the claims' own p-values, sorted, each against 0.025 / (m - k)
    ps = sorted(r.p_value for r in family)
    survivors = 0
    for k, p_value in enumerate(ps):
        if p_value > 0.025 / (len(ps) - k):
            break
        survivors += 1
    assert sum(1 for r in family if r.holm_holds) <= survivors
    # nothing judged (the demo: stand-ins only): no multiplicity figure for nothing
    synthetic = [write_run(tmp_path, "bert-base", m, seed, n, synthetic=True)
                 for seed in (1, 2, 3) for m, n in (("conpvp", 0.15), ("simcse", 0.6))]
    empty = build_verdicts(load_claims(), synthetic, BACKBONES, "unit")
    assert "Multiplicity" not in summary(empty) and "Multiplicity" not in to_html(empty)


def test_anisotropy_prints_four_decimals_and_a_quoted_paper_value_fills_a_missing_cell(tmp_path):
    backbones = {b: {"stands_in_for": b} for b in ("bert-base", "bert-base-cased", "roberta-base")}
    files = [write_summary(tmp_path, backbone, "static-avg", None, "anisotropy", {"static_token": {"reported": v}},
                           trained=False)
             for backbone, v in (("bert-base", 0.4445), ("bert-base-cased", 0.1465), ("roberta-base", 0.0235))]
    result = build_verdicts(load_claims(), files, backbones, "unit")
    md = to_markdown(result)
    assert "+0.1230 (0.1465 vs 0.0235" in md                    # 2 decimals read "+0.12 (0.15 vs 0.02"
    row = next(r for r in csv.DictReader(io.StringIO(to_csv(result)))
               if r["claim"] == "promptbert-k4-anisotropy-cased-vs-roberta")
    assert row["ours_b"] == "0.0235" and row["paper_delta"] == "+0.1230"
    whitening = _by_id(result)["promptbert-k5-debiased-vs-whitening"]
    assert whitening.paper_values == (67.64, 66.28) and whitening.paper_delta == pytest.approx(1.36)
