"""The few-shot protocol's bookkeeping (evaluation/fewshot.py) pinned exactly, with the probe replaced by fakes of
known accuracy: the mean over folds per L2 (x100, 2 dp), the chosen L2's record, the run seeds and mode by default,
the shots bound, the inputs named in their errors, every key of the records, the fixed hold-out of a task without
splits. Written for the mutants `make mutation` found surviving tests/test_eval_transfer.py and
tests/test_eval_suites.py, which run the real probe."""

from __future__ import annotations

import numpy as np
import pytest

from sentrepro.evaluation import fewshot
from sentrepro.evaluation.fewshot import (
    cv_l2_scores,
    cv_task_holdout,
    evaluate_fewshot,
    evaluate_fewshot_cv_task,
    fewshot_run,
)
from sentrepro.evaluation.probe import resolve_mode
from sentrepro.evaluation.transfer import stratified_folds

_, FAST = resolve_mode("fasttest")
Y = np.repeat(np.arange(2), 20)  # 40 rows, 2 classes
X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)


class FakeProbe:
    def __init__(self, accuracy: float) -> None:
        self.value = accuracy

    def accuracy(self, X, y) -> float:
        return self.value


def test_l2_scores_are_the_mean_over_folds_per_l2_times_100_to_two_places(monkeypatch):
    table = [[1 / 3, 0.5, 2 / 3, 0.1], [2 / 3, 0.25, 1 / 7, 0.1]]  # fold -> accuracy of each of the 4 L2s
    devices = []

    def fake_grid(X, y, *, n_classes, l2_grid, config, n_epochs, seed, device):
        devices.append(device)
        return [FakeProbe(value) for value in table[len(devices) - 1]]

    monkeypatch.setattr(fewshot, "fit_probe_grid_fixed_epochs", fake_grid)
    y = np.array([0, 0, 1, 1])  # two rows per class: min(kfold, 2) = 2 folds
    scores = cv_l2_scores(X[:4], y, n_classes=2, config=FAST, n_epochs=1, seed=0)
    assert scores == [50.0, 37.5, 40.48, 10.0]  # (1/3 + 2/3) / 2, (1/2 + 1/4) / 2, (2/3 + 1/7) / 2, 0.1
    assert devices == ["cpu", "cpu"]


def test_a_run_keeps_the_best_l2_and_scores_the_test_part_times_100_to_two_places(monkeypatch):
    fitted = []
    monkeypatch.setattr(fewshot, "cv_l2_scores", lambda *args, **kwargs: [10.0, 30.0, 20.0, 5.0])
    monkeypatch.setattr(fewshot, "fit_probe_fixed_epochs",
                        lambda X, y, *, n_classes, l2, config, n_epochs, seed, device:
                        fitted.append((l2, device)) or FakeProbe(2 / 3))
    run = fewshot_run(X, Y, X, Y, n_classes=2, shots=4, seed=3, config=FAST, n_epochs=1)
    assert run == {"seed": 3, "acc": 66.67, "cv_acc": 30.0, "l2": FAST.l2_grid[1],
                   "l2_scores": [10.0, 30.0, 20.0, 5.0]}
    assert fitted == [(FAST.l2_grid[1], "cpu")]


@pytest.fixture
def fake_runs(monkeypatch):
    """fewshot_run replaced by a run of accuracy 50 + seed; resolve_mode records the mode asked for."""
    asked = []

    def spy(mode):
        asked.append(mode)
        return resolve_mode("fasttest")

    monkeypatch.setattr(fewshot, "resolve_mode", spy)
    monkeypatch.setattr(fewshot, "fewshot_run", lambda *args, seed, **kwargs: {"seed": seed, "acc": 50.0 + seed})
    return asked


def test_by_default_ten_seeds_in_senteval_test_mode(fake_runs):
    record = evaluate_fewshot(X, Y, X[:10], Y[:10], shots=2, n_epochs=1)
    assert fake_runs == ["test"]
    assert record["seeds"] == list(range(10)) and record["accs"] == [50.0 + s for s in range(10)]
    assert {key: record[key] for key in ("protocol", "mode", "config", "shots", "n_pool", "n_test", "n_classes")} == {
        "protocol": "fewshot", "mode": "fasttest", "config": FAST.to_dict(), "shots": 2, "n_pool": 40,
        "n_test": 10, "n_classes": 2}
    assert record["acc_mean"] == 54.5 and record["acc_std"] == round(float(np.std(np.arange(10))), 2)


def test_two_shots_are_enough_and_one_is_refused(fake_runs):
    assert evaluate_fewshot(X, Y, X, Y, shots=2, seeds=[0], n_epochs=1)["shots"] == 2
    with pytest.raises(ValueError, match="shots must be >= 2"):
        evaluate_fewshot(X, Y, X, Y, shots=1, seeds=[0], n_epochs=1)


@pytest.mark.parametrize("broken, name", [("X_train", "X_train"), ("X_test", "X_test"), ("y_train", "y_train"),
                                          ("y_test", "y_test")])
def test_each_input_is_named_in_its_error(fake_runs, broken, name):
    inputs = {"X_train": X, "y_train": Y, "X_test": X, "y_test": Y}
    inputs[broken] = inputs[broken][:, None] if broken.startswith("y") else inputs[broken][0]  # wrong rank
    with pytest.raises(ValueError, match=f"^{name} must"):
        evaluate_fewshot(inputs["X_train"], inputs["y_train"], inputs["X_test"], inputs["y_test"], shots=2,
                         seeds=[0], n_epochs=1)


def test_a_task_without_splits_is_tested_on_the_first_outer_fold(fake_runs):
    pool, test = cv_task_holdout(Y)
    first = stratified_folds(Y, 10, 1111)[0]
    assert pool.tolist() == first[0].tolist() and test.tolist() == first[1].tolist()
    record = evaluate_fewshot_cv_task(X, Y, shots=2, seeds=[0], n_epochs=1)
    assert fake_runs == ["test"]
    assert record["holdout"] == {"folds": 10, "seed": 1111}
    assert (record["n_pool"], record["n_test"]) == (len(first[0]), len(first[1]))
