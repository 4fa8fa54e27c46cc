"""The transfer suite scores as SentEval's own engine does, checked against numbers SentEval produced.

``tests/senteval_fixture/`` holds, per task, real examples (the first lines of each of the task's files, texts and
labels in file order), fixed vectors for them (float32, ``benchmarks/senteval_parity.py:hashed_vectors``) and the
scores SentEval's engine gave on those vectors in SimCSE's "test" mode. It was written by
``benchmarks/senteval_parity.py --fixture tests/senteval_fixture`` (command in the JSON files); the last test here
reruns SentEval and compares when SentEval is importable (``SENTEVAL_PATH`` or installed), and is skipped otherwise.
The suite's own entry (``run_transfer``) is checked too, on the same rows truncated from the real files, so the order
is not only right when a helper applies it but applied where the workflow scores.
CR is cross-validated (nested 10-fold CV: the order decides the folds), TREC has a fixed test set (the order decides
the inner folds, the 5 % hold-out and the mini-batches).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sentrepro.planning.config import _with_defaults
from sentrepro.data.prepare import FILES
from sentrepro.evaluation.job import SuiteJob
from sentrepro.evaluation.suites import Split, run_transfer, score_transfer_task, senteval_ordered, split_features
from sentrepro.records.provenance import Provenance

FIXTURE = Path(__file__).parent / "senteval_fixture"
TASKS = ("CR", "TREC")
BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "senteval_parity.py"


def load_fixture(task: str) -> tuple[dict, dict[str, Split], dict[str, np.ndarray]]:
    payload = json.loads((FIXTURE / f"{task}.json").read_text(encoding="utf-8"))
    splits = {name: Split([tuple(t) if isinstance(t, list) else t for t in split["texts"]],
                          np.asarray(split["labels"], dtype=np.int64)) for name, split in payload["splits"].items()}
    with np.load(FIXTURE / payload["vectors"]) as archive:
        vectors = {name: archive[name] for name in splits}
    return payload, splits, vectors


def score(task: str, splits: dict[str, Split], vectors: dict[str, np.ndarray], ordered: bool = True) -> dict:
    """The transfer suite's path: SentEval's row order (run_transfer's senteval_ordered), features, protocol."""
    features, labels = {}, {}
    for name, split in splits.items():
        by_text = dict(zip(split.sentences, vectors[name]))  # vectors are a function of the sentence
        split = senteval_ordered(split) if ordered else split
        features[name] = split_features(split, np.stack([by_text[s] for s in split.sentences]))
        labels[name] = split.labels
    result = score_transfer_task(task, features, labels, mode="test", device="cpu", seed=1111)
    return {key: result[key] for key in ("devacc", "acc", "f1") if key in result}


@pytest.mark.parametrize("task", TASKS)
def test_scores_equal_sentevals_on_its_fixture(task):
    payload, splits, vectors = load_fixture(task)
    assert sum(len(split.labels) for split in splits.values()) >= 300
    assert score(task, splits, vectors) == payload["senteval"]


def test_file_order_would_not_reproduce_senteval():
    """The fixture can tell the orders apart: in file order (the project's old behaviour) CR scores otherwise."""
    payload, splits, vectors = load_fixture("CR")
    assert score("CR", splits, vectors, ordered=False)["acc"] != payload["senteval"]["acc"]


def parity_module():
    """benchmarks/senteval_parity.py (what wrote the fixture), imported from its file."""
    spec = importlib.util.spec_from_file_location("senteval_parity", BENCHMARK)
    parity = importlib.util.module_from_spec(spec)
    sys.modules["senteval_parity"] = parity
    spec.loader.exec_module(parity)
    return parity


def test_the_transfer_suites_own_entry_gives_sentevals_numbers(tmp_path, shared_data):
    """run_transfer, as the workflow calls it, on the fixture's rows truncated from the real files (file order) with
    the fixture's vectors for the model: the numbers SentEval gave. Without SentEval's row order inside run_transfer
    CR scores otherwise (test_file_order_would_not_reproduce_senteval)."""
    parity = parity_module()
    payloads, by_text = {}, {}
    for task in TASKS:
        payloads[task], splits, vectors = load_fixture(task)
        parity.truncate_task(shared_data / "senteval", tmp_path / FILES, task, payloads[task]["sizes"]["size"],
                             payloads[task]["sizes"]["test_size"])
        for name, split in splits.items():
            by_text.update(zip(split.sentences, vectors[name]))  # vectors are a function of the sentence
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"name": "senteval-truncated", "files": {}}))
    settings = _with_defaults({"evaluation": {"transfer": {"source": "senteval", "tasks": list(TASKS), "mode": "test",
                                                           "device": "cpu"}}})["evaluation"]["transfer"]
    assert settings["seed"] == payloads["CR"]["senteval_params"]["seed"] and settings["max_samples"] is None
    spec = {"suite": "transfer", "settings": settings, "source": "senteval-truncated", "synthetic": True}
    job = SuiteJob("transfer", spec, method=None, model=None, device="cpu", precision="fp32",
                   prov=Provenance(step="evaluate_transfer", config=spec))
    job.embed = lambda sentences: np.stack([by_text[s] for s in sentences])
    payload = run_transfer(job, manifest, tmp_path / "transfer.json")
    for task in TASKS:
        result = payload["results"][task]
        assert {key: result[key] for key in payloads[task]["senteval"]} == payloads[task]["senteval"], task
        assert result["reported"] == result["acc"]
    assert json.loads((tmp_path / "transfer.json").read_text())["results"] == payload["results"]


