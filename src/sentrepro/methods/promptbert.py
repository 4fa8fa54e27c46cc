"""Unsupervised PromptBERT (Jiang et al., 2022), as kongds/Prompt-BERT's released code does it.

Training (methods.md §2.2-2.3):

* Each sentence is truncated to ``max_seq_length`` (32) tokens BEFORE templating, then wrapped as
  ``prefix + sentence + suffix`` (token level, :mod:`sentrepro.methods.templates`): view 0 with
  ``template`` (T1), view 1 with ``template2`` (T2). Both views go through ONE encoder call.
* Representation: last-layer state at the [MASK] token.
* Template denoising (``denoise``): for each view's template, a template-only pass whose suffix
  position ids are shifted by the sentence length ℓ (one row per ℓ = 0..max ℓ of the batch) gives
  δ(ℓ) at the mask; the view's vector is ``h − δ(ℓ)``. The pass is recomputed every step in the
  model's current mode, i.e. WITH dropout and WITH gradient (``models.py:78-113``), without an
  attention mask or token-type ids. View 0 uses δ from T1, view 1 δ from T2. The reference builds
  50 rows per step and indexes them by ℓ; computing rows 0..max ℓ gives the same δ(ℓ) values.
* A fresh MLP (Linear+Tanh) after denoising, in training only (``mlp_only_train``); SimCSE-form
  loss: cross-entropy over cos(z1_i, z2_j)/τ with target i.

Evaluation protocols (methods.md §2.4) — they differ by design:

* purpose ``dev`` (STS-B dev model selection during training): token-level T1 wrapping, no period
  appended, δ subtracted when ``denoise`` (eval mode, no grad), no MLP.
* purpose ``test``, ``test_protocol: released`` (default; Prompt-BERT's ``evaluation.py`` is run
  without ``--mask_embedding_sentence_delta``): "." appended to sentences not ending in ``.?"'``
  (``append_period``), the sentence substituted into the T1 string and the whole string tokenized,
  no denoising, no MLP. ``test_protocol: denoised`` evaluates test sets with the dev protocol.

Paper-vs-code choices, each a named param (default = what produced the published numbers):

* ``delta_shift_start: released`` shifts positions from T1's prefix length + 1 in BOTH δ passes,
  as ``models.py:98`` does (it uses ``len(cls.bs)`` of T1 for T2 too); ``per-template`` uses each
  template's own prefix. The paper's templates have equal prefix lengths, so both agree for them.
* ``delta_positions: released`` starts the δ pass's explicit position ids at 0. RoBERTa's ordinary
  forward numbers positions from ``padding_idx + 1 = 2``, so the template-only positions are offset
  by −2 from the real pass (``models.py:96``); the paper says the positions match the full input,
  which ``aligned`` does (start at the family's first position id).
* Knowl 9 ablations are config variants: same template for both views without denoising
  (``template2: T1, denoise: false``), different templates without denoising (``denoise: false``),
  different templates with denoising (the default).

Known differences from the reference: the reference's in-training dev δ has 128 rows and crashes on
longer sentences (issue #23); here δ has as many rows as the batch needs (the model's position
limit is checked and named in the error instead).

Precision: every training command of ``run.sh`` passes ``--fp16`` (``run.sh:166``, at 690ba6e), so
``training.precision: authors`` resolves to ``fp16`` (OptiPrompt inherits it); the dev evaluation's
SentEval batcher runs under ``torch.no_grad()`` outside autocast (``prompt_bert/trainers.py:105-118``),
i.e. fp32, as ``training.dev_precision: fp32`` does.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sentrepro.methods.blocks import MLPHead
from sentrepro.methods.base import Method, SentenceModel, pad_sequences
from sentrepro.methods.simcse import simcse_loss
from sentrepro.methods.templates import (
    PROMPTBERT_TEMPLATES,
    TemplateIds,
    append_period,
    fill_template,
    resolve_template,
    template_ids,
)

DEFAULTS = {
    "template": "T1",
    "template2": "T2",
    "denoise": True,
    "delta_shift_start": "released",
    "delta_positions": "released",
    "test_protocol": "released",
    "append_period": True,
    "mlp_only_train": True,
}


# --- pure helpers ----------------------------------------------------------------------------------


def shifted_position_ids(template_length: int, shift_start: int, rows: int, first: int = 0) -> Tensor:
    """Position ids of the template-only denoising input. -> (rows, T) long

    Row ℓ is ``first + 0 .. first + T-1`` with every position from index ``shift_start`` on
    increased by ℓ: the suffix sits where it would follow a sentence of ℓ tokens.
    """
    base = torch.arange(template_length) + first  # (T,)
    shifted = (torch.arange(template_length) >= shift_start).long()  # (T,) 1 on the suffix
    return base.unsqueeze(0) + torch.arange(rows).unsqueeze(1) * shifted.unsqueeze(0)


def gather_positions(hidden: Tensor, positions: Tensor) -> Tensor:
    """Row i's vector at ``positions[i]``. (N, L, H), (N,) -> (N, H)"""
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), positions]


