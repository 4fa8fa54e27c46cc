"""Faults after a file was written (issue 25), each in a focused setup: verified loads and content stamps,
non-finite results, the ledger, unreadable checkpoints, validated resumes and locked fetches, errors in
the user's words, modes that honour the umask. The same faults on a copy of a finished tiny workflow run
are in tests/test_workflow_reliability.py."""

from __future__ import annotations

import errno
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from sentrepro import files
from sentrepro.records import ledger
from sentrepro.data.download import DownloadError, fetch, partial_path, validator_path
from sentrepro.files import DiskFullError, NonFiniteError, atomic_dir, atomic_write_json, atomic_write_text
from sentrepro.hashing import sha256_file
from sentrepro.records.integrity import IntegrityError, refresh_stamp, stamp_path, verify_dataset, write_stamp
from sentrepro.pretrained.snapshot import SnapshotError, open_snapshot
from tests.http_server import ServerPlan, serve

REPO = Path(__file__).resolve().parents[1]


# --- 7. modes honour the umask ----------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_atomic_files_and_folders_get_the_modes_the_umask_allows(tmp_path, mask):
    old = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "f").write_text("y")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o777 & ~mask


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_files_a_library_writes_0600_inside_an_atomic_folder_get_the_umask_modes(tmp_path, mask):
    """safetensors (and so save_pretrained) writes its files 0600 whatever the umask: a run's best/ weights and
    an export's whitening.safetensors were private to their writer (issue 48)."""
    from safetensors.torch import save_file

    old = os.umask(mask)
    try:
        with atomic_dir(tmp_path / "best") as tmp:
            save_file({"w": torch.zeros(2)}, str(tmp / "model.safetensors"))
            (tmp / "sub").mkdir(mode=0o700)
            os.close(os.open(tmp / "sub" / "private", os.O_CREAT | os.O_WRONLY, 0o600))
            (tmp / "run.sh").write_text("#!/bin/sh\n")
            os.chmod(tmp / "run.sh", 0o700)
    finally:
        os.umask(old)
    assert (tmp_path / "best" / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "best" / "sub" / "private").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "best" / "sub").stat().st_mode & 0o777 == 0o777 & ~mask
    assert (tmp_path / "best" / "run.sh").stat().st_mode & 0o777 == 0o777 & ~mask  # executable stays executable


# --- 2. non-finite values never leave a job --------------------------------------------------------------


def test_json_writer_refuses_nan_naming_the_key_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "m.json"
    atomic_write_json(target, {"results": {"STSBenchmark": {"reported": 73.5}}})
    before = target.read_bytes()
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(NonFiniteError, match=r"m\.json.*results\.STSBenchmark\.reported"):
            atomic_write_json(target, {"results": {"STSBenchmark": {"reported": bad}}})
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def _suite_job(model: torch.nn.Module):
    from sentrepro.evaluation.job import SuiteJob
    from sentrepro.records.provenance import Provenance

    return SuiteJob("sts", {"settings": {}}, method=None, model=model, device="cpu", precision="fp32",
                    prov=Provenance(step="evaluate_sts", config={}))


def test_write_metrics_fails_on_nan_naming_task_and_cause_and_leaves_the_old_metrics(tmp_path):
    from sentrepro.evaluation.job import NonFiniteResult, write_metrics

    out = tmp_path / "sts.json"
    model = torch.nn.Linear(2, 2)
    write_metrics(_suite_job(model), out, {"STSBenchmark": {"reported": 73.5}}, aggregation="all")
    before = out.read_bytes()
    with torch.no_grad():
        model.weight[0, 0] = float("nan")
    with pytest.raises(NonFiniteResult) as caught:
        write_metrics(_suite_job(model), out, {"STSBenchmark": {"reported": float("nan")}}, aggregation="all")
    message = str(caught.value)
    assert "evaluate sts" in message and "results.STSBenchmark.reported" in message
    assert "parameter 'weight' holds NaN" in message and "left as it was" in message
    assert out.read_bytes() == before


def test_table_build_refuses_a_non_finite_metrics_file_and_names_an_unreadable_one(tmp_path):
    from sentrepro.tables.build import MetricsError, index_metrics

    path = tmp_path / "sts.json"
    run = {"provenance": {"config": {"run": {"backbone": "b", "method": "m", "seed": 1}}}}
    path.write_text(json.dumps({"suite": "sts", "results": {"STS-B": {"reported": float("nan")}}, **run}))
    with pytest.raises(MetricsError, match=r"sts\.json: non-finite value at results\.STS-B\.reported"):
        index_metrics([path])
    path.write_text('{"suite": "sts", "results": {')
    with pytest.raises(MetricsError, match=r"sts\.json: cannot read this metrics file"):
        index_metrics([path])


