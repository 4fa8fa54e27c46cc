"""The optimised paths compute what the plain paths compute: the same losses on CPU, fp32 to 1e-5.

What differs between the fast and the plain path, per trainable method, and is pinned here:

* attention kernel: PyTorch SDPA vs eager (the transformers 4.2.1 arithmetic), every trainable
  method on tiny BERT and RoBERTa;
* PromptBERT's template denoising: δ rows 0..max ℓ of the batch (ours) vs the reference's fixed 50
  rows in training and 128 rows at the in-training dev evaluation;
* fused AdamW (what ``torch-adamw`` uses on CUDA) vs the plain loop, on MoCoUTRL (the method that
  trains with it);
* data: batches from the tokenize-once memory-mapped cache vs from tokenizing the text in the run
  (what the reference does) are identical tensors.

Each path pair is checked twice, through the training loop's own step function
(``sentrepro.training.loop.optimizer_step``), with dropout 0 so both paths see the same computation (with
dropout on, two kernels draw different random masks by construction):

1. fp32, the loss of each of three batches at the same weights: equal to 1e-5. Where the plain
   path's own fp32 rounding error (measured against the fp64 computation) is larger, the bound widens
   by exactly that error: ConPVP subtracts two nearly equal [MASK] states (norm ~0.04 out of ~5.7 on
   the tiny model) and divides cosines by τ = 0.05, so one batch's eager fp32 loss is 9.5e-5 off the
   exact value while SDPA's is 4e-6 off; the fast path must be no less faithful than the plain one.
2. fp64, three optimizer steps (forward, backward, clipping, optimizer, method hooks) run
   independently on both paths: the loss curves agree to 1e-9 and so do the final weights. In fp32
   a multi-step comparison says little: Adam turns any last-bit gradient difference on a near-zero
   gradient into a full lr-sized update.

Pinned memory and ``torch.compile`` are off on CPU, where the loop is the plain one by construction.
DeBERTa has no SDPA kernel in transformers (``attention: sdpa`` fails to load it), so the attention
parity runs on BERT and RoBERTa.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch

from benchmarks.harness import config_recipe, without_mlm_head
from sentrepro.planning import registry
from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.training.optim import build_optimizer, build_schedule
from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus
from sentrepro.training.loop import Optimization, TrainSettings, build_optimization, device_batch, optimizer_step

pytestmark = pytest.mark.heavy  # trains tiny models many times over: `make test`, not `make test-fast`

TOLERANCE = 1e-5
STEPS = 3
BATCH = 8
CPU = torch.device("cpu")

# name -> (kind, params, optimizer, lr, max_grad_norm): every trained kind's benchmark recipes of the registry
# (both MoCoUTRL protocols), as config.yaml trains them on bert-base, cut to the tiny models' sizes
TINY_CAPS = {"max_seq_length": 48, "neg_size": 12}  # sequence length; ESimCSE's queue (longer than the batches)


def _recipe(name: str) -> tuple:
    recipe = without_mlm_head(config_recipe(name))  # the tiny BERT has no MLM head for OptiPrompt's MLP
    params = {k: min(v, TINY_CAPS[k]) if k in TINY_CAPS else v for k, v in recipe["params"].items()}
    return recipe["kind"], params, params["optimizer"], params["lr"], params["max_grad_norm"]


RECIPES = {name: _recipe(name) for name in registry.benchmark_methods()}
# OptiPrompt is a BERT recipe (its manual template is defined for BERT only)
CASES = [(name, family) for name in RECIPES for family in ("bert", "roberta")
         if not (name == "optiprompt" and family == "roberta")]
SWAPS = (("good", "fine", "bad"), ("old", "ancient", "new"), ("large", "big", "small"), ("early", "premature", "late"))


# --- training data ---------------------------------------------------------------------------------


def view_texts(sentences: list[str], count: int) -> list[str]:
    """A stacked views corpus (originals, synonyms, antonyms), one adjective inserted per sentence."""
    triples = []
    for i, sentence in enumerate(sentences[:count]):
        words = sentence.split()[:20]
        at = min(3, len(words))
        triples.append([" ".join(words[:at] + [word] + words[at:]) for word in SWAPS[i % len(SWAPS)]])
    return [row[view] for view in range(3) for row in triples]


def corpus_texts(kind: str, sentences: list[str]) -> list[str]:
    return view_texts(sentences, 3 * BATCH) if kind == "mocoutrl" else sentences[:3 * BATCH]


def fresh_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """What the reference does in every run: tokenize the training text."""
    return tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]


def training_items(method, sentences, seed=42):
    return method.training_items(fresh_ids(method.tokenizer, corpus_texts(method.kind, sentences)), seed)


def step_items(items, step: int) -> list:
    return [items[i] for i in range(step * BATCH, (step + 1) * BATCH)]


# --- the two paths ---------------------------------------------------------------------------------


def make(tiny_models, name: str, family: str, attention: str = "eager", dtype=torch.float32):
    kind, params, _, _, _ = RECIPES[name]
    tokenizer = load_tokenizer(str(tiny_models[family]))
    method = build_method(kind, params, family, tokenizer)
    torch.manual_seed(0)
    model = method.build_model(load_encoder(str(tiny_models[family]), family, attention=attention, dropout=0.0))
    return method, model.to(dtype)


def settings_for(name: str) -> TrainSettings:
    _, params, optimizer, lr, clip = RECIPES[name]
    return TrainSettings(batch_size=BATCH, lr=lr, max_steps=STEPS, optimizer=optimizer, max_grad_norm=clip,
                         schedule=params.get("schedule", "linear"))


Build = Callable[[torch.dtype], tuple]  # dtype -> (method, model, Optimization or None)


def first_losses(build: Build, name: str, items, dtype) -> list[float]:
    """The loss of each of STEPS batches at the initial weights (a fresh model per batch)."""
    losses = []
    for step in range(STEPS):
        method, model, opt = build(dtype)
        opt = opt or build_optimization(method, model, settings_for(name), STEPS, CPU)
        model.train()
        batch = device_batch(method, step_items(items, step), CPU, pin_memory=False)
        losses.append(float(optimizer_step(method, model, batch, opt, settings_for(name), CPU, 0)))
    return losses


def trajectory(build: Build, name: str, items, dtype) -> tuple[list[float], torch.Tensor]:
    """Losses of STEPS consecutive optimizer steps and the final weights (flattened)."""
    method, model, opt = build(dtype)
    settings = settings_for(name)
    opt = opt or build_optimization(method, model, settings, STEPS, CPU)
    model.train()
    losses = []
    for step in range(STEPS):
        batch = device_batch(method, step_items(items, step), CPU, pin_memory=False)
        losses.append(float(optimizer_step(method, model, batch, opt, settings, CPU, step)))
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    return losses, weights


def assert_same_computation(plain: Build, fast: Build, name: str, items) -> None:
    """fp32 losses at the same weights to 1e-5 (widened by the plain path's own fp32 error); fp64 trajectories equal."""
    plain32 = first_losses(plain, name, items, torch.float32)
    fast32 = first_losses(fast, name, items, torch.float32)
    exact = first_losses(plain, name, items, torch.float64)
    for p32, f32, x in zip(plain32, fast32, exact):
        assert abs(f32 - p32) <= TOLERANCE + abs(p32 - x), (plain32, fast32, exact)
    plain_losses, plain_weights = trajectory(plain, name, items, torch.float64)
    fast_losses, fast_weights = trajectory(fast, name, items, torch.float64)
    assert max(abs(a - b) for a, b in zip(plain_losses, fast_losses)) <= 1e-9, (plain_losses, fast_losses)
    assert torch.allclose(plain_weights, fast_weights, atol=1e-9, rtol=0)


# --- attention kernel ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "family"), CASES)
def test_sdpa_attention_computes_the_eager_losses(tiny_models, wiki_sentences, name, family):
    def builder(attention: str) -> Build:
        def build(dtype):
            method, model = make(tiny_models, name, family, attention, dtype)
            assert model.encoder.config._attn_implementation == attention
            return method, model, None
        return build

    method, _, _ = builder("eager")(torch.float32)
    assert_same_computation(builder("eager"), builder("sdpa"), name, training_items(method, wiki_sentences))


def test_training_moves_the_weights(tiny_models, wiki_sentences):
    """The trajectories compared above are real training: the weights change over the steps."""
    def build(dtype):
        method, model = make(tiny_models, "simcse", "bert", "eager", dtype)
        return method, model, None

    method, model, _ = build(torch.float64)
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    _, after = trajectory(build, "simcse", training_items(method, wiki_sentences), torch.float64)
    assert not torch.allclose(before, after)


# --- PromptBERT denoising rows ---------------------------------------------------------------------

REFERENCE_TRAIN_ROWS = 50  # Prompt-BERT models.py: δ over 50 shifted rows every training step
REFERENCE_DEV_ROWS = 128  # and 128 rows at the in-training evaluation


def with_delta_rows(method, rows: int | None, used: list[int]):
    """Record the δ rows each pass needs; with ``rows`` compute that fixed number instead (the reference)."""
    ours = method.delta

    def delta(model, template, needed):
        used.append(needed)
        if rows is not None:
            assert needed <= rows
        return ours(model, template, needed if rows is None else rows)

    method.delta = delta
    return method


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_promptbert_delta_rows_for_the_batch_compute_the_reference_loss(tiny_models, wiki_sentences, family):
    needed: list[int] = []

    def builder(rows: int | None) -> Build:
        def build(dtype):
            method, model = make(tiny_models, "promptbert", family, "eager", dtype)
            return with_delta_rows(method, rows, needed if rows is None else []), model, None
        return build

    method, _, _ = builder(None)(torch.float32)
    needed.clear()
    assert_same_computation(builder(REFERENCE_TRAIN_ROWS), builder(None), "promptbert",
                            training_items(method, wiki_sentences))
    assert len(needed) == 2 * (STEPS + STEPS)  # one δ pass per template per step (fp32 first losses, fp64 run)
    assert max(needed) < REFERENCE_TRAIN_ROWS


def test_promptbert_dev_delta_rows_give_the_reference_vectors(tiny_models, wiki_sentences):
    method, model = make(tiny_models, "promptbert", "bert")
    model.eval()
    inputs = method.eval_inputs(wiki_sentences[:12], "dev")
    needed: list[int] = []
    with torch.no_grad():
        ours = method.embed(model, inputs, "dev")
        reference = with_delta_rows(method, REFERENCE_DEV_ROWS, needed).embed(model, inputs, "dev")
    assert needed == [int(inputs["sentence_lengths"].max()) + 1]
    assert torch.allclose(ours, reference, atol=TOLERANCE, rtol=0)


# --- fused AdamW -----------------------------------------------------------------------------------


def test_fused_adamw_computes_the_plain_losses(tiny_models, wiki_sentences):
    """``torch-adamw`` is fused on CUDA; the fused kernel (its CPU build here) matches the plain loop."""
    name = "mocoutrl"
    settings = settings_for(name)
    assert settings.optimizer == "torch-adamw"

    def builder(fused: bool) -> Build:
        def build(dtype):
            method, model = make(tiny_models, name, "bert", "eager", dtype)
            params = [p for p in model.parameters() if p.requires_grad]
            optimizer = build_optimizer(settings.optimizer, params, settings.lr, settings.weight_decay, fused=fused)
            assert bool(optimizer.defaults.get("fused")) is fused
            scheduler = build_schedule(settings.schedule, optimizer, STEPS, settings.warmup_steps)
            return method, model, Optimization(params, optimizer, scheduler, None)
        return build

    method, _, _ = builder(False)(torch.float32)
    items = training_items(method, wiki_sentences)
    assert_same_computation(builder(False), builder(True), name, items)
    plain, _ = trajectory(builder(False), name, items, torch.float32)
    fused, _ = trajectory(builder(True), name, items, torch.float32)
    assert max(abs(a - b) for a, b in zip(plain, fused)) <= TOLERANCE, (plain, fused)


# --- tokenize once ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(RECIPES))
def test_tokenize_once_cache_gives_the_batches_of_per_run_tokenization(tiny_models, wiki_sentences, tmp_path, name):
    method, _ = make(tiny_models, name, "bert")
    texts = corpus_texts(method.kind, wiki_sentences)
    (tmp_path / "corpus.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    tokenize_corpus(tmp_path / "corpus.txt", method.tokenizer, tmp_path / "tok", progress=False)
    cached = method.training_items(TokenizedCorpus.open(tmp_path / "tok"), 42)
    fresh = method.training_items(fresh_ids(method.tokenizer, texts), 42)
    assert len(cached) == len(fresh) == 3 * BATCH
    indices = [5, 0, 11, 3, 14, 7, 9, 2]
    from_cache = method.collate([cached[i] for i in indices])
    from_text = method.collate([fresh[i] for i in indices])
    assert from_cache.keys() == from_text.keys()
    for key in from_cache:
        assert torch.equal(from_cache[key], from_text[key]), key
