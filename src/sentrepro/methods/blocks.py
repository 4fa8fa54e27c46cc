"""The building blocks methods share: poolers and SimCSE's MLP head.

Poolers are small pure functions: hidden states (B, L, H) + attention mask (B, L) -> sentence vectors (B, H).
"""

from __future__ import annotations

from torch import Tensor, nn


def pool_cls(last_hidden: Tensor) -> Tensor:
    """Last-layer state of the first token. (B, L, H) -> (B, H)"""
    return last_hidden[:, 0]


def pool_avg(hidden: Tensor, mask: Tensor) -> Tensor:
    """Attention-masked mean over positions. (B, L, H), (B, L) -> (B, H)"""
    weights = mask.to(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1e-9)


def pool_first_last(hidden_states: tuple[Tensor, ...], mask: Tensor, definition: str = "embeddings") -> Tensor:
    """Mean of the masked averages of the first and last layer.

    ``embeddings`` takes ``hidden_states[0]`` (the embedding output), as the papers' baselines and the
    older SimCSE code did; ``first-layer`` takes ``hidden_states[1]`` (SimCSE after commit 206d7ae).
    """
    first = hidden_states[0] if definition == "embeddings" else hidden_states[1]
    return (pool_avg(first, mask) + pool_avg(hidden_states[-1], mask)) / 2


def pool_top2(hidden_states: tuple[Tensor, ...], mask: Tensor) -> Tensor:
    """Mean of the masked averages of the last two layers."""
    return (pool_avg(hidden_states[-2], mask) + pool_avg(hidden_states[-1], mask)) / 2

POOLERS = ("cls", "avg", "avg_first_last", "avg_top2")


def pooled_embedding(encoder: nn.Module, inputs: dict[str, Tensor], pooler: str,
                     first_last_definition: str = "embeddings") -> Tensor:
    """Run ``encoder`` once and pool with one of POOLERS. -> (B, H)

    Hidden states of every layer are requested only by the poolers that read them.
    """
    if pooler not in POOLERS:
        raise ValueError(f"unknown pooler '{pooler}' (one of: {', '.join(POOLERS)})")
    out = encoder(**inputs, output_hidden_states=pooler in ("avg_first_last", "avg_top2"))
    mask = inputs["attention_mask"]
    if pooler == "cls":
        return pool_cls(out.last_hidden_state)
    if pooler == "avg":
        return pool_avg(out.last_hidden_state, mask)
    if pooler == "avg_first_last":
        return pool_first_last(out.hidden_states, mask, first_last_definition)
    return pool_top2(out.hidden_states, mask)


class MLPHead(nn.Module):
    """SimCSE's projection: Linear(H, H) + Tanh, initialised N(0, 0.02) / zero bias like BERT's init."""

    def __init__(self, hidden: int, init_std: float = 0.02):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()
        nn.init.normal_(self.dense.weight, mean=0.0, std=init_std)
        nn.init.zeros_(self.dense.bias)

    def forward(self, features: Tensor) -> Tensor:  # (B, H) -> (B, H)
        return self.activation(self.dense(features))
