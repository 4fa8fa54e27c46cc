"""PromptBERT and OptiPrompt: layouts, shifted positions, denoising maths, gradients, protocols, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.methods.base import EXTRA_STATE
from sentrepro.methods.optiprompt import (
    OptiPrompt,
    released_prompt_positions,
    template_prompt_positions,
    write_prompts,
)
from sentrepro.methods.promptbert import PromptBERT, shifted_position_ids, template_bias
from sentrepro.methods.simcse import simcse_loss
from sentrepro.methods.templates import PROMPTBERT_TEMPLATES, template_ids

PARAMS = {"max_seq_length": 32, "temperature": 0.05}
SENTENCES = ["a man is playing a guitar on the street.", "two dogs run", "this is fine"]


def load(tiny_models, family):
    path = str(tiny_models[family])
    return load_tokenizer(path), load_encoder(path, family)


def make(tiny_models, family, kind="promptbert", **params):
    tokenizer, encoder = load(tiny_models, family)
    method = build_method(kind, {**PARAMS, **params}, family, tokenizer)
    torch.manual_seed(0)
    return method, method.build_model(encoder), tokenizer


def ids_of(tokenizer, sentences):
    return tokenizer(sentences, add_special_tokens=False)["input_ids"]


# --- pure maths ------------------------------------------------------------------------------------


def test_shifted_position_ids_by_hand():
    assert shifted_position_ids(6, 3, 3).tolist() == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 4, 5, 6], [0, 1, 2, 5, 6, 7]]
    assert shifted_position_ids(4, 2, 2, first=2).tolist() == [[2, 3, 4, 5], [2, 3, 5, 6]]


# --- batches ---------------------------------------------------------------------------------------


def test_collate_truncates_before_templating_and_interleaves_views(tiny_models):
    method, _, tok = make(tiny_models, "bert")
    long = list(range(2000, 2040))  # 40 sentence tokens -> 32 kept
    batch = method.collate([long, [2050, 2051]])
    t1, t2 = method.views
    assert batch["input_ids"].shape == (4, 32 + 10)
    assert batch["input_ids"][0].tolist() == t1.wrap(long[:32])
    assert batch["input_ids"][1].tolist() == t2.wrap(long[:32])
    assert tok.convert_ids_to_tokens(batch["input_ids"][1, :5].tolist()) == ["[CLS]", "this", "sentence", ":", '"']
    assert batch["sentence_lengths"].tolist() == [32, 32, 2, 2]
    assert batch["attention_mask"].sum(1).tolist() == [42, 42, 12, 12]
    rows = torch.arange(4)
    assert (batch["input_ids"][rows, batch["mask_positions"]] == tok.mask_token_id).all()


def test_same_template_ablation_uses_t1_for_both_views(tiny_models):
    method, _, _ = make(tiny_models, "roberta", template2="T1", denoise=False)
    batch = method.collate([[300, 301, 302]])
    assert batch["input_ids"][0].tolist() == batch["input_ids"][1].tolist()


def test_shift_start_released_uses_t1_prefix_for_both(tiny_models):
    short = '*cls*_A_"*sent_0*"_means*mask*.*sep+*'
    released, _, _ = make(tiny_models, "bert", template2=short)
    own, _, _ = make(tiny_models, "bert", template2=short, delta_shift_start="per-template")
    assert len(released.views[1].prefix) == 3 and len(released.views[0].prefix) == 5
    assert released.shift_start(released.views[1]) == 5
    assert own.shift_start(own.views[1]) == 3


# --- template denoising ----------------------------------------------------------------------------


def test_delta_rows_are_template_passes_with_hand_built_positions(tiny_models):
    method, model, _ = make(tiny_models, "bert")
    model.eval()
    t1 = method.views[0]
    with torch.no_grad():
        delta = template_bias(model.encoder, t1, 4, len(t1.prefix))
        for length in range(4):
            positions = list(range(len(t1.prefix))) + [len(t1.prefix) + length + j for j in range(len(t1.suffix))]
            out = model.encoder(input_ids=torch.tensor([t1.alone]), position_ids=torch.tensor([positions]))
            assert torch.allclose(delta[length], out.last_hidden_state[0, t1.mask_in_alone], atol=1e-5)


def test_roberta_delta_positions_start_at_zero_unless_aligned(tiny_models):
    released, model, _ = make(tiny_models, "roberta")
    aligned = build_method("promptbert", {**PARAMS, "delta_positions": "aligned"}, "roberta", released.tokenizer)
    model.eval()
    t1 = released.views[0]
    with torch.no_grad():
        plain = model.encoder(input_ids=torch.tensor([t1.alone])).last_hidden_state[0, t1.mask_in_alone]
        assert torch.allclose(aligned.delta(model, t1, 1)[0], plain, atol=1e-5)  # positions 2.. like the real pass
        assert not torch.allclose(released.delta(model, t1, 1)[0], plain, atol=1e-3)  # the −2 offset quirk


def test_delta_in_training_has_dropout_and_gradient(tiny_models):
    method, model, _ = make(tiny_models, "bert")
    model.train()
    first = method.delta(model, method.views[0], 3)
    second = method.delta(model, method.views[0], 3)
    assert first.requires_grad and not torch.allclose(first, second)
    first.sum().backward()
    assert model.encoder.get_input_embeddings().weight.grad is not None
    model.eval()
    with torch.no_grad():
        assert torch.allclose(method.delta(model, method.views[0], 3), method.delta(model, method.views[0], 3))


def test_denoised_views_match_single_sentence_passes(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    model.eval()
    sentences = ids_of(tok, SENTENCES[:2])
    batch = method.collate(sentences)
    with torch.no_grad():
        z1, z2 = method.view_vectors(model, batch)
        for v, z in enumerate((z1, z2)):
            template = method.views[v]
            for i, sentence in enumerate(sentences):
                n = len(sentence)
                wrapped = torch.tensor([template.wrap(sentence)])
                h = model.encoder(input_ids=wrapped).last_hidden_state[0, template.mask_position(n)]
                positions = list(range(len(template.prefix))) + [len(template.prefix) + n + j
                                                                 for j in range(len(template.suffix))]
                d = model.encoder(input_ids=torch.tensor([template.alone]),
                                  position_ids=torch.tensor([positions])).last_hidden_state[0, template.mask_in_alone]
                assert torch.allclose(z[i], h - d, atol=1e-4)
        mlp = model.extras["mlp"]
        expected = simcse_loss(mlp(z1), mlp(z2), 0.05)
        assert torch.allclose(method.loss(model, batch), expected, atol=1e-6)


def test_without_denoising_views_are_raw_mask_states(tiny_models):
    method, model, tok = make(tiny_models, "bert", denoise=False)
    model.eval()
    batch = method.collate(ids_of(tok, SENTENCES[:2]))
    with torch.no_grad():
        z1, z2 = method.view_vectors(model, batch)
        states = method.mask_states(model, batch)
    assert torch.equal(z1, states[0::2]) and torch.equal(z2, states[1::2])


# --- evaluation protocols --------------------------------------------------------------------------


def test_dev_and_test_protocols(tiny_models):
    method, model, tok = make(tiny_models, "bert")
    model.eval()
    dev = method.eval_inputs(["a man plays", "why?"], "dev")
    test = method.eval_inputs(["a man plays", "why?"], "test")
    assert tok.convert_ids_to_tokens(dev["input_ids"][0].tolist()) == [
        "[CLS]", "this", "sentence", "of", '"', "a", "man", "plays", '"', "means", "[MASK]", ".", "[SEP]"]
    assert tok.convert_ids_to_tokens(test["input_ids"][0].tolist()) == [
        "[CLS]", "this", "sentence", "of", '"', "a", "man", "plays", ".", '"', "means", "[MASK]", ".", "[SEP]"]
    assert "sentence_lengths" not in test
    with torch.no_grad():
        dev_vectors = method.embed(model, dev, "dev")
        test_vectors = method.embed(model, test, "test")
        states = method.mask_states(model, dev)
        delta = method.delta(model, method.views[0], int(dev["sentence_lengths"].max()) + 1)
        assert torch.allclose(dev_vectors, states - delta[dev["sentence_lengths"]], atol=1e-6)
        assert torch.allclose(test_vectors, method.mask_states(model, test), atol=1e-6)
    denoised = build_method("promptbert", {**PARAMS, "test_protocol": "denoised"}, "bert", tok)
    same = denoised.eval_inputs(["a man plays"], "test")
    assert same["input_ids"].tolist() == dev["input_ids"][:1, :same["input_ids"].shape[1]].tolist()


def test_mlp_only_in_training_unless_configured(tiny_models):
    method, model, _ = make(tiny_models, "bert")
    with_mlp = build_method("promptbert", {**PARAMS, "mlp_only_train": False}, "bert", method.tokenizer)
    model.eval()
    inputs = method.eval_inputs(["a man plays"], "test")
    with torch.no_grad():
        raw = method.embed(model, inputs, "test")
        assert torch.allclose(with_mlp.embed(model, inputs, "test"), model.extras["mlp"](raw))


# --- training and checkpoints ----------------------------------------------------------------------


def loss_with_fixed_dropout(method, model, batch, seed=1234) -> float:
    """The training-mode loss under one fixed dropout draw (so two measurements are comparable)."""
    model.train()
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    with torch.no_grad():
        value = method.loss(model, batch).item()
    torch.set_rng_state(state)
    return value


def loss_before_after(method, model, batch, steps=8, lr=1e-3) -> tuple[float, float]:
    """Train on one fixed batch, repeated; the loss under the same dropout draw before and after."""
    before = loss_with_fixed_dropout(method, model, batch)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        method.loss(model, batch).backward()
        optimizer.step()
        optimizer.zero_grad()
    return before, loss_with_fixed_dropout(method, model, batch)


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_promptbert_loss_goes_down(tiny_models, wiki_sentences, family):
    method, model, tok = make(tiny_models, family)
    batch = method.collate(ids_of(tok, wiki_sentences[:8]))
    before, after = loss_before_after(method, model, batch)
    assert after < before - 0.05


def test_save_and_load_extras_round_trip(tiny_models, tmp_path):
    method, model, tok = make(tiny_models, "roberta")
    model.save(tmp_path / "best", tok, {"kind": "promptbert"})
    fresh_method = build_method("promptbert", PARAMS, "roberta", load_tokenizer(str(tmp_path / "best")))
    torch.manual_seed(123)  # a different fresh MLP
    fresh = fresh_method.build_model(load_encoder(str(tmp_path / "best"), "roberta"))
    fresh.load_extras(tmp_path / "best")
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name


# --- OptiPrompt ------------------------------------------------------------------------------------


def test_released_position_search_takes_last_occurrence():
    # prompt tokens: this sentence : " " means .   (ids 1..7 stand in; 4 = the quote)
    words = [1, 2, 3, 4, 4, 6, 7]
    #           0   1  2  3  4   5  6   7  8  9   10
    sequence = [9, 1, 2, 3, 4, 1, 50, 4, 6, 99, 7, 10]
    assert released_prompt_positions(sequence, words) == [5, 2, 3, 7, 7, 8, 10]
    assert released_prompt_positions([9, 10], [1]) == [0]


def test_template_position_search_uses_own_positions(bert_tokenizer_manual):
    tok, manual = bert_tokenizer_manual
    sentence = tok("this is it", add_special_tokens=False)["input_ids"]
    wrapped = manual.wrap(sentence)
    assert template_prompt_positions(wrapped, manual) == [1, 2, 3, 4, 8, 9, 11]
    assert released_prompt_positions(wrapped, manual.word_ids())[0] == 5  # the sentence's "this"
    with pytest.raises(ValueError, match="does not start with the prefix"):
        template_prompt_positions(sentence, manual)


@pytest.fixture(scope="module")
def bert_tokenizer_manual(tiny_models):
    tok = load_tokenizer(str(tiny_models["bert"]))
    return tok, template_ids(PROMPTBERT_TEMPLATES["bert"]["manual"], tok)


def test_write_prompts_later_wins_and_gradients_reach_prompts():
    embeds = torch.zeros(1, 5, 2)
    prompts = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], requires_grad=True)
    out = write_prompts(embeds, prompts, torch.tensor([[1, 3, 3]]))
    assert out[0, :, 0].tolist() == [0.0, 1.0, 0.0, 3.0, 0.0]
    assert embeds.abs().sum() == 0  # out of place
    out.sum().backward()
    assert prompts.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]  # the overwritten vector gets none


def test_optiprompt_model_freezes_the_encoder(tiny_models):
    method, model, tok = make(tiny_models, "bert", kind="optiprompt", mlp="linear-tanh")
    assert isinstance(method, OptiPrompt) and isinstance(method, PromptBERT)
    assert not any(p.requires_grad for p in model.encoder.parameters())
    embeddings = model.encoder.get_input_embeddings().weight
    assert torch.equal(model.extras["prompt"].weight, embeddings[method.word_ids])
    assert tok.convert_ids_to_tokens(method.word_ids) == ["this", "sentence", ":", '"', '"', "means", "."]


def test_optiprompt_states_use_prompts_at_searched_positions(tiny_models):
    method, model, tok = make(tiny_models, "bert", kind="optiprompt", mlp="linear-tanh")
    model.eval()
    batch = method.collate(ids_of(tok, ["this is it"]))
    prompts = model.extras["prompt"].weight
    with torch.no_grad():
        prompts.add_(torch.randn_like(prompts))  # make prompts differ from the word embeddings
        embeds = model.encoder.get_input_embeddings()(batch["input_ids"][:1]).clone()
        for k, position in enumerate(released_prompt_positions(batch["input_ids"][0].tolist(), method.word_ids)):
            embeds[0, position] = prompts[k]
        expected = model.encoder(inputs_embeds=embeds).last_hidden_state[0, batch["mask_positions"][0]]
        assert torch.allclose(method.mask_states(model, batch)[0], expected, atol=1e-5)


@pytest.mark.heavy
def test_optiprompt_trains_prompts_and_mlp_only(tiny_models, wiki_sentences):
    method, model, tok = make(tiny_models, "bert", kind="optiprompt", mlp="linear-tanh")
    frozen = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    start = model.extras["prompt"].weight.detach().clone()
    before, after = loss_before_after(method, model, method.collate(ids_of(tok, wiki_sentences[:8])), lr=1e-2)
    assert after < before - 0.05
    assert all(torch.equal(v, model.encoder.state_dict()[k]) for k, v in frozen.items())
    assert not torch.equal(start, model.extras["prompt"].weight)


def test_optiprompt_mlm_transform_head_comes_from_the_checkpoint(tiny_models, tmp_path):
    from transformers import BertConfig, BertForMaskedLM

    tok, encoder = load(tiny_models, "bert")
    torch.manual_seed(5)
    mlm = BertForMaskedLM(BertConfig.from_pretrained(str(tiny_models["bert"])))
    mlm.save_pretrained(tmp_path / "mlm-bert")
    tok.save_pretrained(tmp_path / "mlm-bert")
    method = build_method("optiprompt", PARAMS, "bert", tok)
    model = method.build_model(load_encoder(str(tmp_path / "mlm-bert"), "bert"))
    expected = mlm.cls.predictions.transform.state_dict()
    for key, value in model.extras["mlp"].state_dict().items():
        assert torch.equal(value, expected[key]), key
    with pytest.raises(ValueError, match="linear-tanh"):
        method.build_model(encoder)  # the tiny BertModel has no MLM head
    model.save(tmp_path / "best", tok, {})
    assert (tmp_path / "best" / EXTRA_STATE).exists()
    reloaded = method.build_model(load_encoder(str(tmp_path / "best"), "bert"))  # a trained checkpoint: no error
    reloaded.load_extras(tmp_path / "best")
    assert torch.equal(reloaded.extras["mlp"].dense.weight, model.extras["mlp"].dense.weight)


def test_optiprompt_test_protocol_appends_period_and_searches(tiny_models):
    method, model, tok = make(tiny_models, "bert", kind="optiprompt", mlp="linear-tanh")
    inputs = method.eval_inputs(["this works"], "test")
    assert tok.convert_ids_to_tokens(inputs["input_ids"][0].tolist()) == [
        "[CLS]", "this", "sentence", ":", '"', "this", "works", ".", '"', "means", "[MASK]", ".", "[SEP]"]
    # released search: "this" -> the sentence's, both quotes -> the closing one, "." -> the last one
    assert inputs["prompt_positions"][0].tolist() == [5, 2, 3, 8, 8, 9, 11]
    model.eval()
    with torch.no_grad():
        assert method.embed(model, inputs, "test").shape == (1, model.hidden_size)


def test_numpy_view_of_loss_is_simcse_form():
    # the PromptBERT loss is SimCSE's: cross-entropy over cos/τ with target i (one direction)
    rng = np.random.default_rng(1)
    z1, z2 = torch.tensor(rng.normal(size=(3, 4))), torch.tensor(rng.normal(size=(3, 4)))
    a = z1 / z1.norm(dim=1, keepdim=True)
    b = z2 / z2.norm(dim=1, keepdim=True)
    logits = (a @ b.T / 0.05).numpy()
    expected = -np.mean(np.diag(logits) - np.log(np.exp(logits).sum(1)))
    assert abs(simcse_loss(z1, z2, 0.05).item() - expected) < 1e-6


def test_last_occurrence_is_the_last_mask_of_each_row_and_a_row_without_one_is_an_error():
    from sentrepro.methods.promptbert import last_occurrence

    ids = torch.tensor([[5, 9, 5, 1, 2], [9, 9, 3, 4, 4], [1, 2, 3, 4, 9]])
    assert last_occurrence(ids, 9).tolist() == [1, 1, 4]
    with pytest.raises(ValueError, match=r"^a row has no token id 7 \(the template's mask token\)$"):
        last_occurrence(ids, 7)
