"""MoCoUTRL: loss maths against numpy, spans and batch layouts, the momentum dictionary, both protocols."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods.blocks import pool_avg
from sentrepro.data.views import ViewTriples
from sentrepro.planning import registry
from sentrepro.methods import build_method
from sentrepro.methods.mocoutrl import (
    MoCoUTRL,
    MomentumDictionary,
    changed_span,
    differing_positions,
    ntxent_pml,
    released_labels,
    token_contrast,
    views_infonce,
    word_spans,
)

PARAMS = {"temperature": 0.07, "alpha": 0.5, "momentum": 0.999, "max_seq_length": 48, "token_l2_norm": True}
SENTENCES = [
    ("the weather was good today and we went out", "the weather was full today and we went out",
     "the weather was bad today and we went out"),
    ("a happy child played in the long garden", "a glad child played in the long garden",
     "a sad child played in the long garden"),
    ("old houses stood near the cold river", "old houses stood near the cool river",
     "old houses stood near the hot river"),
]


def make(tiny_models, family: str, dropout: float | None = None, **overrides):
    tokenizer = load_tokenizer(str(tiny_models[family]))
    method = build_method("mocoutrl", {**PARAMS, **overrides}, family, tokenizer)
    torch.manual_seed(0)
    model = method.build_model(load_encoder(str(tiny_models[family]), family, dropout=dropout))
    return method, model, tokenizer


def triples(tokenizer, rows=SENTENCES):
    return [tuple(tokenizer.encode(text, add_special_tokens=False) for text in row) for row in rows]


# --- pure maths -----------------------------------------------------------------------------------


def numpy_ntxent(embeddings: np.ndarray, labels: list[int], tau: float) -> float:
    """pytorch-metric-learning's NTXentLoss, written as loops over ordered positive pairs."""
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    sims = unit @ unit.T
    losses = []
    for a in range(len(labels)):
        for p in range(len(labels)):
            if a == p or labels[a] != labels[p]:
                continue
            negatives = [n for n in range(len(labels)) if labels[n] != labels[a]]
            top = np.exp(sims[a, p] / tau)
            losses.append(-np.log(top / (top + sum(np.exp(sims[a, n] / tau) for n in negatives))))
    return float(np.mean(losses))


def test_ntxent_matches_the_library_definition():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(9, 5))
    labels = [0, 1, 2, 0, 1, 2, 3, 4, 5]
    ours = ntxent_pml(torch.tensor(x), torch.tensor(labels), 0.07).item()
    assert abs(ours - numpy_ntxent(x, labels, 0.07)) < 1e-6


def test_ntxent_by_hand_and_degenerate_cases():
    # o = s = e1, a = e2, labels [0, 0, 1], tau 1: both ordered pairs (o,s), (s,o) give log(1 + e^-1)
    e = torch.eye(2)
    x = torch.stack([e[0], e[0], e[1]])
    assert abs(ntxent_pml(x, torch.tensor([0, 0, 1]), 1.0).item() - math.log(1 + math.exp(-1))) < 1e-6
    assert ntxent_pml(x, torch.tensor([0, 1, 2]), 1.0).item() == 0.0  # no positive pair
    assert ntxent_pml(x, torch.tensor([0, 0, 0]), 1.0).item() == 0.0  # no negative at all


def test_released_labels():
    assert released_labels(3).tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5]


def test_views_infonce_matches_numpy():
    rng = np.random.default_rng(1)
    o, s, a = (rng.normal(size=(4, 6)) for _ in range(3))

    def unit(v):
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    logits = np.concatenate([unit(o) @ unit(s).T, unit(o) @ unit(a).T], axis=1) / 0.07
    logits -= logits.max(axis=1, keepdims=True)
    expected = -np.mean(np.diag(logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))))
    ours = views_infonce(*(torch.tensor(v) for v in (o, s, a)), 0.07).item()
    assert abs(ours - expected) < 1e-5


def test_token_contrast_matches_numpy_and_skips_invalid_rows():
    rng = np.random.default_rng(2)
    e, s, a = (rng.normal(size=(3, 4)) for _ in range(3))
    valid = np.array([True, False, True])
    raw = ((e - s) ** 2).mean(1) - ((e - a) ** 2).mean(1)
    ours = token_contrast(*(torch.tensor(v) for v in (e, s, a)), torch.tensor(valid), l2_norm=False).item()
    assert abs(ours - raw[valid].mean()) < 1e-9

    def unit(v):
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    normed = ((unit(e) - unit(s)) ** 2).mean(1) - ((unit(e) - unit(a)) ** 2).mean(1)
    ours = token_contrast(*(torch.tensor(v) for v in (e, s, a)), torch.tensor(valid), l2_norm=True).item()
    assert abs(ours - normed[valid].mean()) < 1e-6
    assert token_contrast(*(torch.tensor(v) for v in (e, s, a)), torch.zeros(3, dtype=torch.bool), True).item() == 0


