"""The seven SentEval transfer tasks, scored on frozen embeddings exactly as SentEval's validation tools do.

Three protocols (SentEval ``tools/validation.py``), all with the probe of :mod:`sentrepro.evaluation.probe` and
the L2 grid {1e-5, 1e-4, 1e-3, 1e-2}:

* :func:`evaluate_cv_task` – MR, CR, SUBJ, MPQA (``InnerKFoldClassifier``): nested cross-validation. The outer
  ``StratifiedKFold(k, shuffle=True, random_state=seed)`` splits all data; per outer fold every L2 is scored by an
  inner ``StratifiedKFold(k, shuffle=True, random_state=seed)`` on the outer-train part (the inner held-out fold
  early-stops and scores); the best L2 is retrained on the whole outer-train part with a random 5 % held out for
  early stopping and tested on the outer fold. ``acc`` = mean outer-fold test accuracy, ``devacc`` = mean best
  inner-CV score.
* :func:`evaluate_split_task` – SST-2 (``SplitClassifier``): the fixed dev set selects L2 and early-stops; the
  test score is that of the selected model. (SentEval retrains the selected L2 with the same seed and the same
  dev set, which reproduces the same model, so the grid model is reused.)
* :func:`evaluate_fixed_test_task` – TREC, MRPC (``KFoldClassifier``): L2 chosen by
  ``StratifiedKFold(k, shuffle=True, random_state=seed)`` CV on the training set, retrained on the full training
  set with 5 % held out, scored on the fixed test set. MRPC's features are :func:`mrpc_features`.

SentEval's behaviour reproduced on purpose, each a place where another choice gives other numbers:

* **Row order.** The rows must arrive in the order SentEval's task classes give them: each split sorted by
  (token count, label), MRPC's pairs by (count of s1, count of s2, label) (``data.transfer.senteval_order``,
  applied by the transfer suite). The folds, the 5 % hold-out and the probe's mini-batches are all drawn over
  row positions, so file order gives other folds and other scores (a 1.2-point TREC difference was measured).
* **Folds.** Outer and inner folds are both ``StratifiedKFold(k, shuffle=True, random_state=seed)`` over the
  labels only; inner folds are drawn on the outer-train rows in their order.
* **Random numbers.** Every fit starts from ``seed`` again (SentEval's classifier calls ``np.random.seed`` and
  ``torch.manual_seed`` in its constructor): same initial weights for every probe, and one fresh stream per fit
  that first draws the 5 % hold-out (``validation_split``, the first ``int(0.05 N)`` of a permutation) and then
  one permutation per pass (see :mod:`sentrepro.evaluation.probe`).
* **Rounding.** Each L2's CV score is the mean accuracy x100 rounded to 2 dp before the argmax (first maximum
  wins); outer-fold test scores are rounded per fold, then their mean rounded; F1 (MRPC) is class 1's.

The probes of one grid are independent, so they are trained together (:func:`~sentrepro.evaluation.probe.
fit_probe_jobs`: all k x k x 4 inner probes of a nested CV in one loop, then the k final fits), each with its own
batches, Adam state and early stopping; the arithmetic of each probe is SentEval's.

``seed`` (default 1111) plays every role SentEval's 1111 played: fold shuffling, the 5 % hold-out and the
probe's initialisation and batch order. Scores are ×100 and rounded to 2 dp the way SentEval rounds them
(per fold, then the mean), so they compare directly with the papers' tables.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold

from sentrepro.evaluation.probe import (
    SENTEVAL_SEED,
    ProbeConfig,
    TrainedProbe,
    as_features,
    as_labels,
    encode_labels,
    ProbeJob,
    fit_probe,
    fit_probe_grid,
    fit_probe_jobs,
    resolve_mode,
    search_l2_on_fold_sets,
    search_l2_on_folds,
)

Folds = list[tuple[np.ndarray, np.ndarray]]


def stratified_folds(y: np.ndarray, k: int, seed: int) -> Folds:
    """SentEval's ``StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)`` folds as (train, test) rows."""
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(train, test) for train, test in splitter.split(np.zeros((len(y), 1)), y)]


def mrpc_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """MRPC pair features ``[|u - v|, u * v]`` (SentEval ``mrpc.py``): (N, H), (N, H) -> (N, 2H) float32."""
    u = as_features(u, "u")
    v = as_features(v, "v")
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape, got {u.shape} and {v.shape}")
    return np.concatenate([np.abs(u - v), u * v], axis=1)


