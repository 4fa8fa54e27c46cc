"""Guards PromptBERT's helpers (methods/promptbert.py): the last-mask search, the first position id per
family, the position-id bound of template denoising (checked exactly at the limit), the denoising
consistency requirement, and that evaluation inputs are never truncated."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from sentrepro.encoder.load import load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.promptbert import first_position_id, last_occurrence, string_level_inputs, template_bias
from sentrepro.methods.templates import PROMPTBERT_TEMPLATES, TemplateError, TemplateIds

PARAMS = {"max_seq_length": 32, "temperature": 0.05}


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


def test_last_occurrence_at_index_zero_and_later():
    ids = torch.tensor([[9, 1, 1], [1, 9, 9], [1, 1, 9]])
    assert last_occurrence(ids, 9).tolist() == [0, 2, 2]


def test_first_position_id_is_zero_for_bert_and_pad_plus_one_for_roberta():
    encoder = SimpleNamespace(config=SimpleNamespace(pad_token_id=1))
    assert first_position_id(encoder, "bert") == 0
    assert first_position_id(encoder, "roberta") == 2


class _Reached(Exception):
    pass


class _StubEncoder:
    """Only a config; reaching the forward part (past the bound check) raises _Reached."""

    def __init__(self, limit):
        self.config = SimpleNamespace(max_position_embeddings=limit)

    def get_input_embeddings(self):
        raise _Reached


@pytest.mark.parametrize("first_position", [0, 2])
def test_template_bias_bound_is_exact(first_position):
    alone = (101, 5, 103, 6, 102)  # 5 tokens, mask at index 2
    template = TemplateIds(template="t", prefix=(101, 5), suffix=(103, 6, 102), mask_in_suffix=0, alone=alone)
    rows = 3  # sentence lengths 0, 1, 2: the last token sits at first + (5 - 1) + (3 - 1)
    highest = first_position + 4 + 2
    with pytest.raises(ValueError, match="max_position_embeddings"):
        template_bias(_StubEncoder(highest), template, rows, 0, first_position)
    with pytest.raises(_Reached):
        template_bias(_StubEncoder(highest + 1), template, rows, 0, first_position)


def test_denoising_refuses_an_inconsistent_template(bert_tok):
    bad = "*cls*_un*sent_0*able_means*mask*.*sep+*"  # "un" + "able" is one word when joined
    with pytest.raises(TemplateError, match="denoising needs both equal"):
        build_method("promptbert", {**PARAMS, "template": bad, "template2": bad}, "bert", bert_tok)
    method = build_method("promptbert", {**PARAMS, "template": bad, "template2": bad, "denoise": False},
                          "bert", bert_tok)
    assert not method.views[0].consistent


def _long_sentence(tok):
    return " ".join(["word"] * (min(tok.model_max_length, 4000) + 20))


def test_eval_inputs_are_not_truncated(bert_tok):
    sentence = _long_sentence(bert_tok)
    n = len(sentence.split())
    string = string_level_inputs([sentence], PROMPTBERT_TEMPLATES["bert"]["T1"], bert_tok, period=True)
    # [CLS] this sentence of " (5) + n words + the appended "." (1) + " means [MASK] . [SEP] (5)
    assert string["input_ids"].shape[1] == n + 11
    method = build_method("promptbert", {**PARAMS, "test_protocol": "denoised"}, "bert", bert_tok)
    token = method.eval_inputs([sentence], "dev")
    assert int(token["sentence_lengths"][0]) == n


class _RecordingEncoder:
    """Word embeddings on the 'meta' device; the forward records where its inputs were built."""

    def __init__(self):
        self.config = SimpleNamespace(max_position_embeddings=512)
        self.seen = None

    def get_input_embeddings(self):
        return SimpleNamespace(weight=torch.empty(2, 2, device="meta"))

    def __call__(self, input_ids, position_ids):
        self.seen = (input_ids.device.type, position_ids.device.type)
        return SimpleNamespace(last_hidden_state=torch.zeros(input_ids.shape[0], input_ids.shape[1], 2))


def test_template_bias_builds_its_inputs_on_the_encoders_device():
    alone = (101, 5, 103, 6, 102)
    template = TemplateIds(template="t", prefix=(101, 5), suffix=(103, 6, 102), mask_in_suffix=0, alone=alone)
    encoder = _RecordingEncoder()
    template_bias(encoder, template, 2, 0, 0)
    assert encoder.seen == ("meta", "meta")
