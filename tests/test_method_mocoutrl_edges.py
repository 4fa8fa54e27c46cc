"""MoCoUTRL at its edges: the release's sequence length as the default, a swapped word cut by truncation kept up to
the last id of its own row, every mask value exactly 1, long evaluation sentences truncated in both protocols, the
token L2 norm on by default, and the released protocol's gradient through the dictionary's undetached EMA chain."""

from __future__ import annotations

import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.blocks import pool_avg
from sentrepro.methods.mocoutrl import ntxent_pml, released_labels, token_contrast, word_spans

PARAMS = {"temperature": 0.07, "alpha": 0.5, "momentum": 0.9}
# example 1's swapped word is four WordPieces (un ##ha ##pp ##iness) and its antonym row is the batch's shortest
TRIPLES = [("it was cold", "it was cool", "it was hot"),
           ("we felt unhappiness today", "we felt joy today", "we felt sad")]


def make(tiny_models, **params):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("mocoutrl", {**PARAMS, **params}, "bert", tokenizer)
    torch.manual_seed(0)
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    model.eval()
    return method, model, tokenizer


def encode(tokenizer, rows=TRIPLES):
    return [tuple(tokenizer.encode(text, add_special_tokens=False) for text in row) for row in rows]


def test_the_sequence_length_defaults_to_the_releases_200(tiny_models):
    """contrastive_train.py:108-109 tokenizes with max_length=200 (methods.md)."""
    method, _, _ = make(tiny_models)
    assert method.max_len == 200


def test_a_span_cut_by_truncation_keeps_its_tokens_up_to_its_own_rows_last_id(tiny_models):
    method, _, tok = make(tiny_models, max_seq_length=6)  # [CLS] + 4 ids + [SEP]
    examples = encode(tok)
    assert tok.convert_ids_to_tokens(examples[1][0]) == ["we", "felt", "un", "##ha", "##pp", "##iness", "today"]
    batch = method.collate(examples)
    mask = batch["span_mask"]
    expected = torch.zeros_like(mask)
    for b, triple in enumerate(examples):
        for view, (start, end) in enumerate(word_spans(*triple)):
            kept = min(len(triple[view]), 6 - 2)  # ids of this row that fit; [CLS] shifts them by one
            expected[view * len(examples) + b, start + 1:min(end, kept) + 1] = 1.0
    assert torch.equal(mask, expected)
    assert set(mask.unique().tolist()) == {0.0, 1.0}
    # the cut word keeps its first two pieces, the ones before [SEP]
    assert tok.convert_ids_to_tokens(batch["input_ids"][1][mask[1].bool()]) == ["un", "##ha"]
    assert batch["valid"].tolist() == [True, True]


def test_long_evaluation_sentences_are_cut_to_the_sequence_length_in_both_protocols(tiny_models):
    long = " ".join(["word"] * 300)
    for protocol in ("paper", "released-code"):
        method, _, _ = make(tiny_models, protocol=protocol, max_seq_length=24)
        inputs = method.eval_inputs([long, "short"], "test")
        assert inputs["input_ids"].shape == (2, 24), protocol
        assert inputs["attention_mask"][0].sum() == 24


def test_the_token_l2_norm_is_on_unless_turned_off(tiny_models):
    method, model, tok = make(tiny_models, max_seq_length=48)
    batch = method.collate(encode(tok))
    with torch.no_grad():
        hidden = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        z = model.extras["sentence_projector"](pool_avg(hidden, batch["attention_mask"])).view(3, 2, -1)
        words = model.extras["token_projector"](pool_avg(hidden, batch["span_mask"])).view(3, 2, -1)
        dictionary = pool_avg(model.extras["dictionary"].table[batch["input_ids"][:2]], batch["span_mask"][:2])
        from sentrepro.methods.mocoutrl import views_infonce

        long_span = views_infonce(z[0], z[1], z[2], 0.07)
        expected = {norm: 0.5 * long_span + 0.5 * token_contrast(dictionary, words[1], words[2], batch["valid"], norm)
                    for norm in (True, False)}
        assert not torch.allclose(expected[True], expected[False])
        assert torch.allclose(method.loss(model, batch), expected[True], atol=1e-6)  # the default
        off, _, _ = make(tiny_models, max_seq_length=48, token_l2_norm=False)
        assert torch.allclose(off.loss(model, batch), expected[False], atol=1e-6)


def test_the_released_loss_sends_the_dictionarys_gradient_to_the_embeddings(tiny_models):
    """The release's EMA dictionary is never detached: after t updates its rows carry d rows / d weight = 1 - m^t.
    The embeddings' gradient is the one with the dictionary held constant plus (1 - alpha) * dMSE/dgolds * (1 - m^t)
    at each gold token's row."""
    method, model, tok = make(tiny_models, protocol="released-code", max_seq_length=20)
    weight = model.encoder.get_input_embeddings().weight
    dictionary = model.extras["dictionary"]
    dictionary.update(weight, 0.9)
    dictionary.update(weight, 0.9)  # t = 2: coefficient 1 - 0.81
    batch = method.collate(encode(tok, TRIPLES[:1] * 2))
    model.zero_grad()
    method.loss(model, batch).backward()
    through_dictionary = weight.grad.clone()

    model.zero_grad()
    ids, index = batch["input_ids"], batch["word_index"]
    hidden = model.encoder(input_ids=ids, attention_mask=batch["attention_mask"]).last_hidden_state
    ntxent = ntxent_pml(hidden.mean(dim=1), released_labels(2), 0.07)
    states = torch.cat([hidden[0, index], hidden[2, index], -hidden[4, index]])
    gold_ids = torch.cat([ids[0, index], ids[2, index], ids[4, index]])
    golds = dictionary.table[gold_ids]  # held constant
    (0.5 * ntxent + 0.5 * ((states - golds) ** 2).mean()).backward()
    expected = weight.grad.clone()
    d_golds = 0.5 * -2 * (states - golds).detach() / states.numel() * (1 - 0.9 ** 2)  # (3B, H)
    expected.index_add_(0, gold_ids, d_golds)
    assert not torch.allclose(expected, weight.grad)  # the chain's share is not nothing
    assert torch.allclose(through_dictionary, expected, atol=1e-7)
