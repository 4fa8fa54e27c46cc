"""The record survives its own faults (issue 36): a torn ledger line loses no later record and the audit
names it and goes on; a shared store outside the project keeps its own ledger, which the audit follows; a
process finding a complete fetch reuses it without rewriting it, and concurrent fetch jobs keep both logs;
every user mistake in every ``sentrepro`` command exits 2 with one line naming the command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sentrepro.records import ledger
from sentrepro.records.audit import audit_cell
from sentrepro.files import atomic_write_json, atomic_write_text, forget_written
from sentrepro.hashing import sha256_file

REPO = Path(__file__).resolve().parents[1]
TORN = b'{"bytes": 10210, "command": "table", "host": "vm", "path": "results/x/tables/sts_m'
CSV_HEADER = "table,row,column,value,std,n,reported,provenance\n"


# --- 1. a torn ledger tail -----------------------------------------------------------------------------


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def test_an_append_after_a_torn_last_line_keeps_the_next_record_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    forget_written()
    atomic_write_text(Path("results/x/metrics/a.json"), "{}")
    ledger.record_outputs("evaluate")
    book = Path("results/x/ledger.jsonl")
    with open(book, "ab") as handle:  # what a crash or a full disk in the middle of an append leaves
        handle.write(TORN)
    forget_written()
    atomic_write_text(Path("results/x/metrics/b.json"), '{"b": 1}')
    assert ledger.record_outputs("evaluate") == 1
    lines = _lines(book)
    assert lines[1] == TORN  # the torn line was ended, not continued
    record = json.loads(lines[2])  # the next job's record is a line of its own, whole
    assert record["path"] == "results/x/metrics/b.json" and record["sha256"] == sha256_file("results/x/metrics/b.json")
    latest, faults = ledger.scan_ledger(book)
    assert latest["results/x/metrics/b.json"]["line"] == 3 and "results/x/metrics/a.json" in latest
    (fault,) = faults
    assert fault.line == 2 and fault.reason == "not a ledger record"
    assert "could read: '{\"bytes\": 10210" in fault.describe() and f"{book}:2:" in fault.describe()


def test_the_reader_skips_a_torn_tail_and_salvages_a_record_glued_by_an_older_append(tmp_path):
    whole = {"bytes": 3, "command": "table", "path": "results/x/tables/t.csv", "sha256": "f" * 64}
    book = tmp_path / "ledger.jsonl"
    good = json.dumps({**whole, "path": "results/x/metrics/a.json"}).encode()
    # line 2: an append glued onto a torn line (what appends did before they ended a torn tail); line 4: torn tail
    book.write_bytes(good + b"\n" + TORN + json.dumps(whole).encode() + b"\n" + b"\xff\xfe\n" + TORN)
    latest, faults = ledger.scan_ledger(book)
    assert set(latest) == {"results/x/metrics/a.json", "results/x/tables/t.csv"}
    assert latest["results/x/tables/t.csv"]["line"] == 2
    assert [f.line for f in faults] == [2, 3, 4]
    assert "glued" in faults[0].reason and "not UTF-8" in faults[1].reason and "torn last line" in faults[2].reason
    assert ledger.read_ledger(book) == latest  # never raises


def _cell(tmp_path: Path, metrics_payload: dict) -> Path:
    """A one-cell table over one metrics file, both written and recorded as their jobs do."""
    metrics = Path("results/x/metrics/m/sts.json")
    forget_written()
    atomic_write_json(metrics, metrics_payload)
    ledger.record_outputs("evaluate")
    table = Path("results/x/tables/t.csv")
    forget_written()
    atomic_write_text(table, CSV_HEADER + f"t,BERT-base SimCSE,STS-B,76.5,,1,76.85,{metrics}#sha256="
                      f"{sha256_file(metrics)}\n")
    ledger.record_outputs("table")
    return table


def test_the_audit_names_a_torn_ledger_line_in_one_line_and_passes(tmp_path, monkeypatch, capsys):
    from sentrepro.cli import main

    monkeypatch.chdir(tmp_path)
    table = _cell(tmp_path, {"suite": "sts"})
    with open("results/x/ledger.jsonl", "ab") as handle:
        handle.write(TORN)
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert report.ok, report.text()
    (named,) = [line for line in report.text().splitlines() if "ledger line skipped" in line]
    assert "results/x/ledger.jsonl:3: a torn last line" in named and "could read" in named
    assert main(["audit", str(table), "BERT-base SimCSE", "STS-B"]) == 0  # the command, no traceback
    assert capsys.readouterr().out.count("ledger line skipped") == 1


def test_a_chain_link_whose_line_was_torn_is_named_with_the_torn_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table = _cell(tmp_path, {"suite": "sts"})
    book = Path("results/x/ledger.jsonl")
    lines = book.read_bytes().splitlines(keepends=True)
    book.write_bytes(lines[0] + lines[1][:lines[1].index(b'"sha256"')])  # the table job's append cut short
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert not report.ok
    assert any("results/x/tables/t.csv (no job of" in p and "may be the skipped results/x/ledger.jsonl:2" in p
               for p in report.problems), report.problems


# --- 2 and 3. a shared store: its own ledger; a complete fetch is reused, never rewritten ------------------


def _hub_plan(tmp_path: Path):
    from tests.http_server import ServerPlan
    from tests.tiny_hub import hub_files, model_bodies
    from tests.tiny_models import build_tiny_bert

    bodies = model_bodies(build_tiny_bert(tmp_path / "tiny-bert"))
    return ServerPlan(files=hub_files("tiny-org/tiny-bert", "a" * 40, bodies))


def test_two_concurrent_fetches_into_a_shared_store_keep_its_manifest_and_both_logs_and_the_audit_reaches_the_writer(
        tmp_path, monkeypatch):
    from tests.http_server import serve

    from sentrepro.pretrained.names import snapshot_manifest

    spec = {"model": "tiny-org/tiny-bert", "revision": None}
    store = tmp_path / "store"  # resources_dir of both checkouts, outside either
    manifest = Path(snapshot_manifest(str(store), "hub-bert", spec))
    log = store / "logs" / "fetch_model" / "hub-bert" / "unpinned.log"
    log.parent.mkdir(parents=True)
    argv = [sys.executable, "-m", "sentrepro.cli", "fetch-model", "--name", "hub-bert", "--spec", json.dumps(spec),
            "--out-dir", str(manifest.parent), "--quiet"]
    checkouts = [tmp_path / f"checkout{i}" for i in (1, 2, 3)]
    for checkout in checkouts:
        checkout.mkdir()
    with serve(_hub_plan(tmp_path)) as base:
        env = {**os.environ, "HF_ENDPOINT": base, "PYTHONPATH": str(REPO / "src")}
        env.pop(ledger.STORE_ENV, None)  # fetch-model knows its store from the snapshot layout
        with open(log, "ab") as out:  # both jobs' lines in one file, appended, to read them side by side
            procs = [subprocess.Popen(argv, cwd=checkout, env=env, stdout=out, stderr=out) for checkout in checkouts[:2]]
            codes = [p.wait(timeout=300) for p in procs]
        assert codes == [0, 0], log.read_text()
        outputs = [manifest, manifest.with_name("CONTENT.json")]
        written = [(p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in outputs]
        for path in outputs:  # a third checkout's job, started later: Snakemake first removes the job's outputs
            path.unlink()
        later = subprocess.run(argv, cwd=checkouts[2], env=env, capture_output=True, text=True, timeout=300)
    assert later.returncode == 0, later.stderr
    # put back as the first fetch wrote them: same bytes, inode and mtime (nothing downstream reruns anywhere)
    assert [(p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in outputs] == written
    assert "reused as written, nothing rewritten" in later.stderr and "nothing rewritten" in later.stdout
    written = written[0][0]
    text = log.read_text()
    assert sorted(re.findall(r"sentrepro fetch-model hub-bert: process (\d+)", text)) == sorted(str(p.pid) for p in procs)
    assert text.count("reused as written, nothing rewritten") == 1  # the waiter's, beside the writer's fetch lines
    assert json.loads(written)["lock_status"] == "recorded by this fetch"  # the first fetch's, never rewritten
    book = store / ledger.LEDGER  # the store's own ledger; nothing in the checkouts
    entries = [json.loads(line) for line in book.read_text().splitlines()]
    (line,) = [e for e in entries if e["path"] == "models/hub-bert/unpinned/MANIFEST.json"]
    assert line["sha256"] == sha256_file(manifest) and line["command"] == "fetch-model"
    assert not any((c / "resources").exists() or (c / "results").exists() for c in checkouts)

    # a cell whose metrics file read that snapshot: the audit follows the chain into the store's ledger
    monkeypatch.chdir(checkouts[0])
    table = _cell(tmp_path, {"suite": "sts", "provenance": {"inputs": [
        {"role": "model manifest", "path": str(manifest), "sha256": sha256_file(manifest)}]}})
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert report.ok, report.text()
    assert f"as written by `sentrepro fetch-model` at {line['time']} ({book}:" in report.text()


def test_a_removed_manifest_is_put_back_as_written_unless_other_code_wrote_it(tmp_path, tiny_models):
    """Snakemake removes a job's outputs before running it: the fetch puts the MANIFEST its writer kept back
    (same inode); but a MANIFEST recorded by other code (the rule reruns when its code changes) is written
    anew, so that the audit does not find the snapshot's record stale for ever."""
    from sentrepro.code.codedeps import code_record
    from sentrepro.pretrained.fetch import fetch_model, written_path

    spec = {"model": str(tiny_models["bert"]), "revision": None}
    snapshot = tmp_path / "resources" / "models" / "tiny" / "local"
    first = fetch_model("tiny", spec, snapshot, progress=False)
    manifest = snapshot / "MANIFEST.json"
    inode = manifest.stat().st_ino
    manifest.unlink()
    again = fetch_model("tiny", spec, snapshot, progress=False)
    assert again["reused"] and manifest.stat().st_ino == inode and first["lock_status"] == again["lock_status"]

    record = code_record(["cli:fetch-model"])
    old_code = {**record, "fingerprint": "0" * len(record["fingerprint"]),
                "modules": {**record["modules"], "pretrained/fetch.py": "0" * 16}}
    kept = written_path(snapshot) / "MANIFEST.json"
    manifest.unlink()
    atomic_write_json(kept, {**json.loads(kept.read_text()), "provenance": {"code_fingerprint": old_code}})
    renewed = fetch_model("tiny", spec, snapshot, progress=False)
    assert "reused" not in renewed and renewed["lock_status"] == "matched; snapshot reused, nothing fetched"
    assert json.loads(manifest.read_text())["provenance"]["code_fingerprint"] != old_code
    assert manifest.stat().st_ino == kept.stat().st_ino  # the new MANIFEST is the one kept from now on


