"""Guards OptiPrompt's pieces (methods/optiprompt.py): RoBERTa position ids, the MLM transform head's
activation, template-based prompt placement and its refusals, the single-template views, random prompt
initialisation, and the untruncated token-level evaluation inputs."""

from __future__ import annotations

import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.optiprompt import MLMTransformHead, position_ids_for, template_prompt_positions
from sentrepro.methods.templates import TemplateIds

PARAMS = {"max_seq_length": 32, "temperature": 0.05}


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


def test_position_ids_count_non_pad_tokens_from_pad_plus_one_for_roberta_only():
    ids = torch.tensor([[0, 5, 6, 1, 1], [0, 7, 8, 9, 2]])
    # mask [1,1,1,0,0] / [1,1,1,1,1]; cumsum * mask + pad(1)
    assert position_ids_for(ids, "roberta", 1).tolist() == [[2, 3, 4, 1, 1], [2, 3, 4, 5, 6]]
    assert position_ids_for(ids, "bert", 1) is None


def test_mlm_transform_head_is_layernorm_of_activation_of_dense():
    torch.manual_seed(0)
    head = MLMTransformHead(4, "relu", 1e-12)
    x = torch.randn(3, 4)
    dense = x @ head.dense.weight.T + head.dense.bias
    expected = torch.nn.functional.layer_norm(torch.clamp(dense, min=0), (4,), head.LayerNorm.weight,
                                              head.LayerNorm.bias, 1e-12)
    assert torch.allclose(head(x), expected, atol=1e-6)


TEMPLATE = TemplateIds(template="t", prefix=(101, 5), suffix=(5, 103, 102), mask_in_suffix=1,
                       alone=(101, 5, 5, 103, 102))


def test_template_positions_for_an_empty_sentence():
    # [CLS] 5 | 5 [MASK] [SEP]: the prefix word at 1, the suffix word at 2
    assert template_prompt_positions([101, 5, 5, 103, 102], TEMPLATE) == [1, 2]


def test_template_positions_refuse_a_short_or_mismatched_sequence():
    with pytest.raises(ValueError, match="cannot place"):
        template_prompt_positions([101, 5, 103, 102], TEMPLATE)  # prefix and suffix overlap: too short
    with pytest.raises(ValueError, match="cannot place"):
        template_prompt_positions([101, 6, 5, 103, 102], TEMPLATE)  # wrong prefix word


def test_both_views_use_the_one_template(bert_tok):
    method = build_method("optiprompt", dict(PARAMS), "bert", bert_tok)
    assert method.views[0].template == method.views[1].template == method.template_string


def test_template_position_search_places_prompts_on_the_template_words(bert_tok):
    method = build_method("optiprompt", {**PARAMS, "position_search": "template"}, "bert", bert_tok)
    # manual template: [CLS] this sentence : " <s> " means [MASK] . [SEP]; words this sentence : " | " means .
    sentence = bert_tok("two dogs run", add_special_tokens=False)["input_ids"]
    n = len(sentence)
    sequence = list(method.views[0].prefix) + sentence + list(method.views[0].suffix)
    expected = [1, 2, 3, 4, 5 + n, 6 + n, 8 + n]
    assert method.prompt_positions([sequence]).tolist() == [expected]


def test_random_prompt_init_is_normal_times_0_02(tiny_models, bert_tok):
    path = str(tiny_models["bert"])
    method = build_method("optiprompt", {**PARAMS, "prompt_init": "random", "mlp": "linear-tanh"}, "bert",
                          bert_tok)
    encoder = load_encoder(path, "bert")
    k, hidden = len(method.word_ids), encoder.config.hidden_size
    torch.manual_seed(3)
    model = method.build_model(encoder)
    torch.manual_seed(3)
    expected = torch.randn(k, hidden) * 0.02
    assert torch.equal(model.extras["prompt"].weight.detach(), expected)


def test_token_level_eval_inputs_wrap_the_untruncated_sentence(bert_tok):
    method = build_method("optiprompt", dict(PARAMS), "bert", bert_tok)
    words = ["word"] * (min(bert_tok.model_max_length, 4000) + 20)
    batch = method.eval_inputs([" ".join(words)], "dev")
    n = len(words)
    word_id = bert_tok.convert_tokens_to_ids("word")
    head = bert_tok.convert_tokens_to_ids(["[CLS]", "this", "sentence", ":", '"'])
    tail = bert_tok.convert_tokens_to_ids(['"', "means", "[MASK]", ".", "[SEP]"])
    assert batch["input_ids"][0].tolist() == head + [word_id] * n + tail
    assert int(batch["sentence_lengths"][0]) == n
    assert "prompt_positions" in batch
