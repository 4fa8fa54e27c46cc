"""The verdict builder's decisions and its words, exactly: why a claim is not run (per side, said once for both),
the minimum detectable difference and the basis it names, when a claim is underpowered, each cell's noise and
where each standard error came from, and the provenance JSON `sentrepro audit` follows. The numbers are checked
against plain numpy and the statistics module's documented formulas; the words are what verdicts.md prints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from sentrepro.planning.reported import ReportedValue
from sentrepro.tables.aggregate import summarize
from sentrepro.tables.build import Cell
from sentrepro.verdicts import build
from sentrepro.verdicts.build import ClaimResult, SideResult
from sentrepro.verdicts.claims import Side, load_claims
from sentrepro.verdicts.stats import (Interval, minimum_detectable_difference, minimum_detectable_spread_difference)
from tests.test_verdicts import BACKBONES, _sts, _with_spread, write_run, write_summary

LEVEL = 0.95


def _cell(per_seed: dict | None = None, *, statistic: str = "mean", value: float | None = None, std=None,
          files: dict | None = None, digits: int = 2, **extra) -> Cell:
    per_seed = per_seed or {}
    values = list(per_seed.values())
    if value is None and values:
        value = max(values) if statistic == "best" else float(np.mean(values))
    if std is None and len(values) > 1:
        std = float(np.std(values))
    summary = extra.pop("summary") if "summary" in extra else (summarize(per_seed) if per_seed else None)
    return Cell("t", "row", "col", None, value, std, len(values), statistic, summary, None, False,
                files=files or {}, per_seed=per_seed, digits=digits, **extra)


def _paper(value: float | None = 80.0, std: float | None = None, statistic: dict | None = None) -> ReportedValue:
    return ReportedValue(value, std, None, None, "paper.txt:7", "t", "r", statistic=statistic)


def _side(label: str, cell: Cell | None, kind: str | None, *, paper: ReportedValue | None = None, suite="sts",
          key="STSBenchmark", paper_seeds=None, reported_only=False, row_ran=False, missing=(), backbone=None,
          column="col", digits=2) -> SideResult:
    return SideResult(Side("t", label, column), label, cell, paper, suite, key, reported_only, backbone, row_ran,
                      missing, kind, paper_seeds, digits)


def _claim(a: SideResult, b: SideResult, **claim) -> ClaimResult:
    return ClaimResult({"id": "c", "direction": "greater", "file": "p.txt", "line": 3, **claim}, a, b)


# --- why a claim is not run ------------------------------------------------------------------------------------


def test_each_cause_of_a_side_without_a_number_says_what_is_missing():
    assert build._cause(_side("A", None, None, reported_only=True)) == (
        "reported only", "reported only, not run by this workflow (and the paper prints no number here)")
    assert build._cause(_side("A", None, None, missing=("STS12", "STS13"), column="Avg.")) == (
        "average left empty", "Avg. left empty: ours lacks STS12, STS13 (an average of some columns is never set "
                              "against the paper's average of all)")
    assert build._cause(_side("A", None, None, row_ran=True, suite="transfer", key="MR")) == (
        "metric missing", "its runs' transfer metrics files have no 'MR'")
    assert build._cause(_side("A", None, None)) == ("no run in this experiment", "no run of ours in this experiment")
    # precedence: reported only before an empty average before a missing metric
    assert build._cause(_side("A", None, None, reported_only=True, missing=("x",), row_ran=True))[0] == "reported only"
    assert build._cause(_side("A", None, None, missing=("x",), row_ran=True))[0] == "average left empty"


@pytest.fixture(scope="module")
def bert_runs(tmp_path_factory):
    """Four seeds of BERT-base ConPVP (best of 4 in ConPVP Table 3) and nothing else."""
    root = tmp_path_factory.mktemp("bert")
    return [write_run(root, "bert-base", "conpvp", seed, noise=0.15 + 0.01 * seed) for seed in (1, 2, 3, 4)]


@pytest.fixture(scope="module")
def bert_verdicts(bert_runs):
    return {r.claim["id"]: r for r in build.build_verdicts(load_claims(), bert_runs, BACKBONES, "unit").claims}


def test_a_not_run_claim_says_why_once_for_both_sides_or_per_side(bert_verdicts):
    both = bert_verdicts["conpvp-t3-vs-simcse-bert-large"]
    assert (both.verdict, both.cause) == ("not run", "no run in this experiment")
    assert both.why == "BERT-large ConPVP and BERT-large SimCSE: no run of ours in this experiment"
    one = bert_verdicts["conpvp-t3-vs-simcse-bert-base"]
    assert one.why == "BERT-base SimCSE: no run of ours in this experiment"
    # nothing else was decided for it: no notes of intervals, no computed verdict, no difference
    for r in (both, one):
        assert (r.seed_note, r.items_note, r.computed, r.ours_delta, r.seed, r.items, r.exact) == (
            "", "", "", None, None, None, None)
        assert r.labels == [] and r.magnitude == {} and r.p_value is None and r.holm_holds is None
    assert one.mdd is None and one.mdd_basis == "no minimum detectable difference: no seed spread for BERT-base SimCSE"


def test_a_claim_of_two_published_sides_is_reported_only():
    published = _paper(70.0)
    a = _side("A", None, "published", paper=published, reported_only=True)
    b = _side("B", None, "published", paper=_paper(71.0), reported_only=True)

    class Located:
        specs: dict = {}

        def __init__(self):
            self.sides = iter((a, b))

        def locate(self, side):
            return next(self.sides)

    claim = {"id": "c", "direction": "gain", "table": "t", "column": "col", "a": "A", "b": "B",
             "note": "said in the text",
             "inconsistency": "the abstract says otherwise"}
    r = build.judge(claim, Located(), {"level": LEVEL})
    assert (r.verdict, r.cause, r.why) == ("not run", "reported only", "both sides are published numbers only")
    assert r.notes == ["said in the text", "the paper is inconsistent: the abstract says otherwise"]
    assert (r.mdd, r.mdd_basis) == (0.0, "A: constant; B: constant (80% power; best-of-N treated as a mean)")


# --- power ------------------------------------------------------------------------------------------------------


def test_the_minimum_detectable_difference_of_two_trained_sides_uses_their_sample_sds():
    a_values, b_values = {1: 80.0, 2: 81.0, 3: 79.5, 4: 80.2}, {1: 77.0, 2: 76.1}
    r = _claim(_side("A", _cell(a_values, statistic="best"), "trained"),
               _side("B", _cell(b_values, statistic="best"), "trained"))
    build._power(r, LEVEL)
    sd_a, sd_b = np.std(list(a_values.values()), ddof=1), np.std(list(b_values.values()), ddof=1)
    assert r.mdd == pytest.approx(minimum_detectable_difference(sd_a, 4, sd_b, 2, level=LEVEL))
    assert r.mdd_basis == (f"A: our sd {sd_a:.2f}, n=4; B: our sd {sd_b:.2f}, n=2 "
                           "(80% power; best-of-N treated as a mean)")


def test_a_side_with_no_run_of_ours_gets_the_papers_sd_over_its_seeds():
    a_values = {1: 80.0, 2: 81.0, 3: 79.5}
    paper = _paper(78.0, std=0.40)   # the papers' ± is a population std over their 5 seeds
    r = _claim(_side("A", _cell(a_values), "trained"), _side("B", None, None, paper=paper, paper_seeds=5))
    build._power(r, LEVEL)
    sd_a, sd_b = np.std(list(a_values.values()), ddof=1), 0.40 * np.sqrt(5 / 4)
    assert r.mdd == pytest.approx(minimum_detectable_difference(sd_a, 3, sd_b, 5, level=LEVEL))
    assert r.mdd_basis == f"A: our sd {sd_a:.2f}, n=3; B: the paper's sd 0.40, n=5 (80% power; best-of-N treated as a mean)"
    # two seeds are the least a sample sd needs; one is none
    r2 = _claim(_side("A", _cell(a_values), "trained"), _side("B", None, None, paper=paper, paper_seeds=2))
    build._power(r2, LEVEL)
    assert r2.mdd == pytest.approx(minimum_detectable_difference(sd_a, 3, 0.40 * np.sqrt(2), 2, level=LEVEL))
    r1 = _claim(_side("A", _cell(a_values), "trained"), _side("B", None, None, paper=paper, paper_seeds=1))
    build._power(r1, LEVEL)
    assert r1.mdd is None and r1.mdd_basis == "no minimum detectable difference: no seed spread for B"


def test_a_trained_side_of_two_seeds_has_a_sample_sd_and_of_one_has_none():
    two = _claim(_side("A", _cell({1: 80.0, 2: 81.0}), "trained"), _side("B", _cell({1: 70.0}), "deterministic"))
    build._power(two, LEVEL)
    assert two.mdd == pytest.approx(minimum_detectable_difference(np.std([80.0, 81.0], ddof=1), 2, 0.0, None))
    assert two.mdd_basis == "A: our sd 0.71, n=2; B: constant (80% power; best-of-N treated as a mean)"
    one = _claim(_side("A", _cell({1: 80.0}), "trained"), _side("B", _cell({1: 70.0}), "deterministic"))
    build._power(one, LEVEL)
    assert one.mdd is None and one.mdd_basis == "no minimum detectable difference: no seed spread for A"


def test_a_spread_claim_takes_its_statistic_from_whichever_side_has_one():
    values = {s: 80.0 + 0.3 * (-1) ** s for s in range(1, 7)}
    paper = _paper(0.9, std=0.2)
    r = _claim(_side("A", None, None, paper=paper, paper_seeds=10), _side("B", _cell(values, statistic="std"),
                                                                         "trained"))
    build._power(r, LEVEL)
    sd_b = np.std(list(values.values()), ddof=1)
    assert r.mdd == pytest.approx(minimum_detectable_spread_difference("std", 0.2 * np.sqrt(10 / 9), 10, sd_b, 6,
                                                                       level=LEVEL))
    assert r.mdd_basis == (f"A: the paper's sd 0.20, n=10; B: our sd {sd_b:.2f}, n=6 "
                           "(80% power, of the difference of the std over seeds)")


def test_two_deterministic_sides_take_the_items_noise_or_none():
    det = lambda label: _side(label, _cell({1: 70.0}), "deterministic")  # noqa: E731
    r = _claim(det("A"), det("B"))
    r.exact = Interval(0.3, 0.3, 0.3, "exact", "")
    build._power(r, LEVEL)
    assert (r.mdd, r.mdd_basis) == (0.0, "both sides deterministic and exact: no noise")
    r = _claim(det("A"), det("B"))
    build._power(r, LEVEL)
    assert (r.mdd, r.mdd_basis) == (None, "no minimum detectable difference: two deterministic sides and no interval")
    r = _claim(det("A"), det("B"))
    r.items = Interval(0.5, -0.5, 1.5, "paired-bootstrap", "")
    build._power(r, LEVEL)
    assert r.mdd_basis == "both sides deterministic: the test-set interval's noise (80% power)" and r.mdd > 0


def test_underpowered_compares_the_detectable_difference_with_what_the_claim_needs():
    def claim(mdd, **fields):
        r = _claim(_side("A", None, None), _side("B", None, None), **fields)
        r.mdd = mdd
        return r

    assert not build._underpowered(claim(None, direction="no_gain", margin=0.5))
    # a tie claim: underpowered when the seeds cannot see the margin; at the margin itself they can
    assert build._underpowered(claim(0.51, direction="no_gain", margin=0.5))
    assert not build._underpowered(claim(0.5, direction="no_gain", margin=0.5))
    assert build._underpowered(claim(0.01, direction="no_gain"))          # margin 0 when the claim gives none
    # a gain: the paper's difference (its numbers) or else the claimed magnitude
    with_paper = claim(1.0, paper_values=[80.0, 79.2])
    assert build._underpowered(with_paper)
    assert not build._underpowered(claim(0.8, paper_values=[80.0, 79.0]))   # 1.0 needed, 0.8 detectable
    assert not build._underpowered(claim(1.0, paper_values=[80.0, 79.0]))   # exactly detectable
    assert build._underpowered(claim(1.0, magnitude=0.9)) and not build._underpowered(claim(1.0, magnitude=1.1))
    assert not build._underpowered(claim(1.0))                             # nothing claimed: nothing to miss
    # "at least d": how far the paper's difference clears d
    assert build._underpowered(claim(0.5, paper_values=[80.0, 79.0], at_least=0.6))      # clears by 0.4
    assert not build._underpowered(claim(0.3, paper_values=[80.0, 79.0], at_least=0.6))
    assert build._underpowered(claim(0.5, magnitude=1.0, at_least=-0.6))                  # |d| is what counts


# --- cell noise ------------------------------------------------------------------------------------------------


def _noise(cell, kind, paper, *, suite="sts", key="STSBenchmark", paper_seeds=None, spreads=None, backbone=None):
    side = _side("row", cell, kind, paper=paper, suite=suite, key=key, paper_seeds=paper_seeds, backbone=backbone)
    return build._noise(side, spreads or {})


def test_a_cell_not_compared_with_the_paper_says_why():
    paper = _paper(80.0, std=0.5)
    assert _noise(_cell({1: 70.0}, synthetic=["synthetic-sts"]), "trained", paper).reason == \
        "synthetic data: not compared with the paper"
    found = _noise(_cell({1: 70.0}, stand_in="tiny"), "trained", paper, backbone="bert-base")
    assert (found.noise, found.reason) == (None, "stand-in backbone (tiny in place of bert-base): not compared "
                                                 "with the paper")
    assert _noise(_cell({1: 1.0, 2: 2.0}, statistic="std"), "trained", paper).reason == \
        "a std over seeds is not compared for noise"
    assert _noise(_cell({1: 70.0}), "trained", _paper(80.0), suite="transfer").reason == \
        "one run of ours and no published spread for suite transfer"
    assert _noise(_cell({1: 70.0, 2: 71.0}), "trained", _paper(80.0), suite="transfer").reason == \
        "the paper prints no std and no published spread for suite transfer"
    wos = _noise(_cell({None: 70.0}), "deterministic", paper, suite="wos", key="acc")
    assert wos.reason == "frozen, but the wos evaluation is random (the probe's seed and split) and its spread is " \
                         "not measured"


def test_a_mean_of_seeds_against_the_papers_mean_of_its_seeds():
    values = {1: 80.0, 2: 81.0, 3: 79.0, 4: 80.4}
    cell = _cell(values)
    found = _noise(cell, "trained", _paper(79.5, std=0.6), paper_seeds=5).noise
    ours_se = np.std(list(values.values()), ddof=1) / 2          # sample sd / sqrt(4)
    paper_se = 0.6 * np.sqrt(5 / 4) / np.sqrt(5)
    assert found.sd == pytest.approx(np.hypot(ours_se, paper_se)) and found.delta == pytest.approx(cell.value - 79.5)
    assert found.basis == f"paper se {paper_se:.2f} (std 0.60, n=5); our se {ours_se:.2f} (mean of 4 seeds), z=1.96"
    unknown = _noise(cell, "trained", _paper(79.5, std=0.6)).noise
    assert unknown.sd == pytest.approx(np.hypot(ours_se, 0.6))
    assert unknown.basis == f"paper std 0.60 (seeds unknown); our se {ours_se:.2f} (mean of 4 seeds), z=1.96"


def test_a_paper_without_a_std_gets_the_suites_spread_over_its_seeds():
    spreads = {("sts", "STSBenchmark"): (0.9, 8), ("sts", "*"): (0.5, 20)}
    values = {1: 80.0, 2: 81.0, 3: 79.0}
    ours_se = np.std(list(values.values()), ddof=1) / np.sqrt(3)
    mean = _noise(_cell(values), "trained", _paper(79.5), paper_seeds=10, spreads=spreads).noise
    # the spread is a population std of the papers' seeds: 10 seeds -> sample sd 0.9 sqrt(10/9), se over sqrt(10)
    assert mean.sd == pytest.approx(np.hypot(0.9 * np.sqrt(10 / 9) / np.sqrt(10), ours_se))
    assert mean.basis == ("paper prints no std: sts spread 0.90 (median of 8 published std(s) of this metric), "
                          f"n=10; our se {ours_se:.2f} (mean of 3 seeds), z=1.96")
    one = _noise(_cell(values), "trained", _paper(79.5), paper_seeds=1, spreads=spreads).noise
    assert one.sd == pytest.approx(np.hypot(0.9, ours_se)) and ", one run; " in one.basis
    two = _noise(_cell(values), "trained", _paper(79.5), paper_seeds=2, spreads=spreads).noise
    assert two.sd == pytest.approx(np.hypot(0.9 * np.sqrt(2) / np.sqrt(2), ours_se)) and ", n=2; " in two.basis
    # a best-of-N paper number is one run whatever its seeds
    best = _noise(_cell(values, statistic="best"), "trained", _paper(79.5), paper_seeds=10, spreads=spreads).noise
    assert best.basis.startswith("paper prints no std: sts spread 0.90 (median of 8 published std(s) of this "
                                 "metric), one run; our se ")
    other = _noise(_cell(values), "trained", _paper(79.5), key="STS12", paper_seeds=1, spreads=spreads).noise
    assert other.basis.startswith("paper prints no std: sts spread 0.50 (median of 20 published std(s) of any "
                                  "metric), one run")
    single = _noise(_cell({1: 80.0}), "trained", _paper(79.5, std=0.6), paper_seeds=5, spreads=spreads).noise
    assert single.basis == ("paper se 0.30 (std 0.60, n=5); ours one run: sts spread 0.90 (median of 8 published "
                            "std(s) of this metric), z=1.96")


def test_a_deterministic_cell_has_no_seed_noise_and_a_rounding_slack():
    cell = _cell({None: 70.004}, digits=2)
    found = _noise(cell, "deterministic", _paper(70.0)).noise
    assert (found.sd, found.within) == (0.0, True)
    assert found.basis == "paper deterministic (se 0); ours deterministic (se 0), z=1.96"
    assert not _noise(_cell({None: 70.006}, digits=2), "deterministic", _paper(70.0)).noise.within  # past 0.005
    assert _noise(_cell({None: 70.0004}, digits=3), "deterministic", _paper(70.0)).noise.within
    assert not _noise(_cell({None: 70.0006}, digits=3), "deterministic", _paper(70.0)).noise.within
    with_std = _noise(cell, "deterministic", _paper(70.0, std=0.3), paper_seeds=4).noise
    assert with_std.basis.startswith("paper se 0.17 (std 0.30, n=4); ours deterministic (se 0)")


def test_a_frozen_clustering_cell_sets_its_restarts_noise_on_both_sides(tmp_path):
    results = {"AgNews": {"acc": [1.0] * 5, "acc_std": 0.8, "seeds": list(range(5)), "reported": 80.0},
               "Tweet": {"acc": [1.0] * 5, "acc_std": 0.6, "seeds": list(range(5)), "reported": 50.0},
               "avg": {"reported": 65.0}}
    path = write_summary(tmp_path, "bert-base", "frozen-avg", None, "clustering", results, trained=False)
    cell = _cell({None: 80.0}, files={None: path})
    found = _noise(cell, "deterministic", _paper(79.0), suite="clustering", key="AgNews").noise
    se = 0.8 / np.sqrt(4)
    assert found.sd == pytest.approx(np.hypot(se, se))
    assert found.basis == "paper: the same protocol's noise as ours; ours frozen, noise of its 5 KMeans restarts: " \
                          "se 0.40, z=1.96"
    avg = _noise(_cell({None: 65.0}, files={None: path}), "deterministic", _paper(64.0), suite="clustering", key="avg")
    assert avg.noise.sd == pytest.approx(np.sqrt(2) * np.hypot(0.8 / 2, 0.6 / 2) / 2)
    # restarts not kept (or one restart): no measured noise, so no comparison
    bare = write_summary(tmp_path / "bare", "bert-base", "frozen-avg", None, "clustering",
                         {"AgNews": {"acc_std": 0.8, "seeds": [0], "reported": 80.0}}, trained=False)
    lone = _noise(_cell({None: 80.0}, files={None: bare}), "deterministic", _paper(79.0), suite="clustering",
                  key="AgNews")
    assert lone.noise is None and "KMeans restarts" in lone.reason


def test_a_paper_row_of_another_statistic_is_set_against_that_statistic_of_ours():
    values = {1: 80.0, 2: 81.0, 3: 79.0, 4: 80.4}
    summary = summarize(values)
    cell = _cell(values, statistic="best", summary=summary)
    found = _noise(cell, "trained", _paper(79.5, std=0.6, statistic={"stat": "mean", "seeds": 10, "where": "x:1"}),
                   paper_seeds=10).noise
    assert found.delta == pytest.approx(summary.mean - 79.5)
    assert found.basis.startswith("like with like: our mean of 4 seeds against the paper's mean (x:1); paper se ")


# --- the provenance of a verdict row ------------------------------------------------------------------------


def _hashed(path: Path) -> str:
    return f"{path}#sha256={hashlib.sha256(Path(path).read_bytes()).hexdigest()}"


def test_a_verdict_rows_provenance_names_every_seed_and_which_the_statistic_used(tmp_path):
    files = [write_run(tmp_path, "bert-base", m, seed, noise)
             for seed in (1, 2, 3, 4) for m, noise in (("conpvp", 0.15 + 0.01 * seed), ("simcse", 0.5))]
    result = build.build_verdicts(load_claims(), files, BACKBONES, "unit")
    r = next(c for c in result.claims if c.claim["id"] == "conpvp-t3-vs-simcse-bert-base")
    text = build.row_provenance(r, result.claims_file)
    found = json.loads(text)
    assert text == json.dumps(found, sort_keys=True)
    assert set(found) == {"claim", "claims_file", "a", "b"}
    assert found["claim"] == f"{r.claim['file']}:{r.claim['line']}" and found["claims_file"] == result.claims_file
    claims_path = Path(build.CLAIMS_PATH)
    assert result.claims_file.endswith(f"#sha256={hashlib.sha256(claims_path.read_bytes()).hexdigest()}")
    for key, s in (("a", r.a), ("b", r.b)):
        side = found[key]
        assert set(side) == {"cell", "printed_row", "statistic", "paper", "seeds"}
        assert (side["cell"], side["printed_row"], side["statistic"], side["paper"]) == (
            s.side.describe(), s.label, "best", s.paper.where)
        best = max(s.cell.per_seed, key=s.cell.per_seed.get)
        assert [e["seed"] for e in side["seeds"]] == [1, 2, 3, 4]
        for entry in side["seeds"]:
            assert set(entry) == {"seed", "value", "used", "metrics", "items"}
            assert entry["value"] == s.cell.per_seed[entry["seed"]] and entry["used"] == (entry["seed"] == best)
            assert entry["metrics"] == _hashed(s.cell.files[entry["seed"]])
            items = r.item_files[key].get(entry["seed"])
            assert entry["items"] == (_hashed(items) if entry["seed"] == best else None) and (
                items is not None) == (entry["seed"] == best)
    assert side["cell"] == "conpvp_table3 | BERT-base SimCSE | Avg."


def test_not_checked_statements_and_the_claims_file_reach_the_result(tmp_path):
    claims = load_claims()
    result = build.build_verdicts(claims, [], BACKBONES, "unit")
    assert result.not_checked == list(claims["not_checked"]) and result.not_checked
    assert result.claims_file.startswith("src/sentrepro/verdicts/claims.yaml#sha256=")


# --- judging one claim: the notes and labels each path leaves ------------------------------------------------

SETTINGS = {"level": LEVEL, "seed_resamples": 300, "seed_seed": 0, "item_resamples": 300, "item_seed": 0}


class _Located:
    """A stand-in for :class:`sentrepro.verdicts.build.Tables`: the two sides as given."""

    def __init__(self, a: SideResult, b: SideResult):
        self.by_row = {"A": a, "B": b}
        self.specs = {"t": {"select_by": "STSBenchmark"}}

    def locate(self, side):
        return self.by_row[side.row]


def _judge(a: SideResult, b: SideResult, **claim) -> ClaimResult:
    full = {"id": "c", "direction": "greater", "file": "p.txt", "line": 3, "table": "t", "column": "col",
            "a": "A", "b": "B", **claim}
    return build.judge(full, _Located(a, b), SETTINGS)


def _summaries(root: Path, method: str, values, suite="sts", trained=True) -> dict:
    """Metrics files of one run per seed whose every STS number is the seed's value."""
    return {seed: write_summary(root, "bert-base", method, seed, suite, _sts(v), trained=trained)
            for seed, v in enumerate(values, start=1)}


