"""Issue 25's faults on copies of one finished tiny workflow run: a flipped weight byte, a NaN score, a
hand-edited metrics file, a truncated checkpoint. (Downloads, concurrent fetches, a full disk and the CLI's
messages are tested in focused setups in tests/test_reliability.py.)"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.workflow_helpers import planned_jobs, snakemake, tiny_overlay, write_overlay

pytestmark = pytest.mark.slow

SIMCSE = Path("results/wftest/runs/tiny-bert/simcse/seed1")
SIMCSE_STS = Path("results/wftest/metrics/tiny-bert/simcse/seed1/sts.json")
TABLE = Path("results/wftest/tables/sts_main.csv")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, shared_data, tiny_models):
    workdir = tmp_path_factory.mktemp("wfrel")
    overlay = tiny_overlay(shared_data, tiny_models, sentences=100_000)  # every line: a corpus text over 1 MB
    overlay["training"]["keep_resume_state"] = True  # the truncated-checkpoint test below needs last/ of a finished run
    write_overlay(workdir, overlay)
    snakemake(workdir)
    return workdir


@pytest.fixture
def copy(finished_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    assert planned_jobs(snakemake(workdir, "-n")) == {}  # a copy (new inodes, same bytes) plans nothing
    return workdir


def _logs_mentioning(workdir: Path, needle: str) -> list[Path]:
    return [p for p in workdir.rglob("*.log") if needle in p.read_text(errors="replace")]


def test_a_flipped_weight_byte_reruns_its_jobs_which_fail_naming_the_file(copy):
    weights = next((copy / "resources" / "models" / "tiny-bert").glob("*/model.safetensors"))
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1  # same size
    weights.write_bytes(bytes(data))
    dry = snakemake(copy, "-n")
    jobs = planned_jobs(dry)
    assert jobs.get("tokenize") == 1 and jobs.get("train") == 1 and jobs.get("evaluate_sts", 0) >= 2, jobs
    assert "model.safetensors" in dry.stderr and "content changed" in dry.stderr
    run = snakemake(copy, check=False)
    assert run.returncode != 0
    assert _logs_mentioning(copy, f"{weights.relative_to(copy)} does not match") or \
        _logs_mentioning(copy, f"{weights} does not match")


def rerecord_best(run: Path) -> None:
    """Record ``run/best`` in its train.json as the files are now (what the train job records)."""
    from sentrepro.records.recorded import content_record

    summary = json.loads((run / "train.json").read_text())
    summary["best_files"] = content_record(sorted((run / "best").iterdir()))
    (run / "train.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(4):
        data[len(data) // 2 + i] ^= 0xFF  # same size
    path.write_bytes(bytes(data))


def _forced(workdir: Path, target: Path) -> subprocess.CompletedProcess:
    return snakemake(workdir, "-f", str(target), check=False)


def test_issue_48_a_flipped_best_byte_stops_its_evaluation_naming_the_file_and_train_json(copy):
    weights = SIMCSE / "best" / "model.safetensors"
    _flip(copy / weights)
    before = (copy / SIMCSE_STS).read_bytes()
    assert _forced(copy, SIMCSE_STS).returncode != 0
    assert not (copy / SIMCSE_STS).exists() or (copy / SIMCSE_STS).read_bytes() == before
    (log,) = _logs_mentioning(copy, "written by the train job")
    line = next(x for x in log.read_text().splitlines() if "written by the train job" in x)
    assert line.startswith(f"sentrepro evaluate: {weights}: written by the train job and recorded in "
                           f"{SIMCSE / 'train.json'}, differs: sha256 "), line


def test_issue_48_a_flipped_token_id_stops_the_training_naming_the_file_and_tokenized_json(copy):
    (ids,) = (copy / "resources" / "tokenized").glob("*/wiki-sample/ids.npy")
    _flip(ids)
    assert _forced(copy, SIMCSE / "train.json").returncode != 0
    (log,) = _logs_mentioning(copy, "written by the tokenize job")
    assert f"{ids.relative_to(copy)}: written by the tokenize job and recorded in " in log.read_text()


def test_issue_48_an_edited_corpus_text_stops_its_tokenize_job_naming_the_file_and_its_record(copy):
    corpus = Path("resources/corpus/wiki-sample/sentences.txt")
    data = (copy / corpus).read_bytes()
    at = next(i for i in range(len(data) // 2, len(data)) if data[i:i + 4].isalpha())  # four ASCII letters
    (copy / corpus).write_bytes(data[:at] + data[at:at + 4].swapcase() + data[at + 4:])  # same size, still text
    assert (copy / corpus).read_bytes() != data
    assert snakemake(copy, check=False).returncode != 0  # the newer text replans tokenize, which refuses it
    (log,) = _logs_mentioning(copy, "written by the prepare_corpus job")
    assert f"{corpus}: written by the prepare_corpus job and recorded in {corpus}.json, differs" in log.read_text()


def test_issue_48_a_key_removed_from_a_metrics_file_stops_the_table_naming_file_and_key(copy):
    payload = json.loads((copy / SIMCSE_STS).read_text())
    del payload["results"]["STSBenchmark"]
    (copy / SIMCSE_STS).write_text(json.dumps(payload))
    table = (copy / TABLE).read_text()
    run = snakemake(copy, check=False)  # the edited file is newer: its table is planned again
    assert run.returncode != 0
    assert (copy / TABLE).read_text() == table if (copy / TABLE).exists() else True
    assert _logs_mentioning(copy, f"{SIMCSE_STS}: results.STSBenchmark is missing, which its sts job wrote")


def test_issue_48_a_touch_of_a_large_file_the_workflow_downloaded_or_wrote_plans_nothing(copy):
    """Snakemake compares an input's content with what its reader saw only up to --max-checksum-file-size (1 MB
    by default): a touched larger input replanned every job downstream of it."""
    later = time.time() + 120
    large = [p for root in ("resources", "results") for p in (copy / root).rglob("*")
             if p.is_file() and not p.is_symlink() and p.stat().st_size > 1_000_000]
    assert any(p.name == "sentences.txt" for p in large), large  # the corpus text, read by tokenize
    for path in large:
        os.utime(path, (later, later))
    assert planned_jobs(snakemake(copy, "-n")) == {}


def test_issue_48_no_file_the_workflow_wrote_is_private_under_umask_022(finished_run):
    from sentrepro.files import current_umask

    if current_umask() & 0o044:
        pytest.skip("the tests run under a umask that hides files from the group and others")
    private = [p for p in (finished_run / "results").rglob("*") if p.is_file() and p.stat().st_mode & 0o044 == 0]
    assert not private, private[:5]


def test_a_nan_score_fails_its_job_and_leaves_the_old_metrics(copy):
    """The job (its exact command, from the plan) fails naming task and cause and leaves the old metrics file;
    through Snakemake, which removes a job's outputs before running it, the failed job leaves no metrics file
    and the table is not rebuilt: no NaN reaches it."""
    from safetensors.torch import load_file, save_file

    weights = copy / SIMCSE / "best" / "model.safetensors"
    tensors = load_file(weights)
    name = next(k for k in tensors if k.endswith("embeddings.word_embeddings.weight"))
    tensors[name][:] = float("nan")
    save_file(tensors, weights, metadata={"format": "pt"})
    rerecord_best(copy / SIMCSE)  # as a training that diverged would have recorded it (else: an integrity error)
    before = (copy / SIMCSE_STS).read_bytes()
    plan = snakemake(copy, "-n", "-p", "-f", str(SIMCSE_STS))
    (command,) = [line.strip().removeprefix("Shell command:").strip() for line in (plan.stdout + plan.stderr).splitlines()
                  if "sentrepro evaluate sts" in line and str(SIMCSE_STS) in line]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    job = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert job.returncode == 1, (command, job.stdout, job.stderr)
    assert (copy / SIMCSE_STS).read_bytes() == before
    (log,) = _logs_mentioning(copy, "non-finite score")
    text = log.read_text()
    assert "evaluate sts" in text and "word_embeddings.weight" in text and "left as it was" in text
    table = (copy / TABLE).read_text()
    assert snakemake(copy, "-f", str(SIMCSE_STS), check=False).returncode != 0
    assert (copy / TABLE).read_text() == table
    with open(copy / TABLE, newline="") as handle:
        assert not [r for r in csv.DictReader(handle) if r["value"].lower() in ("nan", "inf", "-inf")]


def _audit(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "audit", str(TABLE), "BERT-base SimCSE",
                           "STS-B"], cwd=workdir, capture_output=True, text=True, timeout=300)


def test_an_edited_metrics_value_is_named_by_the_audit_even_after_the_table_is_rebuilt(copy):
    assert _audit(copy).returncode == 0
    path = copy / SIMCSE_STS
    payload = json.loads(path.read_text())
    payload["results"]["STSBenchmark"]["reported"] = 99.0
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    stale = _audit(copy)  # the table still records the old hash
    assert stale.returncode == 1 and str(SIMCSE_STS) in stale.stdout
    snakemake(copy)  # the table is rebuilt from the edited file: its cell now records the edited hash
    assert "99.00" in (copy / TABLE.with_suffix(".md")).read_text() or "99.0" in (copy / TABLE).read_text()
    audit = _audit(copy)
    assert audit.returncode == 1, audit.stdout
    assert "EDITED AFTER ITS JOB" in audit.stdout and f"{SIMCSE_STS} (edited after its job" in audit.stdout


def test_a_truncated_last_checkpoint_is_moved_aside_and_training_starts_again_recorded(copy):
    state = copy / SIMCSE / "last" / "trainer_state.pt"
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 3])
    before = json.loads((copy / SIMCSE / "train.json").read_text())
    (copy / SIMCSE / "train.json").unlink()  # as after a job killed before its summary, so before its copy too
    (copy / SIMCSE / "finished.json").unlink()  # (a finished run's copy: the job would adopt the run from it)
    snakemake(copy, str(SIMCSE / "train.json"))  # asked for: a missing intermediate alone reruns nothing
    summary = json.loads((copy / SIMCSE / "train.json").read_text())
    (recovery,) = summary["unreadable_checkpoints"]
    assert recovery["checkpoint"].endswith("last/trainer_state.pt") and recovery["action"] == "restarted from step 0"
    assert (copy / SIMCSE / "unreadable" / "last-1" / "trainer_state.pt").read_bytes() == data[: len(data) // 3]
    assert summary["resumed_from"] is None
    # a restart from step 0 on CPU reaches the same model as the first run
    assert summary["best_stsb_dev_spearman"] == before["best_stsb_dev_spearman"]
    log = copy / "results/wftest/logs/train/tiny-bert/simcse/seed1.log"
    assert "cannot be read" in log.read_text() and "moved aside" in log.read_text()
    assert os.path.exists(copy / SIMCSE / "last" / "trainer_state.pt")


def test_a_torn_ledger_line_loses_no_later_record_and_the_audit_names_it_and_passes(copy):
    """Issue 36: half a record appended with no newline (a crash or a full disk mid-append); the next job's
    record is whole, and the audit of the cell passes, naming the torn line in one line."""
    book = copy / "results" / "wftest" / "ledger.jsonl"
    torn = b'{"bytes": 10210, "command": "table", "host": "vm", "path": "results/wftest/tables/sts_m'
    torn_at = len(book.read_bytes().splitlines()) + 1
    with open(book, "ab") as handle:
        handle.write(torn)
    snakemake(copy, "-f", str(TABLE))  # the next job: it appends its records after the torn line
    lines = book.read_bytes().splitlines()
    assert lines[torn_at - 1] == torn  # the torn line was ended, not continued
    records = [json.loads(line) for line in lines[torn_at:]]  # each of the next job's records whole
    assert {r["command"] for r in records} == {"table"} and str(TABLE) in {r["path"] for r in records}
    audit = _audit(copy)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    (named,) = [line for line in audit.stdout.splitlines() if "ledger line skipped" in line]
    assert f"results/wftest/ledger.jsonl:{torn_at}:" in named and "could read: '{\"bytes\": 10210" in named
    assert "Traceback" not in audit.stderr
