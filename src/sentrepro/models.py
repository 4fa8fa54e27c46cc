"""A run's model as its training job builds it: the pretrained encoder, wrapped by the method, seeded.

Shared by training (``sentrepro.runner``) and the step-0 evaluation (``sentrepro.evaluation.job``), so
the "before" of a run is exactly the model its first update starts from. What else both jobs need -- the
device and precision a job computes in, the name of a run's training summary -- is here too: training and
evaluation are peers in the jobs layer and import nothing of each other (docs/architecture.md).
"""

from __future__ import annotations

import torch

from sentrepro.backbones import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.train import seed_everything


def initial_model(backbone: dict, method_spec: dict, seed: int, attention: str,
                  location: str) -> tuple[Method, SentenceModel]:
    """The method and its model as a training job builds them before the first update (step 0).

    Seeded first, so the method's freshly created extras (heads, soft prompts) are the same in the
    training job and in the step-0 evaluation (suites with ``model: start``).
    """
    params = method_spec["params"]
    seed_everything(seed)
    tokenizer = load_tokenizer(location)  # the backbone's snapshot directory (pretrained.snapshot.model_location)
    encoder = load_encoder(location, backbone["family"], attention=attention, dropout=params.get("dropout"))
    method = build_method(method_spec["kind"], params, backbone["family"], tokenizer)
    return method, method.build_model(encoder)


TRAIN_SUMMARY = "train.json"


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is an error."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was asked for, but torch sees no GPU (use device: auto or cpu)")
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {requested!r}")
    return requested


def resolve_precision(requested: str, device: str) -> str:
    """The precision a job computes in: ``auto`` = bf16 on GPUs that support it, else fp16 (with loss
    scaling); on CPU always fp32 (autocast is applied on CUDA only, ``encoding.autocast_context``)."""
    if device == "cpu":
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested
