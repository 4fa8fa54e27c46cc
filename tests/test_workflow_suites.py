"""Every evaluation suite, analysis and figure inside the real workflow, on tiny models, on CPU.

One workflow run (tiny BERT: a SimCSE run and a frozen baseline) covers all suites. The real SentEval,
STS-B and clustering files come from ../shared/data through the local-mirror option (WOS: the synthetic
fixture, since no real copy is available offline); slow suites are cut with the explicit `max_samples`
option, which the metrics files record.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from sentrepro.runs import deep_merge
from sentrepro.data.benchmarks.clustering import CLUSTERING_SETS
from sentrepro.data.tasks import task_names
from sentrepro.data.benchmarks.wos import DOCS_PER_VERSION
from sentrepro.planning import registry
from tests.workflow_helpers import only_units, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

EXP = "wfsuites"
RUNS = ("tiny-bert/simcse/seed1", "tiny-bert/frozen-avg/frozen")
# every suite of the registry scoring a run's model (the step-0 suite needs no second test), every figure
SUITES = [name for name, entry in registry.suites().items() if entry.model == "checkpoint"]
FIGURES = list(registry.figures())
PROTOCOL_SUITES = ("transfer", "fewshot", "clustering", "wos")  # on the trained run only (fewer jobs)
ONLY_SIMCSE = {"backbones": ["tiny-bert"], "methods": ["simcse"]}
TRANSFER_TASKS = task_names("transfer")
EVALUATION = {
    "suites": only_units("suites", SUITES),
    "figures": only_units("figures", FIGURES),
    "transfer": {"mode": "fasttest", "max_samples": 60, "runs": ONLY_SIMCSE},
    "fewshot": {"shots": 4, "seeds": [0, 1, 2], "mode": "fasttest", "n_epochs": 5, "max_samples": 60,
                "runs": ONLY_SIMCSE},
    "clustering": {"seeds": [0, 1], "n_init": 2, "max_samples": 150, "runs": ONLY_SIMCSE},
    "wos": {"version": "WOS5736", "mode": "fasttest", "max_tokens": 64, "runs": ONLY_SIMCSE},
    "cosine_gold": {"runs": None},
    "token_removal": {"ks": [0, 3, 10], "runs": None},
    "tsne": {"perplexity": 10, "runs": None},
    "align_uniform": {"splits": ["test"], "runs": None},
    "anisotropy": {"n_sentences": 300, "runs": None},
}


@pytest.fixture(scope="module")
def suites_run(tmp_path_factory, shared_data, tiny_models):
    """One complete workflow run with every suite and figure."""
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXP)
    assert overlay["data"]["sources"]["wos"]["synthetic"]
    overlay["evaluation"] = deep_merge(overlay["evaluation"], EVALUATION)
    workdir = tmp_path_factory.mktemp("wf-suites")
    write_overlay(workdir, overlay)
    snakemake(workdir)
    return workdir


def metrics(workdir, run: str, suite: str) -> dict:
    return json.loads((workdir / "results" / EXP / "metrics" / run / f"{suite}.json").read_text())


def test_every_suite_writes_one_metrics_file_per_run_with_provenance(suites_run):
    for run in RUNS:
        backbone, method, run_id = run.split("/")
        for suite in SUITES:
            path = suites_run / "results" / EXP / "metrics" / run / f"{suite}.json"
            if suite in PROTOCOL_SUITES and method != "simcse":
                assert not path.exists(), f"{path}: the suite's runs filter excludes this run"
                continue
            payload = metrics(suites_run, run, suite)
            assert payload["suite"] == suite
            provenance = payload["provenance"]
            assert provenance["config"]["run"] == {"backbone": backbone, "method": method,
                                                   "seed": None if run_id == "frozen" else 1}
            roles = {entry["role"] for entry in provenance["inputs"]}
            assert all(len(entry["sha256"]) == 64 for entry in provenance["inputs"])
            assert ("training summary" in roles) == (method == "simcse"), (run, suite, roles)
            assert provenance["step"] == f"evaluate_{suite}" and payload["aggregation"]
            assert payload["encoded_sentences"] > 0
            assert all(isinstance(v["reported"], (int, float)) for k, v in payload["results"].items()
                       if not k.startswith("scaled_mean"))


def test_transfer_metrics(suites_run):
    payload = metrics(suites_run, RUNS[0], "transfer")
    assert set(payload["results"]) == set(TRANSFER_TASKS) | {"avg"}
    assert payload["subset"]["applied"] and payload["subset"]["max_samples"] == 60
    assert payload["subset"]["sizes"]["MR"] == {"all": [60, 10662]}
    assert payload["subset"]["sizes"]["SST2"] == {"train": [60, 67349], "dev": [60, 872], "test": [60, 1821]}
    assert payload["data"] == {"source": "senteval", "synthetic": False}
    for task in TRANSFER_TASKS:
        result = payload["results"][task]
        assert result["reported"] == result["acc"] and 0 <= result["acc"] <= 100 and result["mode"] == "fasttest"
    assert payload["results"]["avg"]["reported"] == pytest.approx(
        np.mean([payload["results"][t]["acc"] for t in TRANSFER_TASKS]))
    assert payload["provenance"]["config"]["settings"]["mode"] == "fasttest"


def test_fewshot_metrics(suites_run):
    payload = metrics(suites_run, RUNS[0], "fewshot")
    for task in TRANSFER_TASKS:
        result = payload["results"][task]
        assert result["seeds"] == [0, 1, 2] and len(result["accs"]) == 3 and result["shots"] == 4
        assert result["reported"] == result["acc_mean"]
        assert result["n_encoded_pool"] <= 3 * 4 * result["n_classes"]
    # only test rows are cut: SST-2's pool is the whole training split, its test set 60 of 1821
    assert payload["subset"]["sizes"]["SST2"] == {"test": [60, 1821]}
    assert payload["results"]["SST2"]["n_pool"] == 67349


def test_clustering_metrics(suites_run):
    payload = metrics(suites_run, RUNS[0], "clustering")
    assert set(payload["results"]) == set(CLUSTERING_SETS) | {"avg"}
    agnews = payload["results"]["AgNews"]
    assert agnews["k"] == agnews["n_classes"] == 4 and agnews["n_samples"] == 150 and agnews["n_init"] == 2
    assert agnews["seeds"] == [0, 1] and agnews["reported"] == agnews["acc_mean"] and 25 <= agnews["acc_mean"] <= 100
    assert payload["subset"]["sizes"]["GoogleNews-TS"] == {"all": [150, 11109]}


def test_wos_metrics_on_the_synthetic_tree(suites_run):
    payload = metrics(suites_run, RUNS[0], "wos")
    assert set(payload["results"]) == {"acc", "precision", "recall", "f1"}
    assert payload["data"] == {"source": "wos", "synthetic": True}
    assert payload["wos"]["n_train"] + payload["wos"]["n_test"] == DOCS_PER_VERSION
    assert payload["wos"]["level2"]["acc"] == payload["results"]["acc"]["reported"]
    assert payload["results"]["f1"]["reported"] == payload["wos"]["level2"]["macro_f1"]
    assert payload["wos"]["level1"]["n_classes"] == 3


def test_analyses_metrics(suites_run):
    sts = metrics(suites_run, RUNS[0], "sts")
    cosine = metrics(suites_run, RUNS[0], "cosine_gold")
    assert len(cosine["pairs"]["gold"]) == len(cosine["pairs"]["scaled"]) == 1379 and cosine["variant"] == "senteval"
    assert min(cosine["pairs"]["scaled"]) == 0.0 and max(cosine["pairs"]["scaled"]) == 1.0
    assert cosine["results"]["spearman"]["reported"] == pytest.approx(sts["results"]["STSBenchmark"]["reported"],
                                                                      abs=1e-3)
    removal = metrics(suites_run, RUNS[0], "token_removal")
    assert removal["curve"]["ks"] == [0, 3, 10] and len(removal["curve"]["removed_tokens"]) == 10
    counts = [removal["curve"]["token_counts"][t] for t in removal["curve"]["removed_tokens"]]
    assert counts == sorted(counts, reverse=True) and counts[0] > 1000  # STS-B test: 2,758 sentences
    assert removal["results"]["k10"]["reported"] != removal["results"]["k0"]["reported"]
    # k = 0 is the STS suite's score; sentences are batched with other neighbours (padding), hence a tolerance
    assert removal["results"]["k0"]["reported"] == pytest.approx(sts["results"]["avg"]["reported"], abs=0.05)
    tsne = metrics(suites_run, RUNS[1], "tsne")
    assert len(tsne["points"]) == 60 and {p["gold"] for p in tsne["points"]} == {0, 3, 5}
    assert all(np.isfinite([p["x"], p["y"]]).all() for p in tsne["points"])
    assert [p["stsb_index"] for p in tsne["points"]] == [p["stsb_index"] for p in metrics(suites_run, RUNS[0],
                                                                                          "tsne")["points"]]
    au = metrics(suites_run, RUNS[1], "align_uniform")["results"]
    assert 0 <= au["align"]["reported"] <= 4 and au["uniform"]["reported"] <= 0 and au["align"]["n_pairs"] > 100
    aniso = metrics(suites_run, RUNS[1], "anisotropy")["results"]
    corpus = (suites_run / "resources" / "corpus" / "wiki-sample" / "sentences.txt").read_text().splitlines()
    assert aniso["sentence"]["n"] == min(300, len(corpus)) and all(-1 <= v["reported"] <= 1 for v in aniso.values())


def test_figures_are_written_non_empty_with_their_inputs(suites_run):
    figures = suites_run / "results" / EXP / "figures"
    for name in FIGURES:
        png, pdf = (figures / f"{name}.png").read_bytes(), (figures / f"{name}.pdf").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000, name
        assert pdf.startswith(b"%PDF") and len(pdf) > 1000, name
        record = json.loads((figures / f"{name}.json").read_text())
        drawn = sorted(entry["path"] for entry in record["provenance"]["inputs"])
        runs = RUNS[:1] if name in PROTOCOL_SUITES else RUNS
        assert drawn == sorted(f"results/{EXP}/metrics/{run}/{name}.json" for run in runs)
        assert record["outputs"]["png"]["bytes"] == len(png)


def test_nothing_to_do_after_a_run_and_a_suite_setting_reruns_only_that_suite(suites_run):
    assert planned_jobs(snakemake(suites_run, "-n")) == {}
    overlay = yaml.safe_load((suites_run / "overlay.yaml").read_text())
    overlay["evaluation"]["clustering"]["seeds"] = [0, 1, 2]
    changed = suites_run / "overlay-clustering-seeds.yaml"
    changed.write_text(yaml.safe_dump(overlay, sort_keys=False))
    jobs = planned_jobs(snakemake(suites_run, "-n", overlay=changed))
    # the one clustering job, and the tables (and verdicts) that read clustering results; no training, no other suite
    assert jobs["evaluate_clustering"] == 1 and set(jobs) <= {"evaluate_clustering", "table", "verdicts", "all"}, jobs
    overlay["evaluation"]["clustering"]["seeds"] = [0, 1]
    overlay["evaluation"]["tsne"]["perplexity"] = 12
    changed.write_text(yaml.safe_dump(overlay, sort_keys=False))
    jobs = planned_jobs(snakemake(suites_run, "-n", overlay=changed))
    assert jobs["evaluate_tsne"] == 2 and jobs["figure"] == 1 and set(jobs) <= {"evaluate_tsne", "figure", "table",
                                                                                "all"}, jobs
