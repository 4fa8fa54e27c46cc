"""The WOS classification record (evaluation/classification.py) pinned exactly: the documented split (stratified,
20 %, seed 1111) rebuilt with sklearn, the split fraction's bounds, every key of the record and of its split, the
defaults (mode "test", device "cpu"), and the parent labels' name in their error. Written for the mutants `make
mutation` found surviving tests/test_eval_classification.py."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from sentrepro.evaluation import classification
from sentrepro.evaluation.classification import evaluate_level, evaluate_wos, wos_split
from sentrepro.evaluation.probe import resolve_mode

LABELS = np.repeat(np.arange(4), 10)  # 40 rows, 4 balanced classes


def test_the_default_split_is_sklearns_stratified_split_with_seed_1111():
    train, test = train_test_split(np.arange(40), test_size=0.2, stratify=LABELS, random_state=1111)
    assert [rows.tolist() for rows in wos_split(LABELS)] == [sorted(train.tolist()), sorted(test.tolist())]


@pytest.mark.parametrize("fraction", [0.0, 1.0, 1.5])
def test_a_test_fraction_outside_zero_to_one_is_refused(fraction):
    with pytest.raises(ValueError, match=r"test_fraction must be in \(0, 1\)"):
        wos_split(LABELS, test_fraction=fraction)


def features(n_rows: int = 40) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n_rows, 3)) + 3 * LABELS[:, None]).astype(np.float32)


def test_the_record_names_its_protocol_mode_seed_and_split(monkeypatch):
    asked = []

    def spy(mode):
        asked.append(mode)
        return resolve_mode("fasttest")

    monkeypatch.setattr(classification, "resolve_mode", spy)
    monkeypatch.setattr(classification, "evaluate_level", lambda *args, **kwargs: {"acc": 1.0})
    record = evaluate_wos(features(), LABELS, LABELS // 2, seed=7)
    assert asked == ["test"]  # SentEval's test-time probe unless told otherwise
    assert {key: record[key] for key in ("protocol", "mode", "seed", "split", "n_train", "n_test")} == {
        "protocol": "wos_probe", "mode": "fasttest", "seed": 7,
        "split": {"test_fraction": 0.2, "seed": 1111, "stratify": "level2"}, "n_train": 32, "n_test": 8}
    assert record["level1"] == record["level2"] == {"acc": 1.0}


def test_parent_labels_of_the_wrong_length_are_named_in_the_error():
    with pytest.raises(ValueError, match="^parent must be 1-D with 40 entries"):
        evaluate_wos(features(), LABELS, LABELS[:39] // 2, mode="fasttest")


def test_a_level_records_its_classes_l2_and_dev_accuracy_on_the_cpu_by_default():
    X = features()
    train, test = wos_split(LABELS)
    _, config = resolve_mode("fasttest")
    result = evaluate_level(X[train], LABELS[train], X[test], LABELS[test], config=config)
    assert result["n_classes"] == 4 and result["l2"] in (1e-5, 1e-4, 1e-3, 1e-2)
    assert 0.0 <= result["devacc"] <= 100.0
    assert set(result) == {"acc", "macro_precision", "macro_recall", "macro_f1", "weighted_precision",
                           "weighted_recall", "weighted_f1", "n_classes", "l2", "devacc"}