def _trained(label, root, method, values, *, statistic="mean", suite="sts", key="STSBenchmark", **cell):
    files = _summaries(root, method, values)
    per_seed = dict(zip(files, values))
    return _side(label, _cell(per_seed, statistic=statistic, files=files, **cell), "trained",
                 suite=suite, key=key)


def test_a_trained_side_of_two_seeds_is_not_decidable_and_three_are(tmp_path):
    r = _judge(_trained("A", tmp_path, "m1", [80.0, 81.0]), _trained("B", tmp_path, "m2", [70.0, 71.0, 70.5]))
    assert r.verdict == "not decidable" and r.computed == ""
    assert r.why == ("A is a trained side with 2 seed(s): below 3 seeds no interval over seeds keeps its stated "
                     "error rate, so none can separate the methods from the seed")
    both = _judge(_trained("A", tmp_path, "m3", [80.0, 81.0]), _trained("B", tmp_path, "m4", [70.0, 71.0]))
    assert both.why.count("is a trained side with 2 seed(s)") == 2 and "; B is a trained side" in both.why
    three = _judge(_trained("A", tmp_path, "m5", [80.0, 81.0, 80.4]), _trained("B", tmp_path, "m6", [70.0, 71.0, 70.5]),
                   suite_b=None)
    assert three.verdict != "not decidable" and three.seed is not None and three.why == "" and three.cause == ""