def last_occurrence(input_ids: Tensor, token_id: int) -> Tensor:
    """Index of the last ``token_id`` in each row. (N, L) -> (N,); raises if a row has none."""
    found = input_ids == token_id
    if not bool(found.any(dim=1).all()):
        raise ValueError(f"a row has no token id {token_id} (the template's mask token)")
    index = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
    return torch.where(found, index, torch.full_like(index, -1)).max(dim=1).values


def token_level_inputs(sequences: list[list[int]], template: TemplateIds, pad_id: int) -> dict[str, Tensor]:
    """Wrap tokenized sentences with a template: ids, mask, sentence lengths ℓ and mask positions."""
    rows = [template.wrap(seq) for seq in sequences]
    input_ids, attention_mask = pad_sequences(rows, pad_id)
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)
    masks = torch.tensor([template.mask_position(len(seq)) for seq in sequences], dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "sentence_lengths": lengths,
            "mask_positions": masks}


def string_level_inputs(sentences: list[str], template: str, tokenizer, *, period: bool) -> dict[str, Tensor]:
    """Prompt-BERT's final evaluation: (period appended,) sentence substituted, whole text tokenized."""
    texts = [fill_template(template, append_period(s) if period else s, tokenizer.mask_token) for s in sentences]
    encoded = tokenizer(texts, padding=True, truncation=False, return_tensors="pt")
    input_ids = encoded["input_ids"]
    return {"input_ids": input_ids, "attention_mask": encoded["attention_mask"],
            "mask_positions": last_occurrence(input_ids, tokenizer.mask_token_id)}


def first_position_id(encoder: nn.Module, family: str) -> int:
    """The position id of a sequence's first token in the model's own forward (RoBERTa: pad + 1)."""
    if family == "roberta":
        return int(encoder.config.pad_token_id) + 1
    return 0


def template_bias(encoder: nn.Module, template: TemplateIds, rows: int, shift_start: int,
                  first_position: int = 0) -> Tensor:
    """δ(ℓ) for ℓ = 0..rows-1: the mask state of the template alone, suffix positions shifted by ℓ. -> (rows, H)

    No attention mask and no token-type ids, as the reference; runs in the encoder's current mode
    (dropout in training) and under the caller's grad mode.
    """
    limit = encoder.config.max_position_embeddings
    highest = first_position + len(template.alone) - 1 + rows - 1
    if highest >= limit:
        raise ValueError(f"template denoising for {template.template!r} needs position id {highest} "
                         f"(a sentence of {rows - 1} tokens) but the backbone has max_position_embeddings={limit}")
    device = encoder.get_input_embeddings().weight.device
    input_ids = torch.tensor(template.alone, dtype=torch.long, device=device).unsqueeze(0).expand(rows, -1)
    positions = shifted_position_ids(len(template.alone), shift_start, rows, first_position).to(device)
    out = encoder(input_ids=input_ids, position_ids=positions)
    return out.last_hidden_state[:, template.mask_in_alone]


# --- the method ------------------------------------------------------------------------------------