def _senteval_path() -> str | None:
    if os.environ.get("SENTEVAL_PATH"):
        return os.environ["SENTEVAL_PATH"]
    return "" if importlib.util.find_spec("senteval") else None


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_fixture_is_what_senteval_gives(task, tmp_path, shared_data):
    """Regenerate: rerun SentEval on the same truncated files and vectors (skipped without SentEval)."""
    path = _senteval_path()
    if path is None:
        pytest.skip("SentEval is not importable (set SENTEVAL_PATH to a SentEval checkout)")
    parity = parity_module()
    payload, splits, _ = load_fixture(task)
    parity.truncate_task(shared_data / "senteval", tmp_path / "downstream", task, payload["sizes"]["size"],
                         payload["sizes"]["test_size"])
    assert {name: s.labels.tolist() for name, s in parity.load_ours(tmp_path / "downstream", task).items()} == {
        name: s.labels.tolist() for name, s in splits.items()}
    result, _ = parity.run_senteval(parity.import_senteval_on_cpu(path), tmp_path, task)
    assert result == payload["senteval"]


def test_split_features_are_the_vectors_for_sentences_and_mrpcs_for_pairs():
    """Sentence pairs are embedded as [s1, s2, s1, s2, ...] (Split.sentences); their features are MRPC's
    [|u-v|, u*v]."""
    from sentrepro.evaluation.transfer import mrpc_features

    vectors = np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5
    single = Split(["a", "b", "c", "d"], np.array([0, 1, 0, 1]))
    assert split_features(single, vectors) is vectors
    pairs = Split([("a", "b"), ("c", "d")], np.array([0, 1]))
    assert pairs.sentences == ["a", "b", "c", "d"]
    expected = mrpc_features(vectors[[0, 2]], vectors[[1, 3]])
    assert np.array_equal(split_features(pairs, vectors), expected)  # (symmetric in u and v: an s1/s2 swap is moot)
    one_pair = Split([("a", "b")], np.array([1]))  # a split of one row (a tiny max_samples subset) is still pairs
    assert np.array_equal(split_features(one_pair, vectors[:2]), mrpc_features(vectors[[0]], vectors[[1]]))


def test_sst2_is_scored_train_dev_test_with_its_protocol():
    """score_transfer_task sends SST-2's splits to the dev-selected protocol in that order (dev selects, test
    scores)."""
    from sentrepro.evaluation.transfer import evaluate_split_task

    rng = np.random.RandomState(0)
    labels = {name: rng.randint(0, 2, n) for name, n in (("train", 80), ("dev", 30), ("test", 40))}
    # dev and test differ in how separable they are, so swapping them changes devacc and acc
    features = {name: (labels[name][:, None] * (1.0 if name != "test" else 0.3) + rng.normal(0, 0.5, (len(y), 4)))
                .astype(np.float32) for name, y in labels.items()}
    result = score_transfer_task("SST2", features, labels, mode="fasttest", device="cpu", seed=1111)
    expected = evaluate_split_task(features["train"], labels["train"], features["dev"], labels["dev"], features["test"],
                                   labels["test"], mode="fasttest", device="cpu", seed=1111)
    assert result == expected
    swapped = evaluate_split_task(features["train"], labels["train"], features["test"], labels["test"], features["dev"],
                                  labels["dev"], mode="fasttest", device="cpu", seed=1111)
    assert swapped != expected  # the case tells dev and test apart


def test_senteval_order_refuses_texts_and_labels_of_different_lengths_naming_both():
    from sentrepro.data.benchmarks.transfer import senteval_order

    with pytest.raises(ValueError, match=r"^senteval_order: 3 texts but 2 labels$"):
        senteval_order(["a", "b", "c"], np.array([0, 1]))