# --- 1. verified loads and content stamps -----------------------------------------------------------------


def _fake_snapshot(directory: Path) -> Path:
    directory.mkdir(parents=True)
    files = []
    for name, body in {"config.json": b"{}", "model.safetensors": bytes(range(256)) * 64}.items():
        (directory / name).write_bytes(body)
        files.append({"path": name, "role": "weights" if name.endswith("safetensors") else "config",
                      "bytes": len(body), "sha256": sha256_file(directory / name)})
    manifest = directory / "MANIFEST.json"
    atomic_write_json(manifest, {"kind": "model-snapshot", "files": files})
    return manifest


def _flip_byte(path: Path, at: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1
    path.write_bytes(bytes(data))


def test_a_flipped_weight_byte_fails_open_snapshot_naming_the_file(tmp_path):
    manifest = _fake_snapshot(tmp_path / "snap")
    assert open_snapshot(manifest).directory == tmp_path / "snap"
    _flip_byte(tmp_path / "snap" / "model.safetensors")  # same size: the old size check passed it
    with pytest.raises(SnapshotError, match=r"snap/model\.safetensors does not match .*MANIFEST\.json: sha256"):
        open_snapshot(manifest)


def test_a_changed_data_file_fails_its_dataset_check_naming_it(tmp_path):
    files = tmp_path / "src" / "files" / "STS"
    files.mkdir(parents=True)
    (files / "sts-test.csv").write_text("a\tb\t5.0\n")
    manifest = tmp_path / "src" / "MANIFEST.json"
    atomic_write_json(manifest, {"name": "sts", "files": {"STS/sts-test.csv": sha256_file(files / "sts-test.csv")}})
    verify_dataset(manifest)
    (files / "sts-test.csv").write_text("a\tb\t1.0\n")  # a well-formed, wrong gold score
    with pytest.raises(IntegrityError, match=r"STS/sts-test\.csv does not match"):
        verify_dataset(manifest)
    with pytest.raises(IntegrityError, match="sts-test.csv"):
        verify_dataset(manifest, "STS")


def test_the_content_stamp_moves_only_when_bytes_change(tmp_path):
    manifest = _fake_snapshot(tmp_path / "snap")
    stamp = write_stamp(manifest)
    old = time.time_ns() - 10**10
    os.utime(stamp, ns=(old, old))
    weights = tmp_path / "snap" / "model.safetensors"
    os.utime(weights)  # touched, bytes unchanged: the stamp's cache learns the new mtime, its own mtime stays
    assert refresh_stamp(manifest) is None and stamp.stat().st_mtime_ns == old
    _flip_byte(weights)
    changed = refresh_stamp(manifest)
    assert changed and "model.safetensors" in changed and stamp.stat().st_mtime_ns > old
    assert refresh_stamp(manifest) is None  # nothing new since
    assert stamp_path(manifest) == stamp


# --- 3. the ledger --------------------------------------------------------------------------------------


def _append_many(args):
    path, worker, count = args
    for i in range(count):
        ledger.append(Path(path), [{"path": f"results/x/metrics/{'d' * 300}/{worker}/{i}.json", "sha256": "0" * 64,
                                    "worker": worker, "i": i}])


def test_concurrent_ledger_appends_never_interleave(tmp_path):
    import multiprocessing

    path = tmp_path / "ledger.jsonl"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_append_many, [(str(path), w, 150) for w in range(4)])
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # a torn or interleaved line would not parse
    assert len(records) == 600
    assert sorted((r["worker"], r["i"]) for r in records) == [(w, i) for w in range(4) for i in range(150)]


def test_ledger_records_what_a_command_wrote_relative_to_the_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files.forget_written()
    atomic_write_json(Path("results/exp/metrics/b/m/seed1/sts.json"), {"suite": "sts"})
    atomic_write_text(tmp_path / "resources" / "corpus" / "c" / "sentences.txt", "s\n")
    assert ledger.record_outputs("evaluate") == 2
    entry = ledger.read_ledger(Path("results/exp/ledger.jsonl"))["results/exp/metrics/b/m/seed1/sts.json"]
    assert entry["sha256"] == sha256_file("results/exp/metrics/b/m/seed1/sts.json") and entry["command"] == "evaluate"
    assert "resources/corpus/c/sentences.txt" in ledger.read_ledger(Path("resources/ledger.jsonl"))
    assert ledger.ledger_for("/elsewhere/x.json") is None


