"""Few-shot's fixed-epoch probes (``fit_probe_grid_fixed_epochs``: an L2 grid trained as one stack, no validation)
equal SentEval-style fits made one at a time the plain way (nn.Linear / SentEval's MLP, torch's weight_decay, the
same seeds and batch order), for the linear probe, the MLP and the MLP with dropout, on data whose last batch is
short; and the fitted probe predicts by argmax over its classes, in batches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from sentrepro.evaluation.probe import PROBE_MODES, fit_probe_fixed_epochs, fit_probe_grid_fixed_epochs

SEED = 1111


def blobs(n_per_class: int, n_classes: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), n_per_class)
    centres = np.eye(n_classes, dim) * 0.8
    features = centres[labels] + rng.normal(size=(len(labels), dim))
    order = rng.permutation(len(labels))
    return features[order].astype(np.float32), labels[order]


def plain_fixed_epoch_fit(X, y, n_classes, l2, config, n_epochs) -> nn.Module:
    """One probe, SentEval's way: torch seeded, the model built, then n_epochs x epoch_size shuffled passes of
    mean cross-entropy with torch's own weight_decay; the batch order from RandomState(seed)."""
    rng = np.random.RandomState(SEED)
    torch.manual_seed(SEED)
    model = nn.Linear(X.shape[1], n_classes) if not config.hidden_dim else nn.Sequential(
        nn.Linear(X.shape[1], config.hidden_dim), nn.Dropout(p=config.dropout), nn.Sigmoid(),
        nn.Linear(config.hidden_dim, n_classes))
    optimizer_class = torch.optim.Adam if config.optimizer == "adam" else torch.optim.RMSprop
    optimizer = optimizer_class(model.parameters(), lr=1e-3 if config.optimizer == "adam" else 1e-2, weight_decay=l2)
    features, labels = torch.from_numpy(X), torch.from_numpy(y)
    model.train()
    for _ in range(n_epochs * config.epoch_size):
        order = torch.from_numpy(rng.permutation(len(X)))
        for start in range(0, len(X), config.batch_size):
            batch = order[start : start + config.batch_size]
            loss = nn.functional.cross_entropy(model(features[batch]), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model


def linears(model: nn.Module) -> list[torch.Tensor]:
    layers = [model] if isinstance(model, nn.Linear) else [m for m in model if isinstance(m, nn.Linear)]
    return [tensor for layer in layers for tensor in (layer.weight, layer.bias)]


@pytest.mark.parametrize("hidden_dim, dropout, optimizer, grid", [
    (0, 0.0, "rmsprop", (1e-5, 1e-2, 0.1)), (0, 0.0, "adam", (1e-5, 1e-2, 0.1)), (8, 0.0, "adam", (1e-5, 1e-2, 0.1)),
    (8, 0.3, "rmsprop", (1e-5, 1e-2, 0.1)),
    (1, 0.3, "adam", (1e-5, 1e-2)),  # the narrowest MLP, two L2 values: each still fitted on its own
])
def test_a_fixed_epoch_grid_equals_plain_fits_one_at_a_time(hidden_dim, dropout, optimizer, grid):
    """With dropout each probe is fitted on its own (one stack would draw all members' masks at once)."""
    config = dataclasses.replace(PROBE_MODES["fasttest"], batch_size=32, hidden_dim=hidden_dim, dropout=dropout,
                                 optimizer=optimizer)
    X, y = blobs(25, 3, 10, seed=4)  # 75 rows: batches of 32, 32 and 11
    probes = fit_probe_grid_fixed_epochs(X, y, n_classes=3, l2_grid=grid, config=config, n_epochs=2)
    assert [p.l2 for p in probes] == list(grid)
    for probe, l2 in zip(probes, grid):
        assert (probe.best_epoch, probe.epochs_run, probe.best_val_accuracy) == (2, 2, None)
        reference = plain_fixed_epoch_fit(X, y, 3, l2, config, n_epochs=2)
        ours = linears(probe.model)
        assert [t.shape for t in ours] == [t.shape for t in linears(reference)]
        for tensor, expected in zip(ours, linears(reference)):
            torch.testing.assert_close(tensor, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(probe.predict(X), reference.eval()(torch.from_numpy(X)).argmax(-1).numpy())
    # one L2 alone is the same fit as its member of the grid
    alone = fit_probe_fixed_epochs(X, y, n_classes=3, l2=grid[1], config=config, n_epochs=2)
    for tensor, expected in zip(linears(alone.model), linears(probes[1].model)):
        assert torch.equal(tensor, expected)  # bit for bit: a member of a stack computes alone what it computes in it


def test_a_fitted_probe_predicts_in_batches_by_argmax_over_classes():
    config = dataclasses.replace(PROBE_MODES["fasttest"], batch_size=4)
    X, y = blobs(5, 3, 6, seed=2)  # 15 rows: prediction batches of 4, 4, 4 and 3
    probe = fit_probe_fixed_epochs(X, y, n_classes=3, l2=1e-5, config=config, n_epochs=1)
    logits = probe.model(torch.from_numpy(X))
    predicted = probe.predict(X)
    assert predicted.shape == (15,) and predicted.dtype == np.int64
    np.testing.assert_array_equal(predicted, logits.argmax(dim=1).numpy())
    assert probe.accuracy(X, y) == pytest.approx(float(np.mean(predicted == y)))


def test_labels_outside_the_classes_are_refused_by_name():
    X, y = blobs(5, 3, 6, seed=2)
    with pytest.raises(ValueError, match=r"^y must lie in 0\.\.1, found 0\.\.2$"):
        fit_probe_fixed_epochs(X, y, n_classes=2, l2=1e-5, config=PROBE_MODES["fasttest"], n_epochs=1)


@pytest.mark.parametrize("lengths", [None, (11, 5, 11)])
def test_a_stacks_sigmoid_gives_each_member_the_bits_of_its_rows_alone(lengths):
    """(3, 11, 8): 264 elements against a member's 88, whose last 8 ATen's AVX-512 sigmoid takes by its scalar path;
    one sigmoid over the stack rounded some of them otherwise (the fixed-epoch grid's CI failure)."""
    from sentrepro.evaluation.probe import _sigmoid_per_member

    hidden = torch.from_numpy(np.random.default_rng(7).normal(scale=3.0, size=(3, 11, 8)).astype(np.float32))
    out = _sigmoid_per_member(hidden, lengths)
    assert out.shape == hidden.shape
    for member, n in enumerate(lengths or (11, 11, 11)):
        assert torch.equal(out[member, :n], torch.sigmoid(hidden[member, :n].clone()))
        assert torch.equal(out[member, n:], hidden[member, n:])  # padding passes unchanged
