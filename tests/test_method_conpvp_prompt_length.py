"""ConPVP's continuous anchor takes the configured prompt length (the release's default of four is pinned in
tests/test_method_conpvp_exact.py): that many [PAD] placeholders after the sentence, and as many trained prompt
vectors, in training and in evaluation."""

from __future__ import annotations

import pytest

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method


@pytest.mark.parametrize("length", [1, 2, 6])
def test_the_anchor_holds_the_configured_number_of_prompt_placeholders(tiny_models, length):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("conpvp", {"temperature": 0.05, "prompt_len": length}, "bert", tokenizer)
    assert method.prompt_length == length
    assert list(method.anchor_template.suffix).count(tokenizer.pad_token_id) == length
    assert method.eval_text("a cat").count(tokenizer.pad_token) == length
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    assert tuple(model.extras["prompt"].vectors.shape) == (length, model.encoder.config.hidden_size)
