"""ESimCSE: subword repetition fixed per example, queue order, momentum update, loss maths, resumption."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.base import EXTRA_STATE
from sentrepro.methods.esimcse import (
    ESimCSE,
    ESimCSEModel,
    KeyedCorpus,
    KeyedSentence,
    ema_update,
    enqueue,
    reinitialise_,
    esimcse_loss,
    example_key,
    repeat_subwords,
)
from sentrepro.methods.simcse import simcse_loss, with_special_tokens
from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus
from sentrepro.training.loop import TrainSettings, train
from sentrepro.encoder.start import seed_everything
from tests.test_method_promptbert import loss_before_after

PARAMS = {"max_seq_length": 32, "temperature": 0.05, "dup_rate": 0.32, "neg_size": 6, "momentum": 0.995,
          "mlp_only_train": True}


def make(tiny_models, family="bert", **params):
    path = str(tiny_models[family])
    tokenizer = load_tokenizer(path)
    method = build_method("esimcse", {**PARAMS, **params}, family, tokenizer)
    torch.manual_seed(0)
    return method, method.build_model(load_encoder(path, family)), tokenizer


def keyed(tokenizer, sentences, seed=42, start=0):
    ids = tokenizer(sentences, add_special_tokens=False)["input_ids"]
    return [KeyedSentence(x, example_key(seed, start + i)) for i, x in enumerate(ids)]


# --- subword repetition ----------------------------------------------------------------------------


def test_repetition_follows_the_released_draws():
    sequence = list(range(100, 132))  # 32 tokens with [CLS]/[SEP] at the ends
    rng = random.Random(7)
    add_len = rng.randrange(min(10, int(0.32 * 32)))  # randrange(10)
    chosen = set(rng.sample(range(1, 31), add_len))
    expected = [t for i, t in enumerate(sequence) for _ in range(2 if i in chosen else 1)]
    assert repeat_subwords(sequence, 0.32, random.Random(7)) == expected


def test_repetition_properties():
    for key in range(200):
        sequence = list(range(1, 3 + key % 40))
        out = repeat_subwords(sequence, 0.32, random.Random(key))
        extra = len(out) - len(sequence)
        assert 0 <= extra < max(1, min(10, int(0.32 * len(sequence))))
        assert out[0] == sequence[0] and out[-1] == sequence[-1] and out[1] != out[0] and out[-2] != out[-1]
        assert [t for i, t in enumerate(out) if i == 0 or out[i - 1] != t] == sequence  # only in-place repeats
    assert repeat_subwords([101, 5, 102], 0.32, random.Random(0)) == [101, 5, 102]  # int(0.96) == 0


def test_collate_views_and_per_example_fixed_repetition(tiny_models, wiki_sentences):
    method, _, tok = make(tiny_models)
    items = keyed(tok, wiki_sentences[:16])
    first = method.collate(items)
    again = method.collate(list(reversed(items)))  # another batch order, same sentences
    for i, item in enumerate(items):
        original = with_special_tokens(item.ids, tok.cls_token_id, tok.sep_token_id, 32)
        row1 = first["input_ids"][2 * i][first["attention_mask"][2 * i].bool()].tolist()
        row2 = first["input_ids"][2 * i + 1][first["attention_mask"][2 * i + 1].bool()].tolist()
        assert row1 == original  # view 1: plain SimCSE sequence
        assert row2 == repeat_subwords(original, 0.32, random.Random(item.key))
        j = len(items) - 1 - i
        assert again["input_ids"][2 * j + 1][again["attention_mask"][2 * j + 1].bool()].tolist() == row2
    other_seed = method.collate(keyed(tok, wiki_sentences[:16], seed=43))
    assert not torch.equal(other_seed["input_ids"], first["input_ids"])
    assert first["attention_mask"][1::2].sum() > first["attention_mask"][0::2].sum()  # some repetition happened


def test_keyed_corpus_and_plain_items_error(tiny_models, tmp_path, wiki_sentences):
    method, _, tok = make(tiny_models)
    (tmp_path / "s.txt").write_text("\n".join(wiki_sentences[:5]) + "\n", encoding="utf-8")
    tokenize_corpus(tmp_path / "s.txt", tok, tmp_path / "tok", progress=False)
    corpus = method.training_items(TokenizedCorpus.open(tmp_path / "tok"), 9)
    assert isinstance(corpus, KeyedCorpus) and len(corpus) == 5
    assert corpus[3] == KeyedSentence(tok(wiki_sentences[3], add_special_tokens=False)["input_ids"], (9 << 32) | 3)
    with pytest.raises(TypeError, match="training_items"):
        method.collate([[1, 2, 3]])


# --- queue, momentum, loss -------------------------------------------------------------------------


def test_queue_is_fifo_oldest_first():
    a = torch.arange(6.0).view(3, 2)
    b = torch.arange(6.0, 12.0).view(3, 2)
    assert torch.equal(enqueue(torch.zeros(0, 2), a, 5), a)
    assert enqueue(a, b, 5).tolist() == [[2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]


def numpy_loss(z1, z2, queue, tau):
    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    logits = np.concatenate([unit(z1) @ unit(z2).T, unit(z1) @ unit(queue).T], axis=1) / tau
    logits -= logits.max(1, keepdims=True)
    return float(-np.mean(np.diag(logits) - np.log(np.exp(logits).sum(1))))


def test_loss_with_queue_matches_numpy():
    rng = np.random.default_rng(0)
    z1, z2, queue = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), rng.normal(size=(5, 6))
    ours = esimcse_loss(torch.tensor(z1), torch.tensor(z2), torch.tensor(queue), 0.05).item()
    assert abs(ours - numpy_loss(z1, z2, queue, 0.05)) < 1e-5
    empty = torch.zeros(0, 6, dtype=torch.float64)
    assert abs(esimcse_loss(torch.tensor(z1), torch.tensor(z2), empty, 0.05).item()
               - simcse_loss(torch.tensor(z1), torch.tensor(z2), 0.05).item()) < 1e-6


def test_ema_update_by_hand():
    target, source = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        target.weight.fill_(1.0)
        source.weight.fill_(3.0)
    ema_update(target, source, 0.995)
    assert torch.allclose(target.weight, torch.full((1, 2), 0.995 * 1.0 + 0.005 * 3.0))


def test_model_state_separates_run_state_from_best(tiny_models, tmp_path):
    method, model, tok = make(tiny_models)
    assert isinstance(model, ESimCSEModel)
    assert not any(p.requires_grad for p in model.momentum_encoder.parameters())
    keys = model.state_dict().keys()
    assert "queue" in keys and "queue_length" in keys and any(k.startswith("momentum_encoder.") for k in keys)
    model.save(tmp_path / "best", tok, {})
    assert set(load_file(str(tmp_path / "best" / EXTRA_STATE))) == {"mlp.dense.weight", "mlp.dense.bias"}


def test_loss_steps_use_previous_queue_and_update_momentum(tiny_models, wiki_sentences):
    method, model, tok = make(tiny_models, momentum_init="copy")
    model.eval()  # no dropout: every quantity below is deterministic
    mlp = model.extras["mlp"]
    batch1 = method.collate(keyed(tok, wiki_sentences[:4]))
    batch2 = method.collate(keyed(tok, wiki_sentences[4:8], start=4))

    def online(batch):
        out = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return mlp(out.last_hidden_state[:, 0])

    with torch.no_grad():
        z = online(batch1)
        first = method.loss(model, batch1)
        assert torch.allclose(first, simcse_loss(z[0::2], z[1::2], 0.05))  # first step: no queue
        # momentum == online at the start, so the queued vectors are the online MLP(CLS) of view 1
        assert int(model.queue_length) == 4 and torch.allclose(model.queued(), z[0::2], atol=1e-5)
        for param in model.encoder.parameters():  # an "optimizer step"
            param.add_(0.01 * torch.randn_like(param))
        old_momentum = [p.clone() for p in model.momentum_encoder.parameters()]
        queue_before = model.queued().clone()
        z = online(batch2)
        second = method.loss(model, batch2)
        assert torch.allclose(second, esimcse_loss(z[0::2], z[1::2], queue_before, 0.05), atol=1e-6)
        # in-forward EMA with the current online parameters
        for old, new, online_p in zip(old_momentum, model.momentum_encoder.parameters(), model.encoder.parameters()):
            assert torch.allclose(new, 0.995 * old + 0.005 * online_p, atol=1e-6)
        # capacity 6: the oldest two of batch 1 fell out, batch 2's four were appended
        assert int(model.queue_length) == 6 and torch.allclose(model.queued()[:2], queue_before[2:4])


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_momentum_encoder_starts_random_as_released_or_as_a_copy(tiny_models, family):
    """Step 0: under ``random`` (the release) the momentum encoder is not the online encoder but a fresh
    transformers-4.2.1 initialisation; under ``copy`` it is the online encoder."""
    method, model, _ = make(tiny_models, family)
    assert method.params["momentum_init"] == "random"  # the default
    std = model.encoder.config.initializer_range
    pairs = list(zip(model.encoder.named_parameters(), model.momentum_encoder.named_parameters()))
    assert len(pairs) == len(list(model.momentum_encoder.parameters())) > 0
    assert not any(torch.equal(p, m) for (_, p), (_, m) in pairs if p.dim() > 1)
    for module in model.momentum_encoder.modules():
        if isinstance(module, torch.nn.LayerNorm):
            assert torch.equal(module.weight, torch.ones_like(module.weight)) and not module.bias.any()
        if isinstance(module, torch.nn.Linear) and module.bias is not None:
            assert not module.bias.any()
    words = model.momentum_encoder.get_input_embeddings().weight
    assert abs(float(words.std()) - std) < 0.1 * std and abs(float(words.mean())) < 0.1 * std
    _, copied, _ = make(tiny_models, family, momentum_init="copy")
    assert all(torch.equal(p, m) for p, m in zip(copied.encoder.parameters(), copied.momentum_encoder.parameters()))
    with pytest.raises(ValueError, match="momentum_init"):
        build_method("esimcse", {**PARAMS, "momentum_init": "pretrained"}, family, load_tokenizer(str(tiny_models[family])))


def test_reinitialise_by_hand_and_uncovered_parameters_are_an_error():
    module = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
    with torch.no_grad():
        for param in module.parameters():
            param.fill_(3.0)
    torch.manual_seed(0)
    reinitialise_(module, 0.02)
    assert not module[1].bias.any() and torch.equal(module[2].weight, torch.ones(8)) and not module[2].bias.any()
    torch.manual_seed(0)
    assert torch.equal(module[0].weight, torch.empty(50, 8).normal_(0.0, 0.02))  # N(0, 0.02²), drawn first
    module.scale = torch.nn.Parameter(torch.ones(1))
    with pytest.raises(ValueError, match="scale"):
        reinitialise_(module, 0.02)


def test_after_step_placement_moves_the_update(tiny_models, wiki_sentences):
    method, model, tok = make(tiny_models, momentum_update="after-step")
    with torch.no_grad():
        for param in model.encoder.parameters():
            param.add_(0.01)
    before = [p.clone() for p in model.momentum_encoder.parameters()]
    method.loss(model, method.collate(keyed(tok, wiki_sentences[:4])))
    assert all(torch.equal(a, b) for a, b in zip(before, model.momentum_encoder.parameters()))
    method.after_step(model, 1)
    assert not all(torch.equal(a, b) for a, b in zip(before, model.momentum_encoder.parameters()))
    with pytest.raises(ValueError, match="momentum_update"):
        build_method("esimcse", {**PARAMS, "momentum_update": "sometimes"}, "bert", tok)


def test_gradients_reach_online_encoder_only(tiny_models, wiki_sentences):
    method, model, tok = make(tiny_models)
    model.train()
    method.loss(model, method.collate(keyed(tok, wiki_sentences[:4]))).backward()  # first step (no queue)
    loss = method.loss(model, method.collate(keyed(tok, wiki_sentences[4:8], start=4)))
    loss.backward()
    assert all(p.grad is None for p in model.momentum_encoder.parameters())
    assert not model.queue.requires_grad
    assert model.encoder.get_input_embeddings().weight.grad.abs().sum() > 0


# --- training --------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_esimcse_loss_goes_down(tiny_models, wiki_sentences, family):
    # copy: queue negatives from the pretrained encoder, so 8 steps on one batch show the learning signal
    # (with the released random start the queue drifts from noise towards the encoder as steps go)
    method, model, tok = make(tiny_models, family, neg_size=8, momentum_init="copy")
    batch = method.collate(keyed(tok, wiki_sentences[:8]))
    method.loss(model, batch)  # fill the queue once, so before/after see the same negatives count
    before, after = loss_before_after(method, model, batch)
    assert after < before - 0.05


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, wiki_sentences, tiny_models):
    root = tmp_path_factory.mktemp("esimcse-corpus")
    (root / "s.txt").write_text("\n".join(wiki_sentences[:40]) + "\n", encoding="utf-8")
    tokenize_corpus(root / "s.txt", load_tokenizer(str(tiny_models["bert"])), root / "tok", progress=False)
    return root / "tok"


def _train(tiny_models, corpus_dir, run_dir, stop_after=None):
    seed_everything(3)
    method, model, _ = make(tiny_models, neg_size=12)
    settings = TrainSettings(batch_size=8, lr=1e-4, max_steps=6, eval_steps=3, checkpoint_every=2)
    scores = iter(range(100))
    corpus = method.training_items(TokenizedCorpus.open(corpus_dir), 3)
    summary = train(method, model, corpus, run_dir, settings, seed=3, dev_score=lambda m: float(next(scores)),
                    save_meta={}, log=lambda *_: None, stop_after=stop_after)
    return summary, model


def test_resumed_training_restores_queue_and_momentum(tiny_models, corpus_dir, tmp_path):
    _, straight = _train(tiny_models, corpus_dir, tmp_path / "a")
    interrupted, _ = _train(tiny_models, corpus_dir, tmp_path / "b", stop_after=4)
    assert interrupted == {"interrupted_at": 4}
    summary, resumed = _train(tiny_models, corpus_dir, tmp_path / "b")
    assert summary["resumed_from"] == 4
    assert int(straight.queue_length) == 12
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name


def test_esimcse_is_simcse_at_evaluation(tiny_models):
    method, model, tok = make(tiny_models)
    assert isinstance(method, ESimCSE)
    model.eval()
    inputs = method.eval_inputs(["a man plays"], "test")
    with torch.no_grad():
        expected = model.encoder(**inputs).last_hidden_state[:, 0]
        assert torch.allclose(method.embed(model, inputs, "test"), expected)


def test_repetition_can_repeat_every_token_but_the_special_ones():
    for n in (8, 12, 20):
        sequence = list(range(100, 100 + n))
        repeated = set()
        for key in range(300):
            out = repeat_subwords(sequence, 0.32, random.Random(key))
            repeated |= {t for i, t in enumerate(out) if i and out[i - 1] == t}
        assert repeated == set(sequence[1:-1]), n


def test_a_queue_of_one_keeps_the_newest_row_and_no_queue_is_an_error_naming_neg_size():
    queue, new = torch.ones(1, 2), torch.full((2, 2), 3.0)
    assert enqueue(queue, new, 1).tolist() == [[3.0, 3.0]]
    with pytest.raises(ValueError, match=r"^esimcse: neg_size must be at least 1, got 0$"):
        enqueue(queue, new, 0)
