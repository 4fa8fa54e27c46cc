"""The SentEval probe: accuracy on easy data, determinism, early stopping, and equality with a plain loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from sentrepro.evaluation.probe import (
    PROBE_MODES,
    L2Search,
    ProbeConfig,
    ProbeJob,
    fit_probe,
    fit_probe_fixed_epochs,
    fit_probe_grid,
    fit_probe_jobs,
    max_epochs,
    resolve_mode,
    search_l2_on_folds,
)

FAST = PROBE_MODES["fasttest"]


def blobs(n_per_class: int, n_classes: int, dim: int, separation: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs: class c centred at separation * e_c (+ noise of std 1); float32 (N, dim), int labels."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), n_per_class)
    centres = np.zeros((n_classes, dim))
    centres[np.arange(n_classes), np.arange(n_classes)] = separation
    features = centres[labels] + rng.normal(size=(len(labels), dim))
    order = rng.permutation(len(labels))
    return features[order].astype(np.float32), labels[order]


def test_modes_match_the_senteval_settings():
    test, fast = PROBE_MODES["test"], PROBE_MODES["fasttest"]
    assert (test.kfold, test.optimizer, test.batch_size, test.tenacity, test.epoch_size) == (10, "adam", 64, 5, 4)
    assert (fast.kfold, fast.optimizer, fast.batch_size, fast.tenacity, fast.epoch_size) == (5, "rmsprop", 128, 3, 2)
    assert test.l2_grid == fast.l2_grid == (1e-5, 1e-4, 1e-3, 1e-2)
    assert test.max_epoch == 200
    # SentEval's `while nepoch <= max_epoch` with nepoch += epoch_size: 0, 4, ..., 200 -> 51 epochs.
    assert max_epochs(test) == 51 and max_epochs(fast) == 101


def test_unknown_mode_names_the_known_ones():
    with pytest.raises(ValueError, match="fasttest"):
        resolve_mode("fast")


@pytest.mark.heavy
def test_separable_problem_is_learnt_almost_perfectly():
    # 64 dimensions and ~25 steps per pass: enough that SentEval's loop (which may keep epoch 1) moves the
    # weights well away from their random initialisation.
    X, y = blobs(500, 3, 64, separation=6.0, seed=0)
    X_test, y_test = blobs(200, 3, 64, separation=6.0, seed=1)
    for mode in ("test", "fasttest"):
        probe = fit_probe(X, y, n_classes=3, l2=1e-4, config=PROBE_MODES[mode])
        assert probe.accuracy(X_test, y_test) >= 0.99, mode


def test_same_seed_same_probe_other_seed_other_probe():
    X, y = blobs(100, 2, 8, separation=1.0, seed=2)
    first = fit_probe(X, y, n_classes=2, l2=1e-3, config=FAST, seed=7)
    second = fit_probe(X, y, n_classes=2, l2=1e-3, config=FAST, seed=7)
    other = fit_probe(X, y, n_classes=2, l2=1e-3, config=FAST, seed=8)
    assert torch.equal(first.model[0].weight, second.model[0].weight)
    assert first.accuracy(X, y) == second.accuracy(X, y)
    assert (first.best_epoch, first.epochs_run) == (second.best_epoch, second.epochs_run)
    assert not torch.equal(first.model[0].weight, other.model[0].weight)


@pytest.mark.parametrize("tenacity", [0, 3])
def test_tenacity_stops_after_the_non_improving_epochs(tenacity):
    # Perfectly separable: validation accuracy is 1.0 after the first epoch and can never strictly improve,
    # so SentEval's loop keeps epoch 1 and stops at the (tenacity + 1)-th non-improving epoch.
    X, y = blobs(60, 2, 4, separation=20.0, seed=3)
    config = ProbeConfig(kfold=5, optimizer="rmsprop", batch_size=16, tenacity=tenacity, epoch_size=1)
    probe = fit_probe(X, y, n_classes=2, l2=1e-5, config=config, validation=(X, y))
    assert probe.best_val_accuracy == 1.0
    assert probe.best_epoch == 1
    assert probe.epochs_run == 1 + tenacity + 1


def test_max_epoch_caps_the_passes():
    # Labels are noise, so the validation accuracy wanders; a huge tenacity leaves only the max_epoch cap:
    # passes done before each epoch are 0, 4, 8 (<= 8) -> 3 epochs.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 5)).astype(np.float32)
    y = rng.integers(0, 2, size=200)
    config = ProbeConfig(kfold=5, optimizer="adam", batch_size=32, tenacity=1000, epoch_size=4, max_epoch=8)
    assert fit_probe(X, y, n_classes=2, l2=1e-5, config=config).epochs_run == 3


def senteval_reference_fit(X, y, X_val, y_val, l2: float, config: ProbeConfig, seed: int) -> tuple[nn.Linear, int]:
    """A plain, one-model-at-a-time version of SentEval's loop (nn.Linear + torch's own weight_decay)."""
    np_rng = np.random.RandomState(seed)
    torch.manual_seed(seed)
    n_classes = int(max(y.max(), y_val.max())) + 1
    model = nn.Linear(X.shape[1], n_classes) if not config.hidden_dim else nn.Sequential(  # SentEval's MLP
        nn.Linear(X.shape[1], config.hidden_dim), nn.Dropout(p=config.dropout), nn.Sigmoid(),
        nn.Linear(config.hidden_dim, n_classes))
    optimizer_class = torch.optim.Adam if config.optimizer == "adam" else torch.optim.RMSprop
    optimizer = optimizer_class(model.parameters(), lr=1e-3 if config.optimizer == "adam" else 1e-2, weight_decay=l2)
    features, labels = torch.from_numpy(X), torch.from_numpy(y)
    best, best_state, best_epoch, epoch, passes, stale = -1.0, None, 0, 0, 0, 0
    while passes <= config.max_epoch:
        for _ in range(config.epoch_size):
            order = torch.from_numpy(np_rng.permutation(len(X)))
            for start in range(0, len(X), config.batch_size):
                batch = order[start : start + config.batch_size]
                loss = nn.functional.cross_entropy(model(features[batch]), labels[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        passes += config.epoch_size
        epoch += 1
        with torch.no_grad():
            model.eval()
            accuracy = (model(torch.from_numpy(X_val)).argmax(1).numpy() == y_val).mean()
            model.train()
        if accuracy > best:
            best, best_epoch = accuracy, epoch
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        elif stale >= config.tenacity:
            break
        else:
            stale += 1
    model.load_state_dict(best_state)
    return model, best_epoch


def assert_lockstep_equals_plain_fits(X, y, jobs: list[ProbeJob], n_classes: int, config: ProbeConfig) -> None:
    """Every probe of ``fit_probe_jobs(jobs)`` has the plain one-at-a-time fit's best epoch and weights, bit for bit."""
    for job, probes in zip(jobs, fit_probe_jobs(X, y, jobs, n_classes=n_classes, config=config)):
        for l2, probe in zip(job.l2_values, probes):
            rows, held = job.train_rows, job.validation_rows
            reference, reference_epoch = senteval_reference_fit(X[rows], y[rows], X[held], y[held], l2, config, 1111)
            assert probe.best_epoch == reference_epoch
            ours = [tensor for layer in probe.model if isinstance(layer, nn.Linear) for tensor in layer.parameters()]
            assert len(ours) == len(list(reference.parameters()))
            for tensor, expected in zip(ours, reference.parameters()):
                assert torch.equal(tensor, expected), (len(rows), l2)


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["test", "fasttest"])
def test_stacked_grid_equals_separate_plain_senteval_fits(mode):
    config = PROBE_MODES[mode]
    X, y = blobs(120, 3, 6, separation=1.5, seed=5)
    X_val, y_val = blobs(40, 3, 6, separation=1.5, seed=6)
    stacked = fit_probe_grid(X, y, n_classes=3, l2_grid=config.l2_grid, config=config, seed=1111,
                             validation=(X_val, y_val))
    for probe, l2 in zip(stacked, config.l2_grid):
        reference, reference_epoch = senteval_reference_fit(X, y, X_val, y_val, l2, config, 1111)
        assert probe.l2 == l2
        assert probe.best_epoch == reference_epoch
        torch.testing.assert_close(probe.model[0].weight, reference.weight, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(probe.model[0].bias, reference.bias, rtol=1e-5, atol=1e-6)


@pytest.mark.heavy
def test_fold_grid_in_lockstep_is_bit_for_bit_separate_senteval_fits():
    """Jobs of unequal size (fold train sets of 128 and 129 rows: 2 and 3 batches per pass, the last of one row;
    one of 135 rows, whose last batch of 7 rows shares a step with those of one row) trained together equal,
    bit for bit, the same fits made one at a time the plain way."""
    from sentrepro.evaluation.transfer import stratified_folds

    config = PROBE_MODES["test"]
    X, y = blobs(72, 2, 8, separation=1.0, seed=3)  # 144 rows -> 10-fold train sets of 129 and 130 rows
    X, y = X[:143], y[:143]
    folds = stratified_folds(y, 10, 1111)
    assert {len(train) % 64 for train, _ in folds} >= {0, 1}
    jobs = [ProbeJob(train, test, config.l2_grid) for train, test in folds]
    jobs.append(ProbeJob(np.arange(135), np.arange(135, 143), config.l2_grid))
    assert_lockstep_equals_plain_fits(X, y, jobs, 2, config)


@pytest.mark.heavy
@pytest.mark.parametrize("dim, n_classes", [(384, 2), (768, 6)])
def test_lockstep_at_the_papers_widths_is_bit_for_bit_separate_senteval_fits(dim, n_classes):
    """At a real embedding width, with two classes and with six (TREC: there the two orientations of the weight
    gradient's product round differently, so only nn.Linear's own one passes): jobs of 129 and 70 rows (a last
    batch of one row, a short pass) in lockstep equal the plain one-at-a-time fits bit for bit."""
    config = PROBE_MODES["test"]
    X, y = blobs(240 // n_classes, n_classes, dim, separation=0.3, seed=11)
    jobs = [ProbeJob(np.arange(129), np.arange(129, 160), config.l2_grid[:2]),
            ProbeJob(np.arange(60, 190), np.arange(30), config.l2_grid[2:]),
            ProbeJob(np.arange(70), np.arange(190, 240), config.l2_grid[:1])]
    assert_lockstep_equals_plain_fits(X, y, jobs, n_classes, config)


@pytest.mark.heavy
def test_stopped_probes_kept_as_ghosts_or_cut_out_leave_every_other_probe_bit_for_bit(monkeypatch):
    """L2 values far apart stop a job's probes at different epochs: a stopped probe stays in its slice as a ghost
    (trained on, no longer scored) while the slice stays whole and half live, and the slice is cut down to its live
    probes once it is not. Both happen here (the spy checks), and every probe still equals its plain fit."""
    import dataclasses

    from sentrepro.evaluation import probe

    seen = {"ghosts": 0, "whole_to_cut": 0}
    original = probe._MemberStack.without

    def spy(stack, stopped):
        whole_before = [rows is None for rows in stack.slice_rows]
        kept = original(stack, stopped)
        if kept is not None:
            seen["ghosts"] = max(seen["ghosts"], sum(not alive for alive in kept.alive))
            if len(kept.slice_rows) == len(whole_before):
                seen["whole_to_cut"] += sum(before and rows is not None
                                            for before, rows in zip(whole_before, kept.slice_rows))
        return kept

    monkeypatch.setattr(probe._MemberStack, "without", spy)
    config = dataclasses.replace(PROBE_MODES["test"], l2_grid=(1e-5, 0.03, 0.3, 3.0), tenacity=1)
    X, y = blobs(80, 2, 8, separation=0.7, seed=3)
    rng = np.random.RandomState(3)
    permutations = [rng.permutation(len(X)) for _ in range(12)]
    jobs = [ProbeJob(order[:130], order[130:], config.l2_grid) for order in permutations]
    assert_lockstep_equals_plain_fits(X, y, jobs, 2, config)
    assert seen["ghosts"] >= 2 and seen["whole_to_cut"] >= 1, seen


@pytest.mark.heavy
def test_mlp_probes_in_lockstep_are_bit_for_bit_separate_senteval_fits():
    """SentEval's one-hidden-layer MLP (the "+ MLP" rows), several jobs and L2 values in one stack with members
    stopping at different epochs, equals the plain one-at-a-time fits bit for bit."""
    import dataclasses

    config = dataclasses.replace(PROBE_MODES["fasttest"], hidden_dim=16)
    X, y = blobs(70, 3, 24, separation=0.6, seed=13)
    jobs = [ProbeJob(np.arange(150), np.arange(150, 210), config.l2_grid),
            ProbeJob(np.arange(60, 210), np.arange(40), config.l2_grid[1:3])]
    assert_lockstep_equals_plain_fits(X, y, jobs, 3, config)


@pytest.mark.heavy
def test_mlp_probes_with_dropout_are_bit_for_bit_separate_senteval_fits():
    """With dropout, each probe is fitted on its own (a stack would draw the masks of all at once), and draws the
    masks SentEval draws: for a batch's real rows only. 150 training rows in batches of 128 leave a last batch of
    22: masks drawn over its padding too would shift every later mask (found while killing the probe's mutation
    survivors: the fits parted at the second epoch)."""
    import dataclasses

    config = dataclasses.replace(PROBE_MODES["fasttest"], hidden_dim=16, dropout=0.25)
    X, y = blobs(70, 3, 24, separation=0.6, seed=13)
    jobs = [ProbeJob(np.arange(150), np.arange(150, 210), config.l2_grid[:2]),
            ProbeJob(np.arange(60, 210), np.arange(40), config.l2_grid[2:3])]
    assert_lockstep_equals_plain_fits(X, y, jobs, 3, config)
    # the narrowest MLP, one job of two L2 values: fitted one by one too (at width 1 the products round apart from
    # nn.Linear's in the last bits, so within 1e-6 here; a shared stack's masks would part them entirely)
    narrowest = dataclasses.replace(config, hidden_dim=1)
    job = ProbeJob(np.arange(150), np.arange(150, 210), config.l2_grid[:2])
    for l2, probe in zip(job.l2_values, fit_probe_jobs(X, y, [job], n_classes=3, config=narrowest)[0]):
        reference, reference_epoch = senteval_reference_fit(X[:150], y[:150], X[150:210], y[150:210], l2, narrowest,
                                                            1111)
        assert probe.best_epoch == reference_epoch
        ours = [tensor for layer in probe.model if isinstance(layer, nn.Linear) for tensor in layer.parameters()]
        for tensor, expected in zip(ours, reference.parameters()):
            torch.testing.assert_close(tensor, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3, 6])
def test_stacked_weight_gradient_has_nn_linears_bits(n_classes):
    """On a zero-padded stack of members with 1..64 real rows, _weight_gradient equals nn.Linear's backward on
    each member's real rows, bit for bit (six classes tell the two orientations of the product apart)."""
    from sentrepro.evaluation.probe import _weight_gradient

    generator = torch.Generator().manual_seed(3)
    lengths = [1, 2, 17, 63, 64]
    features = torch.randn(len(lengths), 64, 768, generator=generator)  # (P, B, H)
    grad = torch.randn(len(lengths), 64, n_classes, generator=generator)  # (P, B, C)
    for member, length in enumerate(lengths):
        grad[member, length:] = 0
    stacked = _weight_gradient(features, grad)  # (P, C, H)
    for member, length in enumerate(lengths):
        layer = nn.Linear(768, n_classes)
        layer(features[member, :length]).backward(grad[member, :length])
        assert torch.equal(stacked[member], layer.weight.grad), (n_classes, length)


def test_fit_leaves_the_global_random_state_alone():
    X, y = blobs(50, 2, 4, separation=2.0, seed=7)
    torch.manual_seed(123)
    np.random.seed(123)
    expected_torch, expected_numpy = torch.rand(3), np.random.rand(3)
    torch.manual_seed(123)
    np.random.seed(123)
    fit_probe(X, y, n_classes=2, l2=1e-4, config=FAST)
    assert torch.equal(torch.rand(3), expected_torch)
    assert np.array_equal(np.random.rand(3), expected_numpy)


@pytest.mark.heavy
def test_fixed_epoch_training_runs_exactly_that_long_and_learns():
    X, y = blobs(16, 2, 8, separation=4.0, seed=8)
    X_test, y_test = blobs(200, 2, 8, separation=4.0, seed=9)
    probe = fit_probe_fixed_epochs(X, y, n_classes=2, l2=1e-4, config=PROBE_MODES["test"], n_epochs=51)
    assert probe.epochs_run == 51 and probe.best_val_accuracy is None
    assert probe.accuracy(X_test, y_test) >= 0.95


def test_l2_search_keeps_the_first_of_tied_scores():
    search = L2Search((1e-5, 1e-4, 1e-3, 1e-2), [80.0, 81.5, 81.5, 70.0], [[1], [2], [3], [4]])
    assert search.best_l2 == 1e-4 and search.best_score == 81.5


def test_l2_search_scores_every_value_on_the_folds():
    X, y = blobs(60, 2, 4, separation=3.0, seed=10)
    folds = [(np.arange(0, 80), np.arange(80, 120)), (np.arange(40, 120), np.arange(0, 40))]
    search = search_l2_on_folds(X, y, folds, n_classes=2, config=FAST)
    assert len(search.scores) == 4 and all(50.0 <= score <= 100.0 for score in search.scores)
    assert [len(epochs) for epochs in search.best_epochs] == [2, 2, 2, 2]
    assert search.best_score == max(search.scores)


def test_bad_inputs_are_named():
    X, y = blobs(20, 2, 3, separation=1.0, seed=11)
    bad = X.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="row 5"):
        fit_probe(bad, y, n_classes=2, l2=1e-4, config=FAST)
    with pytest.raises(ValueError, match="0..1"):
        fit_probe(X, y + 1, n_classes=2, l2=1e-4, config=FAST)
    with pytest.raises(ValueError, match="holds out no row"):
        fit_probe(X[:10], y[:10], n_classes=2, l2=1e-4, config=FAST)


def test_a_config_passed_as_the_mode_is_named_custom_and_errors_name_the_choices():
    from sentrepro.evaluation.probe import _holdout_split

    config = PROBE_MODES["test"]
    assert resolve_mode(config) == ("custom", config)
    with pytest.raises(ValueError, match=r"^unknown probe mode 'quick'; known modes: \[.*'test'.*\]$"):
        resolve_mode("quick")
    with pytest.raises(ValueError, match=r"^validation_fraction=0.05 of 10 training rows holds out no row; pass "
                                         r"explicit validation data or a larger training set$"):
        _holdout_split(10, 0.05, np.random.RandomState(0))
