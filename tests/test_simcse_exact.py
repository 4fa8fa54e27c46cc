"""SimCSE's training loss and evaluation embedding (methods/simcse.py) on a fake encoder whose two views of a
sentence differ, checked against the loss computed by hand in numpy from the MLP's outputs; and which vector
evaluation takes with and without ``mlp_only_train``. Written for the mutants `make mutation` found surviving
tests/test_simcse.py (which checks the loss function alone)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from sentrepro.methods.simcse import SimCSE

HIDDEN = 4


class RowShiftedEncoder(torch.nn.Module):
    """Embeds token ids, then adds 0.1 x the row's index to every state: the two copies of a sentence differ."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(16, HIDDEN)
        self.config = SimpleNamespace(hidden_size=HIDDEN)

    def forward(self, input_ids, attention_mask=None):
        shift = 0.1 * torch.arange(input_ids.shape[0], dtype=torch.float32)[:, None, None]  # (N, 1, 1)
        return SimpleNamespace(last_hidden_state=self.embedding(input_ids) + shift)  # (N, L, H)


def numpy_loss(z1: np.ndarray, z2: np.ndarray, tau: float) -> float:
    u1 = z1 / np.linalg.norm(z1, axis=1, keepdims=True)
    u2 = z2 / np.linalg.norm(z2, axis=1, keepdims=True)
    logits = u1 @ u2.T / tau  # (B, B); row i's positive is column i
    logits -= logits.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(logits).sum(axis=1)) - np.diag(logits)))


def test_the_loss_pairs_each_sentences_first_view_with_its_second():
    method = SimCSE({"temperature": 0.05, "max_seq_length": 8}, "bert", None)
    model = method.build_model(RowShiftedEncoder())
    ids = torch.tensor([[1, 5, 2], [1, 5, 2], [1, 7, 2], [1, 7, 2], [1, 9, 2], [1, 9, 2]])  # 3 sentences, twice
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with torch.no_grad():
        loss = float(method.loss(model, batch))
        states = model.encoder(ids).last_hidden_state[:, 0]  # (6, H): [CLS] of each row
        pooled = model.extras["mlp"](states).numpy()
    assert np.abs(pooled[0] - pooled[1]).max() > 1e-3  # the views differ
    assert abs(loss - numpy_loss(pooled[0::2], pooled[1::2], 0.05)) < 1e-5


def test_evaluation_takes_the_raw_cls_unless_mlp_only_train_is_off():
    encoder = RowShiftedEncoder()
    ids = torch.tensor([[1, 5, 2]])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    plain = SimCSE({}, "bert", None)  # SimCSE's sidecar sets no mlp_only_train: the default holds
    model = plain.build_model(encoder)
    with torch.no_grad():
        cls = encoder(ids).last_hidden_state[:, 0]
        assert torch.equal(plain.embed(model, inputs, "test"), cls)
        headed = SimCSE({"mlp_only_train": False}, "bert", None)  # as ESimCSE's params may set it
        assert torch.equal(headed.embed(model, inputs, "test"), model.extras["mlp"](cls))