def test_the_test_set_interval_says_why_it_is_missing(tmp_path):
    a = _trained("A", tmp_path, "m1", [80.0, 81.0, 80.4])
    other_suite = _trained("B", tmp_path, "m2", [70.0, 71.0, 70.5], suite="transfer", key="MR")
    r = _judge(a, other_suite)
    assert r.items is None and r.items_note == "no test-set interval: per-item scores are kept for STS only " \
                                               "(suite transfer)"
    r = _judge(other_suite, a)
    assert r.items_note.endswith("(suite transfer)")
    other_key = _trained("B", tmp_path, "m3", [70.0, 71.0, 70.5], key="STS12")
    assert _judge(a, other_key).items_note == ("no test-set interval: the sides read different metrics "
                                               "(STSBenchmark vs STS12)")
    same = _judge(a, _trained("B", tmp_path, "m4", [70.0, 71.0, 70.5]))
    first = a.cell.files[1]
    assert same.items_note == (f"no test-set interval: {first}: no 'item_scores' record (written before per-pair "
                               "scores were kept)")
    assert same.item_files == {} and same.seed.method == "welch-t" and same.verdict == "holds" and same.why == ""


def test_sides_of_different_statistics_get_no_seed_interval_and_no_interval_is_inconclusive(tmp_path):
    a = _trained("A", tmp_path, "m1", [80.0, 81.0, 80.4], statistic="best")
    b = _trained("B", tmp_path, "m2", [70.0, 71.0, 70.5], suite="transfer", key="MR")
    r = _judge(a, b)
    assert r.seed is None and r.seed_note == "no seed interval: the sides use different statistics (best vs mean)"
    assert (r.verdict, r.why) == ("inconclusive", "no interval")


