"""CONTRIBUTING.md's recipe, followed once for real: a new method and a new suite through the registry alone.

A copy of the checkout gets two new modules (a method kind and an evaluation suite), one entry each in
``registry.yaml``, and nothing else; a config overlay trains the new method on the tiny model and runs
the new suite (and STS) on it, through the real workflow. The new kind's parameters are validated from its
registry entry, its jobs' code fingerprints name its module, and editing the new suite's module reruns
that suite's jobs only.
"""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
import yaml

from tests.workflow_helpers import REPO, copy_checkout, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

METHOD_MODULE = '''"""SimCSE's loss on mean-pooled token states instead of [CLS] (a method added through the registry)."""

from torch import Tensor

from sentrepro.backbones import pool_avg
from sentrepro.methods.base import SentenceModel
from sentrepro.methods.simcse import SimCSE, simcse_loss


class MeanSimCSE(SimCSE):
    kind = "mean_simcse"

    def build_model(self, encoder) -> SentenceModel:
        return SentenceModel(encoder)  # no projection head

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        out = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        pooled = pool_avg(out.last_hidden_state, batch["attention_mask"])  # (2B, H)
        pairs = pooled.view(-1, 2, pooled.shape[-1])  # (B, 2, H): the two dropout views of each sentence
        return simcse_loss(pairs[:, 0], pairs[:, 1], self.params["temperature"])

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        return pool_avg(model.encoder(**inputs).last_hidden_state, inputs["attention_mask"])
'''

SUITE_MODULE = '''"""The mean L2 norm of a run's STS-B sentence vectors (a suite added through the registry)."""

from pathlib import Path

import numpy as np

from sentrepro.data.sts import read_sts_benchmark
from sentrepro.evaluation.job import SuiteJob, source_root, write_metrics


def run_norms(job: SuiteJob, manifest: Path, out: Path) -> dict:
    split = job.settings["split"]
    path = source_root(manifest) / job.settings["sts"]["stsb_dir"] / f"sts-{split}.csv"
    pairs = read_sts_benchmark(path, split=split, check_counts=job.check_counts)
    job.add_data_files([path], f"STS-B {split}")
    vectors = job.embed([s for pair in pairs for s in (pair.s1, pair.s2)])  # (2n, H)
    norms = np.linalg.norm(vectors, axis=1)
    return write_metrics(job, out, {"mean_norm": {"reported": float(norms.mean()), "n": int(len(norms))}},
                         aggregation=f"mean L2 norm of the STS-B {split} sentence vectors")
'''

METHOD_ENTRY = {"implementation": "sentrepro.methods.mean_simcse:MeanSimCSE", "trains": True,
                "training_corpus": "sentences", "authors_precision": "fp32",
                "params": ["trainer", "temperature", "max_seq_length"], "cost": {"encoder_passes": 2}}
SUITE_ENTRY = {"implementation": "sentrepro.evaluation.norms_suite:run_norms", "data": "sts", "model": "checkpoint",
               "resources": {"mem_mb": 2000, "runtime": 10, "cpus_per_task": 1, "gpu": 0},
               "cost": {"small": 5, "base": 10, "large": 20},
               "settings": {"description": "mean L2 norm of STS-B sentence vectors",
                            "properties": {"split": {"enum": ["dev", "test"], "default": "test"},
                                           "device": {"$ref": "#/$defs/suite_device"}}}}
RUN = "tiny-bert/mean-simcse/seed1"


