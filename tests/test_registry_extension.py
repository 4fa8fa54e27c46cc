"""CONTRIBUTING.md's recipe, followed for real on a copy of a finished tiny run: a new method kind and a new
suite, each one module plus its ``<module>.units.yaml`` sidecar, and nothing else.

A checkout copy first runs the tiny workflow to the end. The recipe then adds two new modules with their
sidecars; a config overlay trains the new method on the tiny model and runs the new suite (and STS) on
it. The plan of that extension is exactly the new kind's jobs and what shows them (the demo summary): no
existing job reruns, since no sidecar is in another unit's code. Editing the new unit's parameter schema,
or its module, reruns its jobs only. The extended copy still collects its test suite and passes its whole fast
tier (the benchmarks' recipe list used to require every trained kind in config.yaml). A table spec naming an unknown suite stops the plan, naming the file and the key.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.norms_suite import norms_suite_module, norms_suite_units
from tests.workflow_helpers import REPO, copy_checkout, only_units, planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

METHOD_MODULE = '''"""SimCSE's loss on mean-pooled token states instead of [CLS] (a method added through the registry)."""

from torch import Tensor

from sentrepro.methods.blocks import pool_avg
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

SUITE_MODULE = norms_suite_module(
    "The mean L2 norm of a run's STS-B sentence vectors (a suite added through the registry).")

METHOD_UNITS = """# mean_simcse.py's unit (a method kind added by CONTRIBUTING.md's recipe)
methods:
  mean_simcse:
    implementation: MeanSimCSE
    trains: true
    training_corpus: sentences
    authors_precision: fp32
    params:
      temperature: {type: number, exclusiveMinimum: 0}
      max_seq_length: {type: integer, minimum: 4}
    cost: {encoder_passes: 2, sequence_factor: 1.0}
"""
SUITE_UNITS = "# norms_suite.py's unit (a suite added by CONTRIBUTING.md's recipe)\n" + norms_suite_units("norms")
RUN = "tiny-bert/mean-simcse/seed1"
# The new run's jobs and what shows it: training, STS at step 0 and after (the demo summary reads both),
# the new suite, and the demo summary (every trained run). Nothing that exists: no tokenize, no SimCSE
# or frozen job, no table or verdicts (no spec names the new method).
NEW_KIND_PLAN = {"train": 1, "evaluate_sts": 1, "evaluate_sts_start": 1, "evaluate_norms": 1, "demo_summary": 1,
                 "all": 1}


def _copy_with_tests(target: Path) -> Path:
    """copy_checkout plus every other file of the checkout that git knows (tests/, benchmarks/, profiles/, docs/,
    README.md, pyproject.toml, ...): what running the whole fast tier there needs."""
    repo = copy_checkout(target)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for rel in listed:
        source, copy = REPO / rel, repo / rel
        if source.is_file() and not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
    return repo


@pytest.fixture(scope="module")
def finished(tmp_path_factory, shared_data, tiny_models):
    """A copy of the checkout and one finished tiny run of it (STS, a table, verdicts, the demo summary)."""
    root = tmp_path_factory.mktemp("extended")
    repo = _copy_with_tests(root / "checkout")
    overlay = tiny_overlay(shared_data, tiny_models, experiment="wfext")
    overlay["evaluation"]["suites"] = only_units("suites", ["sts"])
    overlay["evaluation"]["figures"] = only_units("figures", [])
    overlay["tables"] = ["sts_main"]
    overlay["demo_summary"] = {"enabled": True}
    workdir = root / "work"
    write_overlay(workdir, overlay)
    snakemake(workdir, repo=repo)
    return repo, workdir


@pytest.fixture(scope="module")
def extended(finished):
    """The recipe applied to the finished copy: two modules, two sidecars, an overlay naming them. Returns
    the plan of the extension (before running it), then runs it."""
    repo, workdir = finished
    package = repo / "src" / "sentrepro"
    (package / "methods" / "mean_simcse.py").write_text(METHOD_MODULE, encoding="utf-8")
    (package / "methods" / "mean_simcse.units.yaml").write_text(METHOD_UNITS, encoding="utf-8")
    (package / "evaluation" / "norms_suite.py").write_text(SUITE_MODULE, encoding="utf-8")
    (package / "evaluation" / "norms_suite.units.yaml").write_text(SUITE_UNITS, encoding="utf-8")
    overlay = yaml.safe_load((workdir / "overlay.yaml").read_text())
    overlay["methods"]["mean-simcse"] = {"kind": "mean_simcse", "params": {
        "temperature": 0.05, "max_seq_length": 32, "max_steps": 4, "eval_steps": 2, "batch_size": 8, "lr": 1e-4}}
    overlay["matrix"]["mean-simcse"] = {"backbones": ["tiny-bert"], "methods": ["mean-simcse"], "seeds": [1]}
    overlay["evaluation"]["suites"]["norms"] = True
    overlay["evaluation"]["norms"] = {"split": "test", "runs": {"methods": ["mean-simcse"]}}
    write_overlay(workdir, overlay)
    plan = planned_jobs(snakemake(workdir, "-n", repo=repo))
    snakemake(workdir, repo=repo)
    # the recipes' last step: the manual's generated pages and the rule graph, written again in the copy
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    graphviz = shutil.which("dot") is not None and shutil.which("tred") is not None
    for script in (["docs/gen/generate.py"], ["docs/gen/rulegraph.py", *([] if graphviz else ["--dot-only"])]):
        subprocess.run([sys.executable, *script], cwd=repo, env=env, check=True, capture_output=True, timeout=300)
    return repo, workdir, plan


def test_adding_a_method_kind_plans_only_its_jobs_and_what_shows_it(extended):
    _, _, plan = extended
    assert plan == NEW_KIND_PLAN


