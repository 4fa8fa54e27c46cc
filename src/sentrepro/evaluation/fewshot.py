"""Few-shot transfer (ConPVP Figure 7): a probe trained on 16 labelled examples per class, 10 seeds.

What the paper says: "follow Zhang et al. (2021) to uniformly sample 16 labeled instances per class for each
task" and "violin plots of the performance of 10 runs with different random seeds", with SentEval's default
classifier. Nothing else is published (no code in the ConPVP release, none in the cited repositories). Every
other choice below is ours, is an argument, and is recorded in the result:

* **Sample** (``shots=16``): for run ``seed``, ``np.random.default_rng(seed)`` draws ``shots`` training rows per
  class without replacement (classes in sorted order). A class with fewer rows is an error.
* **Runs** (``seeds=range(10)``): run ``seed`` uses that seed for everything random in it – the sample, the CV
  folds and the probe's initialisation and batch order – so the 10 runs differ only by seed.
* **Test data**: tasks with a fixed test split (SST-2, TREC, MRPC) use it whole; SST-2's dev set is not used
  (a few-shot learner has no large labelled dev set). Tasks without splits (MR, CR, SUBJ, MPQA) get one fixed
  stratified hold-out, the same for all runs: the first test fold of SentEval's own outer split
  (``StratifiedKFold(holdout_folds=10, shuffle=True, random_state=holdout_seed=1111)``, i.e. 10 % of the data,
  exactly the rows the full-data protocol tests first); the shots are drawn from the other 90 %.
* **Probe** (``mode="test"``, ``n_epochs=None``): SentEval's classifier settings of that mode. With 16 examples
  per class there is no room for SentEval's 5 % early-stopping hold-out (one or two rows), and early stopping on
  3-row CV folds stops at the first epoch, leaving the probe at its random initialisation. So no probe is
  early-stopped: each trains for a fixed number of epochs, by default the most SentEval's loop ever runs
  (``max_epoch // epoch_size + 1``, i.e. 204 passes in "test" mode). L2 is chosen by cross-validation on the
  sample: ``StratifiedKFold(min(kfold, shots), shuffle=True, random_state=seed)``, every L2 of the grid trained
  on the fold's train rows and scored on its held-out rows; best mean accuracy wins (SentEval's 2-dp rounding,
  first maximum = smallest L2 on ties). The final probe is trained on the whole sample with that L2 and scored
  on the test data.
* **Summary**: accuracies ×100 (2 dp) per run, their mean and population std (``ddof=0``).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import torch

from sentrepro.evaluation.probe import (
    ProbeConfig,
    as_features,
    as_labels,
    encode_labels,
    fit_probe_fixed_epochs,
    fit_probe_grid_fixed_epochs,
    max_epochs,
    resolve_mode,
)
from sentrepro.evaluation.transfer import stratified_folds

FEWSHOT_SHOTS = 16
FEWSHOT_SEEDS = tuple(range(10))
HOLDOUT_FOLDS = 10
HOLDOUT_SEED = 1111


def sample_per_class(y: np.ndarray, shots: int, seed: int) -> np.ndarray:
    """Sorted row indices of ``shots`` rows of every class of ``y``, drawn without replacement."""
    rng = np.random.default_rng(seed)
    chosen = []
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        if len(rows) < shots:
            raise ValueError(f"class {label} has {len(rows)} training rows, fewer than shots={shots}")
        chosen.append(rng.choice(rows, size=shots, replace=False))
    return np.sort(np.concatenate(chosen))


def cv_task_holdout(
    y: np.ndarray, n_folds: int = HOLDOUT_FOLDS, seed: int = HOLDOUT_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows, test rows) for a task without splits: the first fold of SentEval's outer stratified split."""
    return stratified_folds(y, n_folds, seed)[0]


def cv_l2_scores(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    config: ProbeConfig,
    n_epochs: int,
    seed: int,
    device: str | torch.device = "cpu",
) -> list[float]:
    """Mean held-out accuracy ×100 (2 dp) of every L2 of ``config.l2_grid`` under stratified k-fold CV of (X, y)."""
    folds = stratified_folds(y, min(config.kfold, int(np.bincount(y).min())), seed)
    fold_accuracies = []  # (folds, L2s)
    for train_rows, held_out_rows in folds:
        probes = fit_probe_grid_fixed_epochs(
            X[train_rows], y[train_rows], n_classes=n_classes, l2_grid=config.l2_grid, config=config,
            n_epochs=n_epochs, seed=seed, device=device,
        )
        fold_accuracies.append([probe.accuracy(X[held_out_rows], y[held_out_rows]) for probe in probes])
    return [round(100 * float(mean), 2) for mean in np.mean(fold_accuracies, axis=0)]


