"""A plug-in from outside the repository, through the real workflow: a throwaway distribution (a method
kind and a suite, each a module with its sidecar, declared in the ``sentrepro.code.units`` entry-point group of
a ``.dist-info`` on the path) trains and scores on the tiny model like a built-in unit, and every job that
runs it records the plug-in's distribution and version; an edit of the plug-in reruns its jobs only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_units import PLUGIN_SUITE, build_plugin
from tests.workflow_helpers import REPO, only_blocks, only_units, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

RUN = "tiny-bert/plugin-simcse/seed1"
ORIGIN = "sentrepro-plugin-demo==0.3.1"


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory, shared_data, tiny_models):
    root = tmp_path_factory.mktemp("plugin")
    site = build_plugin(root / "site")
    overlay = tiny_overlay(shared_data, tiny_models, experiment="wfplugin")
    overlay["methods"] = {"plugin-simcse": {"kind": "plugin_mean_simcse", "params": {
        "temperature": 0.05, "max_seq_length": 32, "max_steps": 4, "eval_steps": 2, "batch_size": 8, "lr": 1e-4}}}
    overlay["matrix"] = only_blocks({"plugin": {"backbones": ["tiny-bert"], "methods": ["plugin-simcse"], "seeds": [1]}})
    overlay["evaluation"]["suites"] = only_units("suites", ["sts", "plugin_norms"])
    overlay["evaluation"]["figures"] = only_units("figures", [])
    overlay["evaluation"]["plugin_norms"] = {"split": "dev"}
    overlay["tables"] = []
    workdir = root / "work"
    write_overlay(workdir, overlay)
    env = {"PYTHONPATH": str(site)}
    snakemake(workdir, repo=REPO, env=env)
    return site, workdir, env


def test_the_plugin_trains_and_scores_like_a_built_in_unit(plugin_run):
    _, workdir, env = plugin_run
    metrics = workdir / "results" / "wfplugin" / "metrics" / RUN
    summary = json.loads((workdir / "results" / "wfplugin" / "runs" / RUN / "train.json").read_text())
    assert summary["steps"] == 4 and summary["precision"]["authors"] == "fp32"  # from the plug-in's sidecar
    norms = json.loads((metrics / "plugin_norms.json").read_text())
    assert norms["suite"] == "plugin_norms" and norms["results"]["mean_norm"]["n"] == 2 * 1500  # STS-B dev
    assert norms["results"]["mean_norm"]["reported"] > 0
    for payload in (summary, norms):
        code = payload["provenance"]["code_fingerprint"]
        assert code["units"]["unit:method:plugin_mean_simcse"] == ORIGIN
        assert "plugin:sentrepro-plugin-demo/sentrepro_plugin_demo/mean_simcse.py" in code["modules"]
    assert norms["provenance"]["code_fingerprint"]["units"]["unit:suite:plugin_norms"] == ORIGIN
    assert planned_jobs(snakemake(workdir, "-n", repo=REPO, env=env)) == {}


def test_an_edit_of_the_plugin_reruns_its_jobs_only_and_registry_lists_it(plugin_run):
    site, workdir, env = plugin_run
    module = site / "sentrepro_plugin_demo" / "norms.py"
    module.write_text(PLUGIN_SUITE.replace("norms.mean()", "norms.mean() + 0.0"))
    try:
        assert planned_jobs(snakemake(workdir, "-n", repo=REPO, env=env)) == {"evaluate_plugin_norms": 1, "all": 1}
    finally:
        module.write_text(PLUGIN_SUITE)
    listing = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "registry"], cwd=REPO,
                             env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert f"{ORIGIN}; sentrepro_plugin_demo.norms" in listing.stdout
    # without the plug-in on the path, the config naming it is an error naming the kind
    bare = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    failed = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "check-config", str(REPO / "config.yaml"),
                             str(workdir / "overlay.yaml")], cwd=workdir, env=bare, capture_output=True, text=True,
                            timeout=300)
    assert failed.returncode != 0 and "plugin_mean_simcse" in failed.stdout + failed.stderr
