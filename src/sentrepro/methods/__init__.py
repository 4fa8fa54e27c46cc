"""Training methods and frozen baselines, one module each; ``build_method`` picks one by kind.

``REGISTRY`` maps a method kind to the module and class that implement it. The modules are imported
on first use (``importlib``), not here: the code fingerprint of a workflow job (``sentrepro.codedeps``
follows static imports) then covers the common code plus the job's own method module, so editing one
method's code reruns that method's jobs only (``method_entry`` names the module for a job).
"""

from __future__ import annotations

import functools
import importlib

from sentrepro.methods.base import Method

# kind -> "<module of sentrepro.methods>:<class>"
REGISTRY: dict[str, str] = {
    "frozen": "frozen:Frozen",
    "simcse": "simcse:SimCSE",
    "promptbert": "promptbert:PromptBERT",
    "optiprompt": "optiprompt:OptiPrompt",
    "esimcse": "esimcse:ESimCSE",
    "manual_prompt": "baselines:ManualPrompt",
    "whitening": "baselines:Whitening",
    "static_token_avg": "baselines:StaticTokenAvg",
    "conpvp": "conpvp:ConPVP",
    "mocoutrl": "mocoutrl:MoCoUTRL",
}


def _location(kind: str) -> tuple[str, str]:
    try:
        module, cls = REGISTRY[kind].split(":")
    except KeyError:
        raise ValueError(f"unknown method kind '{kind}' (known: {', '.join(sorted(REGISTRY))})") from None
    return f"{__name__}.{module}", cls


def method_entry(kind: str) -> str:
    """The module implementing ``kind`` (``sentrepro.methods.simcse``): with the command's entry point,
    what a job of that kind runs."""
    return _location(kind)[0]


@functools.lru_cache(maxsize=None)
def method_class(kind: str) -> type[Method]:
    """The class implementing ``kind``, imported on first use."""
    module, name = _location(kind)
    cls = getattr(importlib.import_module(module), name)
    if cls.kind != kind:
        raise ValueError(f"REGISTRY: {module}.{name} implements kind '{cls.kind}', not '{kind}'")
    return cls


def build_method(kind: str, params: dict, family: str, tokenizer) -> Method:
    return method_class(kind)(params, family, tokenizer)


def kind_training_corpus(kind: str) -> str:
    """Which tokenized corpus runs of this kind train on: ``sentences`` or ``views`` (MoCoUTRL)."""
    return method_class(kind).training_corpus


def kind_authors_precision(kind: str) -> str:
    """The precision the authors of a trained method's kind used (``fp16`` AMP or ``fp32``)."""
    cls = method_class(kind)
    if cls.authors_precision is None:
        raise ValueError(f"method kind '{kind}' does not train, so it has no training precision")
    return cls.authors_precision


def kind_trains(kind: str) -> bool:
    """Whether runs of this kind are trained (seeded runs) or only embed (``frozen``-like, one run)."""
    return method_class(kind).trains
