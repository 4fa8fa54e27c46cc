"""Web-of-Science (WOS) classification on frozen embeddings (MoCoUTRL Tables 2 and 3).

The MoCoUTRL paper reports Acc, R, P and F1 on "the WOS dataset" and names neither the WOS version, nor the
split, nor the averaging (its released code fine-tunes DeBERTa end to end with an MLP head and logs macro and
micro F1). Here the encoder stays frozen and every undocumented choice is an argument:

* **Split** (``test_fraction=0.2``, ``split_seed=1111``): one stratified (on the level-2 ``label``) random split,
  ``sklearn.model_selection.train_test_split``, 80 % train / 20 % test. Stratifying on the child label also
  stratifies the parent label, so both levels share one split.
* **Classifier** (``mode="test"``, ``hidden_dim=0``): SentEval's probe and its ``KFoldClassifier`` protocol, as for
  TREC/MRPC: L2 chosen by stratified k-fold CV on the training part, retrained on the whole training part with
  5 % held out for early stopping. ``hidden_dim > 0`` swaps in SentEval's one-hidden-layer MLP (sigmoid) for an
  "+ MLP" head on frozen features.
* **Metrics** (×100 on the test part): accuracy and macro precision / recall / F1 (unweighted mean over the
  classes present in the test labels or predictions; ``zero_division=0``), plus the support-weighted variants,
  because the paper's F1 does not match a macro average of its own P and R.
* **Levels**: level 2 = the flat ``label`` (Y.txt: 11 / 35 / 134 classes for WOS-5736 / 11967 / 46985); level 1 =
  the ``parent`` (YL1.txt: 3 / 7 / 7 classes) when given.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from sklearn.metrics import accuracy_score, precision_recall_fscore_support
from sklearn.model_selection import train_test_split

from sentrepro.evaluation.probe import (
    SENTEVAL_SEED,
    ProbeConfig,
    as_features,
    as_labels,
    encode_labels,
    resolve_mode,
)
from sentrepro.evaluation.transfer import fit_with_kfold_selected_l2

WOS_TEST_FRACTION = 0.2
WOS_SPLIT_SEED = 1111


def wos_split(
    y: np.ndarray, test_fraction: float = WOS_TEST_FRACTION, seed: int = WOS_SPLIT_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train rows, test rows) of a stratified random split of the labels ``y``."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rows = np.arange(len(y))
    train_rows, test_rows = train_test_split(rows, test_size=test_fraction, stratify=y, random_state=seed)
    return np.sort(train_rows), np.sort(test_rows)


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict:
    """Accuracy and macro / weighted precision, recall and F1, all ×100."""
    metrics = {"acc": 100 * float(accuracy_score(y_true, y_pred))}
    for average in ("macro", "weighted"):
        precision, recall, f1, _ = precision_recall_fscore_support(y_true, y_pred, average=average, zero_division=0)
        metrics[f"{average}_precision"] = 100 * float(precision)
        metrics[f"{average}_recall"] = 100 * float(recall)
        metrics[f"{average}_f1"] = 100 * float(f1)
    return {name: round(value, 2) for name, value in metrics.items()}


def evaluate_level(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    *,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> dict:
    """Fit the probe (CV-selected L2) on one label level and score the test part."""
    (y_train, y_test), n_classes = encode_labels(y_train, y_test)
    probe, search = fit_with_kfold_selected_l2(
        X_train, y_train, n_classes=n_classes, config=config, seed=seed, device=device
    )
    result = classification_metrics(y_test, probe.predict(X_test))
    result.update({"n_classes": n_classes, "l2": search["best_l2"], "devacc": search["best_score"]})
    return result


def evaluate_wos(
    X: np.ndarray,
    y: np.ndarray,
    parent: np.ndarray | None = None,
    *,
    test_fraction: float = WOS_TEST_FRACTION,
    split_seed: int = WOS_SPLIT_SEED,
    mode: str | ProbeConfig = "test",
    hidden_dim: int = 0,
    device: str | torch.device = "cpu",
    seed: int = SENTEVAL_SEED,
) -> dict:
    """Score one WOS version: level 2 (``y``) and, if ``parent`` is given, level 1; see the module docstring."""
    mode_name, config = resolve_mode(mode)
    config = dataclasses.replace(config, hidden_dim=hidden_dim)
    X = as_features(X)
    y = as_labels(y, len(X))
    train_rows, test_rows = wos_split(y, test_fraction, split_seed)
    levels = {"level2": y}
    if parent is not None:
        levels["level1"] = as_labels(parent, len(X), "parent")
    result = {
        "protocol": "wos_probe",
        "mode": mode_name,
        "config": config.to_dict(),
        "seed": seed,
        "split": {"test_fraction": test_fraction, "seed": split_seed, "stratify": "level2"},
        "n_train": int(len(train_rows)),
        "n_test": int(len(test_rows)),
    }
    for level, labels in levels.items():
        result[level] = evaluate_level(
            X[train_rows], labels[train_rows], X[test_rows], labels[test_rows], config=config, seed=seed, device=device
        )
    return result
