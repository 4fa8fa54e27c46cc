"""STS-B dev scoring during training: fp32 outside autocast by default (training.dev_precision)."""

from __future__ import annotations

import contextlib

import pytest
import torch

import sentrepro.encoding as encoding
from sentrepro.backbones import load_encoder, load_tokenizer
from sentrepro.data.sts import read_sts_benchmark
from sentrepro.methods import build_method
from sentrepro.evaluation.job import resolve_precision
from sentrepro.runner import dev_scoring_precision, stsb_dev_scorer


def test_dev_scoring_precision_option():
    assert dev_scoring_precision("fp32", "fp16") == "fp32"  # the default: outside autocast
    assert dev_scoring_precision("fp32", "bf16") == "fp32"
    assert dev_scoring_precision("training", "fp16") == "fp16"  # under the training autocast
    with pytest.raises(ValueError, match="dev_precision"):
        dev_scoring_precision("fp16", "fp16")
    # fp32 means no autocast at all, on a GPU too
    assert isinstance(encoding.autocast_context(torch.device("cuda"), "fp32"), contextlib.nullcontext)
    assert resolve_precision("fp16", "cpu") == "fp32"  # a CPU computes in fp32 whatever is configured


@pytest.mark.parametrize("option, expected", [("fp32", "fp32"), ("training", "fp16")])
def test_dev_scorer_encodes_outside_the_training_autocast(tiny_models, shared_data, monkeypatch, option, expected):
    """The scorer asks for autocast with the dev precision, not the training one (fp16 AMP here)."""
    seen = []
    real = encoding.autocast_context

    def recording(device, precision):
        seen.append(precision)
        return real(device, precision)

    monkeypatch.setattr(encoding, "autocast_context", recording)
    path = str(tiny_models["bert"])
    method = build_method("simcse", {"temperature": 0.05, "max_seq_length": 32, "mlp_only_train": True}, "bert",
                          load_tokenizer(path))
    model = method.build_model(load_encoder(path, "bert"))
    pairs = read_sts_benchmark(shared_data / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv", split="dev")[:40]
    score = stsb_dev_scorer(method, pairs, 16, "cpu", dev_scoring_precision(option, "fp16"))(model)
    assert -100.0 <= score <= 100.0
    assert seen and set(seen) == {expected}
