"""The probe's settings and inputs are checked at their edges: which ProbeConfig values are accepted and which
refused (SentEval needs two folds at least; a held-out fraction strictly inside (0, 1)), the record a metrics file
keeps of them, and the shapes and labels the probe takes, each refusal naming the argument."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentrepro.evaluation.probe import PROBE_MODES, SENTEVAL_L2_GRID, ProbeConfig, as_features, as_labels, max_epochs

BASE = dict(kfold=5, optimizer="adam", batch_size=4, tenacity=2, epoch_size=1)


@pytest.mark.parametrize("changes", [{"kfold": 2}, {"tenacity": 0}, {"hidden_dim": 0}, {"hidden_dim": 50},
                                     {"validation_fraction": 0.999}, {"validation_fraction": 1e-6}])
def test_the_edges_that_are_accepted(changes):
    config = ProbeConfig(**{**BASE, **changes})
    assert all(getattr(config, key) == value for key, value in changes.items())


@pytest.mark.parametrize("changes, message", [
    ({"kfold": 1}, r"kfold must be >= 1|kfold must be >= 2"),
    ({"tenacity": -1}, r"tenacity and ProbeConfig.hidden_dim must be >= 0"),
    ({"hidden_dim": -1}, r"tenacity and ProbeConfig.hidden_dim must be >= 0"),
    ({"validation_fraction": 0.0}, r"validation_fraction must be in \(0, 1\), got 0.0"),
    ({"validation_fraction": 1.0}, r"validation_fraction must be in \(0, 1\), got 1.0"),
    ({"validation_fraction": 1.5}, r"validation_fraction must be in \(0, 1\), got 1.5"),
    ({"l2_grid": ()}, r"l2_grid must not be empty"),
    ({"optimizer": "sgd"}, r"optimizer='sgd'"),
])
def test_the_edges_that_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        ProbeConfig(**{**BASE, **changes})


def test_the_record_of_a_config_is_plain_json():
    record = PROBE_MODES["test"].to_dict()
    assert record == {"kfold": 10, "optimizer": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4,
                      "max_epoch": 200, "l2_grid": list(SENTEVAL_L2_GRID), "validation_fraction": 0.05,
                      "hidden_dim": 0, "dropout": 0.0}
    assert json.loads(json.dumps(record)) == record


def test_a_probe_config_cannot_be_changed_once_made():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        PROBE_MODES["test"].kfold = 3  # shared by every transfer job of a process


def test_max_epochs_counts_whole_epoch_blocks():
    """SentEval trains epoch_size epochs at a time until max_epoch: max_epoch // epoch_size + 1 blocks' worth."""
    assert max_epochs(ProbeConfig(**{**BASE, "epoch_size": 4, "max_epoch": 10})) == 3
    assert isinstance(max_epochs(ProbeConfig(**{**BASE, "epoch_size": 4, "max_epoch": 10})), int)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (3,), (2, 2, 2)])
def test_features_of_any_other_shape_are_refused_by_name(shape):
    with pytest.raises(ValueError, match=r"^X must be a non-empty 2-D array \(N, H\), got shape"):
        as_features(np.zeros(shape))
    with pytest.raises(ValueError, match=r"^X_val must be"):
        as_features(np.zeros(shape), "X_val")


def test_one_row_or_one_column_of_features_is_enough():
    assert as_features(np.ones((1, 3))).shape == (1, 3)
    assert as_features(np.ones((3, 1))).shape == (3, 1)
    assert as_features(np.ones((3, 1), dtype=np.float64)).dtype == np.float32


@pytest.mark.parametrize("labels, rows", [(np.zeros((3, 1), dtype=int), 3), (np.zeros(4, dtype=int), 3),
                                          (np.zeros((2, 2), dtype=int), 2)])
def test_labels_must_be_one_per_row(labels, rows):
    with pytest.raises(ValueError, match=rf"^y must be 1-D with {rows} entries"):
        as_labels(labels, rows)


def test_labels_are_int64():
    assert as_labels(np.array([0, 1, 1], dtype=np.int8), 3).dtype == np.int64


def test_an_l2_search_records_its_grid_scores_and_choice():
    from sentrepro.evaluation.probe import L2Search

    search = L2Search((1e-5, 1e-4, 1e-3), [80.0, 81.5, 81.5], [[1], [2], [3]])
    assert search.to_dict() == {"l2_grid": [1e-5, 1e-4, 1e-3], "scores": [80.0, 81.5, 81.5], "best_l2": 1e-4,
                                "best_score": 81.5}


def test_a_validation_set_is_checked_under_its_own_names():
    from sentrepro.evaluation.probe import fit_probe_grid

    X, y = np.ones((20, 3), dtype=np.float32), np.arange(20) % 2
    with pytest.raises(ValueError, match=r"^X_val must be a non-empty 2-D array"):
        fit_probe_grid(X, y, n_classes=2, l2_grid=(1e-5,), config=PROBE_MODES["fasttest"],
                       validation=(np.ones((0, 3)), np.zeros(0, dtype=int)))
    with pytest.raises(ValueError, match=r"^y_val must lie in 0\.\.1, found 0\.\.2$"):
        fit_probe_grid(X, y, n_classes=2, l2_grid=(1e-5,), config=PROBE_MODES["fasttest"],
                       validation=(np.ones((3, 3), dtype=np.float32), np.array([0, 1, 2])))


def test_fixed_epoch_training_takes_one_epoch_and_refuses_none():
    from sentrepro.evaluation.probe import fit_probe_fixed_epochs

    X, y = np.eye(4, dtype=np.float32), np.array([0, 1, 0, 1])
    assert fit_probe_fixed_epochs(X, y, n_classes=2, l2=0.0, config=PROBE_MODES["fasttest"], n_epochs=1).epochs_run == 1
    with pytest.raises(ValueError, match=r"n_epochs must be >= 1, got 0"):
        fit_probe_fixed_epochs(X, y, n_classes=2, l2=0.0, config=PROBE_MODES["fasttest"], n_epochs=0)