def test_a_published_side_is_a_constant_and_a_stand_in_is_labelled_but_not_judged(tmp_path):
    published = _side("A", None, "published", paper=_paper(70.0), reported_only=True)
    stand_in = _trained("B", tmp_path, "m1", [60.0, 61.0, 60.4, 60.2], stand_in="tiny")
    stand_in.backbone = "bert-base"
    r = _judge(published, stand_in)
    assert r.labels == ["tiny in place of bert-base"]
    assert r.seed_note == "A is published: tested as a constant" and r.seed.method == "one-sample-t"
    assert r.items_note == "no test-set interval: one side is a published number (no per-item scores)"
    assert (r.computed, r.verdict) == ("holds", "not judged")
    assert r.why == "computed on a stand-in backbone or synthetic data for the code path only (it would read " \
                    "'holds'); never counted"
    # a reason the computed verdict had is kept after it
    flat = _trained("B", tmp_path, "m2", [70.0, 70.0, 70.0], stand_in="tiny", synthetic=["syn-a", "syn-b"])
    flat.backbone = "bert-base"
    r = _judge(_trained("A", tmp_path, "m3", [70.0, 70.0, 70.0], suite="transfer", key="MR"), flat)
    assert r.labels == ["tiny in place of bert-base", "SYNTHETIC data: syn-a, syn-b"] and r.synthetic


