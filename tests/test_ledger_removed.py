"""An output its job recorded in the ledger and Snakemake then removed (the job failed after its command
succeeded) is marked ``removed`` in the ledger when the workflow stops with an error (issue 48), so the
ledger's latest word on the path is not a file that no longer exists."""

from __future__ import annotations

import json
from pathlib import Path

from sentrepro.records import ledger
from tests.workflow_helpers import snakemake, tiny_overlay, write_overlay


def line(path: str) -> dict:
    return {"path": path, "sha256": "a" * 64, "bytes": 3, "command": "evaluate", "time": "t"}


def test_record_removed_marks_recorded_files_that_are_gone_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kept = Path("results/x/metrics/kept.json")
    kept.parent.mkdir(parents=True)
    kept.write_text("{}")
    book = Path("results/x/ledger.jsonl")
    dropped = {**line("results/x/runs/r/last/state.pt"), "dropped": "resume state"}
    ledger.append(book, [line(str(kept)), line("results/x/metrics/gone.json"), dropped])
    assert ledger.record_removed([book, Path("resources/ledger.jsonl")], "why") == 1
    latest = ledger.read_ledger(book)
    assert latest["results/x/metrics/gone.json"]["removed"] == "why"
    assert "removed" not in latest[str(kept)] and "removed" not in latest[dropped["path"]]
    assert ledger.record_removed([book], "why") == 0  # already marked


def test_a_failed_workflow_marks_the_outputs_it_removed(tmp_path, shared_data, tiny_models):
    overlay = tiny_overlay(shared_data, tiny_models)
    overlay["data"]["sources"]["wiki_sample"]["url"] = (tmp_path / "no-such-file.txt").as_uri()  # fails at once
    write_overlay(tmp_path, overlay)
    book = tmp_path / "results" / "wftest" / "ledger.jsonl"
    book.parent.mkdir(parents=True)
    book.write_text(json.dumps(line("results/wftest/metrics/removed-by-snakemake.json")) + "\n")
    run = snakemake(tmp_path, "resources/downloads/wiki_sample/download.json", check=False, timeout=300)
    assert run.returncode != 0
    records = [json.loads(text) for text in book.read_text().splitlines()]
    assert records[-1]["path"] == "results/wftest/metrics/removed-by-snakemake.json"
    assert "Snakemake removes the outputs of a failed job" in records[-1]["removed"]
