"""Issue 36 end to end: two checkouts run the workflow at once with one ``resources_dir`` outside both (a
shared store). The snapshot is fetched once and never rewritten, each checkout's fetch job keeps its own
log, every store job records in the store's own ledger, and the audit of a cell follows its chain into
that ledger up to the job that wrote the snapshot."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sentrepro.records.audit import audit_cell
from sentrepro.data.download import locked
from sentrepro.hashing import sha256_file
from tests.workflow_helpers import snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

TABLE = "results/wftest/tables/sts_main.csv"


def test_two_checkouts_sharing_a_store_fetch_once_keep_both_logs_and_the_audit_reaches_the_writer(
        tmp_path, shared_data, tiny_models, monkeypatch):
    store = tmp_path / "store"
    checkouts = [tmp_path / "checkout1", tmp_path / "checkout2"]
    for checkout in checkouts:
        write_overlay(checkout, {**tiny_overlay(shared_data, tiny_models), "resources_dir": str(store)})
    manifest = store / "models" / "tiny-bert" / "local" / "MANIFEST.json"
    book = store / "ledger.jsonl"
    # a store job before any other: the workflow tells it where the store's ledger is (none exists yet)
    snakemake(checkouts[1], str(store / "downloads" / "wiki_sample" / "download.json"))
    assert {json.loads(line)["command"] for line in book.read_text().splitlines()} == {"download"}
    logs = store / "logs" / "fetch_model" / "tiny-bert"
    # both checkouts' fetch jobs running at once: the test holds the snapshot's lock until both wait for it
    with ThreadPoolExecutor(2) as pool:
        with locked(manifest.parent, "test's hold"):
            runs = [pool.submit(snakemake, checkout, str(manifest)) for checkout in checkouts]
            deadline = time.monotonic() + 180
            while sum(log.read_text().count("waiting for another") for log in logs.glob("*.log")) < 2:
                assert time.monotonic() < deadline and not any(run.done() for run in runs), (
                    [run.result() for run in runs if run.done()], [log.read_text() for log in logs.glob("*.log")])
                time.sleep(0.2)
        for run in runs:
            run.result()
    snakemake(checkouts[0])  # then the first checkout runs everything on the shared store

    entries = [json.loads(line) for line in book.read_text().splitlines()]
    (written,) = [e for e in entries if e["path"] == "models/tiny-bert/local/MANIFEST.json"]  # one writer
    assert written["command"] == "fetch-model"
    assert sha256_file(manifest) == written["sha256"]  # never rewritten since
    assert json.loads(manifest.read_text())["lock_status"] == "recorded by this fetch"
    assert {e["command"] for e in entries} >= {"download", "prepare-dataset", "fetch-model", "tokenize"}
    logs = sorted(logs.glob("local.*.log"))
    assert [log.name.split(".")[1].split("-")[0] for log in logs] == ["checkout1", "checkout2"], logs
    texts = [log.read_text() for log in logs]
    assert all("sentrepro fetch-model tiny-bert: process" in text for text in texts)
    assert sum("reused as written, nothing rewritten" in text for text in texts) == 1, texts
    assert not any((checkout / "resources").exists() for checkout in checkouts)

    monkeypatch.chdir(checkouts[0])
    report = audit_cell(Path(TABLE), "BERT-base SimCSE", "STS-B")
    text = report.text()
    assert report.ok, text
    assert f"as written by `sentrepro fetch-model` at {written['time']} ({book}:" in text
