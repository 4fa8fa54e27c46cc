"""The tiny workflow that trains every method kind on every backbone family it supports (a few steps each).

Shared by ``tests/test_workflow_methods.py`` and ``benchmarks/float_spread.py`` (which measures how far its
floats move across thread counts and BLAS back-ends, the basis of that test's tolerance).
"""

from __future__ import annotations

import json
from pathlib import Path

from sentrepro.code.units import BUILT_IN
from sentrepro.planning import registry
from tests.workflow_helpers import only_blocks, only_units, tiny_overlay

EXP = "wfmethods"
SEED = 3
# Every built-in kind that trains, from the units (a new kind joins the test that trains every method by itself)
TRAINED = [kind for kind, entry in registry.methods().items() if entry.trains and entry.origin == BUILT_IN]
BACKBONES = {"tiny-bert": "bert", "tiny-roberta": "roberta", "tiny-deberta": "deberta"}
# OptiPrompt is BERT-only (PromptBERT's run.sh has no RoBERTa OptiPrompt template)
RUNS = [(b, m) for m in TRAINED for b in ("tiny-bert", "tiny-roberta") if (b, m) != ("tiny-roberta", "optiprompt")]
RUNS += [("tiny-deberta", "mocoutrl")]
SMALL = {"max_steps": 3, "eval_steps": 3, "batch_size": 8, "lr": 1e-4}


def methods_overlay(shared_data: Path, tiny_models: dict[str, Path]) -> dict:
    """The overlay: every run of :data:`RUNS` at seed :data:`SEED`, :data:`SMALL` steps, STS only."""
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXP, sentences=400)
    overlay["backbones"] = {
        name: {"model": str(tiny_models[family]), "tokenizer": name, "family": family, "stands_in_for": "bert-base"}
        for name, family in BACKBONES.items()}
    overlay["methods"] = {m: {"params": dict(SMALL), "per_backbone": {b: dict(SMALL) for b in BACKBONES}}
                          for m in TRAINED}
    overlay["methods"]["esimcse"]["params"]["neg_size"] = 8
    overlay["methods"]["optiprompt"]["params"]["mlp"] = "linear-tanh"  # tiny models have no MLM head to copy
    overlay["methods"]["mocoutrl"]["params"].update(checkpoint_every=3, max_seq_length=64)  # tiny: 160 positions
    overlay["matrix"] = only_blocks({f"{b}-{m}": {"backbones": [b], "methods": [m], "seeds": [SEED]} for b, m in RUNS})
    overlay["data"]["sources"]["wordnet"] = {"url": "file:///usr/share/wordnet", "format": "directory"}
    overlay["views"] = {"wordnet_source": "wordnet"}
    overlay["evaluation"]["suites"] = only_units("suites", ["sts"])
    overlay["evaluation"]["figures"] = only_units("figures", [])
    overlay["tables"] = []
    return overlay


def targets() -> list[str]:
    return [f"results/{EXP}/metrics/{b}/{m}/seed{SEED}/sts.json" for b, m in RUNS]


def run_dir(workdir: Path, backbone: str, method: str) -> Path:
    return workdir / "results" / EXP / "runs" / backbone / method / f"seed{SEED}"


def read_run(workdir: Path, backbone: str, method: str) -> tuple[dict, dict]:
    """(train.json, sts.json) of one finished run."""
    summary = json.loads((run_dir(workdir, backbone, method) / "train.json").read_text())
    metrics = json.loads((workdir / "results" / EXP / "metrics" / backbone / method / f"seed{SEED}" / "sts.json")
                         .read_text())
    return summary, metrics


def observed(workdir: Path, backbone: str, method: str) -> tuple[float, float, float]:
    """(STS-B dev at step 0, dev of the selected step, STS-B test of best/), Spearman x100."""
    summary, metrics = read_run(workdir, backbone, method)
    return (summary["start_stsb_dev_spearman"], summary["best_stsb_dev_spearman"],
            metrics["results"]["STSBenchmark"]["reported"])