def test_two_constants_need_no_seed_interval_and_an_exact_pair_decides_alone(tmp_path):
    files = _summaries(tmp_path, "frozen", [75.0], trained=False)
    frozen = _side("A", _cell({1: 75.0}, files=files), "deterministic")
    r = _judge(frozen, _side("B", None, "published", paper=_paper(70.0), reported_only=True))
    assert r.seed_note == "no seed interval needed: both sides are constants (deterministic or published)"
    assert r.items_note == f"no test-set interval: {files[1]}: no 'item_scores' record (written before per-pair " \
                           "scores were kept)"

    def exact(a_value, b_value, **claim):
        det = lambda label, v: _side(label, _cell({None: v}), "deterministic", suite="anisotropy", key="x")  # noqa
        return _judge(det("A", a_value), det("B", b_value), exact="whole population", **claim)

    r = exact(0.45, 0.15)
    assert r.seed_note == "no seed interval needed: both sides are deterministic over a whole population"
    assert r.exact.estimate == pytest.approx(0.30) and r.verdict == "holds" and r.why == ""
    assert exact(0.45, 0.15, at_least=0.5).verdict != "holds"          # 0.30 does not clear "at least 0.5"
    assert exact(0.45, 0.15, direction="no_gain").verdict != "holds"   # a tie claim with no margin: +0.30 is a gain
    assert exact(0.45, 0.15, direction="no_gain", margin=0.4).verdict == "holds"