# --- 4. unreadable checkpoints --------------------------------------------------------------------------


def test_an_unreadable_last_checkpoint_is_named_moved_aside_and_recorded(tmp_path):
    from sentrepro.training.loop import LAST, TRAINER_STATE, checkpoint_recoveries, read_checkpoint

    run = tmp_path / "run"
    (run / LAST).mkdir(parents=True)
    torch.save({"model": {}, "optimizer": {}, "scheduler": {}, "rng": {}, "state": {"step": 4}},
               run / LAST / TRAINER_STATE)
    assert read_checkpoint(run / LAST, print)["state"]["step"] == 4
    data = (run / LAST / TRAINER_STATE).read_bytes()
    (run / LAST / TRAINER_STATE).write_bytes(data[: len(data) // 2])  # truncated
    said = []
    assert read_checkpoint(run / LAST, said.append) is None
    assert not (run / LAST).exists()
    aside = run / "unreadable" / "last-1" / TRAINER_STATE
    assert aside.read_bytes() == data[: len(data) // 2]  # moved, never deleted
    assert str(run / LAST / TRAINER_STATE) in said[0] and "moved aside" in said[0]
    (recovery,) = checkpoint_recoveries(run)
    assert recovery["checkpoint"] == str(run / LAST / TRAINER_STATE) and recovery["moved_to"].endswith("last-1")


# --- 5. downloads: validated resumes, locked fetches ------------------------------------------------------

BODY_A = bytes(range(256)) * (3 * (1 << 20) // 256)
BODY_B = bytes(reversed(range(256))) * (3 * (1 << 20) // 256)  # same size, other bytes
FAST = {"backoff_s": 0.01, "timeout_s": 10.0, "progress": False}


@pytest.mark.parametrize("etags", [True, False])
def test_an_interrupted_unpinned_download_of_a_changed_file_is_never_a_mixture(tmp_path, etags):
    plan = ServerPlan(files={"/f.bin": BODY_A}, truncate_to={"/f.bin": [(1 << 20) + 5]}, etags=etags)
    dest = tmp_path / "f.bin"
    with serve(plan) as base:
        with pytest.raises(DownloadError):
            fetch(f"{base}/f.bin", dest, None, retries=0, **FAST)
        assert partial_path(dest).stat().st_size > 0
        assert validator_path(dest).exists() == etags
        plan.files["/f.bin"] = BODY_B  # upstream replaced the file in between
        result = fetch(f"{base}/f.bin", dest, None, retries=0, **FAST)
    assert dest.read_bytes() == BODY_B and not result.resumed
    if etags:  # resumed conditionally: the server saw the old ETag and sent the whole new file
        assert plan.requests[-1][1] is not None and plan.if_range[-1] is not None
    else:  # no validator, no pin: started again without Range
        assert plan.requests[-1][1] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_an_unchanged_file_is_resumed_under_its_validator(tmp_path):
    plan = ServerPlan(files={"/f.bin": BODY_A}, truncate_to={"/f.bin": [(1 << 20) + 5]}, etags=True)
    dest = tmp_path / "f.bin"
    with serve(plan) as base:
        result = fetch(f"{base}/f.bin", dest, None, retries=1, **FAST)
    assert dest.read_bytes() == BODY_A and result.resumed and plan.if_range[-1] == plan.if_range[-1].strip()


def _hub(tmp_path):
    from tests.tiny_hub import hub_files, model_bodies
    from tests.tiny_models import build_tiny_bert

    bodies = model_bodies(build_tiny_bert(tmp_path / "tiny-bert"))
    return ServerPlan(files=hub_files("tiny-org/tiny-bert", "a" * 40, bodies))


def _start_forked_cli(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> int:
    """``sentrepro <argv>`` in a forked child of this process, in ``cwd`` with ``env``: the same command, run
    by the same ``main`` as ``python -m sentrepro.cli``, but without a new interpreter importing torch and
    transformers again (~3 s of CPU per process). Its stdout and stderr go to ``log``; returns the pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:  # the child: never returns into pytest
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        out = open(log, "w", encoding="utf-8")
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        sys.stdout = sys.stderr = out
        from sentrepro.cli import main

        code = main(argv)
    except BaseException:  # noqa: BLE001 - reported through the log and the exit status
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        os._exit(code)


def _wait_forked(pid: int, log: Path, timeout_s: float = 300) -> tuple[str, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return log.read_text(encoding="utf-8"), os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"forked fetch-model still running after {timeout_s} s: {log.read_text()}")
        time.sleep(0.02)


def test_two_concurrent_fetches_of_one_model_into_a_shared_resources_both_succeed(tmp_path):
    """Two checkouts (processes) run the same fetch-model at once into one resources/: both succeed, one
    verified snapshot, no staging or lock file left (without the lock this failed 7 times in 7). The first
    attempt starts two `python -m sentrepro.cli` processes as a user would; the next two fork this process
    into two children that run the same command (the same race, without two more interpreter starts each)."""
    from sentrepro.pretrained.names import snapshot_manifest

    plan = _hub(tmp_path)
    spec = {"model": "tiny-org/tiny-bert", "revision": None}
    with serve(plan) as base:
        env = {**os.environ, "HF_ENDPOINT": base, "PYTHONPATH": str(REPO / "src")}
        for attempt in range(3):
            shared = tmp_path / f"shared{attempt}"
            manifest = shared / snapshot_manifest("resources", "hub-bert", spec)
            out_dir = manifest.parent
            argv = ["fetch-model", "--name", "hub-bert", "--spec", json.dumps(spec), "--out-dir", str(out_dir),
                    "--quiet"]
            checkouts = [tmp_path / f"checkout{attempt}-{i}" for i in (1, 2)]
            for checkout in checkouts:
                checkout.mkdir()
            if attempt == 0:
                procs = [subprocess.Popen([sys.executable, "-m", "sentrepro.cli", *argv], cwd=checkout, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                         for checkout in checkouts]
                outcomes = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
            else:
                logs = [checkout.with_suffix(".log") for checkout in checkouts]
                pids = [_start_forked_cli(argv, checkout, env, log) for checkout, log in zip(checkouts, logs)]
                outcomes = [("",) + _wait_forked(pid, log) for pid, log in zip(pids, logs)]
            assert [code for _, _, code in outcomes] == [0, 0], outcomes
            snapshot = open_snapshot(manifest)  # every file verified against the manifest
            assert {e["path"] for e in snapshot.files} >= {"config.json", "model.safetensors"}
            leftovers = [p.name for p in out_dir.parent.iterdir() if p.name.endswith((".incoming", ".lock"))]
            assert leftovers == [] and sorted(p.name for p in out_dir.parent.iterdir()) == [
                ".unpinned.lock.json", ".unpinned.written", "unpinned"]


# --- 6. errors in the user's words ------------------------------------------------------------------------


def test_disk_full_in_an_atomic_write_names_the_path_and_the_space_needed(tmp_path, monkeypatch):
    def no_space(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", no_space)
    target = tmp_path / "results" / "m.json"
    with pytest.raises(DiskFullError) as caught:
        atomic_write_text(target, "x" * 5000)
    message = str(caught.value)
    assert str(target) in message and "needs about 0.0 MiB" in message and "free there" in message
    assert caught.value.errno == errno.ENOSPC
    assert list(target.parent.iterdir()) == []


def test_a_full_disk_under_the_ledger_names_the_ledger(tmp_path, monkeypatch):
    """os.write's ENOSPC names no file: the command's one line was a bare '[Errno 28] No space left on device'."""
    real_write = os.write

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    ledger_file = tmp_path / "results" / "x" / "ledger.jsonl"
    monkeypatch.setattr(ledger.os, "write", no_space)
    with pytest.raises(OSError) as caught:
        ledger.append(ledger_file, [{"path": "results/x/m.json", "sha256": "0" * 64}])
    monkeypatch.setattr(ledger.os, "write", real_write)
    assert caught.value.errno == errno.ENOSPC
    assert str(ledger_file) in str(caught.value) and "free there" in str(caught.value)
    from sentrepro.cli import _user_error

    message, code = _user_error(caught.value)
    assert code == 1 and f"no space left on the device writing {ledger_file}: needs about" in message


def test_a_checkpoint_save_on_a_full_disk_names_the_checkpoint_and_the_space_needed(tmp_path, monkeypatch):
    import sentrepro.training.loop as train_module

    def iostream_error(payload, path):
        Path(path).write_bytes(b"PK\x03\x04 half")
        raise RuntimeError("basic_ios::clear: iostream error")

    monkeypatch.setattr(train_module.torch, "save", iostream_error)
    monkeypatch.setattr(train_module, "free_bytes", lambda path: 1000)
    payload = {"model": {"w": torch.zeros(1000, 1000)}}
    final = tmp_path / "run" / "last" / "trainer_state.pt"
    with pytest.raises(DiskFullError) as caught:
        with atomic_dir(final.parent) as tmp:
            train_module.save_checkpoint(payload, tmp / final.name, final)
    message = str(caught.value)
    assert str(final) in message and "needs about 3.8 MiB" in message
    assert not final.parent.exists()
    # with room to spare the same failure is not called a full disk, but still names the checkpoint
    monkeypatch.setattr(train_module, "free_bytes", lambda path: 1 << 40)
    with pytest.raises(RuntimeError, match=r"saving checkpoint .*trainer_state\.pt failed: basic_ios"):
        train_module.save_checkpoint(payload, tmp_path / "x.pt", final)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "sentrepro.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=300)


def test_cli_errors_are_one_line_naming_the_file_and_key(tmp_path):
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"name": "wiki", "files": {}}))
    missing_key = _cli("prepare-corpus", "--spec", json.dumps({"reader": "lines"}), "--manifest", str(manifest),
                       "--out", str(tmp_path / "s.txt"))
    assert missing_key.returncode == 2 and missing_key.stderr.strip().count("\n") == 0
    assert missing_key.stderr.strip() == "sentrepro prepare-corpus: --spec has no key 'file'"

    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("experiment: x\nmatrix: [\n  - {a: 1\n")
    bad_yaml = _cli("check-config", str(REPO / "config.yaml"), str(overlay))
    assert bad_yaml.returncode == 2 and bad_yaml.stderr.strip().count("\n") == 0
    assert f"{overlay}:" in bad_yaml.stderr and "YAML syntax error" in bad_yaml.stderr

    unreadable = _cli("prepare-corpus", "--spec", json.dumps({"reader": "lines", "file": "x"}), "--manifest",
                      str(tmp_path / "nope.json"), "--out", str(tmp_path / "s.txt"))
    assert unreadable.returncode == 2
    assert unreadable.stderr.strip() == f"sentrepro prepare-corpus: cannot read {tmp_path / 'nope.json'}: " \
                                        "No such file or directory"


def test_a_dataset_check_covers_the_whole_source_or_a_part_and_names_the_file_the_manifest_and_the_fix(tmp_path):
    from sentrepro.records.integrity import dataset_files

    files = tmp_path / "source" / "files"
    (files / "sub").mkdir(parents=True)
    (files / "a.txt").write_text("a")
    (files / "sub" / "b.txt").write_text("b")
    digests = {"a.txt": sha256_file(files / "a.txt"), "sub/b.txt": sha256_file(files / "sub" / "b.txt")}
    manifest = tmp_path / "source" / "MANIFEST.json"
    manifest.write_text(json.dumps({"files": digests}))
    for whole in (None, "", "."):
        assert dataset_files(manifest, whole) == digests
    assert dataset_files(manifest, "sub") == dataset_files(manifest, "sub/") == {"sub/b.txt": digests["sub/b.txt"]}
    verify_dataset(manifest)
    (files / "sub" / "b.txt").write_text("B")
    verify_dataset(manifest, "a.txt")  # only the part asked for is read
    with pytest.raises(IntegrityError) as changed:
        verify_dataset(manifest)
    assert str(changed.value) == (
        f"{files / 'sub' / 'b.txt'} does not match {manifest}: sha256 is {sha256_file(files / 'sub' / 'b.txt')}, "
        f"recorded {digests['sub/b.txt']}; the file changed after it was fetched or prepared: restore it or delete "
        f"{manifest} to fetch/prepare it again")
    (files / "a.txt").unlink()
    with pytest.raises(IntegrityError) as missing:
        verify_dataset(manifest, "a.txt")
    assert str(missing.value) == (f"{files / 'a.txt'} (listed in {manifest}) is missing; restore it or rerun the rule "
                                  f"that wrote {manifest}")
