"""Encode sentences for evaluation: each distinct sentence once, in length-sorted batches.

Sorting by length keeps padding (and wasted compute) small; deduplication means a sentence shared
by several pairs or sets is encoded once. Outputs are fp32 on the CPU in input order.
"""

from __future__ import annotations

import numpy as np
import torch

from sentrepro.encoder.device import autocast_context
from sentrepro.methods.base import Method, SentenceModel


@torch.no_grad()
def encode_sentences(method: Method, model: SentenceModel, sentences: list[str], *, purpose: str,
                     batch_size: int = 128, device: torch.device | str = "cpu",
                     precision: str = "fp32") -> np.ndarray:
    """Embed ``sentences`` (duplicates encoded once). -> (N, H) float32, rows in input order."""
    device = torch.device(device)
    unique = sorted(set(sentences), key=lambda s: (method.eval_length(s), s))
    was_training = model.training
    model.eval()
    vectors: list[np.ndarray] = []
    try:
        for start in range(0, len(unique), batch_size):
            batch = unique[start:start + batch_size]
            inputs = {k: v.to(device) for k, v in method.eval_inputs(batch, purpose).items()}
            with autocast_context(device, precision):
                emb = method.embed(model, inputs, purpose)
            vectors.append(emb.float().cpu().numpy())
    finally:
        model.train(was_training)
    table = np.concatenate(vectors) if vectors else np.zeros((0, model.hidden_size), dtype=np.float32)
    index = {sentence: row for row, sentence in enumerate(unique)}
    return method.transform_embeddings(table[[index[s] for s in sentences]], purpose)