def test_an_underpowered_claim_says_what_the_seeds_can_detect(tmp_path):
    a = _trained("A", tmp_path, "m1", [80.0, 84.0, 76.0], suite="transfer", key="MR")
    b = _trained("B", tmp_path, "m2", [79.0, 83.0, 75.5], suite="transfer", key="MR")
    r = _judge(a, b, paper_values=[80.0, 79.9])
    assert r.verdict == "inconclusive — underpowered"
    assert r.why == f"the seeds can detect a difference of {r.mdd:.2f} (80% power), more than the difference the " \
                    "paper claims"
    tie = _judge(a, b, direction="no_gain", margin=0.2)
    assert tie.verdict == "inconclusive — underpowered" and tie.why.endswith(", more than the margin")


def test_a_partial_average_of_ours_is_labelled_with_its_tasks(tmp_path):
    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    files = {s: write_run(tmp_path, "bert-base", "m1", s, 0.2, tasks=two) for s in (1, 2, 3)}
    cell = _cell({s: 80.0 + s for s in files}, files=files)
    r = _judge(_side("A", cell, "trained", key="avg"), _side("B", None, "published", paper=_paper(70.0)))
    assert r.labels == ["Avg. over 2 of 7 STS tasks (STSBenchmark, SICKRelatedness)"] and r.partial
    assert r.magnitude == {}                                  # its size is not the paper's


# --- the result's own properties ------------------------------------------------------------------------------


def test_claim_and_side_properties_for_missing_numbers():
    empty = _side("A", None, None)
    assert (empty.n, empty.statistic, empty.ours, empty.flagged, empty.seeds_used()) == (0, None, None, False, [])
    no_summary = _side("A", _cell({1: 80.0, 2: 81.0}, statistic="best", summary=None), "trained")
    assert no_summary.seeds_used() == []
    r = _claim(empty, _side("B", _cell({1: 70.0}), "trained", paper=_paper(None)), paper_values=[80.0, None])
    assert r.paper_values == (80.0, None) and r.paper_delta is None and not r.synthetic and not r.partial
    r.labels = ["tiny in place of bert-base", "Avg. over 2 of 7 STS tasks (STSBenchmark, SICKRelatedness)"]
    assert r.partial
    r.magnitude = {"welch-t": "inside", "seed-bootstrap": "ours larger"}
    assert r.magnitude_inside == {"welch-t": True, "seed-bootstrap": False}
    assert build.NOT_DECIDABLE == "not decidable"


