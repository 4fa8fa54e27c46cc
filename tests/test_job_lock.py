"""One writer per output (sentrepro.records.job_lock) and adopting what an earlier holder finished
(sentrepro.records.adopt; the CLI's _one_writer): the orphaned job of a killed Snakemake and its resubmitted
twin never write one output at the same time."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentrepro import cli
from sentrepro.records import job_lock
from sentrepro.records.adopt import why_not_adoptable
from sentrepro.records.provenance import Provenance
from tests.workflow_helpers import cluster_rule_commands

HOLDER = """
import sys, time
from pathlib import Path
from sentrepro.records.job_lock import one_writer
output, release, record = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
with one_writer(output, "evaluate", print):
    Path(str(output) + ".held").write_text("yes")
    while not release.exists():
        time.sleep(0.02)
    if record:
        output.write_text(record)
    Path(str(output) + ".done").write_text(str(time.time()))
"""


def start_holder(output: Path, record: str = "") -> tuple[subprocess.Popen, Path]:
    """A process holding ``output``'s lock until the returned file exists (then writes ``record`` into output)."""
    release = output.parent / "release"
    held = Path(str(output) + ".held")
    for stale in (release, held, Path(str(output) + ".done")):
        stale.unlink(missing_ok=True)
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(output), str(release), record])
    deadline = time.monotonic() + 60
    while not held.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.02)
    return process, release


def release_later(release: Path, seconds: float) -> None:
    subprocess.Popen([sys.executable, "-c", f"import time, pathlib; time.sleep({seconds}); "
                      f"pathlib.Path({str(release)!r}).write_text('go')"])


def test_a_twin_waits_for_the_holder_names_it_and_writes_only_after_it(tmp_path, monkeypatch):
    journal = tmp_path / "journal.jsonl"
    monkeypatch.setenv(job_lock.JOURNAL, str(journal))
    output = tmp_path / "metrics" / "sts.json"
    output.parent.mkdir()
    holder, release = start_holder(output)
    said: list[str] = []
    release_later(release, 0.6)
    with job_lock.one_writer(output, "evaluate", said.append) as waited:
        took = time.time()
        assert Path(str(output) + ".done").exists(), "the twin took the lock while its holder still ran"
        assert float(Path(str(output) + ".done").read_text()) <= took
    assert holder.wait(timeout=30) == 0
    assert waited > 0.3, waited
    assert len(said) == 1 and f"pid {holder.pid}" in said[0] and str(output) in said[0], said
    assert not job_lock.lock_path(output).exists(), "the lock file was left behind"
    # the journal the fault harness reads: the holder's span, then the twin's, never overlapping
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [(e["event"], e["holder"].split(":")[1]) for e in events] == [
        ("acquired", str(holder.pid)), ("released", str(holder.pid)),
        ("acquired", str(os.getpid())), ("released", str(os.getpid()))], events
    assert {e["output"] for e in events} == {str(output)} and events[1]["time"] <= events[2]["time"]


def test_a_free_lock_is_taken_at_once_and_its_file_removed(tmp_path):
    output = tmp_path / "run"
    said: list[str] = []
    with job_lock.one_writer(output, "train", said.append) as waited:
        holder = json.loads(job_lock.lock_path(output).read_text())
        assert (holder["command"], holder["pid"]) == ("train", os.getpid())
    assert waited == 0.0 and said == []
    assert not job_lock.lock_path(output).exists()


def test_the_lock_file_of_a_killed_holder_does_not_block(tmp_path):
    output = tmp_path / "tokenized"
    holder, _ = start_holder(output)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert job_lock.lock_path(output).exists()  # left by the killed job, but no longer held
    with job_lock.one_writer(output, "tokenize", pytest.fail) as waited:
        assert waited == 0.0
    assert not job_lock.lock_path(output).exists()


def test_describe_holder_reads_a_torn_file_as_unknown():
    assert "names no holder" in job_lock.describe_holder('{"command": "tr')
    text = json.dumps({"command": "train", "pid": 7, "host": "n1", "slurm_job_id": "42", "since": "t"})
    assert job_lock.describe_holder(text) == "sentrepro train (pid 7 on n1, SLURM job 42, since t)"


# ----------------------------------------------------------------------------------------------
# Adoption
# ----------------------------------------------------------------------------------------------

SPEC = {"suite": "sts", "seed": 1, "method": {"kind": "simcse"}}


def finished_record(tmp_path: Path, spec: dict = SPEC) -> tuple[Path, Path]:
    """A metrics file as a finished job writes it, reading one input file."""
    data = tmp_path / "input.txt"
    data.write_text("pairs\n")
    prov = Provenance(step="evaluate_sts", config=spec)
    prov.add_input(data, "data")
    record = tmp_path / "sts.json"
    record.write_text(json.dumps({"results": {}, "provenance": prov.finish()}))
    return record, data


def test_a_record_of_the_same_settings_code_and_inputs_is_adoptable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record, data = finished_record(tmp_path)
    assert why_not_adoptable(record, dict(SPEC)) is None
    assert "other settings" in why_not_adoptable(record, {**SPEC, "seed": 2})
    data.write_text("pairs, edited\n")
    assert "changed" in why_not_adoptable(record, SPEC)
    data.unlink()
    assert "gone" in why_not_adoptable(record, SPEC)
    record.write_text('{"results": {}, "provenance": {"conf')
    assert "not a finished record" in why_not_adoptable(record, SPEC)
    assert "does not exist" in why_not_adoptable(tmp_path / "none.json", SPEC)


def evaluate_args(out: Path, spec: dict = SPEC) -> argparse.Namespace:
    return argparse.Namespace(command="evaluate", func=cli.cmd_evaluate, writes="out", record="", out=str(out),
                              spec=json.dumps(spec), suite="sts")


def test_a_twin_adopts_what_its_holder_finished_and_computes_anything_else(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "_record_job_code", lambda args, suite=None: None)  # tests run no entry point
    finished, _ = finished_record(tmp_path)
    text = finished.read_text()
    output = tmp_path / "out.json"

    holder, release = start_holder(output, record=text)
    release_later(release, 0.3)
    with cli._one_writer(evaluate_args(output)) as adopted:
        assert adopted is True
    assert holder.wait(timeout=30) == 0
    assert "adopted" in capsys.readouterr().err

    output.unlink()
    holder, release = start_holder(output, record=text)
    release_later(release, 0.3)
    with cli._one_writer(evaluate_args(output, {**SPEC, "seed": 3})) as adopted:
        assert adopted is False
    assert holder.wait(timeout=30) == 0
    err = capsys.readouterr().err
    assert "computing" in err and "other settings" in err, err

    # no holder, no wait: an existing output is never adopted (Snakemake removed it if it was to be redone)
    with cli._one_writer(evaluate_args(output)) as adopted:
        assert adopted is False


# ----------------------------------------------------------------------------------------------
# Which commands hold a lock: every one a cluster rule runs (derived from the rules)
# ----------------------------------------------------------------------------------------------

def test_every_command_a_cluster_job_runs_holds_a_lock_on_its_output():
    commands = cluster_rule_commands()
    assert {"tokenize", "train", "evaluate_<suite>", "build_views"} <= set(commands), commands  # the scan works
    subparsers = next(action for action in cli.build_parser()._actions
                      if isinstance(action, argparse._SubParsersAction)).choices
    for rule, command in commands.items():
        parser = subparsers[command]
        writes = parser.get_default("writes")
        assert writes, f"rule {rule} runs `sentrepro {command}` on the cluster, which declares no `writes`"
        assert writes in {action.dest for action in parser._actions}, (command, writes)