def fewshot_run(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    *,
    n_classes: int,
    shots: int,
    seed: int,
    config: ProbeConfig,
    n_epochs: int,
    device: str | torch.device = "cpu",
) -> dict:
    """One few-shot run: sample ``shots`` rows per class, pick L2 by CV on the sample, train, score the test data."""
    sample = sample_per_class(y_train, shots, seed)
    X_sample, y_sample = X_train[sample], y_train[sample]
    scores = cv_l2_scores(X_sample, y_sample, n_classes=n_classes, config=config, n_epochs=n_epochs, seed=seed,
                          device=device)
    best = int(np.argmax(scores))
    probe = fit_probe_fixed_epochs(
        X_sample, y_sample, n_classes=n_classes, l2=config.l2_grid[best], config=config, n_epochs=n_epochs,
        seed=seed, device=device,
    )
    return {
        "seed": seed,
        "acc": round(100 * probe.accuracy(X_test, y_test), 2),
        "cv_acc": scores[best],
        "l2": config.l2_grid[best],
        "l2_scores": scores,
    }


def evaluate_fewshot(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    *,
    shots: int = FEWSHOT_SHOTS,
    seeds: Iterable[int] = FEWSHOT_SEEDS,
    mode: str | ProbeConfig = "test",
    n_epochs: int | None = None,
    device: str | torch.device = "cpu",
) -> dict:
    """Few-shot score of a task with a fixed test split (SST-2 test, TREC, MRPC): one run per seed."""
    mode_name, config = resolve_mode(mode)
    if shots < 2:
        raise ValueError(f"shots must be >= 2 (the sample is cross-validated), got {shots}")
    X_train, X_test = as_features(X_train, "X_train"), as_features(X_test, "X_test")
    (y_train, y_test), n_classes = encode_labels(
        as_labels(y_train, len(X_train), "y_train"), as_labels(y_test, len(X_test), "y_test")
    )
    n_epochs = max_epochs(config) if n_epochs is None else n_epochs
    runs = [
        fewshot_run(X_train, y_train, X_test, y_test, n_classes=n_classes, shots=shots, seed=seed, config=config,
                    n_epochs=n_epochs, device=device)
        for seed in seeds
    ]
    if not runs:
        raise ValueError("seeds is empty; give at least one few-shot run seed")
    accuracies = [run["acc"] for run in runs]
    return {
        "protocol": "fewshot",
        "mode": mode_name,
        "config": config.to_dict(),
        "shots": shots,
        "n_epochs": n_epochs,
        "seeds": [run["seed"] for run in runs],
        "accs": accuracies,
        "acc_mean": round(float(np.mean(accuracies)), 2),
        "acc_std": round(float(np.std(accuracies)), 2),
        "n_pool": int(len(X_train)),
        "n_test": int(len(X_test)),
        "n_classes": n_classes,
        "runs": runs,
    }


def evaluate_fewshot_cv_task(
    X: np.ndarray,
    y: np.ndarray,
    *,
    shots: int = FEWSHOT_SHOTS,
    seeds: Iterable[int] = FEWSHOT_SEEDS,
    mode: str | ProbeConfig = "test",
    n_epochs: int | None = None,
    device: str | torch.device = "cpu",
    holdout_folds: int = HOLDOUT_FOLDS,
    holdout_seed: int = HOLDOUT_SEED,
) -> dict:
    """Few-shot score of a task without splits (MR, CR, SUBJ, MPQA): test on the fixed :func:`cv_task_holdout`."""
    X = as_features(X)
    y = as_labels(y, len(X))
    pool, test = cv_task_holdout(y, holdout_folds, holdout_seed)
    result = evaluate_fewshot(X[pool], y[pool], X[test], y[test], shots=shots, seeds=seeds, mode=mode,
                              n_epochs=n_epochs, device=device)
    result["holdout"] = {"folds": holdout_folds, "seed": holdout_seed}
    return result
