"""benchmarks/gpu_check.py runs end to end in its tiny CPU mode and prints consistent figures.

The GPU run itself needs a GPU; this runs the same code path with a tiny shape (a few seconds) and
checks every printed field: one RESULT per trainable method with positive throughput, MFU against
the stated peak, and the before/after comparisons. The model-FLOPs count itself is checked against
torch's own FLOP counter on the tiny shape (not against the formula it implements).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sentrepro.planning import registry

pytestmark = pytest.mark.heavy  # runs the GPU check script on every trainable method (CPU, tiny)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu_check.py"
TRAINABLE = registry.benchmark_methods()  # the registry's benchmark recipes of every trained kind
PEAK = 989.0
BATCH = 16
# tiny shape: hidden 32, FFN 64, 2 layers -> per layer: Q, K, V, O (32x32 + 32 each), two LayerNorms (2 x 64),
# FFN 32x64 + 64 and 64x32 + 32
HIDDEN, LAYERS = 32, 2
NON_EMBEDDING = LAYERS * (4 * (HIDDEN * HIDDEN + HIDDEN) + 2 * 2 * HIDDEN + (HIDDEN * 64 + 64) + (64 * HIDDEN + HIDDEN))
SIMCSE_MAX_LENGTH = 32  # [CLS] + 30 ids + [SEP]


@pytest.fixture(scope="module")
def output(tmp_path_factory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("gpu-check") / "summary.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--batch-size", str(BATCH),
                           "--threads", "1", "--json", str(out)], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text())


def lines_with(stdout: str, prefix: str) -> list[dict]:
    return [json.loads(line[len(prefix):]) for line in stdout.splitlines() if line.startswith(prefix)]


def test_every_trainable_method_reports_its_figures(output):
    stdout, summary = output
    results = {row["method"]: row for row in lines_with(stdout, "RESULT ")}
    assert list(results) == TRAINABLE
    assert summary["results"] == list(results.values())
    assert summary["failed"] == []
    assert summary["precision"] == "fp32"  # CPU runs fp32 whatever --precision says
    for name, row in results.items():
        assert row["batch_size"] == BATCH
        assert row["sentences_per_s"] > 0 and row["tokens_per_s"] > row["sentences_per_s"], name
        assert row["mfu"] == pytest.approx(row["model_tflops_per_s"] / PEAK)
        assert 0 < row["mfu"] < 1e-3, name  # a tiny model on a CPU against an H200's peak
        assert 0 <= row["padding_fraction"] < 1
        assert (row["attention"], row["compile"], row["sync_every"]) == ("sdpa", False, 50)
        assert row["pin_memory"] is False  # pinning is for CUDA only
        assert row["host_syncs_per_step"] is None and row["peak_memory_mib"] is None  # CUDA-only figures
        assert f"{name:<18} {BATCH:5d}" in stdout  # the human-readable row
    # encoder passes per step: both views in one call; + PromptBERT's two δ passes, ESimCSE's momentum
    # encoder, ConPVP's template-only pass
    passes = {name: row["encoder_passes_per_step"] for name, row in results.items()}
    assert passes == {"simcse": 1, "promptbert": 3, "optiprompt": 1, "esimcse": 2, "conpvp": 2, "mocoutrl": 1,
                      "mocoutrl-released": 1}


def test_model_flops_are_reported_on_real_sequences(output):
    stdout, _ = output
    assert "c*N*T + 2*c*layers*H*sum(s^2)" in stdout
    simcse = next(row for row in lines_with(stdout, "RESULT ") if row["method"] == "simcse")
    tokens_per_sentence = simcse["tokens_per_s"] / simcse["sentences_per_s"]
    assert 2 * 3 <= tokens_per_sentence <= 2 * SIMCSE_MAX_LENGTH  # two views of [CLS] + >= 1 id + [SEP]
    assert simcse["model_tflops_per_s"] > 0


def test_model_flops_match_torch_flop_counter_on_the_tiny_shape():
    """The harness's model FLOPs of one trained encoder pass (c = 6) against the matmul FLOPs torch itself
    counts while running the forward and backward (torch.utils.flop_counter), on the script's tiny shape.

    The counter sees matrix products only; the formula's N also holds biases and LayerNorm weights, whose
    6·(N - W)·T is the whole difference (W = the Linear weights). Rows without padding: the counter counts
    padded positions, the formula does not (checked on a padded batch after)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import harness
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=2,
                        intermediate_size=64, attn_implementation="eager")

    class Holder(torch.nn.Module):  # what the harness hooks: a model whose .encoder is the transformer
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

    model = Holder(BertModel(config, add_pooling_layer=False))
    work = harness.EncoderWork(model)
    rows, length = 3, 7
    ids = torch.randint(5, 100, (rows, length))
    with FlopCounterMode(display=False) as counter:
        model.encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.sum().backward()
    counted = work.read()
    assert counted["non_embedding_parameters"] == NON_EMBEDDING
    matmul_weights = sum(m.weight.numel() for m in model.encoder.encoder.modules() if isinstance(m, torch.nn.Linear))
    tokens = rows * length
    assert counted["flops"] - 6 * (NON_EMBEDDING - matmul_weights) * tokens == counter.get_total_flops()

    work.reset()
    with torch.no_grad():  # c = 2; padded rows count their real lengths only: 2, 5 and 7 tokens
        mask = (torch.arange(length) < torch.tensor([[2], [5], [7]])).long()
        model.encoder(input_ids=ids, attention_mask=mask)
    counted = work.read()
    assert counted["tokens"] == 14 and counted["tokens_by_multiplier"][2] == 14
    assert counted["flops"] == 2 * NON_EMBEDDING * 14 + 2 * 2 * LAYERS * HIDDEN * (4 + 25 + 49)


def test_before_after_pairs_are_printed(output):
    stdout, _ = output
    compared = {row["label"]: row for row in lines_with(stdout, "COMPARE ")}
    # attention: the two methods it names; loss reads: the first benchmarked method (the units' discovery order)
    assert set(compared) == {"attention (simcse)", "attention (promptbert)", f"loss reads ({TRAINABLE[0]})"}
    for label, row in compared.items():
        before, after = [value for key, value in row.items() if key not in ("label", "ratio")]
        assert before > 0 and after > 0
        assert row["ratio"] == pytest.approx(after / before)
    assert "compare pin_memory: skipped (pinned memory needs CUDA)" in stdout
    assert "compare compile: skipped (CUDA only here)" in stdout
    assert "gpu_check finished" in stdout
