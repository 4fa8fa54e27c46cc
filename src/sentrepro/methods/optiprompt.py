"""OptiPrompt for sentence embeddings (PromptBERT §4.2, ``bert-optiprompt`` in Prompt-BERT's run.sh).

A frozen backbone; trainable prompt vectors replace the word embeddings of the template's own words
(methods.md §2.5):

* All encoder parameters are frozen (``models.py:395-399``); dropout stays on in training, so the
  two views (same template, ``train.py`` with no different template) differ by dropout only.
* One prompt vector per template word — the template alone without [CLS], [MASK] and [SEP], in
  order (``train.py:803-807``) — initialised as a clone of those words' embeddings
  (``prompt_init: embeddings``; ``random`` gives N(0, 0.02), ``train.py:823-824``).
* Each vector overwrites ``inputs_embeds`` at a position found by token-id matching
  (``models.py:129-142``). ``position_search: released`` reproduces the quirk that both search
  branches pick the LAST occurrence of the token id in the sequence: a template word that also
  occurs in the sentence ("this", ":") is written into the sentence, and both ``"`` vectors land on
  the closing quote (the later one wins). ``template`` writes each vector at its own template
  position.
* Training MLP (``mlp: mlm-transform``, the released ``--mask_embedding_sentence_org_mlp``): BERT's
  masked-LM head transform (Linear + GELU + LayerNorm) initialised from the backbone checkpoint's
  ``cls.predictions.transform`` and trained; ``linear-tanh`` is a fresh SimCSE MLP. No denoising.
  Loss as PromptBERT (SimCSE form, τ = 0.05). Paper run: 5 epochs, bs 256, lr 3e-5, eval every 1000.
* Evaluation: no MLP (``mlp_only_train``). ``dev``: token-level wrapping, no period; ``test``
  (``evaluation.py``): period appended, sentence substituted into the template string, prompts
  written by the same search. The paper's number (73.59 on BERT-base) used the released search.
* Precision: ``run.sh`` trains ``bert-optiprompt`` with the common ``--fp16`` flags (``run.sh:166``):
  ``training.precision: authors`` gives ``fp16`` (inherited from :class:`PromptBERT`).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn

from sentrepro.methods.blocks import MLPHead
from sentrepro.methods.base import EXTRA_STATE, SentenceModel
from sentrepro.methods.promptbert import PromptBERT, gather_positions, string_level_inputs, token_level_inputs
from sentrepro.methods.templates import TemplateIds

OPTIPROMPT_DEFAULTS = {
    "template": "manual",
    "position_search": "released",
    "prompt_init": "embeddings",
    "mlp": "mlm-transform",
    "denoise": False,
    "test_protocol": "released",
}


# --- pure helpers ----------------------------------------------------------------------------------


def released_prompt_positions(sequence: list[int], word_ids: list[int]) -> list[int]:
    """Where the released code writes each prompt vector: the LAST index of its token id (0 if absent).

    ``(ids == k) * p`` maximised, or ``(ids == k) * -p`` minimised, both give the last match; a row
    without the token gives index 0 (the arg-max of an all-zero row).
    """
    last = {token: index for index, token in enumerate(sequence)}
    return [last.get(token, 0) for token in word_ids]


def template_prompt_positions(sequence: list[int], template: TemplateIds) -> list[int]:
    """Each prompt vector at its own template word's position in ``[CLS] prefix sentence suffix [SEP]``."""
    n = len(sequence)
    sentence_length = n - template.length
    if (sentence_length < 0 or tuple(sequence[:len(template.prefix)]) != template.prefix
            or tuple(sequence[n - len(template.suffix):]) != template.suffix):
        raise ValueError(f"sequence {sequence} does not start with the prefix and end with the suffix of "
                         f"template {template.template!r}; position_search: template cannot place the prompts")
    return template.word_positions(sentence_length)


def write_prompts(embeds: Tensor, prompts: Tensor, positions: Tensor) -> Tensor:
    """Overwrite ``embeds`` at ``positions`` with the prompt vectors, in prompt order (later wins).

    embeds (N, L, H), prompts (K, H), positions (N, K) -> (N, L, H); out of place, so gradients
    reach the prompts.
    """
    rows = torch.arange(embeds.shape[0], device=embeds.device)
    for k in range(prompts.shape[0]):
        value = prompts[k].to(embeds.dtype).expand(embeds.shape[0], -1)
        embeds = embeds.index_put((rows, positions[:, k]), value)
    return embeds


# --- modules ---------------------------------------------------------------------------------------


class PromptVectors(nn.Module):
    """The trainable prompt matrix (K, H)."""

    def __init__(self, initial: Tensor):
        super().__init__()
        self.weight = nn.Parameter(initial.detach().clone())


class MLMTransformHead(nn.Module):
    """BERT's masked-LM head transform: Linear(H, H) + activation + LayerNorm (``org_mlp``)."""

    def __init__(self, hidden: int, activation: str, eps: float):
        super().__init__()
        from transformers.activations import ACT2FN

        self.dense = nn.Linear(hidden, hidden)
        self.transform_act_fn = ACT2FN[activation]
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, features: Tensor) -> Tensor:  # (N, H) -> (N, H)
        return self.LayerNorm(self.transform_act_fn(self.dense(features)))


