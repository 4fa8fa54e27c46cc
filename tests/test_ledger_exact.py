"""The ledger exactly: which ledger records a path (project folders, experiments, named and declared stores),
every field of a write, dropped and removed line, how many lines each call appends, and the words and limits of
a skipped line's description. Every test works in its own directory (monkeypatch.chdir), so nothing is written
outside it."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from pathlib import Path

import pytest

from sentrepro.files import atomic_write_text, forget_written
from sentrepro.hashing import sha256_file
from sentrepro.records import ledger
from sentrepro.records.ledger import Fault, LedgerView, locate, scan_ledger


@pytest.fixture(autouse=True)
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ledger.STORE_ENV, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "777")
    monkeypatch.setattr(ledger, "_scontrol_restarts", lambda job: None)  # no cluster to ask (a first incarnation)
    ledger.forget_stores()
    forget_written()
    yield tmp_path
    ledger.forget_stores()
    forget_written()


def test_which_ledger_records_a_path_inside_the_project():
    assert locate("results/x/metrics/a.json") == (Path("results/x/ledger.jsonl"), "results/x/metrics/a.json")
    assert locate("results/x/a.json") == (Path("results/x/ledger.jsonl"), "results/x/a.json")
    assert locate("results/x") is None                   # an experiment folder itself
    assert locate("data/raw/a.txt") == (Path("data/ledger.jsonl"), "data/raw/a.txt")
    assert locate("data/a.txt") == (Path("data/ledger.jsonl"), "data/a.txt")
    assert locate("a.txt") is None                       # the project's top level has no ledger
    assert ledger.ledger_for("results/x/metrics/a.json") == Path("results/x/ledger.jsonl")
    assert ledger.ledger_for("a.txt") is None


def test_a_store_outside_the_project_is_named_declared_or_found_by_its_ledger(tmp_path_factory, monkeypatch):
    outer = tmp_path_factory.mktemp("store")
    inner = outer / "models"
    inner.mkdir()
    assert locate(outer / "models" / "w.bin") is None                     # nothing names it, no ledger above
    monkeypatch.setenv("SENTREPRO_STORE", os.pathsep.join([str(outer), "", str(inner)]))   # the documented name
    assert locate(inner / "w.bin") == (inner.resolve() / "ledger.jsonl", "w.bin")   # the innermost named root
    assert locate(outer / "a.txt") == (outer.resolve() / "ledger.jsonl", "a.txt")
    monkeypatch.delenv("SENTREPRO_STORE")
    ledger.declare_store(inner)
    ledger.declare_store(inner)
    assert ledger._store_roots() == [inner.resolve()]                    # declared once
    assert locate(inner / "w.bin") == (inner.resolve() / "ledger.jsonl", "w.bin")
    ledger.forget_stores()
    (outer / "ledger.jsonl").write_text("")
    assert locate(inner / "w.bin") == (outer.resolve() / "ledger.jsonl", "models/w.bin")   # the nearest ledger


def _lines(book: Path) -> list[dict]:
    return [json.loads(line) for line in book.read_text(encoding="utf-8").splitlines()]


def test_every_field_of_a_write_a_drop_and_a_removal():
    before = dt.datetime.now(dt.timezone.utc)
    atomic_write_text(Path("results/x/a.txt"), "abc")
    atomic_write_text(Path("results/x/ledger.jsonl"), "")                  # a ledger is never recorded in itself
    assert ledger.record_outputs("evaluate") == 1
    (write,) = _lines(Path("results/x/ledger.jsonl"))
    assert set(write) == {"path", "sha256", "bytes", "command", "time", "host", "slurm_job_id"}
    assert (write["path"], write["sha256"], write["bytes"], write["command"], write["host"], write["slurm_job_id"]) == (
        "results/x/a.txt", sha256_file("results/x/a.txt"), 3, "evaluate", socket.gethostname(), "777")
    assert before <= dt.datetime.fromisoformat(write["time"]) <= dt.datetime.now(dt.timezone.utc)
    assert ledger.record_dropped([{"path": "a.txt", "sha256": "e" * 64, "bytes": 1},     # no ledger: passed over
                                  {"path": "results/x/a.txt", "sha256": "f" * 64, "bytes": 3}], "clean", "not kept") == 1
    dropped = _lines(Path("results/x/ledger.jsonl"))[1]
    assert set(dropped) == set(write) | {"dropped"}
    assert (dropped["sha256"], dropped["bytes"], dropped["command"], dropped["dropped"], dropped["slurm_job_id"],
            dropped["host"]) == ("f" * 64, 3, "clean", "not kept", "777", socket.gethostname())
    assert dt.datetime.fromisoformat(dropped["time"]) >= before


def test_a_removal_line_per_recorded_file_gone_from_every_ledger():
    for path in ("results/x/a.txt", "results/x/b.txt", "results/y/c.txt"):
        atomic_write_text(Path(path), path)
    assert ledger.record_outputs("train") == 3
    for path in ("results/x/a.txt", "results/x/b.txt", "results/y/c.txt"):
        Path(path).unlink()
    books = [Path("results/x/ledger.jsonl"), Path("results/none/ledger.jsonl"), Path("results/y/ledger.jsonl")]
    assert ledger.record_removed(books, "the job failed") == 3
    removed = _lines(books[0])[2:]
    assert [r["path"] for r in removed] == ["results/x/a.txt", "results/x/b.txt"]
    first = removed[0]
    assert set(first) == {"path", "sha256", "bytes", "command", "time", "host", "slurm_job_id", "removed"}
    assert (first["bytes"], first["command"], first["removed"], first["slurm_job_id"], first["host"]) == (
        len("results/x/a.txt"), "train", "the job failed", "777", socket.gethostname())
    dt.datetime.fromisoformat(first["time"])
    assert ledger.record_removed(books, "again") == 0                      # already said


def test_a_folder_target_records_every_file_below_it_and_unrecordable_targets_are_passed_over():
    for path in ("results/x/run/a.txt", "results/x/run/sub/b.txt"):
        atomic_write_text(Path(path), path)
    Path("top.txt").write_text("not in any ledger")
    assert ledger.record_outputs("train", targets=[Path("top.txt"), Path("results/x/run/a.txt"),
                                                   Path("results/x/run")]) == 2   # a.txt once
    assert [r["path"] for r in _lines(Path("results/x/ledger.jsonl"))] == ["results/x/run/a.txt",
                                                                          "results/x/run/sub/b.txt"]


def test_a_skipped_line_is_described_with_where_it_was_and_what_it_recorded():
    assert Fault(Path("l.jsonl"), 3, "not a ledger record", "'x'", "results/x/a").describe() == (
        "l.jsonl:3: not a ledger record, skipped, it was recording results/x/a (could read: 'x')")
    assert Fault(Path("l.jsonl"), 0, "cannot read it (Permission denied)", "''").describe() == (
        "l.jsonl: cannot read it (Permission denied), skipped (could read: '')")


def test_what_a_skipped_line_shows_is_cut_at_its_limit():
    exact = "x" * ledger.SHOWN
    assert ledger._fault(Path("l"), 1, "r", exact).text == repr(exact)
    assert ledger._fault(Path("l"), 1, "r", exact + "y").text == repr(exact + "…")


def test_a_record_glued_after_a_torn_one_is_kept_and_the_torn_part_named(tmp_path):
    whole = json.dumps({"path": "results/x/b", "sha256": "f" * 64})
    book = tmp_path / "results" / "x" / "ledger.jsonl"
    book.parent.mkdir(parents=True)
    book.write_bytes(('{"path": "results/x/a", "sha2' + whole + "\n" + whole + "\n" + "{broken\n").encode() +
                     b'\xff\xfe{"path": "results/x/c"}\n')
    latest, faults = scan_ledger(book)
    assert latest["results/x/b"]["line"] == 2
    assert [f.reason for f in faults] == ["a torn record with a whole one glued after it (kept: results/x/b)",
                                          "not a ledger record", "not UTF-8 (invalid start byte at byte 0)"]
    assert faults[0].path == "results/x/a" and faults[0].text == repr('{"path": "results/x/a", "sha2')
    assert ledger._salvaged(whole) is None                       # a whole record is not "glued after" anything
    assert ledger._salvaged("x" + whole) == ("x", json.loads(whole))
    view = LedgerView()
    assert view.entry("results/x/b")[1]["line"] == 2
    assert [f.line for f in view.faults_naming("results/x/a")] == [1]
    assert view.faults_naming("results/x/b") == [] and view.faults_naming("top.txt") == []


def test_a_short_write_is_finished_under_the_lock(monkeypatch):
    real_write, calls = os.write, []

    def short_write(fd, data):               # what a signal or a quota can do: fewer bytes than asked
        calls.append(len(data))
        if len(calls) > 200:
            raise AssertionError("the append does not finish its short writes")
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(ledger.os, "write", short_write)
    records = [{"path": f"results/x/{i}.txt", "sha256": "f" * 64} for i in range(3)]
    ledger.append(Path("results/x/ledger.jsonl"), records)
    monkeypatch.setattr(ledger.os, "write", real_write)
    assert _lines(Path("results/x/ledger.jsonl")) == records and len(calls) > 3


def test_blank_lines_and_lines_without_the_record_fields_are_passed_over(tmp_path):
    book = Path("results/x/ledger.jsonl")
    book.parent.mkdir(parents=True)
    good = {"path": "results/x/a", "sha256": "f" * 64}
    book.write_text("\n".join([json.dumps({"path": 5, "sha256": "f"}), "", "   ", json.dumps(good),
                               json.dumps({"path": "results/x/b", "sha256": None})]) + "\n", encoding="utf-8")
    latest, faults = scan_ledger(book)
    assert list(latest) == ["results/x/a"] and latest["results/x/a"]["line"] == 4
    assert [(f.line, f.reason) for f in faults] == [(1, "not a ledger record"), (5, "not a ledger record")]


def test_an_unreadable_ledger_is_one_fault_and_no_entries(monkeypatch):
    def refuse(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ledger, "scan_ledger", refuse)
    view = LedgerView()
    assert view.entry("results/x/a.txt") == (Path("results/x/ledger.jsonl"), None)
    (fault,) = view.faults
    assert (fault.ledger, fault.line, fault.reason, fault.text) == (Path("results/x/ledger.jsonl"), 0,
                                                                    "cannot read it (Permission denied)", "''")
    assert view.entry("results/x/b.txt") == (Path("results/x/ledger.jsonl"), None) and len(view.faults) == 1