def test_a_store_ledger_is_found_from_any_file_below_it_and_records_paths_relative_to_it(tmp_path, monkeypatch):
    project, store = tmp_path / "project", tmp_path / "store"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv(ledger.STORE_ENV, str(store))
    forget_written()
    atomic_write_text(store / "corpus" / "c" / "sentences.txt", "s\n")
    assert ledger.record_outputs("prepare-corpus") == 1
    monkeypatch.delenv(ledger.STORE_ENV)  # a reader (the audit) finds the store by its ledger
    assert ledger.locate(store / "corpus" / "c" / "sentences.txt") == (store / ledger.LEDGER, "corpus/c/sentences.txt")
    assert ledger.ledger_for(tmp_path / "elsewhere" / "x.json") is None


# --- 4. every user mistake in every command: exit 2, one line naming the command -----------------------------


def _subcommands() -> dict:
    from sentrepro.cli import build_parser

    (action,) = [a for a in build_parser()._actions if a.dest == "command"]
    return dict(action.choices)


# check-config's messages are issue 32's (one per problem, several lines); every other command is here
EXEMPT = {"check-config"}


def _mistake(name: str, parser, tmp_path: Path) -> list[str]:
    """The subcommand with every required argument given: --spec broken, anything else a missing path."""
    argv = [name]
    for action in parser._actions:
        if action.option_strings and not action.required:
            continue
        if action.dest == "help":
            continue
        value = "{broken" if action.dest == "spec" else str(tmp_path / "missing" / action.dest)
        argv += ([action.option_strings[0]] if action.option_strings else []) + [value]
    return argv