def test_multiplicity_gives_each_judged_claim_its_largest_p_and_holm_over_the_judged_ones():
    from scipy import stats as scipy_stats

    def judged(estimate, verdict="holds", **claim):
        r = _claim(_side("A", None, None), _side("B", None, None), **claim)
        r.verdict = verdict
        r.seed = Interval(estimate, estimate - 1.96, estimate + 1.96, "welch-t", "")   # se 1
        return r

    strong, middle, weak = judged(2.652), judged(2.054), judged(1.645)
    unsure = judged(3.5, verdict="inconclusive")
    tie = judged(-0.2, direction="no_gain", margin=0.5)
    tie_no_margin = judged(-2.2, direction="no_gain")
    at_least = judged(3.0, at_least=0.5)
    nothing = _claim(_side("A", None, None), _side("B", None, None))
    nothing.verdict = "inconclusive"
    skipped = _claim(_side("A", None, None), _side("B", None, None))   # not run
    family = [strong, middle, weak, unsure, tie, nothing, skipped]
    build.multiplicity(family, LEVEL)
    for r, estimate in ((strong, 2.652), (middle, 2.054), (weak, 1.645), (unsure, 3.5)):
        assert r.p_value == pytest.approx(scipy_stats.norm.sf(estimate), rel=1e-3)
    assert tie.p_value == pytest.approx(scipy_stats.norm.sf(0.7), rel=1e-3)   # 0.7 below the margin
    assert (nothing.p_value, skipped.p_value, skipped.holm_holds) == (1.0, None, None)
    # Holm at 0.025 over 6 judged: p 0.00023 (unsure) <= 0.025 / 6, 0.0040 (strong) <= 0.025 / 5, then 0.020 (middle)
    # > 0.025 / 4 stops it
    assert unsure.holm_holds is False                       # rejected, but its verdict is not "holds"
    assert strong.holm_holds is True and middle.holm_holds is False and weak.holm_holds is False
    build.multiplicity([tie_no_margin, at_least], LEVEL)
    assert tie_no_margin.p_value == pytest.approx(scipy_stats.norm.sf(2.2), rel=1e-3)   # margin 0 when none given
    assert at_least.p_value == pytest.approx(scipy_stats.norm.sf(2.5), rel=1e-3)        # 2.5 above d = 0.5


# --- locating a side in the built tables ----------------------------------------------------------------------


def test_locate_reads_the_seeds_behind_the_papers_number_and_the_tables_digits(tmp_path):
    from sentrepro.planning.reported import load_reported

    files = [write_summary(tmp_path, "bert-base", "conpvp", seed, "sts",
                           {**{t: {"reported": 80.0 + seed} for t in ("STS13", "STS14", "STS15", "STS16",
                                                                      "STSBenchmark", "SICKRelatedness")},
                            "avg": {"reported": 80.0 + seed}})
             for seed in (1, 2, 3)]
    tables = build.Tables(["conpvp_table3", "promptbert_knowl4"], files, BACKBONES, load_reported())
    side = tables.locate(Side("conpvp_table3", "BERT-base ConPVP", "STS12"))
    assert side.cell is None and side.row_ran and side.kind is None and side.paper_seeds == 4 and side.digits == 2
    assert build._cause(side)[0] == "metric missing"
    assert tables.locate(Side("conpvp_table3", "BERT-base ConPVP", "STS13")).kind == "trained"
    dagger = tables.locate(Side("conpvp_table3", "BERT-base PromptBERT", "Avg."))
    assert dagger.paper.statistic["seeds"] == 10 and dagger.paper_seeds == 10 and not dagger.row_ran
    spec = tables.specs["promptbert_knowl4"]
    aniso = tables.locate(Side("promptbert_knowl4", spec["rows"][0]["label"], spec["columns"][0]["label"]))
    assert aniso.digits == spec["digits"] == 4


def test_a_frozen_run_is_not_trained_whatever_else_its_provenance_names(tmp_path):
    frozen = write_summary(tmp_path, "bert-base", "frozen-avg", None, "sts", _sts(70.0), trained=False)
    payload = json.loads(frozen.read_text())
    payload["provenance"]["inputs"] = [{"role": "dataset", "path": "x.json"}, {"role": "model", "path": "m"}]
    frozen.write_text(json.dumps(payload))
    trained_file = write_summary(tmp_path, "bert-base", "simcse", 1, "sts", _sts(70.0))
    assert not build.trained(_cell({None: 70.0}, files={None: frozen}))
    assert build.trained(_cell({1: 70.0}, files={1: trained_file}))


def test_best_of_n_selects_by_the_specs_metric_and_a_mean_needs_none(tmp_path):
    side = _trained("A", tmp_path, "m1", [80.0, 81.0, 80.4], statistic="best")
    assert build._selection(side, {"select_by": "STSBenchmark"}) == [80.0, 81.0, 80.4]
    assert build._selection(_trained("B", tmp_path, "m2", [1.0, 2.0]), {"select_by": "STSBenchmark"}) is None


def test_per_pair_scores_missing_for_a_task_name_the_side_and_the_task(tmp_path):
    from sentrepro.evaluation.item_scores import ItemScoresError

    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    files = {1: write_run(tmp_path, "bert-base", "m1", 1, 0.2, tasks=two)}
    side = _side("A", _cell({1: 80.0}, files=files), "trained")
    with pytest.raises(ItemScoresError, match=r"^A: no per-pair scores for STS12$"):
        build._item_tasks(side, "STS12")
    predictions, gold, found, tasks = build._item_tasks(side, "avg")
    assert tasks == ["SICKRelatedness", "STSBenchmark"] and set(found) == {1} and predictions["STSBenchmark"].shape == (
        1, 150)


def test_a_partial_average_cell_and_a_random_frozen_evaluation_are_not_compared(tmp_path):
    two = {"STSBenchmark": 150, "SICKRelatedness": 130}
    files = {1: write_run(tmp_path, "bert-base", "m1", 1, 0.2, tasks=two)}
    found = _noise(_cell({1: 80.0}, files=files), "trained", _paper(79.0, std=0.5), key="avg")
    assert (found.noise, found.reason) == (None, "ours averages 2 of 7 STS tasks")
    assert build.partial_average(_side("A", _cell({1: 80.0}, files=files), "trained", key="avg")) == [
        "STSBenchmark", "SICKRelatedness"]
    assert build.partial_average(_side("A", _cell({1: 80.0}, files=files), "trained", key="STSBenchmark")) is None
    assert build.partial_average(_side("A", _cell({1: 80.0}, files=files), "trained", key="avg",
                                       suite="transfer")) is None
    whole = {1: write_run(tmp_path / "w", "bert-base", "m1", 1, 0.2)}
    assert build.partial_average(_side("A", _cell({1: 80.0}, files=whole), "trained", key="avg")) is None
    bare = write_summary(tmp_path, "bert-base", "frozen-avg", None, "clustering",
                         {"AgNews": {"reported": 80.0}}, trained=False)
    lone = _noise(_cell({None: 80.0}, files={None: bare}), "deterministic", _paper(79.0), suite="clustering",
                  key="AgNews")
    assert lone.reason == ("frozen, but the clustering evaluation is random (KMeans restarts) and its spread is not "
                           "measured")


