"""The non-fine-tuned baselines' decisions pinned exactly (methods/baselines.py): where whitening refuses a
singular covariance, the defaults a method takes when the config names none, the WordPiece punctuation rule, the
uppercase removal on a cased vocabulary, the re-tokenization after removing sub-words on BPE, and that the raw
static average never truncates. Each value is worked out by hand or built with plain numpy in the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.baselines import REMOVALS, is_punctuation, rebuild_text, whitening_kernel
from sentrepro.methods.blocks import POOLERS, pool_first_last

METHODS = Path(__file__).resolve().parents[1] / "src" / "sentrepro" / "methods"


def vectors_with_spectrum(spectrum: list[float], n: int = 64, seed: int = 0) -> np.ndarray:
    """(n, H) vectors whose unbiased covariance has exactly the eigenvalues ``spectrum`` (H = len(spectrum))."""
    rng = np.random.default_rng(seed)
    centred = rng.normal(size=(n, len(spectrum)))
    centred -= centred.mean(axis=0)
    q, _ = np.linalg.qr(centred)                     # (n, H) orthonormal columns, each orthogonal to the ones
    return q * np.sqrt((n - 1) * np.asarray(spectrum))  # cov = diag(spectrum)


def test_the_spectra_built_here_are_what_they_claim():
    x = vectors_with_spectrum([4.0, 1.0, 0.25])
    assert np.allclose(np.cov(x.T), np.diag([4.0, 1.0, 0.25]), atol=1e-12)


@pytest.mark.parametrize("spectrum, singular", [
    ([1.0, 0.5, 0.0], True),          # one direction without variance: only the last singular value is 0
    ([1.0, 1e-3, 5e-13], True),       # the smallest below 1e-12 of the largest (and above 1e-12 of the second)
    ([1.0, 1e-3, 1.5e-12], False),    # just above the cut
    ([1.0, 0.5, 0.25], False),
])
def test_whitening_refuses_a_covariance_whose_smallest_singular_value_is_1e_12_of_the_largest(spectrum, singular):
    x = vectors_with_spectrum(spectrum)
    if singular:
        with pytest.raises(ValueError, match="singular"):
            whitening_kernel(x)
    else:
        kernel, mean = whitening_kernel(x)
        assert np.allclose(np.cov(((x - mean) @ kernel).T), np.eye(3), atol=1e-6)


def test_whitening_refuses_vectors_that_are_all_the_same():
    """No variance at all: every singular value is 0, and 0 <= 0 · 1e-12."""
    with pytest.raises(ValueError, match="singular"):
        whitening_kernel(np.ones((10, 4)))


def test_whitening_without_params_takes_bert_whitening_s_first_last_average_of_the_first_layer(tiny_models):
    path = str(tiny_models["bert"])
    tokenizer = load_tokenizer(path)
    method = build_method("whitening", {}, "bert", tokenizer)
    model = method.build_model(load_encoder(path, "bert")).eval()
    inputs = method.eval_inputs(["a man is playing a guitar.", "two dogs run."], "test")
    with torch.no_grad():
        out = model.encoder(**inputs, output_hidden_states=True)
        first_layer = (out.hidden_states[1] * inputs["attention_mask"][..., None]).sum(1) / inputs[
            "attention_mask"].sum(1, keepdim=True)
        last = (out.hidden_states[-1] * inputs["attention_mask"][..., None]).sum(1) / inputs[
            "attention_mask"].sum(1, keepdim=True)
        assert torch.allclose(method.embed(model, inputs, "test"), (first_layer + last) / 2, atol=1e-6)
    assert method.params["whitening_dims"] is None


def test_the_units_files_offer_the_code_s_poolers_definitions_and_removals():
    """The params schema of the frozen, whitening and static-token units lists what the code accepts, no more and no
    less (a value the schema allows but the code refuses, or the other way round, fails here). pool_first_last
    reads any definition but "embeddings" as layer 1, so the schema's enum is what keeps a typo out."""
    frozen = yaml.safe_load((METHODS / "frozen.units.yaml").read_text())["methods"]
    baselines = yaml.safe_load((METHODS / "baselines.units.yaml").read_text())["methods"]
    for params in (frozen["frozen"]["params"], baselines["whitening"]["params"]):
        assert tuple(params["pooler"]["enum"]) == POOLERS
        # each definition the schema offers picks its own first layer: the embeddings' output or layer 1
        hidden = tuple(torch.full((1, 2, 3), float(layer)) for layer in range(4))
        firsts = [pool_first_last(hidden, torch.ones(1, 2), d)[0, 0].item() * 2 - 3 for d in
                  params["first_last_definition"]["enum"]]
        assert params["first_last_definition"]["enum"] == ["embeddings", "first-layer"] and firsts == [0.0, 1.0]
    assert tuple(baselines["static_token_avg"]["params"]["remove"]["items"]["enum"]) == REMOVALS