def test_spans_of_the_swapped_word():
    assert changed_span([1, 2, 3, 4], [1, 7, 8, 3, 4]) == (1, 2, 3)
    assert word_spans([1, 2, 3], [1, 5, 6, 3], [1, 9, 3]) == [(1, 2), (1, 3), (1, 2)]
    # the antonym inserts a token before the word (un + happy): the original's span widens to one token
    assert word_spans([1, 2, 3], [1, 5, 3], [1, 9, 2, 3]) == [(1, 2), (1, 2), (1, 2)]
    # the synonym drawn is the word itself: it sits where the original word sits
    assert word_spans([1, 2, 3], [1, 2, 3], [1, 9, 3]) == [(1, 2), (1, 2), (1, 2)]
    assert differing_positions([1, 2, 3, 0], [1, 9, 8, 0, 5]) == [1, 2]


def test_momentum_dictionary_update_and_released_gradient_match_the_undetached_chain():
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(6, 3))
    ours = MomentumDictionary(weight)
    chain = weight.detach().clone().requires_grad_()  # the release's deep-copied embedding parameter
    m = 0.9
    for _ in range(3):
        with torch.no_grad():
            weight.add_(torch.randn(6, 3))  # an optimizer step
        chain = m * chain + (1 - m) * weight  # the release: never detached
        ours.update(weight, m)
    assert int(ours.updates) == 3
    ids = torch.tensor([1, 4, 4])
    coefficients = torch.randn(3, 3)
    assert torch.allclose(ours.rows(ids), chain[ids].detach(), atol=1e-6)
    (expected,) = torch.autograd.grad((chain[ids] * coefficients).sum(), weight)
    (got,) = torch.autograd.grad((ours.rows(ids, weight, m) * coefficients).sum(), weight)
    assert torch.allclose(got, expected, atol=1e-6)
    assert abs(got[1, 0].item() - (1 - m**3) * coefficients[0, 0].item()) < 1e-6
    assert ours.rows(ids).grad_fn is None  # paper protocol: detached


# --- batches --------------------------------------------------------------------------------------


def test_paper_collate_rows_and_word_spans(tiny_models):
    method, _, tok = make(tiny_models, "bert")
    batch = method.collate(triples(tok))
    ids, spans = batch["input_ids"], batch["span_mask"]
    assert ids.shape[0] == 9 and ids[:, 0].eq(tok.cls_token_id).all()
    assert tok.convert_ids_to_tokens(ids[0][spans[0].bool()]) == ["good"]
    assert tok.convert_ids_to_tokens(ids[3][spans[3].bool()]) == ["full"]
    assert tok.convert_ids_to_tokens(ids[6][spans[6].bool()]) == ["bad"]
    assert tok.convert_ids_to_tokens(ids[2][spans[2].bool()]) == ["cold"]
    assert tok.convert_ids_to_tokens(ids[8][spans[8].bool()]) == ["hot"]
    assert batch["valid"].tolist() == [True, True, True]


def test_paper_collate_marks_words_lost_to_truncation_invalid(tiny_models):
    method, _, tok = make(tiny_models, "bert", max_seq_length=5)  # [CLS] + 3 tokens + [SEP]
    batch = method.collate(triples(tok))
    assert batch["input_ids"].shape[1] == 5
    assert batch["valid"].tolist() == [False, True, False]  # only "happy" (2nd word) survives
    assert batch["span_mask"][[0, 3, 6, 2, 5, 8]].sum() == 0
    assert tok.convert_ids_to_tokens(batch["input_ids"][7][batch["span_mask"][7].bool()]) == ["sad"]


def test_released_collate_pads_to_max_length_and_lists_differing_positions(tiny_models):
    method, _, tok = make(tiny_models, "bert", protocol="released-code", max_seq_length=20)
    batch = method.collate(triples(tok))
    assert batch["input_ids"].shape == (9, 20) and batch["attention_mask"][:, -1].sum() == 0
    expected = [p for b in range(3) for p in differing_positions(batch["input_ids"][b].tolist(),
                                                                 batch["input_ids"][6 + b].tolist())]
    assert batch["word_index"].tolist() == expected == [4, 2, 6]  # one swapped WordPiece per sentence


# --- model behaviour ------------------------------------------------------------------------------


