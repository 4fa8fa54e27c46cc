"""ConPVP: token layouts, seeded template choice, prompt insertion, denoising, loss maths, training, saving."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.conpvp import (
    ConPVP,
    NEGATIVE_STREAM,
    POSITIVE_STREAM,
    TemplatedSentence,
    insert_prompt,
    prototype_logits,
    prototype_loss,
    template_choice,
)
from sentrepro.methods.templates import CONPVP_NEGATIVE_TEMPLATES, CONPVP_POSITIVE_TEMPLATES

PARAMS = {"max_seq_length": 32, "temperature": 0.05, "prompt_len": 4}


def make(tiny_models, family: str, dropout: float | None = None, **overrides):
    tokenizer = load_tokenizer(str(tiny_models[family]))
    method = build_method("conpvp", {**PARAMS, **overrides}, family, tokenizer)
    torch.manual_seed(0)
    model = method.build_model(load_encoder(str(tiny_models[family]), family, dropout=dropout))
    return method, model, tokenizer


def ids_of(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def collate(method, sentences: list[list[int]], indices: list[int], seed: int) -> dict:
    """The training loop's path: corpus -> training_items(corpus, seed)[index] -> collate."""
    items = method.training_items(dict(zip(indices, sentences)), seed)
    return method.collate([items[i] for i in indices])


# --- pure maths -----------------------------------------------------------------------------------


def numpy_prototype_loss(a, p, n, tau):
    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    logits = unit(a) @ unit(p).T / tau
    if n is not None:
        logits = np.concatenate([logits, unit(a) @ unit(n).T / tau], axis=1)
    logits = logits - logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return float(-np.mean(np.diag(log_probs[:, : len(a)])))


def test_prototype_loss_matches_numpy_with_and_without_negatives():
    rng = np.random.default_rng(0)
    a, p, n = (rng.normal(size=(4, 6)) for _ in range(3))
    ours = prototype_loss(torch.tensor(a), torch.tensor(p), torch.tensor(n), 0.05).item()
    assert abs(ours - numpy_prototype_loss(a, p, n, 0.05)) < 1e-5
    ours = prototype_loss(torch.tensor(a), torch.tensor(p), None, 0.05).item()
    assert abs(ours - numpy_prototype_loss(a, p, None, 0.05)) < 1e-5


def test_prototype_loss_by_hand():
    # a = [e1, e2], p = [e1, e2], n = [-e1, e1]; tau 1. Row 0 logits [1, 0, -1, 1] target 0;
    # row 1 logits [0, 1, 0, 0] target 1.
    e = torch.eye(2)
    n = torch.stack([-e[0], e[0]])
    row0 = -math.log(math.e / (math.e + 1 + math.exp(-1) + math.e))
    row1 = -math.log(math.e / (1 + math.e + 1 + 1))
    assert abs(prototype_loss(e, e, n, 1.0).item() - (row0 + row1) / 2) < 1e-6
    assert prototype_logits(e, e, n, 1.0).shape == (2, 4)
    assert prototype_logits(e, e, None, 1.0).shape == (2, 2)


def test_template_choice_is_a_pure_function_of_seed_and_index():
    first = template_choice(42, POSITIVE_STREAM, [5, 9, 1000], 9)
    assert template_choice(42, POSITIVE_STREAM, [1000, 5], 9) == [first[2], first[0]]  # batch-independent
    draws = template_choice(42, POSITIVE_STREAM, list(range(9000)), 9)
    counts = np.bincount(draws, minlength=9)
    assert counts.min() > 850 and counts.max() < 1150  # roughly uniform over the 9 templates
    assert draws != template_choice(43, POSITIVE_STREAM, list(range(9000)), 9)
    assert draws != template_choice(42, NEGATIVE_STREAM, list(range(9000)), 9)


def test_training_items_carry_the_seeded_templates(tiny_models):
    method, _, _ = make(tiny_models, "bert")
    corpus = [[2000 + i] for i in range(50)]
    items = method.training_items(corpus, seed=42)
    assert len(items) == 50
    assert items[17] == TemplatedSentence([2017], template_choice(42, POSITIVE_STREAM, [17], 9)[0],
                                          template_choice(42, NEGATIVE_STREAM, [17], 8)[0])
    assert [items[i] for i in range(50)] == [method.training_items(corpus, seed=42)[i] for i in range(50)]
    assert [items[i].positive for i in range(50)] != [method.training_items(corpus, 7)[i].positive for i in range(50)]


