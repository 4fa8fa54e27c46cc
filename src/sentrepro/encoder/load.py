"""Load a pretrained encoder and its tokenizer from the directory holding a backbone's files.

The directory is a :class:`~sentrepro.pretrained.reference.ModelReference`'s ``location`` (resolved once at
the job's entry), a trained run's checkpoint, or an exported folder's copy: nothing here resolves a name.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

FAMILIES_WITH_POOLER = ("bert", "roberta")


def load_tokenizer(location: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(location), use_fast=True)


def load_encoder(location: str | Path, family: str, *, attention: str = "eager",
                 dropout: float | None = None) -> nn.Module:
    """The bare transformer encoder (no pretrained pooler, as SimCSE's ``add_pooling_layer=False``).

    ``attention`` selects the attention kernel: ``eager`` matches transformers 4.2.1 numerically;
    ``sdpa`` is faster on GPU. ``dropout`` overrides both hidden and attention dropout (ESimCSE).
    """
    from transformers import AutoConfig, AutoModel

    path = str(location)
    config = AutoConfig.from_pretrained(path)
    if dropout is not None:
        config.hidden_dropout_prob = dropout
        config.attention_probs_dropout_prob = dropout
    kwargs = {"config": config, "attn_implementation": attention}
    if family in FAMILIES_WITH_POOLER:
        kwargs["add_pooling_layer"] = False
    return AutoModel.from_pretrained(path, **kwargs)
