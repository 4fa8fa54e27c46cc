"""The export rule in the workflow: with ``export.enabled`` every run scored on STS gets a folder whose MTEB files
validate with mteb's own TaskResult and whose STS-B main score is the table cell of that run, and the audit
verifies the folder (and names a changed file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sentrepro.audit import audit_export
from tests.workflow_helpers import snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported_workflow(tmp_path_factory, shared_data, tiny_models):
    workdir = tmp_path_factory.mktemp("wfexport")
    write_overlay(workdir, {**tiny_overlay(shared_data, tiny_models, experiment="wfexport"),
                            "export": {"enabled": True}})
    snakemake(workdir)
    return workdir


def test_every_sts_run_is_exported_and_its_mteb_score_is_the_table_cell(exported_workflow):
    from mteb.results import TaskResult

    folders = sorted(p.parent for p in (exported_workflow / "results" / "wfexport" / "exports").rglob(
        "sentrepro_export.json"))
    assert [f.relative_to(exported_workflow / "results" / "wfexport" / "exports").as_posix() for f in folders] == [
        "tiny-bert/frozen-avg/frozen", "tiny-bert/simcse/seed1"]
    for folder in folders:
        record = json.loads((folder / "sentrepro_export.json").read_text(encoding="utf-8"))
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
