"""Backbones in the workflow: one local fetch_model job each, jobs offline on snapshots, revision reruns, audit."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil

import pytest
import yaml

from sentrepro.records.audit import audit_cell
from sentrepro.planning.config import load_config
from sentrepro.planning.matrix import runs
from tests.http_server import ServerPlan, serve
from tests.tiny_hub import hub_files, model_bodies
from tests.workflow_helpers import REPO, only_blocks, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

REPO_ID = "tiny-org/tiny-bert"
# Realistic commits: Snakemake refuses wildcard values that repeat a period ("aaaa...").
COMMIT_A, COMMIT_B = (hashlib.sha1(name.encode()).hexdigest() for name in ("commit A", "commit B"))
EXPERIMENT = "wfmodels"


def test_paper_config_lists_one_local_fetch_model_job_per_backbone(tmp_path):
    config = load_config(REPO / "config.yaml")
    assert {run.backbone for run in runs(config)} == set(config["backbones"])  # every backbone is used
    jobs = planned_jobs(snakemake(tmp_path, "-n", "--quiet", "rules", overlay=write_overlay(tmp_path, {})))
    assert jobs["fetch_model"] == len(config["backbones"])
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    localrules = re.search(r"^localrules:\n((?:    \w+,\n)+)", snakefile, re.M).group(1).split()
    assert "fetch_model," in localrules and "download," in localrules


@pytest.fixture(scope="module")
def hub_run(tmp_path_factory, shared_data, tiny_models):
    """The tiny workflow with a local backbone and one served by a stand-in Hub at COMMIT_A.

    fetch_model runs while the server is up; every other job runs after it is shut down.
    """
    workdir = tmp_path_factory.mktemp("wfmodels")
    overlay = tiny_overlay(shared_data, tiny_models, experiment=EXPERIMENT)
    overlay["backbones"]["hub-bert"] = {"model": REPO_ID, "revision": COMMIT_A, "tokenizer": "hub-bert",
                                        "family": "bert", "stands_in_for": "roberta-base"}
    overlay["methods"]["simcse"]["per_backbone"]["hub-bert"] = {"batch_size": 8, "lr": 1e-4}
    overlay["matrix"] = only_blocks({"simcse": {"backbones": ["tiny-bert", "hub-bert"], "methods": ["simcse"], "seeds": [1]},
                                     "frozen": {"backbones": ["tiny-bert", "hub-bert"], "methods": ["frozen-avg"], "seeds": [0]}})
    write_overlay(workdir, overlay)
    plan = ServerPlan(files=hub_files(REPO_ID, COMMIT_A, model_bodies(tiny_models["bert"])))
    saved = os.environ.get("HF_ENDPOINT")
    try:
        with serve(plan) as base:
            os.environ["HF_ENDPOINT"] = base
            snakemake(workdir, f"resources/models/hub-bert/{COMMIT_A}/MANIFEST.json",
                      "resources/models/tiny-bert/local/MANIFEST.json")
        fetched = list(plan.requests)
        snakemake(workdir)  # HF_ENDPOINT names a server that is gone
    finally:
        os.environ.pop("HF_ENDPOINT") if saved is None else os.environ.__setitem__("HF_ENDPOINT", saved)
    return workdir, fetched


def _provenance(workdir, relative):
    return json.loads((workdir / relative).read_text(encoding="utf-8"))["provenance"]


def test_jobs_ran_offline_from_the_snapshot(hub_run):
    workdir, fetched = hub_run
    assert fetched, "fetch_model asked the stand-in Hub"
    snapshot = f"resources/models/hub-bert/{COMMIT_A}"
    manifest = json.loads((workdir / snapshot / "MANIFEST.json").read_text())
    assert manifest["commit"] == COMMIT_A and manifest["pin"] == "pinned"
    for relative in ("resources/tokenized/hub-bert/wiki-sample/tokenized.json",
                     f"results/{EXPERIMENT}/runs/hub-bert/simcse/seed1/train.json",
                     f"results/{EXPERIMENT}/metrics/hub-bert/frozen-avg/frozen/sts.json"):
        prov = _provenance(workdir, relative)
        assert prov["hf_hub_offline"] == "1", relative
        inputs = {entry["path"]: entry for entry in prov["inputs"]}
        assert inputs[f"{snapshot}/MANIFEST.json"]["role"] == "model manifest", relative
    train = {e["path"]: e for e in _provenance(workdir, f"results/{EXPERIMENT}/runs/hub-bert/simcse/seed1/train.json")
             ["inputs"]}
    weights = next(e for e in manifest["files"] if e["path"] == "model.safetensors")
    assert train[f"{snapshot}/model.safetensors"]["sha256"] == weights["sha256"]
    log = (workdir / "resources" / "logs" / "fetch_model" / "hub-bert" / f"{COMMIT_A}.log").read_text()
    assert "model.safetensors: finished" in log and "matches the pin" in log


def test_changing_the_revision_reruns_that_backbone_only(hub_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(hub_run[0], workdir, symlinks=True)
    assert planned_jobs(snakemake(workdir, "-n")) == {}
    path = workdir / "overlay.yaml"
    overlay = yaml.safe_load(path.read_text())
    overlay["backbones"]["hub-bert"]["revision"] = COMMIT_B
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))
    result = snakemake(workdir, "-n")
    jobs = planned_jobs(result)
    assert {k: jobs.get(k) for k in ("fetch_model", "tokenize", "train", "evaluate_sts")} == \
        {"fetch_model": 1, "tokenize": 1, "train": 1, "evaluate_sts": 2}
    assert set(jobs) <= {"fetch_model", "tokenize", "train", "evaluate_sts", "table", "verdicts", "all"}
    outputs = re.findall(r"^\s+output: (\S+)", result.stdout + result.stderr, re.M)
    model_jobs = [o for o in outputs if "/tables/" not in o and "/verdicts." not in o]  # they read every run
    assert model_jobs and all("hub-bert" in o for o in model_jobs), model_jobs


def test_audit_walks_to_the_model_snapshot(hub_run, tmp_path, monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(hub_run[0], workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    table = workdir / "results" / EXPERIMENT / "tables" / "sts_main.csv"
    with open(table, newline="") as handle:
        rows = {r["row"] for r in csv.DictReader(handle) if r["column"] == "STS-B" and r["value"]}
    hub_row = next(r for r in rows if "hub-bert" in r and "SimCSE" in r)
    report = audit_cell(table, hub_row, "STS-B")
    text = report.text()
    assert report.ok, text
    manifest = json.loads((workdir / "resources" / "models" / "hub-bert" / COMMIT_A / "MANIFEST.json").read_text())
    weights = next(e for e in manifest["files"] if e["path"] == "model.safetensors")["sha256"]
    for needle in (f"model manifest: resources/models/hub-bert/{COMMIT_A}/MANIFEST.json",
                   f"model snapshot of backbone 'hub-bert': {REPO_ID} at commit {COMMIT_A} (pinned",
                   f"weights model.safetensors sha256 {weights}",
                   f"model weights: resources/models/hub-bert/{COMMIT_A}/model.safetensors  sha256 {weights[:12]}"):
        assert needle in text, needle
    # a changed weight file in the snapshot is named
    (workdir / "resources" / "models" / "hub-bert" / COMMIT_A / "model.safetensors").write_bytes(b"changed")
    report = audit_cell(table, hub_row, "STS-B")
    assert not report.ok and any(f"hub-bert/{COMMIT_A}/model.safetensors" in p for p in report.problems)