@pytest.fixture(scope="module")
def extended(tmp_path_factory, shared_data, tiny_models):
    """A checkout extended by the recipe, and one workflow run of the new method and suite."""
    root = tmp_path_factory.mktemp("extended")
    repo = copy_checkout(root / "checkout")
    package = repo / "src" / "sentrepro"
    (package / "methods" / "mean_simcse.py").write_text(METHOD_MODULE, encoding="utf-8")
    (package / "evaluation" / "norms_suite.py").write_text(SUITE_MODULE, encoding="utf-8")
    registry = yaml.safe_load((package / "registry.yaml").read_text(encoding="utf-8"))
    registry["methods"]["mean_simcse"] = METHOD_ENTRY
    registry["suites"]["norms"] = SUITE_ENTRY
    (package / "registry.yaml").write_text(yaml.safe_dump(registry, sort_keys=False), encoding="utf-8")

    overlay = tiny_overlay(shared_data, tiny_models, experiment="wfext")
    overlay["methods"] = {"mean-simcse": {"kind": "mean_simcse", "params": {
        "temperature": 0.05, "max_seq_length": 32, "max_steps": 4, "eval_steps": 2, "batch_size": 8, "lr": 1e-4}}}
    overlay["matrix"] = [{"backbones": ["tiny-bert"], "methods": ["mean-simcse"], "seeds": [1]}]
    overlay["evaluation"]["suites"] = ["sts", "norms"]
    overlay["evaluation"]["figures"] = []
    overlay["evaluation"]["norms"] = {"split": "test"}
    overlay["tables"] = []
    workdir = root / "work"
    write_overlay(workdir, overlay)
    snakemake(workdir, repo=repo)
    return repo, workdir


def test_only_the_registry_and_two_new_modules_differ_from_the_checkout(extended):
    repo, _ = extended
    differing = []
    for copied in sorted(p for p in repo.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        original = REPO / copied.relative_to(repo)
        if not original.exists() or not filecmp.cmp(copied, original, shallow=False):
            differing.append(copied.relative_to(repo).as_posix())
    assert differing == ["src/sentrepro/evaluation/norms_suite.py", "src/sentrepro/methods/mean_simcse.py",
                         "src/sentrepro/registry.yaml"]


def test_the_new_method_trains_and_the_new_suite_scores_it(extended):
    _, workdir = extended
    metrics = workdir / "results" / "wfext" / "metrics" / RUN
    summary = json.loads((workdir / "results" / "wfext" / "runs" / RUN / "train.json").read_text())
    assert summary["steps"] == 4 and summary["precision"]["authors"] == "fp32"  # the registry entry's precision
    norms = json.loads((metrics / "norms.json").read_text())
    assert norms["suite"] == "norms" and norms["results"]["mean_norm"]["n"] == 2 * 1379  # STS-B test pairs
    assert norms["results"]["mean_norm"]["reported"] > 0
    sts = json.loads((metrics / "sts.json").read_text())
    assert -100 < sts["results"]["STSBenchmark"]["reported"] < 100 and (metrics / "sts.pairs.npz").exists()
    # the jobs' code: the command plus the modules the registry imported for them
    assert "sentrepro.methods.mean_simcse" in summary["provenance"]["code_fingerprint"]["entries"]
    entries = norms["provenance"]["code_fingerprint"]["entries"]
    assert {"sentrepro.methods.mean_simcse", "sentrepro.evaluation.norms_suite"} <= set(entries)
    assert "sentrepro.evaluation.norms_suite" not in sts["provenance"]["code_fingerprint"]["entries"]


def test_the_new_kind_takes_only_its_registered_params_and_an_edit_reruns_its_suite_only(extended, tmp_path):
    repo, workdir = extended
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}
    overlay = yaml.safe_load((workdir / "overlay.yaml").read_text())
    overlay["methods"]["mean-simcse"]["params"]["dup_rate"] = 0.3  # an ESimCSE parameter
    bad = write_overlay(tmp_path, overlay)
    failed = snakemake(workdir, "-n", overlay=bad, repo=repo, check=False)
    assert failed.returncode != 0 and "methods.mean-simcse.params.dup_rate" in failed.stdout + failed.stderr
    suite = repo / "src" / "sentrepro" / "evaluation" / "norms_suite.py"
    original = suite.read_text()
    suite.write_text(original.replace("norms.mean()", "norms.mean() + 0.0"))
    try:
        assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {"evaluate_norms": 1, "all": 1}
    finally:
        suite.write_text(original)