def test_insert_prompt_overwrites_k_positions_before_mask_of_chosen_rows_only():
    embeds = torch.zeros(3, 8, 2, requires_grad=True)
    prompt = torch.tensor([[1.0, 1.0], [2.0, 2.0]], requires_grad=True)
    rows = torch.tensor([True, False, True])
    mask_index = torch.tensor([5, 5, 3])
    out = insert_prompt(embeds, prompt, rows, mask_index)
    assert out[0, 3:5].tolist() == [[1, 1], [2, 2]]
    assert out[2, 1:3].tolist() == [[1, 1], [2, 2]]
    assert out[1].abs().sum() == 0 and out[0, :3].abs().sum() == 0 and out[0, 5:].abs().sum() == 0
    (out * torch.arange(1.0, 9.0).view(1, 8, 1)).sum().backward()
    # prompt vector j gets the weights of the positions it was written to (rows 0 and 2)
    assert prompt.grad[:, 0].tolist() == [4.0 + 2.0, 5.0 + 3.0]
    # the overwritten word-embedding positions get no gradient, the others do
    assert embeds.grad[0, 3:5].abs().sum() == 0 and embeds.grad[2, 1:3].abs().sum() == 0
    assert embeds.grad[1, 3:5].abs().sum() > 0


# --- token layouts --------------------------------------------------------------------------------


def test_bert_anchor_and_prototype_layouts(tiny_models):
    method, _, tok = make(tiny_models, "bert")
    sentence = ids_of(tok, "the cat sat")
    batch = collate(method, [sentence], [7], seed=1)
    rows = [tok.convert_ids_to_tokens(r) for r in batch["input_ids"].tolist()]
    assert rows[0][:10] == ["[CLS]", "the", "cat", "sat", "[PAD]", "[PAD]", "[PAD]", "[PAD]", "[MASK]", "."]
    assert rows[0][10] == "[SEP]"
    assert batch["attention_mask"][0, :11].tolist() == [1] * 11  # placeholders are attended
    assert batch["prompt_mask"][0, :11].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0]
    assert batch["mask_index"][0].item() == 8 == 11 - 3  # release: attention_mask.sum - 3
    assert batch["prompted"].tolist() == [True, False, False]
    positive = method.positive_templates[template_choice(1, POSITIVE_STREAM, [7], 9)[0]]
    negative = method.negative_templates[template_choice(1, NEGATIVE_STREAM, [7], 8)[0]]
    assert batch["input_ids"][1, : len(positive.wrap(sentence))].tolist() == positive.wrap(sentence)
    assert batch["input_ids"][2, : len(negative.wrap(sentence))].tolist() == negative.wrap(sentence)


def test_every_released_template_puts_mask_third_to_last_for_bert(tiny_models):
    method, _, tok = make(tiny_models, "bert")
    assert len(CONPVP_POSITIVE_TEMPLATES["released-code"]) == 9
    assert len(CONPVP_NEGATIVE_TEMPLATES["released-code"]) == 8
    sentence = ids_of(tok, "a b c")
    for template in [method.anchor_template, *method.positive_templates, *method.negative_templates]:
        wrapped = template.wrap(sentence)
        assert wrapped[template.mask_position(len(sentence))] == tok.mask_token_id
        assert template.mask_position(len(sentence)) == len(wrapped) - 3
    this_sentence = method.positive_templates[8]
    assert tok.convert_ids_to_tokens(this_sentence.wrap(sentence)) == [
        "[CLS]", "this", "sentence", ":", '"', "a", "b", "c", '"', "means", "[MASK]", ".", "[SEP]"]


def test_prompt_mask_marks_template_tokens_only(tiny_models):
    method, _, tok = make(tiny_models, "roberta")
    batch = collate(method, [ids_of(tok, "one two three four five")], [3], seed=0)
    for row in range(3):
        length = int(batch["attention_mask"][row].sum())
        ids = batch["input_ids"][row, :length].tolist()
        mask = batch["prompt_mask"][row, :length].tolist()
        assert mask[0] == 0 and mask[-1] == 0 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
        assert ids[int(batch["mask_index"][row])] == tok.mask_token_id and mask[int(batch["mask_index"][row])] == 1
        sentence = ids_of(tok, "one two three four five")
        start = mask.index(0, 1)  # first sentence token after the prefix
        assert ids[start:start + len(sentence)] == sentence and set(mask[start:start + len(sentence)]) == {0}


def test_sentence_truncated_to_max_seq_length_before_wrapping(tiny_models):
    method, _, tok = make(tiny_models, "bert", max_seq_length=5)
    sentence = list(range(2000, 2020))
    batch = collate(method, [sentence], [0], seed=0)
    assert batch["input_ids"][0, 1:6].tolist() == sentence[:5]
    assert int(batch["attention_mask"][0].sum()) == 1 + 5 + 7  # [CLS] + 5 + [PAD]x4 [MASK] . [SEP]


