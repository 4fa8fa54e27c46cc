"""Guards ConPVP's pure pieces (methods/conpvp.py): the option vocabularies, the template-choice hash
(SplitMix64, recomputed here in plain Python), the prompt mask of a wrapped sequence, and prompt insertion."""

from __future__ import annotations

import torch

from sentrepro.methods import conpvp as C
from sentrepro.methods.templates import TemplateIds

M = (1 << 64) - 1


def splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def test_option_vocabularies():
    assert C.ANCHORS == ("continuous", "manual")
    assert C.PROTOTYPES == ("both", "positive", "none")
    assert C.TEMPLATE_SETS == ("released-code", "paper")
    assert C.MANUAL_ANCHOR == "T1"
    # the positive and negative template draws are separate streams 1 and 2
    assert (C.POSITIVE_STREAM, C.NEGATIVE_STREAM) == (1, 2)


def test_template_choice_is_splitmix64_of_index_xor_stream_key():
    for seed, stream in [(0, 1), (42, 2), (7, 1)]:
        key = splitmix64(seed * 1_000_003 + stream)
        indices = [0, 1, 5, 123456, 2**40 + 3]
        expected = [splitmix64(i ^ key) % 9 for i in indices]
        assert C.template_choice(seed, stream, indices, 9) == expected


def test_wrap_prompt_mask_marks_template_words_only():
    # prefix = [CLS] a b ; suffix = c [MASK] d [SEP]
    t = TemplateIds(template="t", prefix=(101, 1, 2), suffix=(3, 103, 4, 102), mask_in_suffix=1,
                    alone=(101, 1, 2, 3, 103, 4, 102))
    ids, prompt_mask, mask_index = C.wrap_with_template(t, [50, 51])
    assert ids == [101, 1, 2, 50, 51, 3, 103, 4, 102]
    assert prompt_mask == [0, 1, 1, 0, 0, 1, 1, 1, 0]
    assert mask_index == 6


def test_insert_prompt_single_vector_single_row():
    embeds = torch.zeros(2, 5, 3)
    prompt = torch.full((1, 3), 7.0)
    rows = torch.tensor([False, True])
    out = C.insert_prompt(embeds, prompt, rows, torch.tensor([4, 3]))
    expected = torch.zeros(2, 5, 3)
    expected[1, 2] = 7.0  # position mask_index - 1 of the one chosen row
    assert torch.equal(out, expected)


def test_insert_prompt_two_vectors_before_the_mask():
    embeds = torch.zeros(2, 6, 2)
    prompt = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = C.insert_prompt(embeds, prompt, torch.tensor([True, True]), torch.tensor([3, 5]))
    expected = torch.zeros(2, 6, 2)
    expected[0, 1], expected[0, 2] = prompt[0], prompt[1]
    expected[1, 3], expected[1, 4] = prompt[0], prompt[1]
    assert torch.equal(out, expected)


# --- the method's configuration and inputs ---------------------------------------------------------

import pytest  # noqa: E402

from sentrepro.encoder.load import load_tokenizer  # noqa: E402
from sentrepro.methods import build_method  # noqa: E402

BASE = {"max_seq_length": 32, "temperature": 0.05}


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


def test_default_prompt_length_is_four_pad_placeholders(bert_tok):
    method = build_method("conpvp", dict(BASE), "bert", bert_tok)
    assert method.prompt_length == 4
    assert list(method.anchor_template.suffix).count(bert_tok.pad_token_id) == 4


@pytest.mark.parametrize("prototypes, views", [("both", 3), ("positive", 2), ("none", 2)])
def test_views_per_sentence(bert_tok, prototypes, views):
    assert build_method("conpvp", {**BASE, "prototypes": prototypes}, "bert", bert_tok).views == views


def test_padded_prompt_mask_is_zero(bert_tok):
    method = build_method("conpvp", dict(BASE), "bert", bert_tok)
    batch = method.collate([C.TemplatedSentence([5], 0, 0), C.TemplatedSentence([5, 6, 7, 8, 9, 10], 0, 0)])
    assert batch["prompt_mask"].shape == batch["attention_mask"].shape
    assert int(batch["prompt_mask"][batch["attention_mask"] == 0].abs().sum()) == 0
    assert bool((batch["attention_mask"] == 0).any())


def test_eval_inputs_are_not_truncated(bert_tok):
    method = build_method("conpvp", dict(BASE), "bert", bert_tok)
    n = min(bert_tok.model_max_length, 4000) + 20
    batch = method.eval_inputs([" ".join(["word"] * n)], "test")
    # [CLS] + n words + 4 [PAD] + [MASK] . + [SEP]
    assert batch["input_ids"].shape[1] == n + 8
    assert int(batch["mask_index"][0]) == n + 5
