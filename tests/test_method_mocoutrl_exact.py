"""Guards MoCoUTRL's pure helpers (methods/mocoutrl.py): the NT-Xent floor when a ratio underflows, the
changed-span search on id lists, the one-token widening, and the momentum dictionary's EMA and gradient path."""

from __future__ import annotations

import math

import torch

from sentrepro.methods.mocoutrl import MomentumDictionary, at_least_one_token, changed_span, ntxent_pml


def test_ntxent_underflowing_ratio_is_floored_at_the_smallest_normal_float():
    # a and a' point opposite ways (cos -1), the negative coincides with a (cos 1): at tau 0.01 the
    # numerator exp(-200) underflows to 0 in float32, so anchor 0's term is -log(0 + tiny); anchor 1
    # (a') sees the positive and the negative both at cos -1: its term is log 2
    emb = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])
    labels = torch.tensor([0, 0, 1])
    loss = ntxent_pml(emb, labels, 0.01)
    tiny = torch.finfo(torch.float32).tiny
    assert torch.isfinite(loss)
    assert math.isclose(float(loss), (-math.log(tiny) + math.log(2)) / 2, rel_tol=1e-5)


def test_changed_span_substitution_at_the_first_token():
    assert changed_span([5, 1, 2], [6, 1, 2]) == (0, 1, 1)


def test_changed_span_identical_and_prefix_lists():
    assert changed_span([1, 2], [1, 2]) == (2, 2, 2)
    assert changed_span([1, 2], [1, 2, 3]) == (2, 2, 3)


def test_changed_span_last_token_differs():
    assert changed_span([1, 2], [1, 3]) == (1, 2, 2)


def test_changed_span_repeated_token_insertion_stops_at_the_common_prefix():
    # common prefix [2, 2] uses up the shorter list: no suffix may be counted on top of it
    assert changed_span([2, 2], [2, 2, 2]) == (2, 2, 3)


def test_at_least_one_token_clamps_an_insertion_at_the_end():
    assert at_least_one_token(5, 5, 5) == (4, 5)
    assert at_least_one_token(2, 2, 5) == (2, 3)
    assert at_least_one_token(1, 3, 5) == (1, 3)


def test_dictionary_update_is_an_ema_outside_autograd():
    weight = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    d = MomentumDictionary(weight)
    new = torch.tensor([[0.0, 0.0], [10.0, 10.0]], requires_grad=True)
    d.update(new, 0.9)
    expected = 0.9 * torch.tensor([[1.0, 2.0], [3.0, 4.0]]) + 0.1 * torch.tensor([[0.0, 0.0], [10.0, 10.0]])
    assert torch.allclose(d.table, expected)
    assert not d.table.requires_grad and d.table.grad_fn is None
    assert int(d.updates) == 1


def test_dictionary_rows_value_and_default_momentum_gradient():
    weight = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    d = MomentumDictionary(weight)
    d.update(weight, 0.5)  # one update: with the default momentum 0, d rows / d weight = 1 - 0**1 = 1
    ids = torch.tensor([1])
    rows = d.rows(ids, weight)
    assert torch.allclose(rows, d.table[ids])  # value unchanged by the gradient path
    rows.sum().backward()
    assert torch.allclose(weight.grad, torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