def test_ablation_layouts(tiny_models):
    method, model, tok = make(tiny_models, "bert", prototypes="none")
    batch = collate(method, [ids_of(tok, "a b"), ids_of(tok, "c")], [0, 1], seed=0)
    assert batch["input_ids"].shape[0] == 4 and batch["prompted"].tolist() == [True] * 4
    assert torch.equal(batch["input_ids"][:2], batch["input_ids"][2:])
    method, model, tok = make(tiny_models, "bert", prototypes="positive")
    assert collate(method, [ids_of(tok, "a b")], [0], seed=0)["input_ids"].shape[0] == 2
    method, model, tok = make(tiny_models, "bert", anchor="manual")
    assert "prompt" not in model.extras
    anchor = collate(method, [ids_of(tok, "a b")], [0], seed=0)["input_ids"][0].tolist()
    assert tok.convert_ids_to_tokens(anchor)[:11] == ["[CLS]", "this", "sentence", "of", '"', "a", "b", '"', "means",
                                                      "[MASK]", "."]
    with pytest.raises(TypeError, match="training_items"):
        method.collate([[1, 2]])
    with pytest.raises(ValueError, match="prototypes"):
        ConPVP({**PARAMS, "prototypes": "all"}, "bert", tok)


def test_paper_template_set_locates_a_mask_that_is_not_third_to_last(tiny_models):
    method, _, tok = make(tiny_models, "bert", templates="paper")
    assert len(method.positive_templates) == 8 and len(method.negative_templates) == 8
    denote = method.negative_templates[4]  # '" <S> " which does not denote [MASK]'
    wrapped = denote.wrap([2000, 2001])
    assert wrapped[denote.mask_position(2)] == tok.mask_token_id and denote.mask_position(2) == len(wrapped) - 2


# --- model behaviour ------------------------------------------------------------------------------


def test_prompt_init_is_uniform_0_1_and_mlp_present(tiny_models):
    _, model, _ = make(tiny_models, "bert")
    vectors = model.extras["prompt"].vectors
    assert vectors.shape == (4, 32) and vectors.min() >= 0 and vectors.max() < 1 and vectors.requires_grad


def test_roberta_positions_are_sequential_from_two_over_inputs_embeds(tiny_models):
    method, model, tok = make(tiny_models, "roberta", denoise=False)
    model.eval()
    batch = collate(method, [ids_of(tok, "the cat sat")], [0], seed=0)
    with torch.no_grad():
        states = method.representations(model, batch)
        embeds = method._input_embeds(model, batch["input_ids"], batch["prompted"], batch["mask_index"])
        length = batch["input_ids"].shape[1]
        positions = torch.arange(2, 2 + length).expand(3, length)
        explicit = model.encoder(inputs_embeds=embeds, attention_mask=batch["attention_mask"], position_ids=positions)
        anchor_ids, anchor_mask = batch["input_ids"][:1], batch["attention_mask"][:1]
        raw = model.encoder.get_input_embeddings()(anchor_ids)
        via_embeds = model.encoder(inputs_embeds=raw, attention_mask=anchor_mask).last_hidden_state
        via_ids = model.encoder(input_ids=anchor_ids, attention_mask=anchor_mask).last_hidden_state
    index = batch["mask_index"]
    assert torch.allclose(states, explicit.last_hidden_state[torch.arange(3), index], atol=1e-6)
    # fed as ids, RoBERTa would give the pad placeholders its padding position and shift what follows
    assert not torch.allclose(via_embeds[0, index[0]], via_ids[0, index[0]], atol=1e-4)