def test_protocol_switches(tiny_models):
    paper, paper_model, tok = make(tiny_models, "bert")
    released, released_model, _ = make(tiny_models, "bert", protocol="released-code")
    assert paper.reset_grads and not released.reset_grads
    assert registry.method("mocoutrl").training_corpus == "views"
    assert set(paper_model.extras) == {"dictionary", "sentence_projector", "token_projector"}
    assert set(released_model.extras) == {"dictionary"}
    assert torch.equal(paper_model.extras["dictionary"].table, paper_model.encoder.get_input_embeddings().weight)
    with pytest.raises(ValueError, match="protocol"):
        MoCoUTRL({**PARAMS, "protocol": "other"}, "bert", tok)
    projector = paper_model.extras["sentence_projector"].layers[0]
    bound = math.sqrt(6 / (32 + 32))  # Glorot uniform
    assert projector.weight.abs().max() <= bound and projector.bias.abs().sum() == 0


def test_training_items_are_view_triples(tiny_models):
    method, _, _ = make(tiny_models, "bert")
    items = method.training_items([[1], [2], [3], [4], [5], [6]], seed=0)
    assert isinstance(items, ViewTriples) and len(items) == 2 and items[1] == ([2], [4], [6])


def test_paper_loss_wiring(tiny_models):
    method, model, tok = make(tiny_models, "deberta")
    model.eval()
    batch = method.collate(triples(tok))
    with torch.no_grad():
        hidden = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        z = model.extras["sentence_projector"](pool_avg(hidden, batch["attention_mask"])).view(3, 3, -1)
        words = model.extras["token_projector"](pool_avg(hidden, batch["span_mask"])).view(3, 3, -1)
        table = model.extras["dictionary"].table
        dictionary = pool_avg(table[batch["input_ids"][:3]], batch["span_mask"][:3])
        expected = 0.5 * views_infonce(z[0], z[1], z[2], 0.07) + 0.5 * token_contrast(
            dictionary, words[1], words[2], batch["valid"], True)
        assert torch.allclose(method.loss(model, batch), expected, atol=1e-6)


def test_released_loss_uses_the_first_examples_rows_or_falls_back(tiny_models):
    method, model, tok = make(tiny_models, "bert", protocol="released-code", max_seq_length=20)
    model.eval()
    batch = method.collate(triples(tok))
    ids = batch["input_ids"]
    with torch.no_grad():
        hidden = model.encoder(input_ids=ids, attention_mask=batch["attention_mask"]).last_hidden_state
        ntxent = ntxent_pml(hidden.mean(dim=1), released_labels(3), 0.07)
        index = batch["word_index"]
        states = torch.cat([hidden[0, index], hidden[3, index], -hidden[6, index]])
        golds = model.extras["dictionary"].table[torch.cat([ids[0, index], ids[3, index], ids[6, index]])]
        expected = 0.5 * ntxent + 0.5 * ((states - golds) ** 2).mean()
        assert torch.allclose(method.loss(model, batch), expected, atol=1e-6)
        shifted = dict(batch, word_index=index[:2])  # not one position per example: MSE := NT-Xent
        assert torch.allclose(method.loss(model, shifted), ntxent, atol=1e-6)


def test_after_step_moves_the_dictionary_towards_the_embeddings(tiny_models):
    method, model, _ = make(tiny_models, "bert")
    weight = model.encoder.get_input_embeddings().weight
    before = model.extras["dictionary"].table.clone()
    with torch.no_grad():
        weight.add_(1.0)
    method.after_step(model, 1)
    assert torch.allclose(model.extras["dictionary"].table, 0.999 * before + 0.001 * weight.detach(), atol=1e-6)
    assert int(model.extras["dictionary"].updates) == 1


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["bert", "roberta", "deberta"])
def test_paper_protocol_training_lowers_the_loss(tiny_models, family):
    method, model, tok = make(tiny_models, family, dropout=0.0)
    model.train()
    batch = method.collate(triples(tok))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(10):
        loss = method.loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        method.after_step(model, step + 1)
        losses.append(loss.item())
    assert np.mean(losses[-3:]) < losses[0] - 0.2


def test_released_protocol_training_lowers_the_loss_without_zero_grad(tiny_models):
    method, model, tok = make(tiny_models, "deberta", dropout=0.0, protocol="released-code")
    model.train()
    batch = method.collate(triples(tok))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(10):
        loss = method.loss(model, batch)
        loss.backward()  # gradients accumulate, as in the release
        optimizer.step()
        method.after_step(model, step + 1)
        losses.append(loss.item())
    assert np.mean(losses[-3:]) < losses[0] - 0.2


# --- training loop integration, evaluation, saving ------------------------------------------------


