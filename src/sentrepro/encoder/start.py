"""A run's model as its training job builds it: the pretrained encoder, wrapped by the method, seeded.

Shared by training (``sentrepro.training.job``) and the step-0 evaluation (``sentrepro.evaluation.job``), so
the "before" of a run is exactly the model its first update starts from.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.base import Method, SentenceModel


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (what a run's freshly built extras draw from)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def initial_model(backbone: dict, method_spec: dict, seed: int, attention: str,
                  location: str | Path) -> tuple[Method, SentenceModel]:
    """The method and its model as a training job builds them before the first update (step 0).

    Seeded first, so the method's freshly created extras (heads, soft prompts) are the same in the
    training job and in the step-0 evaluation (suites with ``model: start``).
    """
    params = method_spec["params"]
    seed_everything(seed)
    tokenizer = load_tokenizer(location)  # the backbone's snapshot directory (a ModelReference's location: sentrepro.pretrained.reference)
    encoder = load_encoder(location, backbone["family"], attention=attention, dropout=params.get("dropout"))
    method = build_method(method_spec["kind"], params, backbone["family"], tokenizer)
    return method, method.build_model(encoder)
