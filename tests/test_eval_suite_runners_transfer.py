"""The transfer and few-shot suite runners end to end on a stand-in encoder (tests/test_eval_suite_runners.py's
bag of hashed words) and the real TREC and MRPC files: what they record beside the numbers (each data file with its
role, the subset of the test rows under the split's name, the aggregation sentence), and a split of one sentence
pair. Fast settings (mode fasttest, few seeds, max_samples) keep it in the unit tier."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentrepro.data.prepare import FILES
from sentrepro.evaluation import suites
from tests.test_eval_suite_runners import _job

TASKS = ["TREC", "MRPC"]


@pytest.fixture
def senteval_manifest(shared_data, tmp_path) -> Path:
    (tmp_path / FILES).symlink_to(shared_data / "senteval", target_is_directory=True)
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"name": "senteval", "files": {}}))
    return tmp_path / "MANIFEST.json"


def roles(payload: dict) -> dict[str, str]:
    return {Path(record["path"]).parent.name + "/" + Path(record["path"]).name: record["role"]
            for record in payload["provenance"]["inputs"]}


def test_transfer_records_its_data_files_and_how_the_numbers_were_aggregated(senteval_manifest, tmp_path):
    job = _job("transfer", {"source": "senteval", "tasks": TASKS, "mode": "fasttest", "max_samples": 120,
                            "subset_seed": 5}, synthetic=False)
    payload = suites.run_transfer(job, senteval_manifest, tmp_path / "transfer.json")
    assert set(roles(payload).values()) == {"transfer data file"}
    assert {"TREC/train_5500.label", "TREC/TREC_10.label", "MRPC/msr_paraphrase_train.txt",
            "MRPC/msr_paraphrase_test.txt"} <= set(roles(payload))
    assert payload["aggregation"] == ("acc x100: mean over outer folds (MR/CR/SUBJ/MPQA), fixed test split "
                                      "otherwise; avg = plain mean over tasks")
    assert payload["results"]["avg"]["reported"] == pytest.approx(
        np.mean([payload["results"][t]["reported"] for t in TASKS]))


def test_fewshot_records_its_data_files_its_test_subset_and_its_aggregation(senteval_manifest, tmp_path):
    job = _job("fewshot", {"source": "senteval", "tasks": ["TREC"], "shots": 16, "seeds": [0, 1], "mode": "fasttest",
                           "n_epochs": None, "max_samples": 90, "subset_seed": 2}, synthetic=False)
    payload = suites.run_fewshot(job, senteval_manifest, tmp_path / "fewshot.json")
    assert set(roles(payload).values()) == {"transfer data file"}
    assert payload["subset"]["sizes"] == {"TREC": {"test": [90, 500]}}
    assert payload["aggregation"] == ("acc x100 per seed; reported = mean over 2 seeds (acc_std = population std); "
                                      "avg = plain mean over tasks")


def test_a_split_of_one_sentence_pair_lists_both_sentences():
    split = suites.Split([("a cat sat", "a dog ran")], np.array([1]))
    assert split.sentences == ["a cat sat", "a dog ran"]
    assert suites.Split(["one sentence"], np.array([0])).sentences == ["one sentence"]