def _views_corpus(tmp_path, tokenizer):
    from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus

    stacked = [row[view] for view in range(3) for row in SENTENCES * 2]
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "views.txt").write_text("\n".join(stacked) + "\n", encoding="utf-8")
    tokenize_corpus(tmp_path / "views.txt", tokenizer, tmp_path / "tok", progress=False)
    return TokenizedCorpus.open(tmp_path / "tok")


def test_released_run_resumes_with_its_accumulated_gradients(tiny_models, tmp_path):
    from sentrepro.training.loop import TrainSettings, batch_indices, train

    settings = TrainSettings(batch_size=2, lr=1e-3, epochs=2, max_steps=4, eval_steps=1000, checkpoint_every=2,
                             optimizer="torch-adamw", max_grad_norm=None, schedule="constant", shuffle=False)
    assert batch_indices(1, 6, settings, seed=0).tolist() == [2, 3]  # corpus order
    finals = []
    for run, stops in (("straight", [None]), ("resumed", [3, None])):
        for stop in stops:
            method, model, tok = make(tiny_models, "bert", protocol="released-code", max_seq_length=20)
            corpus = method.training_items(_views_corpus(tmp_path / run, tok), seed=0)
            torch.manual_seed(1)
            summary = train(method, model, corpus, tmp_path / run / "out", settings, 0, lambda m: 0.0,
                            save_meta={}, log=lambda _: None, stop_after=stop)
        assert summary["steps"] == 4
        finals.append((model, summary))
    (straight, first), (resumed, second) = finals
    assert second["resumed_from"] == 2 and first["loss_curve"][-1] == pytest.approx(second["loss_curve"][-1])
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.allclose(a.float(), b.float(), atol=1e-6), name
    assert int(resumed.extras["dictionary"].updates) == 4


@pytest.mark.parametrize("protocol, training", [("released-code", False), ("paper", True)])
def test_training_mode_per_protocol_in_the_training_loop(tiny_models, tmp_path, protocol, training):
    """released-code trains with the model in eval mode (no dropout), as contrastive_train.py; paper in train
    mode. The loop asks the method (set_train_mode) and keeps that mode across the dev evaluation."""
    from sentrepro.encoder.encode import encode_sentences
    from sentrepro.training.loop import TrainSettings, train

    method, model, tok = make(tiny_models, "bert", protocol=protocol, max_seq_length=20)
    seen = []
    original_loss = method.loss

    def recording_loss(m, batch):
        seen.append([module.training for module in m.modules()])
        return original_loss(m, batch)

    method.loss = recording_loss
    corpus = method.training_items(_views_corpus(tmp_path, tok), seed=0)
    settings = TrainSettings(batch_size=2, lr=1e-3, epochs=1, max_steps=3, eval_steps=1, checkpoint_every=1000,
                             optimizer="torch-adamw", max_grad_norm=None, schedule="constant", shuffle=False)

    def dev_score(m):
        encode_sentences(method, m, ["a short sentence"], purpose="dev")
        return 0.0

    model.train(not training)  # the opposite of what the protocol needs: the loop must set it
    train(method, model, corpus, tmp_path / "out", settings, 0, dev_score, save_meta={}, log=lambda _: None)
    assert len(seen) == 3  # every step, including those after a dev evaluation
    assert all(all(flag == training for flag in step) for step in seen)


def test_eval_inputs_and_embeddings_per_protocol(tiny_models):
    paper, model, tok = make(tiny_models, "bert")
    model.eval()
    inputs = paper.eval_inputs(["a short one", "a somewhat longer sentence here"], "test")
    with torch.no_grad():
        hidden = model.encoder(**inputs).last_hidden_state
        assert torch.allclose(paper.embed(model, inputs, "test"), pool_avg(hidden, inputs["attention_mask"]))
    released, _, _ = make(tiny_models, "bert", protocol="released-code", max_seq_length=24)
    inputs = released.eval_inputs(["a short one", "a somewhat longer sentence here"], "test")
    assert inputs["input_ids"].shape == (2, 24)
    with torch.no_grad():
        hidden = model.encoder(**inputs).last_hidden_state
        assert torch.allclose(released.embed(model, inputs, "test"), hidden.mean(dim=1))  # padding included


def test_save_and_load_extras_round_trip(tiny_models, tmp_path):
    method, model, tok = make(tiny_models, "deberta")
    with torch.no_grad():
        model.extras["dictionary"].table.add_(0.5)
    method.after_step(model, 1)
    model.save(tmp_path / "best", tok, {"kind": "mocoutrl"})
    reloaded = method.build_model(load_encoder(str(tmp_path / "best"), "deberta"))
    reloaded.load_extras(tmp_path / "best")
    for name, tensor in model.extras.state_dict().items():
        assert torch.equal(reloaded.extras.state_dict()[name], tensor), name