def mlm_transform_state(source: str) -> dict[str, Tensor] | None:
    """``cls.predictions.transform.*`` weights of a BERT checkpoint, or None when it has no MLM head."""
    from transformers import BertForMaskedLM

    model, info = BertForMaskedLM.from_pretrained(source, output_loading_info=True)
    if any(key.startswith("cls.predictions.transform") for key in info["missing_keys"]):
        return None
    return {k: v.detach().clone() for k, v in model.cls.predictions.transform.state_dict().items()}


def position_ids_for(input_ids: Tensor, family: str, pad_id: int) -> Tensor | None:
    """Position ids the model would derive from ``input_ids`` (RoBERTa), so passing embeddings keeps them."""
    if family != "roberta":
        return None
    mask = (input_ids != pad_id).long()
    return torch.cumsum(mask, dim=1) * mask + pad_id


# --- the method ------------------------------------------------------------------------------------


class OptiPrompt(PromptBERT):
    kind = "optiprompt"

    def __init__(self, params: dict, family: str, tokenizer):
        merged = {**OPTIPROMPT_DEFAULTS, **params}
        merged["template2"] = None  # both views use the one template (no different template)
        if merged["denoise"]:
            raise ValueError("optiprompt: denoise must be false (the released OptiPrompt run has no denoising)")
        if merged["position_search"] not in ("released", "template"):
            raise ValueError(f"optiprompt: position_search '{merged['position_search']}' (released | template)")
        super().__init__(merged, family, tokenizer)
        self.word_ids = self.views[0].word_ids()

    # --- model ---------------------------------------------------------------------------------
    def build_model(self, encoder) -> SentenceModel:
        for parameter in encoder.parameters():
            parameter.requires_grad_(False)
        hidden = encoder.config.hidden_size
        if self.params["prompt_init"] == "embeddings":
            initial = encoder.get_input_embeddings().weight[self.word_ids]
        elif self.params["prompt_init"] == "random":
            initial = torch.randn(len(self.word_ids), hidden) * 0.02
        else:
            raise ValueError(f"optiprompt: prompt_init '{self.params['prompt_init']}' (embeddings | random)")
        return SentenceModel(encoder, {"prompt": PromptVectors(initial), "mlp": self.build_mlp(encoder)})

    def build_mlp(self, encoder) -> nn.Module:
        choice = self.params["mlp"]
        config = encoder.config
        if choice == "linear-tanh":
            return MLPHead(config.hidden_size)
        if choice != "mlm-transform":
            raise ValueError(f"optiprompt: mlp '{choice}' (mlm-transform | linear-tanh)")
        if self.family != "bert":
            raise ValueError(f"optiprompt: mlp: mlm-transform needs a BERT backbone (family '{self.family}')")
        head = MLMTransformHead(config.hidden_size, config.hidden_act, config.layer_norm_eps)
        source = config.name_or_path
        state = mlm_transform_state(source)
        if state is not None:
            head.load_state_dict(state)
        elif not (Path(source) / EXTRA_STATE).exists():
            # a trained checkpoint (with saved extras) is reloaded by load_extras; a backbone must have the head
            raise ValueError(f"optiprompt: mlp: mlm-transform needs the masked-LM head "
                             f"(cls.predictions.transform.*) in the backbone checkpoint '{source}', which has "
                             f"none; use mlp: linear-tanh for such backbones")
        return head

    # --- prompts -------------------------------------------------------------------------------
    def prompt_positions(self, sequences: list[list[int]]) -> Tensor:
        """Where each prompt vector goes in each (unpadded) sequence. -> (N, K) long"""
        if self.params["position_search"] == "released":
            rows = [released_prompt_positions(seq, self.word_ids) for seq in sequences]
        else:
            rows = [template_prompt_positions(seq, self.views[0]) for seq in sequences]
        return torch.tensor(rows, dtype=torch.long).reshape(len(sequences), len(self.word_ids))

    def with_positions(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        sequences = [row[mask.bool()].tolist() for row, mask in zip(batch["input_ids"], batch["attention_mask"])]
        return {**batch, "prompt_positions": self.prompt_positions(sequences)}

    def mask_states(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        input_ids = batch["input_ids"]
        embeds = model.encoder.get_input_embeddings()(input_ids)  # (N, L, H), frozen
        embeds = write_prompts(embeds, model.extras["prompt"].weight, batch["prompt_positions"])
        out = model.encoder(inputs_embeds=embeds, attention_mask=batch["attention_mask"],
                            position_ids=position_ids_for(input_ids, self.family, self.tokenizer.pad_token_id))
        return gather_positions(out.last_hidden_state, batch["mask_positions"])

    # --- training / evaluation inputs ----------------------------------------------------------
    def collate(self, examples: list[list[int]]) -> dict[str, Tensor]:
        return self.with_positions(super().collate(examples))

    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        if self.token_level(purpose):
            ids = self.tokenizer(sentences, add_special_tokens=False, truncation=False)["input_ids"]
            batch = token_level_inputs(ids, self.views[0], self.tokenizer.pad_token_id)
        else:
            batch = string_level_inputs(sentences, self.template_string, self.tokenizer,
                                        period=bool(self.params["append_period"]))
        return self.with_positions(batch)
