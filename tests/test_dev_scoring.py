"""STS-B dev scoring during training: fp32 outside autocast by default (training.dev_precision)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import sentrepro.encoder.encode as encoding
from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.data.benchmarks.sts import read_sts_benchmark
from sentrepro.encoder.encode import encode_sentences
from sentrepro.methods import build_method
from sentrepro.encoder.device import resolve_precision
from sentrepro.training.job import dev_scoring_precision, stsb_dev_scorer
from tests.tiny_models import minilm_dir


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
def test_dev_scorer_encodes_outside_the_training_autocast(shared_data, monkeypatch, option, expected):
    """The scorer asks for autocast with the dev precision, not the training one (fp16 AMP here), and returns
    Spearman x100 of the pairs' cosines. On the real MiniLM (a random tiny model's cosines all lie within 1e-5
    of 1, so float noise would reorder them)."""
    seen = []
    real = encoding.autocast_context

    def recording(device, precision):
        seen.append(precision)
        return real(device, precision)

    monkeypatch.setattr(encoding, "autocast_context", recording)
    path = str(minilm_dir())
    method = build_method("simcse", {"temperature": 0.05, "max_seq_length": 32, "mlp_only_train": True}, "bert",
                          load_tokenizer(path))
    model = method.build_model(load_encoder(path, "bert"))
    pairs = read_sts_benchmark(shared_data / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv", split="dev")[:40]
    score = stsb_dev_scorer(method, pairs, 16, "cpu", dev_scoring_precision(option, "fp16"))(model)
    assert seen and set(seen) == {expected}
    # the same number computed independently: each side encoded alone (batches of one, no padding), cosine
    # and Spearman by numpy/scipy, gold in pair order
    left, right = ([encode_sentences(method, model, [getattr(p, side)], purpose="dev", batch_size=1)[0]
                    for p in pairs] for side in ("s1", "s2"))
    cosines = [float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(left, right)]
    assert score == pytest.approx(100 * spearmanr(cosines, [p.score for p in pairs]).statistic, abs=1e-3)
