"""The export rules in the workflow: with ``export.enabled`` every run scored on STS gets a folder whose MTEB files
validate with mteb's own TaskResult and whose STS-B main score is the table cell of that run, and the audit
verifies the folder (and names a changed file). The weights are hard links to the run's checkpoint (or the
backbone snapshot), never copies; the model card is a job of its own, so editing one method's code plans no
weights export of another run; a finished run keeps no resume state, and the ledger says it was dropped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sentrepro.records.audit import audit_cell, audit_export
from tests.workflow_helpers import copy_checkout, planned_jobs, snakemake, tiny_overlay, write_overlay

EXPORTS = Path("results/wfexport/exports")
SIMCSE_RUN = Path("results/wfexport/runs/tiny-bert/simcse/seed1")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported_workflow(tmp_path_factory, shared_data, tiny_models):
    workdir = tmp_path_factory.mktemp("wfexport")
    overlay = tiny_overlay(shared_data, tiny_models, experiment="wfexport")
    # a second trained method whose module no other run's code imports (the test of what an edit reruns)
    overlay["methods"]["esimcse"] = {"params": {"max_steps": 4, "eval_steps": 2, "batch_size": 8, "lr": 1e-4,
                                                "neg_size": 8}}
    overlay["matrix"]["tiny-esimcse"] = {"backbones": ["tiny-bert"], "methods": ["esimcse"], "seeds": [1]}
    write_overlay(workdir, {**overlay, "export": {"enabled": True}})
    snakemake(workdir)
    return workdir


def test_every_sts_run_is_exported_and_its_mteb_score_is_the_table_cell(exported_workflow):
    from mteb.results import TaskResult

    folders = sorted(p.parent for p in (exported_workflow / "results" / "wfexport" / "exports").rglob(
        "sentrepro_export.json"))
    assert [f.relative_to(exported_workflow / "results" / "wfexport" / "exports").as_posix() for f in folders] == [
        "tiny-bert/esimcse/seed1", "tiny-bert/frozen-avg/frozen", "tiny-bert/simcse/seed1"]
    for folder in folders:
        record = json.loads((folder / "sentrepro_card.json").read_text(encoding="utf-8"))  # the card quotes the cells
        result = TaskResult.model_validate(json.loads((folder / "mteb" / "STSBenchmark.json").read_text()))
        cells = [c for c in record["table_cells"] if c["column"] == "STS-B" and c["value"]]  # the printed label
        assert cells, f"{folder}: no table cell of STS-B names this run"
        for cell in cells:  # the table prints the suite's number rounded to its digits
            digits = len(cell["value"].partition(".")[2])
            assert f"{100 * result.get_score():.{digits}f}" == cell["value"], cell
        assert "model-index:" in (folder / "README.md").read_text(encoding="utf-8")


def test_audit_reaches_the_exported_files(exported_workflow, tmp_path, monkeypatch):
    folder = exported_workflow / "results" / "wfexport" / "exports" / "tiny-bert" / "simcse" / "seed1"
    monkeypatch.chdir(exported_workflow)  # provenance paths are project-relative
    report = audit_export(folder)
    assert report.ok, report.text()
    assert any("train.json" in line for line in report.lines)  # the chain continues into the run
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    weights = next(p for p in (copy / "encoder").iterdir() if p.suffix == ".safetensors")
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    report = audit_export(copy)
    assert not report.ok and any(weights.name in p for p in report.problems)
    assert any("sts_main.csv" in line for line in audit_export(folder).lines)  # the card's chain: the tables
    card = tmp_path / "card"
    shutil.copytree(folder, card)
    (card / "README.md").write_text((card / "README.md").read_text() + "edited\n")
    report = audit_export(card)  # the card is verified like the weights (its own record)
    assert not report.ok and any("README.md" in p for p in report.problems)


def test_exported_weights_are_links_to_the_run_and_the_snapshot_not_copies(exported_workflow):
    trained = exported_workflow / EXPORTS / "tiny-bert" / "simcse" / "seed1"
    best = exported_workflow / SIMCSE_RUN / "best"
    for name in ("model.safetensors", "sentrepro_heads.safetensors"):
        assert os.path.samefile(trained / "encoder" / name, best / name), name
    frozen = exported_workflow / EXPORTS / "tiny-bert" / "frozen-avg" / "frozen"
    record = json.loads((frozen / "sentrepro_export.json").read_text(encoding="utf-8"))
    weights = record["weights"]["encoder/model.safetensors"]
    assert weights["how"] == "link"
    assert os.path.samefile(frozen / "encoder" / "model.safetensors", exported_workflow / weights["source"])
    assert "resources/models/tiny-bert" in weights["source"]  # the backbone snapshot itself, stored once


def test_a_finished_run_drops_its_resume_state_and_the_ledger_says_so(exported_workflow, monkeypatch):
    run = exported_workflow / SIMCSE_RUN
    assert not (run / "last").exists() and (run / "best" / "model.safetensors").is_file()
    summary = json.loads((run / "train.json").read_text(encoding="utf-8"))
    assert summary["resume_state"].startswith("dropped")
    lines = [json.loads(line) for line in (exported_workflow / "results/wfexport/ledger.jsonl").read_text().splitlines()]
    dropped = [e for e in lines if e.get("dropped")]
    assert sorted(e["path"] for e in dropped) == [f"results/wfexport/runs/tiny-bert/{m}/seed1/last/trainer_state.pt"
                                                  for m in ("esimcse", "simcse")]  # every trained run's, nothing else
    assert all(e["bytes"] > 0 and len(e["sha256"]) == 64 for e in dropped)
    monkeypatch.chdir(exported_workflow)  # the audit of a cell of this run still passes
    report = audit_cell(Path("results/wfexport/tables/sts_main.csv"), "BERT-base SimCSE", "STS-B")
    assert report.ok, report.text()


def test_editing_one_methods_code_plans_no_weights_export_of_another_run(exported_workflow, tmp_path):
    from sentrepro.planning.workflow import parse_jobs

    repo = copy_checkout(tmp_path / "checkout")
    workdir = tmp_path / "work"
    shutil.copytree(exported_workflow, workdir, symlinks=True)
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}
    module = repo / "src" / "sentrepro" / "methods" / "esimcse.py"  # no other run's code imports it
    text = module.read_text(encoding="utf-8")
    edited = text.replace('if momentum_init == "random":', 'if momentum_init != "random":', 1)  # real behaviour
    assert edited != text
    module.write_text(edited, encoding="utf-8")
    plan = snakemake(workdir, "-n", repo=repo)
    jobs = parse_jobs(plan.stdout + plan.stderr)
    exports = {(j.wildcards["method"], j.wildcards["run"]) for j in jobs if j.rule == "export"}
    cards = {(j.wildcards["method"], j.wildcards["run"]) for j in jobs if j.rule == "export_card"}
    assert "train" in {j.rule for j in jobs}
    assert exports == {("esimcse", "seed1")}  # its own run's weights only, no export of simcse or frozen-avg
    # the light cards quote the rebuilt tables
    assert cards == {("esimcse", "seed1"), ("simcse", "seed1"), ("frozen-avg", "frozen")}


def test_changing_the_resume_state_policy_reruns_nothing(exported_workflow, tmp_path):
    import yaml

    workdir = tmp_path / "work"
    shutil.copytree(exported_workflow, workdir, symlinks=True)
    overlay = yaml.safe_load((workdir / "overlay.yaml").read_text())
    overlay["training"]["keep_resume_state"] = True  # what a finished job leaves on disk, never its result
    write_overlay(workdir, overlay)
    assert planned_jobs(snakemake(workdir, "-n")) == {}