def test_only_two_new_modules_and_their_sidecars_differ_from_the_checkout(extended):
    repo, _, _ = extended
    differing = []
    for copied in sorted(p for p in (repo / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        original = REPO / copied.relative_to(repo)
        if not original.exists() or not filecmp.cmp(copied, original, shallow=False):
            differing.append(copied.relative_to(repo).as_posix())
    assert differing == ["src/sentrepro/evaluation/norms_suite.py", "src/sentrepro/evaluation/norms_suite.units.yaml",
                         "src/sentrepro/methods/mean_simcse.py", "src/sentrepro/methods/mean_simcse.units.yaml"]


def test_the_new_method_trains_and_the_new_suite_scores_it(extended):
    _, workdir, _ = extended
    metrics = workdir / "results" / "wfext" / "metrics" / RUN
    summary = json.loads((workdir / "results" / "wfext" / "runs" / RUN / "train.json").read_text())
    assert summary["steps"] == 4 and summary["precision"]["authors"] == "fp32"  # the sidecar's precision
    norms = json.loads((metrics / "norms.json").read_text())
    assert norms["suite"] == "norms" and norms["results"]["mean_norm"]["n"] == 2 * 1379  # STS-B test pairs
    assert norms["results"]["mean_norm"]["reported"] > 0
    sts = json.loads((metrics / "sts.json").read_text())
    assert -100 < sts["results"]["STSBenchmark"]["reported"] < 100 and (metrics / "sts.pairs.npz").exists()
    # the jobs' code: the command plus the units they run (module and metadata), each unit's origin
    code = summary["provenance"]["code_fingerprint"]
    assert "unit:method:mean_simcse" in code["entries"] and code["units"]["unit:method:mean_simcse"] == "built-in"
    assert {"methods/mean_simcse.py", "unit:method:mean_simcse"} <= set(code["modules"])
    entries = norms["provenance"]["code_fingerprint"]["entries"]
    assert {"unit:method:mean_simcse", "unit:suite:norms"} <= set(entries)
    assert "unit:suite:norms" not in sts["provenance"]["code_fingerprint"]["entries"]
    table = (workdir / "results" / "wfext" / "tables" / "demo_summary.csv").read_text()
    assert "mean-simcse" in table


def test_editing_the_new_unit_reruns_its_jobs_only(extended, tmp_path):
    repo, workdir, _ = extended
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}
    overlay = yaml.safe_load((workdir / "overlay.yaml").read_text())
    overlay["methods"]["mean-simcse"]["params"]["dup_rate"] = 0.3  # an ESimCSE parameter
    bad = write_overlay(tmp_path, overlay)
    failed = snakemake(workdir, "-n", overlay=bad, repo=repo, check=False)
    assert failed.returncode != 0 and "methods.mean-simcse.params.dup_rate" in failed.stdout + failed.stderr
    own_jobs = {rule: n for rule, n in NEW_KIND_PLAN.items()}
    edits = [(repo / "src" / "sentrepro" / "methods" / "mean_simcse.units.yaml",  # its parameter schema
              "temperature: {type: number, exclusiveMinimum: 0}", "temperature: {type: number, exclusiveMinimum: 0, maximum: 1}",
              own_jobs),
             (repo / "src" / "sentrepro" / "methods" / "mean_simcse.units.yaml",  # its cost: schedules only
              "cost: {encoder_passes: 2,", "cost: {encoder_passes: 3,", {}),
             (repo / "src" / "sentrepro" / "evaluation" / "norms_suite.py",  # the new suite's module
              "norms.mean()", "norms.mean() + 0.0", {"evaluate_norms": 1, "all": 1})]
    for path, old, new, expected in edits:
        original = path.read_text()
        assert old in original
        path.write_text(original.replace(old, new))
        try:
            assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == expected, (path.name, new)
        finally:
            path.write_text(original)


def test_the_extended_copy_collects_and_passes_the_fast_tier(extended, shared_data):
    """The new trained kind is defined only by its sidecar and the overlay (config.yaml has no method of
    that name): the test suite of the extended copy still collects, and its whole fast tier passes there."""
    repo, _, _ = extended
    env = {**os.environ, "PYTHONPATH": f"{repo / 'src'}{os.pathsep}{repo}", "SENTREPRO_SHARED_DATA": str(shared_data)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
    collected = subprocess.run([*command, "--collect-only"], cwd=repo, env=env, capture_output=True, text=True,
                               timeout=900)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert "INTERNALERROR" not in collected.stdout + collected.stderr
    fast = subprocess.run([*command, "-m", "not slow and not slurm and not heavy"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    assert fast.returncode == 0, fast.stdout[-4000:] + fast.stderr[-2000:]
    assert " passed" in fast.stdout and " failed" not in fast.stdout
    # the copy's own package was tested (a new kind is visible there), not the checkout's
    probe = subprocess.run([sys.executable, "-c", "from sentrepro.planning import registry; print(registry.method('mean_simcse').origin)"],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "built-in", probe.stderr


def test_a_table_spec_naming_an_unknown_suite_stops_the_plan_naming_file_and_key(finished, tmp_path):
    repo, workdir = finished
    spec = repo / "src" / "sentrepro" / "planning" / "specs" / "sts_main.yaml"
    original = spec.read_text()
    assert "\nsuite: sts\n" in original
    spec.write_text(original.replace("\nsuite: sts\n", "\nsuite: sts_main_typo\n"))
    try:
        failed = snakemake(workdir, "-n", repo=repo, check=False)
    finally:
        spec.write_text(original)
    assert failed.returncode != 0
    assert "sts_main.yaml: suite: 'sts_main_typo' is no evaluation suite" in failed.stdout + failed.stderr
