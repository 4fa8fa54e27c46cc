"""ESimCSE's momentum pass runs with autograd off: its vectors are detached negatives, so nothing of the pass is
recorded (the momentum encoder's parameters need no gradient, and the online MLP applied to its output would
otherwise record a graph that the detach throws away). The numbers are the same either way; this pins the mode."""

from __future__ import annotations

import torch

from tests.test_method_esimcse import keyed, make


def test_the_momentum_pass_runs_with_autograd_off(tiny_models):
    method, model, tok = make(tiny_models)
    grad_modes = []
    model.momentum_encoder.register_forward_hook(lambda module, args, out: grad_modes.append(torch.is_grad_enabled()))
    batch = method.collate(keyed(tok, ["a cat sat on the mat", "the dog ran far away"]))
    assert torch.is_grad_enabled()
    vectors = method.momentum_vectors(model, batch["input_ids"], batch["attention_mask"])
    assert grad_modes == [False]
    assert not vectors.requires_grad and vectors.grad_fn is None
    assert torch.is_grad_enabled()  # the caller's mode is back
