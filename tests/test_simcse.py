"""SimCSE maths against plain numpy, batch layout, and HF-4.2.1 AdamW against a hand computation."""

from __future__ import annotations

import math

import numpy as np
import torch

from sentrepro.methods.simcse import SimCSE, simcse_loss, with_special_tokens
from sentrepro.training.optim import HFAdamW, linear_schedule_factor


def numpy_simcse_loss(z1: np.ndarray, z2: np.ndarray, tau: float) -> float:
    a = z1 / np.linalg.norm(z1, axis=1, keepdims=True)
    b = z2 / np.linalg.norm(z2, axis=1, keepdims=True)
    logits = a @ b.T / tau
    logits -= logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return float(-np.mean(np.diag(log_probs)))


def test_loss_matches_numpy():
    rng = np.random.default_rng(0)
    z1, z2 = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    ours = simcse_loss(torch.tensor(z1), torch.tensor(z2), 0.05).item()
    assert abs(ours - numpy_simcse_loss(z1, z2, 0.05)) < 1e-5


def test_loss_by_hand_two_pairs():
    # z1 = [e1, e2], z2 = [e1, e2]: cos matrix = I; logits = I / 0.5 = [[2,0],[0,2]]
    # loss = -log(e^2 / (e^2 + e^0)) = log(1 + e^-2) = 0.126928...
    z = torch.eye(2)
    assert abs(simcse_loss(z, z, 0.5).item() - math.log(1 + math.exp(-2))) < 1e-6


def test_special_tokens_and_truncation_count_to_max_len():
    assert with_special_tokens(list(range(10, 50)), 101, 102, 32) == [101] + list(range(10, 40)) + [102]
    assert len(with_special_tokens(list(range(100)), 1, 2, 32)) == 32


class _Tok:
    cls_token_id, sep_token_id, pad_token_id = 101, 102, 0


def test_collate_duplicates_each_sentence_adjacently():
    method = SimCSE({"max_seq_length": 32, "temperature": 0.05}, "bert", _Tok())
    batch = method.collate([[5, 6, 7], [8]])
    assert batch["input_ids"].tolist() == [[101, 5, 6, 7, 102], [101, 5, 6, 7, 102],
                                           [101, 8, 102, 0, 0], [101, 8, 102, 0, 0]]
    assert batch["attention_mask"].sum(1).tolist() == [5, 5, 3, 3]


def test_hf_adamw_matches_hand_computation():
    # one parameter, two steps with gradients g1=1, g2=-2; lr 0.1, b=(0.9, 0.999), eps 1e-8, wd 0.1
    p = torch.nn.Parameter(torch.tensor([1.0]))
    opt = HFAdamW([p], lr=0.1, weight_decay=0.1)
    expected = 1.0
    m = v = 0.0
    for t, g in enumerate([1.0, -2.0], start=1):
        p.grad = torch.tensor([g])
        opt.step()
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        step = 0.1 * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        expected = expected - step * m / (math.sqrt(v) + 1e-8)
        expected = expected - 0.1 * 0.1 * expected
        assert abs(p.item() - expected) < 1e-6


def test_linear_schedule_decays_to_zero():
    assert linear_schedule_factor(0, 10) == 1.0
    assert linear_schedule_factor(5, 10) == 0.5
    assert linear_schedule_factor(10, 10) == 0.0
    assert linear_schedule_factor(1, 10, warmup_steps=2) == 0.5


def test_simcse_is_its_registry_kind_and_its_head_is_the_checkpoints_mlp():
    """The kind names the sidecar entry that runs it; the head is saved under "mlp" (extras.safetensors keys)."""
    from types import SimpleNamespace

    from sentrepro.planning import registry

    assert registry.method(SimCSE.kind).implementation == "sentrepro.methods.simcse:SimCSE"
    encoder = torch.nn.Linear(4, 4)
    encoder.config = SimpleNamespace(hidden_size=4)
    model = SimCSE({}, "bert", None).build_model(encoder)
    assert list(model.extras) == ["mlp"] and model.extras["mlp"].dense.in_features == 4