def test_the_restarts_noise_needs_two_restarts_on_every_set_it_averages(tmp_path):
    results = {"AgNews": {"acc_std": 0.8, "seeds": [0, 1], "reported": 80.0},
               "Tweet": {"acc_std": 0.6, "seeds": [0, 1], "reported": 50.0},
               "nmi": {"reported": 0.5}, "avg": {"reported": 65.0}}
    path = write_summary(tmp_path, "bert-base", "frozen-avg", None, "clustering", results, trained=False)
    side = _side("A", _cell({None: 80.0}, files={None: path}), "deterministic", suite="clustering", key="AgNews")
    assert build.evaluation_noise(side) == (pytest.approx(0.8), "ours frozen, noise of its 2 KMeans restarts: se 0.80")
    side.key = "avg"                   # the sets with restarts; "nmi" and "avg" have none
    assert build.evaluation_noise(side)[0] == pytest.approx(np.hypot(0.8, 0.6) / 2)


def test_the_suites_spreads_are_the_medians_of_the_papers_printed_stds_of_mean_columns():
    """The spread a published number without its own ± is given: per (suite, metric) and per suite over every
    metric, the median of the ± the papers print beside means (counts: how many ± each median is over)."""
    from sentrepro.planning.reported import load_reported
    from sentrepro.planning.table_specs import cell_selector
    from sentrepro.tables.build import paper_value

    names = sorted(p.stem for p in (Path(build.__file__).parents[1] / "planning" / "specs").glob("*.yaml"))
    tables = build.Tables(names, [], BACKBONES, load_reported())
    spreads = build.suite_spreads(tables)
    assert {k: (round(v, 4), n) for k, (v, n) in spreads.items()} == {
        ("sts", "*"): (0.52, 70), ("sts", "SICKRelatedness"): (0.555, 8), ("sts", "STS12"): (0.915, 8),
        ("sts", "STS13"): (0.61, 8), ("sts", "STS14"): (0.525, 8), ("sts", "STS15"): (0.83, 8),
        ("sts", "STS16"): (0.445, 8), ("sts", "STSBenchmark"): (0.43, 8), ("sts", "avg"): (0.305, 14),
        ("transfer", "*"): (0.18, 32), ("transfer", "CR"): (0.24, 4), ("transfer", "MPQA"): (0.08, 4),
        ("transfer", "MR"): (0.235, 4), ("transfer", "MRPC"): (0.24, 4), ("transfer", "SST2"): (0.29, 4),
        ("transfer", "SUBJ"): (0.12, 4), ("transfer", "TREC"): (0.48, 4), ("transfer", "avg"): (0.135, 4)}
    # the columns of another statistic (PromptBERT's Std / Max / Min / Range) are left out; none of them prints a ±
    forced = [(spec, row, column) for spec in tables.specs.values() for column in spec["columns"]
              if column.get("stat") not in (None, "mean") for row in spec["rows"]]
    assert forced
    for spec, row, column in forced:
        paper = paper_value(tables.reported, spec, row, column, cell_selector(spec, row, column)["key"])
        assert paper is None or paper.std is None, (spec["name"], row["label"], column["label"])


def test_more_of_what_a_verdict_row_shows(tmp_path):
    four = _side("A", _cell({None: 0.4445}, digits=4), "deterministic", digits=4)
    assert _claim(four, _side("B", None, None)).digits == 4
    compared = _noise(_cell({1: 80.0, 2: 81.0, 3: 79.0}), "trained", _paper(79.5, std=0.6), paper_seeds=5)
    assert compared.noise is not None and compared.reason == ""
    # two sides without a number, for different reasons: each said, in side order
    r = _judge(_side("A", None, None), _side("B", None, None, missing=("STS12",), column="Avg."))
    assert r.why == ("A: no run of ours in this experiment; B: Avg. left empty: ours lacks STS12 (an average of some "
                     "columns is never set against the paper's average of all)")
    assert r.cause == "no run in this experiment"


def test_a_frozen_sts_side_against_a_published_number_keeps_its_per_pair_files_under_its_side(tmp_path):
    files = {1: write_run(tmp_path, "bert-base", "frozen", 1, 0.2, trained=False)}
    frozen = _side("A", _cell({1: 75.0}, files=files), "deterministic")
    published = _side("B", None, "published", paper=_paper(70.0), reported_only=True)
    from sentrepro.evaluation.item_scores import item_scores_file

    items = item_scores_file(files[1], json.loads(files[1].read_text()))
    r = _judge(frozen, published)
    assert r.items.method == "item-bootstrap-vs-constant" and r.item_files == {"a": {1: items}}
    r = _judge(published, frozen)
    assert r.item_files == {"b": {1: items}} and r.items.estimate < 0         # the published side comes first


def test_a_flagged_claim_keeps_the_reason_its_computed_verdict_had(tmp_path):
    a = _trained("A", tmp_path, "m1", [80.0, 81.0, 80.4], statistic="best", stand_in="tiny")
    a.backbone = "bert-base"
    b = _trained("B", tmp_path, "m2", [70.0, 71.0, 70.5], suite="transfer", key="MR")
    r = _judge(a, b)
    assert (r.verdict, r.computed) == ("not judged", "inconclusive")
    assert r.why == ("computed on a stand-in backbone or synthetic data for the code path only (it would read "
                     "'inconclusive'); never counted; no interval")
