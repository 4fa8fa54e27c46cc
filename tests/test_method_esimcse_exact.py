"""Guards ESimCSE's configuration surface (methods/esimcse.py): the defaults it fills in, the params it
requires (each one named when missing), the accepted momentum initialisations and the model's default."""

from __future__ import annotations

import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.blocks import MLPHead
from sentrepro.methods.esimcse import ESimCSEModel

PARAMS = {"max_seq_length": 32, "temperature": 0.05, "dup_rate": 0.32, "neg_size": 6, "momentum": 0.995}


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


def test_defaults_are_in_forward_random_and_mlp_only_train(bert_tok):
    method = build_method("esimcse", dict(PARAMS), "bert", bert_tok)
    assert method.params["momentum_update"] == "in-forward"
    assert method.params["momentum_init"] == "random"
    assert method.params["mlp_only_train"] is True
    for key, value in PARAMS.items():
        assert method.params[key] == value


@pytest.mark.parametrize("key", sorted(PARAMS))
def test_each_required_param_is_named_when_missing(bert_tok, key):
    params = {k: v for k, v in PARAMS.items() if k != key}
    with pytest.raises(ValueError, match=f"missing param\\(s\\) {key} "):
        build_method("esimcse", params, "bert", bert_tok)


@pytest.mark.parametrize("init", ["random", "copy"])
def test_both_momentum_inits_are_accepted(bert_tok, init):
    method = build_method("esimcse", {**PARAMS, "momentum_init": init}, "bert", bert_tok)
    assert method.params["momentum_init"] == init


def test_model_default_init_is_random_not_a_copy(tiny_models):
    encoder = load_encoder(str(tiny_models["bert"]), "bert")
    torch.manual_seed(0)
    model = ESimCSEModel(encoder, {"mlp": MLPHead(encoder.config.hidden_size)}, 4)
    online = dict(model.encoder.named_parameters())
    momentum = dict(model.momentum_encoder.named_parameters())
    assert online.keys() == momentum.keys()
    differing = [n for n in online if not torch.equal(online[n], momentum[n])]
    assert differing  # re-initialised, so at least the weight matrices differ from the online encoder's
    assert model.queue.shape == (4, encoder.config.hidden_size) and int(model.queue_length) == 0