@pytest.mark.parametrize("name", sorted(set(_subcommands()) - EXEMPT))
def test_every_subcommand_answers_a_user_mistake_with_exit_2_and_one_line_naming_it(name, tmp_path, capsys,
                                                                                      monkeypatch):
    from sentrepro.cli import main

    monkeypatch.chdir(tmp_path)
    argv = _mistake(name, _subcommands()[name], tmp_path)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, err)
    assert err.startswith(f"sentrepro {name}: ") and "\n" not in err, (argv, err)


@pytest.mark.parametrize("argv, says", [
    (["evaluate", "sts", "--spec", "{broken"], "--spec is not valid JSON"),
    (["evaluate", "transfer", "--spec", "{broken"], "--spec is not valid JSON"),
    (["evaluate", "sts", "--spec", "{}"], "--spec has no method.kind"),
    (["train", "--spec", "{broken", "--tokenized", "t", "--dev-manifest", "d", "--run-dir", "r"], "not valid JSON"),
    (["table", "sts_main", "--spec", "{broken", "--out-prefix", "o"], "--spec is not valid JSON"),
    (["table", "sts_main", "--spec", '{"experiment": "x", "backbones": {}}', "--out-prefix", "o", "--metrics",
      "gone.json"], "gone.json: cannot read this metrics file"),
    (["evaluate", "sts", "--spec", "[1]"], "--spec must be a JSON object"),
])
def test_the_mistakes_the_issue_found_exit_2_with_one_prefixed_line(argv, says, tmp_path, capsys, monkeypatch):
    from sentrepro.cli import main

    monkeypatch.chdir(tmp_path)
    if argv[0] == "evaluate":
        argv = argv + ["--data-manifest", "d", "--out", "o.json"]
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"sentrepro {argv[0]}: ") and says in err and "\n" not in err, (code, err)
