"""The three transfer protocols' result records (evaluation/transfer.py), rebuilt by hand from the probe functions
they compose: every key, every score's scale and rounding, the F1 of class 1, the input checks' names. Small
problems with a tiny probe config, so that the whole file runs in seconds; tests/test_eval_transfer.py and
tests/test_senteval_parity.py check the protocols against SentEval itself."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from sentrepro.evaluation.probe import ProbeConfig, fit_probe, fit_probe_grid, search_l2_on_folds
from sentrepro.evaluation.transfer import (
    _binary_f1,
    evaluate_cv_task,
    evaluate_fixed_test_task,
    evaluate_split_task,
    fit_with_kfold_selected_l2,
    mrpc_features,
    stratified_folds,
)

CONFIG = ProbeConfig(kfold=3, optimizer="adam", batch_size=16, tenacity=1, epoch_size=1, max_epoch=3,
                     l2_grid=(1e-5, 1e-2))


def problem(n, classes, seed):
    """Noisy linearly separable rows (n, 6) with labels drawn from ``classes`` (not 0-based: encoding is checked)."""
    rng = np.random.default_rng(seed)
    y = rng.choice(classes, size=n)
    centres = {c: rng.normal(size=6) for c in classes}
    X = np.stack([centres[c] for c in y]) + 1.5 * rng.normal(size=(n, 6))
    return X.astype(np.float32), y


def encoded(y, classes):
    return np.searchsorted(np.array(sorted(classes)), y)


def test_split_task_record_by_hand():
    classes = (3, 7)
    X_train, y_train = problem(60, classes, 0)
    X_dev, y_dev = problem(21, classes, 1)
    X_test, y_test = problem(23, classes, 2)
    got = evaluate_split_task(X_train, y_train, X_dev, y_dev, X_test, y_test, mode=CONFIG, seed=5)
    probes = fit_probe_grid(X_train, encoded(y_train, classes), n_classes=2, l2_grid=CONFIG.l2_grid, config=CONFIG,
                            seed=5, device="cpu", validation=(X_dev, encoded(y_dev, classes)))
    dev = [round(100 * p.best_val_accuracy, 2) for p in probes]
    best = int(np.argmax(dev))
    acc = 100 * float(np.mean(probes[best].predict(X_test) == encoded(y_test, classes)))
    assert got == {"protocol": "fixed_dev", "mode": "custom", "seed": 5, "config": CONFIG.to_dict(),
                   "acc": round(acc, 2), "devacc": dev[best], "n_train": 60, "n_dev": 21, "n_test": 23,
                   "n_classes": 2, "l2": CONFIG.l2_grid[best], "l2_scores": dev}
    assert evaluate_split_task(X_train, y_train, X_dev, y_dev, X_test, y_test, mode=CONFIG)["seed"] == 1111


def test_fixed_test_task_record_by_hand_with_the_f1_of_class_one():
    classes = (0, 1)
    X_train, y_train = problem(45, classes, 3)
    X_test, y_test = problem(17, classes, 4)
    got = evaluate_fixed_test_task(X_train, y_train, X_test, y_test, mode=CONFIG, seed=2)
    probe, search = fit_with_kfold_selected_l2(X_train, y_train, n_classes=2, config=CONFIG, seed=2)
    predictions = probe.predict(X_test)
    acc = 100 * float(np.mean(predictions == y_test))
    assert got == {"protocol": "kfold_fixed_test", "mode": "custom", "seed": 2, "config": CONFIG.to_dict(),
                   "acc": round(acc, 2), "devacc": search["best_score"], "n_train": 45, "n_test": 17,
                   "n_classes": 2, "l2": search["best_l2"], "l2_scores": search["scores"],
                   "f1": round(100 * f1_score(y_test, predictions, pos_label=1), 2)}
    three = evaluate_fixed_test_task(*problem(45, (1, 2, 5), 5), *problem(17, (1, 2, 5), 6), mode=CONFIG)
    assert "f1" not in three and three["n_classes"] == 3 and three["seed"] == 1111


def test_nested_cv_record_by_hand():
    classes = (2, 9)
    X, y = problem(42, classes, 10)  # folds of 14, and means of three: scores a 2-dp rounding changes
    got = evaluate_cv_task(X, y, mode=CONFIG, seed=4)
    y_enc = encoded(y, classes)
    folds = []
    for index, (train_rows, test_rows) in enumerate(stratified_folds(y_enc, CONFIG.kfold, 4)):
        inner = [(train_rows[a], train_rows[b]) for a, b in stratified_folds(y_enc[train_rows], CONFIG.kfold, 4)]
        search = search_l2_on_folds(X, y_enc, inner, n_classes=2, config=CONFIG, seed=4, device="cpu")
        probe = fit_probe(X[train_rows], y_enc[train_rows], n_classes=2, l2=search.best_l2, config=CONFIG, seed=4,
                          device="cpu")
        acc = 100 * float(np.mean(probe.predict(X[test_rows]) == y_enc[test_rows]))
        folds.append({"fold": index, "n_train": len(train_rows), "n_test": len(test_rows), "l2": search.best_l2,
                      "devacc": search.best_score, "acc": round(acc, 2), "l2_scores": search.scores})
    assert got == {"protocol": "nested_cv", "mode": "custom", "seed": 4, "config": CONFIG.to_dict(),
                   "acc": round(float(np.mean([f["acc"] for f in folds])), 2),
                   "devacc": round(float(np.mean([f["devacc"] for f in folds])), 2),
                   "n_samples": 42, "n_classes": 2, "l2": [f["l2"] for f in folds], "folds": folds}
    assert evaluate_cv_task(X, y, mode=CONFIG)["seed"] == 1111


def test_the_input_checks_name_the_argument_at_fault():
    X, y = problem(30, (0, 1), 8)
    bad = np.zeros(30, dtype=np.float32)  # 1-D
    for position, name in ((0, "X_train"), (2, "X_dev"), (4, "X_test")):
        args = [X, y, X, y, X, y]
        args[position] = bad
        with pytest.raises(ValueError, match=f"^{name} must be a non-empty 2-D array"):
            evaluate_split_task(*args, mode=CONFIG)
    for position, name in ((1, "y_train"), (3, "y_dev"), (5, "y_test")):
        args = [X, y, X, y, X, y]
        args[position] = y[:-1]
        with pytest.raises(ValueError, match=f"^{name} must be 1-D with 30 entries"):
            evaluate_split_task(*args, mode=CONFIG)
    for args, name in (([bad, y, X, y], "X_train"), ([X, y, bad, y], "X_test"), ([X, y[:-1], X, y], "y_train"),
                       ([X, y, X, y[:-1]], "y_test")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            evaluate_fixed_test_task(*args, mode=CONFIG)
    with pytest.raises(ValueError, match="^u must be"):
        mrpc_features(bad, X)
    with pytest.raises(ValueError, match="^v must be"):
        mrpc_features(X, bad)


def test_mrpc_features_and_the_f1_by_hand():
    u = np.array([[1.0, -2.0], [0.5, 0.0]], dtype=np.float32)
    v = np.array([[3.0, 1.0], [0.5, 4.0]], dtype=np.float32)
    assert mrpc_features(u, v).tolist() == [[2.0, 3.0, 3.0, -2.0], [0.0, 4.0, 0.25, 0.0]]
    assert _binary_f1(np.array([0, 0, 1, 1, 1]), np.array([0, 1, 1, 1, 0])) == pytest.approx(2 * 2 / (2 * 2 + 2))
    assert _binary_f1(np.array([0, 0]), np.array([0, 0])) == 0.0  # no positive anywhere: 0, as SentEval's sklearn