class PromptBERT(Method):
    kind = "promptbert"
    named_templates = PROMPTBERT_TEMPLATES

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__({**DEFAULTS, **params}, family, tokenizer)
        p = self.params
        self.template_string = resolve_template(p["template"], family, self.named_templates)
        second = p["template2"] if p.get("template2") is not None else p["template"]
        self.template2_string = resolve_template(second, family, self.named_templates)
        consistent = bool(p["denoise"])
        self.views = (template_ids(self.template_string, tokenizer, require_consistent=consistent),
                      template_ids(self.template2_string, tokenizer, require_consistent=consistent))

    # --- model ---------------------------------------------------------------------------------
    def build_model(self, encoder) -> SentenceModel:
        return SentenceModel(encoder, {"mlp": MLPHead(encoder.config.hidden_size)})

    # --- shared pieces -------------------------------------------------------------------------
    @property
    def denoise(self) -> bool:
        return bool(self.params["denoise"])

    def shift_start(self, template: TemplateIds) -> int:
        """Index of the first shifted position in the template-only input (after [CLS] + prefix)."""
        mode = self.params["delta_shift_start"]
        if mode == "released":
            return len(self.views[0].prefix)
        if mode == "per-template":
            return len(template.prefix)
        raise ValueError(f"delta_shift_start: unknown value '{mode}' (released | per-template)")

    def delta(self, model: SentenceModel, template: TemplateIds, rows: int) -> Tensor:
        mode = self.params["delta_positions"]
        if mode not in ("released", "aligned"):
            raise ValueError(f"delta_positions: unknown value '{mode}' (released | aligned)")
        first = first_position_id(model.encoder, self.family) if mode == "aligned" else 0
        return template_bias(model.encoder, template, rows, self.shift_start(template), first)

    def mask_states(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        """Last-layer state at each row's mask. -> (N, H)"""
        out = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return gather_positions(out.last_hidden_state, batch["mask_positions"])

    def denoised(self, model: SentenceModel, states: Tensor, lengths: Tensor, template: TemplateIds) -> Tensor:
        """``h − δ(ℓ)`` per row. states (N, H), lengths (N,) -> (N, H)"""
        delta = self.delta(model, template, int(lengths.max()) + 1)  # (rows, H)
        return states - delta[lengths]

    # --- training ------------------------------------------------------------------------------
    def collate(self, examples: list[list[int]]) -> dict[str, Tensor]:
        max_len = self.params["max_seq_length"]
        pad = self.tokenizer.pad_token_id
        # (B, 2, L) flattened to (2B, L): row 2i = view 0 (template), row 2i+1 = view 1 (template2)
        rows, lengths, masks = [], [], []
        for ids in examples:
            sentence = list(ids[:max_len])
            for view in self.views:
                rows.append(view.wrap(sentence))
                lengths.append(len(sentence))
                masks.append(view.mask_position(len(sentence)))
        input_ids, attention_mask = pad_sequences(rows, pad)
        return {"input_ids": input_ids, "attention_mask": attention_mask,
                "sentence_lengths": torch.tensor(lengths, dtype=torch.long),
                "mask_positions": torch.tensor(masks, dtype=torch.long)}

    def view_vectors(self, model: SentenceModel, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """The two views' (denoised) mask states before the MLP. -> (B, H), (B, H)"""
        states = self.mask_states(model, batch)  # (2B, H)
        views = [states[0::2], states[1::2]]
        if self.denoise:
            lengths = batch["sentence_lengths"]
            views = [self.denoised(model, views[v], lengths[v::2], self.views[v]) for v in range(2)]
        return views[0], views[1]

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        z1, z2 = self.view_vectors(model, batch)
        mlp = model.extras["mlp"]
        return simcse_loss(mlp(z1), mlp(z2), self.params["temperature"])

    # --- evaluation ----------------------------------------------------------------------------
    def token_level(self, purpose: str) -> bool:
        """Dev always, test only with ``test_protocol: denoised``, wrap at the token level."""
        protocol = self.params["test_protocol"]
        if protocol not in ("released", "denoised"):
            raise ValueError(f"test_protocol: unknown value '{protocol}' (released | denoised)")
        return purpose != "test" or protocol == "denoised"

    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        if self.token_level(purpose):
            ids = self.tokenizer(sentences, add_special_tokens=False, truncation=False)["input_ids"]
            return token_level_inputs(ids, self.views[0], self.tokenizer.pad_token_id)
        return string_level_inputs(sentences, self.template_string, self.tokenizer,
                                   period=bool(self.params["append_period"]))

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        states = self.mask_states(model, inputs)
        if self.denoise and self.token_level(purpose):
            states = self.denoised(model, states, inputs["sentence_lengths"], self.views[0])
        return states if self.params["mlp_only_train"] else model.extras["mlp"](states)
