"""Non-fine-tuned baselines: manual prompt, whitening, static token averages (Knowl 5 removals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods.blocks import pool_first_last
from sentrepro.planning.config import load_config
from sentrepro.runs import Run
from sentrepro.planning.matrix import runs
from sentrepro.encoder.encode import encode_sentences
from sentrepro.planning import registry
from sentrepro.methods import build_method
from sentrepro.methods.baselines import (
    FREQUENT_TOKENS,
    is_punctuation,
    is_subword,
    keep_token,
    rebuild_text,
    whiten,
    whitening_kernel,
)

REPO = Path(__file__).resolve().parents[1]
ALL = ["frequent", "subwords", "uppercase", "punctuation"]


def make(tiny_models, kind, params, family="bert"):
    path = str(tiny_models[family])
    tokenizer = load_tokenizer(path)
    method = build_method(kind, params, family, tokenizer)
    model = method.build_model(load_encoder(path, family))
    model.eval()
    return method, model, tokenizer


# --- registry and matrix ---------------------------------------------------------------------------


def test_baselines_are_not_trained_and_get_one_run_each():
    for kind in ("manual_prompt", "whitening", "static_token_avg", "frozen"):
        assert not registry.method(kind).trains
    for kind in ("promptbert", "optiprompt", "esimcse", "simcse"):
        assert registry.method(kind).trains
    matrix = runs(load_config(REPO / "config.yaml"))
    assert Run("bert-base", "manual-prompt", None) in matrix
    assert Run("roberta-base", "whitening", None) in matrix
    assert Run("bert-base", "static-avg-no-punctuation", None) in matrix
    assert sum(r.method == "promptbert" and r.backbone == "bert-base" for r in matrix) == 10
    assert sum(r.method == "esimcse" for r in matrix) == 16


def test_not_trained_methods_refuse_batches(tiny_models):
    method, _, _ = make(tiny_models, "manual_prompt", {})
    with pytest.raises(TypeError, match="not trained"):
        method.collate([[1, 2]])


# --- manual prompt ---------------------------------------------------------------------------------


def test_manual_prompt_layout_and_vector(tiny_models):
    method, model, tok = make(tiny_models, "manual_prompt", {})
    inputs = method.eval_inputs(["a man plays", "is it?"], "test")
    assert tok.convert_ids_to_tokens(inputs["input_ids"][0].tolist()) == [
        "[CLS]", "this", "sentence", ":", '"', "a", "man", "plays", ".", '"', "means", "[MASK]", ".", "[SEP]"]
    assert tok.convert_ids_to_tokens(inputs["input_ids"][1].tolist())[5:9] == ["is", "it", "?", '"']  # no period
    with torch.no_grad():
        vectors = method.embed(model, inputs, "test")
        alone = model.encoder(input_ids=inputs["input_ids"][:1]).last_hidden_state[0, 11]
    assert torch.allclose(vectors[0], alone, atol=1e-5)
    no_period = build_method("manual_prompt", {"append_period": False}, "bert", tok)
    assert "." not in tok.convert_ids_to_tokens(no_period.eval_inputs(["a man plays"], "test")["input_ids"][0, :9])


# --- whitening -------------------------------------------------------------------------------------


def test_whitening_kernel_by_hand():
    # uncorrelated columns with sample variances 8/3 and 2/3: W = diag(√(3/8), √(3/2)) up to order and sign
    x = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]]) + 5.0
    kernel, mean = whitening_kernel(x)
    assert np.allclose(mean, x.mean(0))
    white = whiten(x, kernel, mean)
    assert np.allclose(np.cov(white.T), np.eye(2), atol=1e-6)
    assert np.allclose(np.abs(kernel), np.diag([np.sqrt(3 / 8), np.sqrt(3 / 2)]), atol=1e-6)
    assert whiten(x, kernel, mean, 1).shape == (4, 1)


def test_whitening_random_vectors_and_singular_error():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) @ rng.normal(size=(5, 5)) + 3.0
    kernel, mean = whitening_kernel(x)
    white = whiten(x, kernel, mean)
    assert np.allclose(white.mean(0), 0, atol=1e-5) and np.allclose(np.cov(white.T), np.eye(5), atol=1e-4)
    with pytest.raises(ValueError, match="fewer distinct sentences than dimensions"):
        whitening_kernel(rng.normal(size=(3, 5)))


def test_whitening_method_pools_then_whitens_the_whole_call(tiny_models, wiki_sentences):
    method, model, tok = make(tiny_models, "whitening", {})
    torch.manual_seed(0)
    with torch.no_grad():
        # a fresh model's LayerNorms all have weight 1: every layer's output lies in one hyperplane
        # (rank H-1); trained models have a different gain per layer, so first-last is full rank
        for module in model.encoder.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
    sentences = wiki_sentences[:80]
    vectors = encode_sentences(method, model, sentences, purpose="test", batch_size=16)
    assert vectors.shape == (80, 32)
    assert np.allclose(np.cov(vectors.T.astype(np.float64)), np.eye(32), atol=1e-3)
    inputs = tok(sentences[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.encoder(**inputs, output_hidden_states=True)
        expected = pool_first_last(out.hidden_states, inputs["attention_mask"], "first-layer")
        assert torch.allclose(method.embed(model, inputs, "test"), expected)
    truncated = build_method("whitening", {"whitening_dims": 8}, "bert", tok)
    assert encode_sentences(truncated, model, sentences, purpose="test").shape == (80, 8)


# --- static token embeddings -----------------------------------------------------------------------


SENTENCE = "The man is playing a guitar, and singing embeddings!"


def test_frequent_lists_have_36_entries():
    assert len(FREQUENT_TOKENS["bert"]) == 36 and len(FREQUENT_TOKENS["roberta"]) == 36


def test_static_average_raw_includes_special_tokens(tiny_models):
    method, model, tok = make(tiny_models, "static_token_avg", {"remove": []})
    inputs = method.eval_inputs([SENTENCE], "test")
    ids = tok(SENTENCE)["input_ids"]
    assert inputs["input_ids"][0].tolist() == ids and inputs["attention_mask"].sum() == len(ids)
    table = model.encoder.get_input_embeddings().weight.detach()
    with torch.no_grad():
        assert torch.allclose(method.embed(model, inputs, "test")[0], table[ids].mean(0), atol=1e-6)


@pytest.mark.parametrize("remove, kept", [
    (["frequent"], ["guitar", "singing", "em", "##bed", "##ding", "!"]),
    (["frequent", "subwords"], ["guitar", "singing", "em", "!"]),
    (ALL, ["guitar", "singing", "em"]),
])
def test_static_average_removals_bert(tiny_models, remove, kept):
    # WordPiece: the the man is playing a guitar , and singing em ##bed ##ding ##s !
    method, model, tok = make(tiny_models, "static_token_avg", {"remove": remove})
    inputs = method.eval_inputs([SENTENCE], "test")
    counted = inputs["input_ids"][0][inputs["attention_mask"][0].bool()].tolist()
    assert tok.convert_ids_to_tokens(counted) == kept  # [CLS]/[SEP] present but not averaged
    assert tok.convert_ids_to_tokens(inputs["input_ids"][0, [0, -1]].tolist()) == ["[CLS]", "[SEP]"]
    table = model.encoder.get_input_embeddings().weight.detach()
    with torch.no_grad():
        assert torch.allclose(method.embed(model, inputs, "test")[0], table[counted].mean(0), atol=1e-6)


def test_static_average_empty_sentence_falls_back_to_pad(tiny_models):
    method, _, tok = make(tiny_models, "static_token_avg", {"remove": ALL})
    inputs = method.eval_inputs(["the man, a dog."], "test")
    assert tok.convert_ids_to_tokens(inputs["input_ids"][0].tolist()) == ["[CLS]", "[PAD]", "[SEP]"]
    assert inputs["attention_mask"][0].tolist() == [0, 1, 0]


def test_bpe_rules_on_roberta_tokens():
    remove = frozenset(ALL)
    assert is_subword("ing", "roberta") and not is_subword("Ġplay", "roberta")
    assert is_subword("##ing", "bert") and not is_subword("play", "bert")
    assert is_punctuation("Ġ,", "roberta") and not is_punctuation("Ġ4", "roberta")
    assert is_punctuation("—", "bert") and not is_punctuation("a", "bert")
    assert not keep_token("Ġthe", "roberta", remove) and keep_token("ĠThe", "roberta", frozenset({"frequent"}))
    assert keep_token("Ġ,", "roberta", frozenset({"frequent"}))  # the list's 'Ġ, ' (with a space) never matches
    assert rebuild_text(["ĠThe", "Ġguitar"], "roberta", True) == " the guitar "
    assert rebuild_text(["ĠThe"], "roberta", False) == " The "
    assert rebuild_text([], "roberta", True) == " "
    assert rebuild_text(["guitar", "em"], "bert", True) == "guitar em "
    assert rebuild_text([], "bert", True) == "[PAD]"


def test_unknown_removal_and_family_are_named(tiny_models):
    tok = load_tokenizer(str(tiny_models["deberta"]))
    with pytest.raises(ValueError, match="unknown removal"):
        build_method("static_token_avg", {"remove": ["rare"]}, "bert", tok)
    with pytest.raises(ValueError, match="family 'deberta'"):
        build_method("static_token_avg", {"remove": ["frequent"]}, "deberta", tok)
