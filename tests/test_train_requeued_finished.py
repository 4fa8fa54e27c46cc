"""A training job run again after its run finished (issue 45's finding 1): SLURM requeued two finished training
jobs whose batch step never reported back (a node failure to slurmctld). Inside each, Snakemake removed
``train.json`` before running the command again, as it does before every run of a job; the command found no
``last/`` (the finished run had dropped it), removed ``best/``, trained afresh and recorded its files a second
time. A job whose run is finished, under the same settings, code and inputs, now adopts it: nothing trained,
nothing recorded. Ledger records name the job's incarnation (``SLURM_RESTART_COUNT``), so a requeued job's
second write of a file is never taken for a duplicated record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sentrepro.cli import main
from sentrepro.data.prepare import prepare
from sentrepro.encoder.load import load_tokenizer
from sentrepro.hashing import sha256_file
from sentrepro.runs import KEEP_RESUME_STATE

SPEC = {"backbone": {"family": "bert", "model": None}, "method": {"kind": "simcse", "params": {
    "max_seq_length": 32, "temperature": 0.05, "mlp_only_train": True, "lr": 1e-4, "batch_size": 8,
    "max_steps": 2, "eval_steps": 2}},
    "seed": 7, "training": {"dev_file": "sts-dev.csv", "checkpoint_every": 1, "pin_memory": False, "compile": False,
                            "eval_at_start": False}}
RUN = Path("results/exp/runs/tiny/simcse/seed7")
LEDGER = Path("results/exp/ledger.jsonl")


@pytest.fixture
def project(tmp_path, monkeypatch, tiny_models, wiki_sentences, shared_data):
    """A project folder with a tokenized corpus and a prepared STS-B dev (60 pairs), as their jobs leave them."""
    from sentrepro.training.corpus import tokenize_corpus

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEEP_RESUME_STATE, "0")  # the workflow's default: a finished run drops last/
    monkeypatch.setenv("SLURM_JOB_ID", "113")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    from sentrepro.records import ledger
    monkeypatch.setattr(ledger, "_scontrol_restarts", lambda job: None)  # no cluster to ask: the env var tells
    (tmp_path / "sentences.txt").write_text("\n".join(wiki_sentences[:32]) + "\n", encoding="utf-8")
    meta = tokenize_corpus(tmp_path / "sentences.txt", load_tokenizer(str(tiny_models["bert"])), tmp_path / "tok",
                           progress=False)
    (tmp_path / "tok" / "tokenized.json").write_text(json.dumps({**meta, "provenance": {"step": "tokenize"}}))
    dev = tmp_path / "stsb"
    dev.mkdir()
    lines = (shared_data / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv").read_text(encoding="utf-8")
    (dev / "sts-dev.csv").write_text("\n".join(lines.splitlines()[:60]) + "\n", encoding="utf-8")
    prepare("stsb", {"format": "directory", "url": dev.as_uri(), "synthetic": True}, tmp_path / "prepared", None)
    spec = json.loads(json.dumps(SPEC))
    spec["backbone"]["model"] = str(tiny_models["bert"])
    return spec


def train(spec: dict) -> int:
    return main(["train", "--spec", json.dumps(spec), "--tokenized", "tok", "--dev-manifest",
                 "prepared/MANIFEST.json", "--run-dir", str(RUN)])


def ledger_lines() -> list[dict]:
    return [json.loads(line) for line in LEDGER.read_text(encoding="utf-8").splitlines()]


def snakemake_runs_the_job_again(monkeypatch, restart: int) -> None:
    """What a requeued job's Snakemake does before the command: removes the rule's output, train.json."""
    monkeypatch.setenv("SLURM_RESTART_COUNT", str(restart))
    (RUN / "train.json").unlink()


def test_a_finished_training_run_again_adopts_its_run_trains_nothing_and_records_nothing(project, monkeypatch,
                                                                                           capsys):
    assert train(project) == 0
    summary, recorded = (RUN / "train.json").read_bytes(), ledger_lines()
    best = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (RUN / "best").iterdir()}
    assert not (RUN / "last").exists() and {r["path"] for r in recorded if r.get("dropped")}  # last/ dropped
    capsys.readouterr()

    snakemake_runs_the_job_again(monkeypatch, 1)
    assert train(project) == 0
    out = capsys.readouterr()
    assert "adopted" in out.out + out.err and "starting afresh" not in out.out + out.err, out
    assert (RUN / "train.json").read_bytes() == summary  # as the finished run wrote it, byte for byte
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (RUN / "best").iterdir()} == best  # untouched
    assert ledger_lines() == recorded  # nothing recorded a second time
    assert not (RUN / "last").exists()


def test_a_finished_run_of_other_settings_or_changed_inputs_is_trained_again(project, monkeypatch, capsys):
    assert train(project) == 0
    capsys.readouterr()
    snakemake_runs_the_job_again(monkeypatch, 1)
    other = json.loads(json.dumps(project))
    other["method"]["params"]["lr"] = 2e-4
    assert train(other) == 0
    said = capsys.readouterr().err
    assert "other settings" in said and "adopted" not in said, said
    summary = json.loads((RUN / "train.json").read_text())
    assert summary["provenance"]["config"]["method"]["params"]["lr"] == 2e-4

    snakemake_runs_the_job_again(monkeypatch, 2)
    shutil.copyfile(RUN / "best" / "config.json", RUN / "config.json.bak")
    (RUN / "best" / "config.json").write_text((RUN / "best" / "config.json").read_text() + " ")  # best/ edited
    assert train(other) == 0
    said = capsys.readouterr().err
    assert "changed" in said and "adopted" not in said, said
    assert (RUN / "best" / "config.json").read_bytes() == (RUN / "config.json.bak").read_bytes()  # trained again


def test_a_requeued_jobs_ledger_records_name_its_incarnation(project, monkeypatch):
    assert train(project) == 0
    first = ledger_lines()
    assert first and all("slurm_restart_count" not in r for r in first)  # never requeued: SLURM sets none
    snakemake_runs_the_job_again(monkeypatch, 1)
    other = json.loads(json.dumps(project))
    other["seed"] = 8
    assert train(other) == 0  # trained again (another seed): its records name the second incarnation
    again = ledger_lines()[len(first):]
    assert again and all(r["slurm_restart_count"] == "1" and r["slurm_job_id"] == "113" for r in again)


def test_a_put_back_summary_is_recorded_where_the_ledger_no_longer_says_it_holds_those_bytes(project, monkeypatch):
    from sentrepro.records.ledger import latest_write, record_removed

    assert train(project) == 0
    summary = RUN / "train.json"
    assert latest_write(summary)["sha256"] == sha256_file(summary)
    snakemake_runs_the_job_again(monkeypatch, 1)
    record_removed([LEDGER], "job failed")  # what the Snakefile's onerror writes for an output Snakemake removed
    assert latest_write(summary) is None and latest_write("results/exp/elsewhere.json") is None
    before = ledger_lines()
    assert train(project) == 0  # adopted: train.json put back, and recorded, since the ledger said it was removed
    added = ledger_lines()[len(before):]
    assert [(r["path"], r["sha256"]) for r in added] == [(summary.as_posix(), sha256_file(summary))]
    assert latest_write(summary)["sha256"] == sha256_file(RUN / "finished.json")
