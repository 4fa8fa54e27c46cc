"""Training methods and frozen baselines, one module each; ``build_method`` picks one by kind."""

from __future__ import annotations

from sentrepro.methods.base import Method
from sentrepro.methods.frozen import Frozen
from sentrepro.methods.simcse import SimCSE
from sentrepro.methods.promptbert import PromptBERT
from sentrepro.methods.optiprompt import OptiPrompt
from sentrepro.methods.esimcse import ESimCSE
from sentrepro.methods.baselines import ManualPrompt, StaticTokenAvg, Whitening
from sentrepro.methods.conpvp import ConPVP
from sentrepro.methods.mocoutrl import MoCoUTRL

METHODS: dict[str, type[Method]] = {cls.kind: cls for cls in (SimCSE, Frozen)}
METHODS.update({cls.kind: cls for cls in (PromptBERT, OptiPrompt, ESimCSE, ManualPrompt, Whitening, StaticTokenAvg)})
METHODS.update({cls.kind: cls for cls in (ConPVP, MoCoUTRL)})


def build_method(kind: str, params: dict, family: str, tokenizer) -> Method:
    try:
        cls = METHODS[kind]
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(METHODS))})") from None
    return cls(params, family, tokenizer)


def kind_training_corpus(kind: str) -> str:
    """Which tokenized corpus runs of this kind train on: ``sentences`` or ``views`` (MoCoUTRL)."""
    try:
        return METHODS[kind].training_corpus
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(METHODS))})") from None


def kind_authors_precision(kind: str) -> str:
    """The precision the authors of a trained method's kind used (``fp16`` AMP or ``fp32``)."""
    try:
        cls = METHODS[kind]
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(METHODS))})") from None
    if cls.authors_precision is None:
        raise ValueError(f"method kind '{kind}' does not train, so it has no training precision")
    return cls.authors_precision


def kind_trains(kind: str) -> bool:
    """Whether runs of this kind are trained (seeded runs) or only embed (``frozen``-like, one run)."""
    try:
        return METHODS[kind].trains
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(METHODS))})") from None
