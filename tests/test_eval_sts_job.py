"""The STS suite's job function (evaluation/sts_suite.py ``run_sts``) and its loader, in process, on the real STS
files: which files it reads and records, the subsets it scores, and what it hands to the metrics writer. The
workflow tests run the same function in a job's subprocess, out of `make mutation`'s reach; this is the unit-speed
check of it."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sentrepro.data.prepare import FILES
from sentrepro.evaluation import sts_suite
from sentrepro.evaluation.item_scores import pairs_path
from sentrepro.evaluation.sts_suite import load_sts_tasks, run_sts

TASKS = ["STS12", "STSBenchmark", "SICKRelatedness"]


def toy_embed(sentences):
    """A deterministic bag-of-hashed-words vector per sentence (N, 16): no model, same words give same vectors."""
    out = np.zeros((len(sentences), 16), dtype=np.float32)
    for row, sentence in enumerate(sentences):
        for word in sentence.lower().split():
            out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 16] += 1.0
    return out + 1e-3


class FakeProvenance:
    def __init__(self):
        self.extra = {}
        self.inputs = []

    def add_input(self, path, role):
        self.inputs.append((path, role))


class FakeJob:
    """What run_sts uses of a SuiteJob: settings, check_counts, embed, add_data_files, prov, suite."""

    def __init__(self, suite, settings):
        self.suite, self.settings, self.check_counts = suite, settings, True
        self.prov = FakeProvenance()
        self.embedded = 0

    def embed(self, sentences):
        self.embedded += 1
        return toy_embed(sentences)

    def add_data_files(self, paths, role):
        for path in paths:
            self.prov.add_input(path, role)


@pytest.fixture
def source(tmp_path, shared_data):
    """A prepared source whose files are the real SentEval copies (MANIFEST.json beside FILES, as prepare makes)."""
    root = tmp_path / "senteval"
    root.mkdir()
    (root / FILES).symlink_to(shared_data / "senteval")
    (root / "MANIFEST.json").write_text("{}", encoding="utf-8")
    return root


def test_the_loader_reads_every_subset_file_of_a_year_and_the_test_file_otherwise(source):
    tasks, used = load_sts_tasks(source / FILES, {"tasks": TASKS, "variant": "senteval"})
    year_dir = source / FILES / "STS" / "STS12-en-test"
    year_files = sorted(year_dir.glob("STS*.txt"))
    assert year_files and used == [*year_files, source / FILES / "STS" / "STSBenchmark" / "sts-test.csv",
                                   source / FILES / "SICK" / "SICK_test_annotated.txt"]
    assert list(tasks) == TASKS
    assert len(tasks["STS12"]) == 5 and sum(len(p) for p in tasks["STS12"].values()) == 3108
    assert list(tasks["STSBenchmark"]) == ["test"] and len(tasks["STSBenchmark"]["test"]) == 1379
    assert list(tasks["SICKRelatedness"]) == ["test"] and len(tasks["SICKRelatedness"]["test"]) == 4927
    # the documented counts are held by default: a short copy of the STS-B test file is refused unless told
    short = source.parent / "short"
    (short / "STS" / "STSBenchmark").mkdir(parents=True)
    lines = (source / FILES / "STS" / "STSBenchmark" / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    (short / "STS" / "STSBenchmark" / "sts-test.csv").write_text("\n".join(lines[:50]) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="sts-test.csv"):
        load_sts_tasks(short, {"tasks": ["STSBenchmark"], "variant": "senteval"})
    assert len(load_sts_tasks(short, {"tasks": ["STSBenchmark"], "variant": "senteval"},
                              check_counts=False)[0]["STSBenchmark"]["test"]) == 50
    with pytest.raises(ValueError, match=r"evaluation.sts.tasks: unknown task 'STS11'"):
        load_sts_tasks(source / FILES, {"tasks": ["STS11"], "variant": "senteval"})


@pytest.mark.parametrize("suite, state", [("sts", {}), ("sts_start",
                                                         {"state": "step 0 (untrained, as the training job builds it)"})])
def test_run_sts_scores_records_and_hands_the_metrics_writer_what_it_needs(source, tmp_path, monkeypatch, suite,
                                                                          state):
    written = {}

    def write_metrics(job, out, results, *, aggregation, extra):
        written.update(job=job, out=out, results=results, aggregation=aggregation, extra=extra)
        return {"written": True}

    monkeypatch.setattr(sts_suite, "write_metrics", write_metrics)
    settings = {"tasks": TASKS, "variant": "senteval"}
    job = FakeJob(suite, settings)
    out = tmp_path / "metrics" / "sts.json"
    out.parent.mkdir()
    assert run_sts(job, source / "MANIFEST.json", out) == {"written": True}
    tasks, used = load_sts_tasks(source / FILES, settings)
    assert job.prov.inputs == [(path, "STS data file") for path in used]
    assert job.embedded == 1  # every sentence of every task in one call
    expected = sts_suite.score_tasks(tasks, toy_embed)
    assert written["results"] == expected and written["aggregation"] == "all" and written["out"] == out
    assert set(written["results"]) == {*TASKS, "avg"}
    saved = np.load(pairs_path(out))
    assert sorted(saved.files) == sorted(f"{task}/{part}" for task in TASKS for part in ("cosine", "gold"))
    assert written["extra"]["variant"] == "senteval"
    assert written["extra"]["item_scores"]["file"] == "sts.pairs.npz"
    assert written["extra"]["item_scores"]["tasks"] == {"STS12": 3108, "STSBenchmark": 1379, "SICKRelatedness": 4927}
    assert {k: v for k, v in written["extra"].items() if k not in ("variant", "item_scores")} == state
    outputs = job.prov.extra["outputs"]
    assert len(outputs) == 1 and outputs[0]["role"] == "per-pair cosines and gold scores (item_scores)"
    assert outputs[0]["path"].endswith("sts.pairs.npz")