def evaluate_cv_task(
    X: np.ndarray,
    y: np.ndarray,
    mode: str | ProbeConfig = "test",
    device: str | torch.device = "cpu",
    seed: int = SENTEVAL_SEED,
) -> dict:
    """Nested-CV score of a task without fixed splits (MR, CR, SUBJ, MPQA); see the module docstring."""
    mode_name, config = resolve_mode(mode)
    X = as_features(X)
    (y,), n_classes = encode_labels(as_labels(y, len(X)))
    outer = stratified_folds(y, config.kfold, seed)
    # SentEval's InnerKFoldClassifier fits these one after another; they are independent, so every inner fold
    # of every outer fold (k x k x |L2 grid| probes) trains in one lockstep loop, then the k final fits in one.
    fold_sets = [[(train_rows[inner_train], train_rows[inner_test])
                  for inner_train, inner_test in stratified_folds(y[train_rows], config.kfold, seed)]
                 for train_rows, _ in outer]
    searches = search_l2_on_fold_sets(X, y, fold_sets, n_classes=n_classes, config=config, seed=seed, device=device)
    finals = fit_probe_jobs(X, y, [ProbeJob(train_rows, None, (search.best_l2,))
                                   for (train_rows, _), search in zip(outer, searches)],
                            n_classes=n_classes, config=config, seed=seed, device=device)
    folds = []
    for fold_index, ((train_rows, test_rows), search, (probe,)) in enumerate(zip(outer, searches, finals)):
        folds.append(
            {
                "fold": fold_index,
                "n_train": int(len(train_rows)),
                "n_test": int(len(test_rows)),
                "l2": search.best_l2,
                "devacc": search.best_score,
                "acc": round(100 * probe.accuracy(X[test_rows], y[test_rows]), 2),
                "l2_scores": search.scores,
            }
        )
    return {
        "protocol": "nested_cv",
        "mode": mode_name,
        "seed": seed,
        "config": config.to_dict(),
        "acc": round(float(np.mean([fold["acc"] for fold in folds])), 2),
        "devacc": round(float(np.mean([fold["devacc"] for fold in folds])), 2),
        "n_samples": int(len(X)),
        "n_classes": n_classes,
        "l2": [fold["l2"] for fold in folds],
        "folds": folds,
    }


def evaluate_split_task(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_dev: np.ndarray,
    y_dev: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    mode: str | ProbeConfig = "test",
    device: str | torch.device = "cpu",
    seed: int = SENTEVAL_SEED,
) -> dict:
    """Score a task with fixed train/dev/test splits (SST-2): dev selects L2 and early-stops, test scores."""
    mode_name, config = resolve_mode(mode)
    X_train, X_dev, X_test = as_features(X_train, "X_train"), as_features(X_dev, "X_dev"), as_features(X_test, "X_test")
    (y_train, y_dev, y_test), n_classes = encode_labels(
        as_labels(y_train, len(X_train), "y_train"), as_labels(y_dev, len(X_dev), "y_dev"),
        as_labels(y_test, len(X_test), "y_test"),
    )
    probes = fit_probe_grid(X_train, y_train, n_classes=n_classes, l2_grid=config.l2_grid, config=config, seed=seed,
                            device=device, validation=(X_dev, y_dev))
    dev_scores = [round(100 * probe.best_val_accuracy, 2) for probe in probes]
    best = int(np.argmax(dev_scores))
    return {
        "protocol": "fixed_dev",
        "mode": mode_name,
        "seed": seed,
        "config": config.to_dict(),
        "acc": round(100 * probes[best].accuracy(X_test, y_test), 2),
        "devacc": dev_scores[best],
        "n_train": int(len(X_train)),
        "n_dev": int(len(X_dev)),
        "n_test": int(len(X_test)),
        "n_classes": n_classes,
        "l2": config.l2_grid[best],
        "l2_scores": dev_scores,
    }


def fit_with_kfold_selected_l2(
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    n_classes: int,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> tuple[TrainedProbe, dict]:
    """SentEval ``KFoldClassifier`` training: L2 by stratified k-fold CV on the training set, then a retrain on
    the full training set with ``config.validation_fraction`` held out for early stopping.

    Returns the final probe and the L2 search summary (``best_score`` is the CV ``devacc``).
    """
    folds = stratified_folds(y_train, config.kfold, seed)
    search = search_l2_on_folds(X_train, y_train, folds, n_classes=n_classes, config=config, seed=seed, device=device)
    probe = fit_probe(X_train, y_train, n_classes=n_classes, l2=search.best_l2, config=config, seed=seed, device=device)
    return probe, search.to_dict()


def evaluate_fixed_test_task(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    mode: str | ProbeConfig = "test",
    device: str | torch.device = "cpu",
    seed: int = SENTEVAL_SEED,
) -> dict:
    """Score a task with a fixed train/test split (TREC, MRPC): CV on train picks L2, the fixed test set scores.

    For binary tasks the result also carries ``f1`` (×100, positive class = label 1, as SentEval reports for MRPC).
    """
    mode_name, config = resolve_mode(mode)
    X_train, X_test = as_features(X_train, "X_train"), as_features(X_test, "X_test")
    (y_train, y_test), n_classes = encode_labels(
        as_labels(y_train, len(X_train), "y_train"), as_labels(y_test, len(X_test), "y_test")
    )
    probe, search = fit_with_kfold_selected_l2(
        X_train, y_train, n_classes=n_classes, config=config, seed=seed, device=device
    )
    predictions = probe.predict(X_test)
    result = {
        "protocol": "kfold_fixed_test",
        "mode": mode_name,
        "seed": seed,
        "config": config.to_dict(),
        "acc": round(100 * float(np.mean(predictions == y_test)), 2),
        "devacc": search["best_score"],
        "n_train": int(len(X_train)),
        "n_test": int(len(X_test)),
        "n_classes": n_classes,
        "l2": search["best_l2"],
        "l2_scores": search["scores"],
    }
    if n_classes == 2:
        result["f1"] = round(100 * _binary_f1(y_test, predictions), 2)
    return result


def _binary_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """F1 of class 1: 2·TP / (2·TP + FP + FN); 0 when there is no positive in either array."""
    true_positive = int(np.sum((y_pred == 1) & (y_true == 1)))
    errors = int(np.sum(y_pred != y_true))
    denominator = 2 * true_positive + errors
    return 2 * true_positive / denominator if denominator else 0.0