def test_wordpiece_punctuation_is_the_set_and_bpe_punctuation_has_no_letter_or_digit():
    assert is_punctuation("[UNK]", "bert")            # in the released set, although it holds letters
    assert not is_punctuation("[UNK]", "roberta")     # BPE: letters, so not punctuation
    assert not is_punctuation("¶", "bert")            # no letter, but not in the set
    assert is_punctuation("¶", "roberta")


def test_static_average_without_params_is_the_raw_average(tiny_models):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("static_token_avg", {}, "bert", tokenizer)
    assert method.remove == frozenset()
    inputs = method.eval_inputs(["The man sings."], "test")
    assert inputs["input_ids"][0].tolist() == tokenizer("The man sings.")["input_ids"]


def test_the_raw_static_average_never_truncates(tiny_models):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("static_token_avg", {"remove": []}, "bert", tokenizer)
    long = " ".join(["guitar"] * (tokenizer.model_max_length + 10))
    inputs = method.eval_inputs([long], "test")
    assert inputs["input_ids"].shape[1] == tokenizer.model_max_length + 12   # [CLS] + words + [SEP]


@pytest.fixture(scope="module")
def cased_tokenizer(wiki_sentences):
    from sentrepro.pretrained.tiny import bert_cased_tokenizer

    tokenizer = bert_cased_tokenizer(wiki_sentences[:3000])
    vocab = tokenizer.get_vocab()
    assert {"The", "the", "He", "he"} <= set(vocab)
    return tokenizer


def test_the_uppercase_removal_maps_each_kept_token_to_its_lower_cased_entry(cased_tokenizer):
    tok, vocab = cased_tokenizer, cased_tokenizer.get_vocab()
    sentence = "The guitar He played"
    pieces = tok.convert_ids_to_tokens(tok.encode(" " + sentence, add_special_tokens=False))
    assert "The" in pieces and "He" in pieces
    lowered = [vocab[p.lower()] if p.lower() in vocab else vocab[p] for p in pieces]
    assert lowered != [vocab[p] for p in pieces]

    upper = build_method("static_token_avg", {"remove": ["uppercase"]}, "bert", tok)
    assert upper.filtered_ids(sentence) == [tok.cls_token_id, *lowered, tok.sep_token_id]
    kept_case = build_method("static_token_avg", {"remove": ["punctuation"]}, "bert", tok)
    assert kept_case.filtered_ids(sentence) == [tok.cls_token_id, *[vocab[p] for p in pieces], tok.sep_token_id]


def test_a_cased_token_without_a_lower_cased_entry_keeps_its_own_id(cased_tokenizer):
    tok, vocab = cased_tokenizer, cased_tokenizer.get_vocab()
    only_upper = next(t for t in sorted(vocab) if t.isalpha() and t != t.lower() and t.lower() not in vocab)
    upper = build_method("static_token_avg", {"remove": ["uppercase"]}, "bert", tok)
    assert upper.lowercased_id(only_upper) == vocab[only_upper]
    assert upper.lowercased_id("The") == vocab["the"]


def test_removing_sub_words_on_bpe_re_tokenizes_the_joined_words(tiny_models):
    """The released code joins the kept BPE words (the mark taken off, a space after each, one before all) and
    tokenizes that again: the trailing space becomes a piece of its own, so the ids are not the kept ones."""
    tok = load_tokenizer(str(tiny_models["roberta"]))
    sentence = "The man is playing a guitar, and singing embeddings!"
    pieces = tok.convert_ids_to_tokens(tok.encode(" " + sentence, add_special_tokens=False))
    words = [p for p in pieces if p.startswith("Ġ")]
    assert len(words) < len(pieces)                  # the trained BPE splits some word
    rejoined = " " + "".join(w.removeprefix("Ġ") + " " for w in words)
    assert rebuild_text(words, "roberta", False) == rejoined
    method = build_method("static_token_avg", {"remove": ["subwords"]}, "roberta", tok)
    ids = method.filtered_ids(sentence)
    assert ids == tok.encode(rejoined)
    assert ids != [tok.cls_token_id, *tok.convert_tokens_to_ids(words), tok.sep_token_id]