def test_template_only_pass_sees_template_tokens_at_unshifted_positions(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    model.eval()
    same_length = [ids_of(tok, "the cat sat"), ids_of(tok, "a dog ran")]
    longer = [ids_of(tok, "the big cat sat down")]
    batch = method.collate([TemplatedSentence(ids, 4, 4) for ids in same_length + longer])  # same templates
    with torch.no_grad():
        embeds = method._input_embeds(model, batch["input_ids"], batch["prompted"], batch["mask_index"])
        alone = model.encoder(inputs_embeds=embeds, attention_mask=batch["prompt_mask"]).last_hidden_state
        full = model.encoder(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
    index = batch["mask_index"]
    pick = lambda h, rows: h[rows, index[rows]]  # noqa: E731
    for block in range(3):
        rows = torch.tensor([block * 3, block * 3 + 1, block * 3 + 2])
        a, b, c = pick(alone, rows)
        assert torch.allclose(a, b, atol=1e-6)  # the sentence is invisible; same positions
        assert not torch.allclose(a, c, atol=1e-4)  # a longer sentence moves the template's positions
        fa, fb, _ = pick(full, rows)
        assert not torch.allclose(fa, fb, atol=1e-4)
    with torch.no_grad():
        denoised = method.representations(model, batch)
    assert torch.allclose(denoised, pick(full, torch.arange(9)) - pick(alone, torch.arange(9)), atol=1e-6)


def test_loss_gradients_reach_prompt_mlp_and_encoder(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    model.train()
    batch = collate(method, [ids_of(tok, s) for s in ("the cat sat", "a dog ran far", "birds fly")],
                                   [0, 1, 2], seed=0)
    loss = method.loss(model, batch)
    loss.backward()
    assert model.extras["prompt"].vectors.grad.abs().sum() > 0
    assert model.extras["mlp"].dense.weight.grad.abs().sum() > 0
    assert model.encoder.encoder.layer[0].attention.self.query.weight.grad.abs().sum() > 0


def test_loss_equals_prototype_loss_of_mlp_representations(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    model.eval()  # no dropout: both computations see the same network
    batch = collate(method, [ids_of(tok, s) for s in ("the cat sat", "a dog ran")], [0, 1], seed=0)
    with torch.no_grad():
        z = model.extras["mlp"](method.representations(model, batch)).view(3, 2, -1)
        expected = prototype_loss(z[0], z[1], z[2], 0.05)
        assert torch.allclose(method.loss(model, batch), expected)


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_training_a_few_steps_lowers_the_loss(tiny_models, family):
    # dropout 0 (config ``dropout``): denoising subtracts two passes with independent dropout masks, and on a
    # 2-layer random model that noise, divided by tau = 0.05, swamps a dozen steps of progress
    method, model, tok = make(tiny_models, family, dropout=0.0)
    model.train()
    batch = collate(method, [ids_of(tok, s) for s in ("the cat sat on the mat", "a dog ran far away",
                                                             "birds fly south", "rain fell all day")],
                                   [0, 1, 2, 3], seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(12):
        loss = method.loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-3:]) < 0.7 * losses[0]


# --- evaluation and saving ------------------------------------------------------------------------


def test_eval_wraps_the_sentence_string_and_writes_prompts(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    inputs = method.eval_inputs(["The cat sat.", "Hi"], "test")
    tokens = tok.convert_ids_to_tokens(inputs["input_ids"][0])
    assert tokens == ["[CLS]", "the", "cat", "sat", ".", "[PAD]", "[PAD]", "[PAD]", "[PAD]", "[MASK]", ".", "[SEP]"]
    assert inputs["mask_index"].tolist() == [9, int(inputs["attention_mask"][1].sum()) - 3]
    model.eval()
    with torch.no_grad():
        vectors = method.embed(model, inputs, "test")
        embeds = model.encoder.get_input_embeddings()(inputs["input_ids"])
        embeds[0, 5:9] = model.extras["prompt"].vectors
        embeds[1, 1 + 1:1 + 1 + 4] = model.extras["prompt"].vectors  # [CLS] hi [PAD]x4 ...
        hidden = model.encoder(inputs_embeds=embeds, attention_mask=inputs["attention_mask"]).last_hidden_state
        states = hidden[torch.arange(2), inputs["mask_index"]]
    assert torch.allclose(vectors, model.extras["mlp"](states), atol=1e-6)  # mlp_only_train false: MLP
    raw = ConPVP({**PARAMS, "mlp_only_train": True}, "bert", tok)
    with torch.no_grad():
        assert torch.allclose(raw.embed(model, inputs, "test"), states, atol=1e-6)


def test_save_and_load_extras_round_trip(tiny_models, tmp_path):
    method, model, tok = make(tiny_models, "bert")
    model.save(tmp_path / "best", tok, {"kind": "conpvp"})
    reloaded = method.build_model(load_encoder(str(tmp_path / "best"), "bert"))
    assert not torch.equal(reloaded.extras["prompt"].vectors, model.extras["prompt"].vectors)
    reloaded.load_extras(tmp_path / "best")
    assert torch.equal(reloaded.extras["prompt"].vectors, model.extras["prompt"].vectors)
    assert torch.equal(reloaded.extras["mlp"].dense.weight, model.extras["mlp"].dense.weight)


def test_template_choice_of_a_seed_and_stream_is_the_recorded_one():
    """Pinned like the training data order (tests/test_train_step.py): another mixing constant would still be "a
    seeded choice", but it would silently change which template every sentence of every run was trained with."""
    assert template_choice(42, 0, list(range(10)), 3) == [2, 2, 0, 1, 2, 0, 2, 1, 2, 1]
    assert template_choice(42, 1, list(range(10)), 3) == [1, 2, 2, 2, 1, 1, 1, 1, 1, 2]
    assert template_choice(7, 0, [3, 5, 8, 13, 21], 2) == [0, 0, 0, 0, 1]
