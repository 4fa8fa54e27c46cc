"""ConPVP (Zeng et al., Findings of EMNLP 2022), as lemon0830/promptCSE's ``ConPVP.zip`` does it.

Per training sentence (``collate``; facts from methods.md §3 and the release's train.py /
simcse/models.py):

* **Anchor** ``[CLS] sentence [PAD]×k [MASK] . [SEP]``: the sentence's token ids (truncated to
  ``max_seq_length`` tokens *before* wrapping) followed by the suffix text
  ``"  [PAD] [PAD] [PAD] [PAD] [MASK] ."`` tokenized on its own (``k = prompt_len = 4``). The k
  trainable prompt vectors (``nn.Parameter``, uniform[0, 1) init) replace the word embeddings of
  the k tokens right before ``[MASK]``, in the anchor only, and the sequence enters the encoder as
  ``inputs_embeds`` so position/type embeddings, LayerNorm and dropout apply normally. (RoBERTa
  then numbers every position 2, 3, ... including the pad placeholders.)
* **Positive / negative prototype**: the sentence in one of 9 positive / 8 negative discrete
  templates (``sentrepro.methods.templates``). The release draws them once per example at preprocessing;
  here the draw is a pure function of (run seed, corpus index) (:func:`template_choice`), attached
  to each sentence by :meth:`ConPVP.training_items` (:class:`TemplatedCorpus`).
* A ``prompt_mask`` marks the template tokens (1) against [CLS], sentence, [SEP] and padding (0).
* All rows go through the encoder in ONE call, in train mode, with gradients; **template
  denoising** runs a second full pass over the same ``inputs_embeds`` with
  ``attention_mask = prompt_mask`` (template tokens only, ordinary positions) and every row's
  representation is ``h_full[MASK] − h_template_only[MASK]``, then the MLP (Linear+Tanh).
* **Loss**: logits of anchor i = ``[cos(a_i, p_j)/τ]_j ⊕ [cos(a_i, n_j)/τ]_j`` (B × 2B),
  cross-entropy with target i (:func:`prototype_loss`).

The [MASK] row index: the release pools at ``attention_mask.sum − 3`` because each of its templates
ends with ``[MASK] <one token> [SEP]``. With BERT's WordPiece vocabulary that is exactly where the
mask token sits (the tests check every template); RoBERTa's BPE should agree (its ``<mask>``
absorbs the space before it and " ." is one token), which could not be checked offline. This
module locates the mask token from the template instead (training) or in the tokenized row
(evaluation), which gives the same index there and stays right for templates or vocabularies
whose tail tokenizes differently (the paper's template wording, the tiny test vocabularies). The prompt vectors go to the k positions before that index, as in the release
(which with a byte-level BPE can include the "Ġ" tokens between the pad placeholders).

Config options (``params``), defaults = the released recipe:

* ``anchor: continuous | manual`` — Table 4 "w/ manual": the anchor is Prompt-BERT's searched
  discrete template T1 of the backbone family (token-level wrapping as Prompt-BERT trains; at
  evaluation the sentence is substituted into the template string, no period appended; no prompt
  vectors). Note: the release's commented-out Prompt-BERT list spells "memans" in its ":"
  templates; we use Prompt-BERT's own spelling.
* ``prototypes: both | positive | none`` — ``positive`` is Table 4 "w/o c−" (logits B × B);
  ``none`` is "w/o c+ & c−", SimCSE with continuous prompts: two dropout views of the prompted,
  denoised anchor, logits ``cos(a_i, a'_j)/τ``.
* ``templates: released-code | paper`` — the release's 9 + 8 template texts, or the wording of the
  paper's Table 1 (8 + 8).
* ``denoise: true | false`` — the release subtracts the template-only state; the paper never
  mentions it (false = the paper as written: the raw [MASK] state).
* ``mlp_only_train`` — evaluation uses the prompted anchor (no denoising), raw [MASK] state when
  true, MLP(state) when false, at dev and test alike. The paper is silent; the release's default is
  false (its trainer applies the MLP at dev evaluation), and its ``evaluation.py`` offers pooler
  ``mask`` (raw state) or ``smask`` (``model.pooler``, i.e. the MLP once ``simcse_to_huggingface``
  has renamed it), so both pairings are reproducible.
* ``prompt_len`` (4), ``max_seq_length`` (32 sentence tokens), ``temperature`` (0.05).

Precision: the release has no run script; the paper says its implementation "is based on SimCSE"
on a V100 (conpvp-paper.txt:133), whose recipe trains with ``--fp16`` (SimCSE
``run_unsup_example.sh:25``), and the third-party runs of this code (methods.md §3.1) pass
``--fp16`` too, so ``training.precision: authors`` resolves to ``fp16`` (an inference, not a stated
fact). Dev scoring: the vendored SimCSE trainer scores outside autocast (fp32).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from sentrepro.methods.blocks import MLPHead
from sentrepro.methods.base import Method, SentenceModel, cosine_logits, pad_sequences
from sentrepro.methods.templates import (
    CONPVP_NEGATIVE_TEMPLATES,
    CONPVP_POSITIVE_TEMPLATES,
    MASK,
    PROMPTBERT_TEMPLATES,
    TemplateIds,
    conpvp_anchor_suffix,
    fill_template,
    raw_template_ids,
    resolve_template,
    template_ids,
)

ANCHORS = ("continuous", "manual")
PROTOTYPES = ("both", "positive", "none")
TEMPLATE_SETS = tuple(CONPVP_POSITIVE_TEMPLATES)
MANUAL_ANCHOR = "T1"  # Prompt-BERT's unsupervised (and evaluation) template for BERT and RoBERTa
POSITIVE_STREAM, NEGATIVE_STREAM = 1, 2


# --- pure helpers -----------------------------------------------------------------------------------

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on uint64 arrays (wrapping arithmetic): a fast, well-mixed integer hash."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
    return x ^ (x >> np.uint64(31))


def template_choice(seed: int, stream: int, indices: list[int], count: int) -> list[int]:
    """Template number (0..count-1) of each corpus index: a pure function of (seed, stream, index).

    ``stream`` separates the positive and the negative draw. The same sentence gets the same
    templates in every epoch and whatever batch it lands in, as with the release's one-off choice.
    """
    with np.errstate(over="ignore"):
        key = _splitmix64(np.array([seed * 1_000_003 + stream], dtype=np.uint64))
        hashed = _splitmix64(np.asarray(indices, dtype=np.uint64) ^ key)
    return [int(h % np.uint64(count)) for h in hashed]


def wrap_with_template(template: TemplateIds, sentence: list[int]) -> tuple[list[int], list[int], int]:
    """``prefix + sentence + suffix``, its prompt mask and the [MASK] index.

    prompt mask: 0 for the start token, 1 for the prefix words, 0 for the sentence, 1 for the suffix
    tokens up to the end token, 0 for the end token (train.py:529).
    """
    ids = template.wrap(sentence)
    prefix, suffix = len(template.prefix), len(template.suffix)
    prompt_mask = [0] + [1] * (prefix - 1) + [0] * len(sentence) + [1] * (suffix - 1) + [0]
    return ids, prompt_mask, template.mask_position(len(sentence))


def insert_prompt(embeds: Tensor, prompt: Tensor, rows: Tensor, mask_index: Tensor) -> Tensor:
    """Write the k prompt vectors over positions ``mask_index−k .. mask_index−1`` of the chosen rows.

    embeds (R, L, H), prompt (k, H), rows (R,) bool, mask_index (R,) long -> (R, L, H). Out of place:
    the overwritten positions take their gradient from ``prompt``, not from the word embeddings.
    """
    k = prompt.shape[0]
    row_ids = torch.nonzero(rows, as_tuple=True)[0]  # (P,)
    if k == 0 or row_ids.numel() == 0:
        return embeds
    offsets = torch.arange(-k, 0, device=embeds.device)  # (k,)
    positions = mask_index[row_ids].unsqueeze(1) + offsets  # (P, k)
    values = prompt.to(embeds.dtype).unsqueeze(0).expand(row_ids.numel(), k, prompt.shape[1])  # (P, k, H)
    return embeds.index_put((row_ids.unsqueeze(1).expand_as(positions), positions), values)


def gather_positions(hidden: Tensor, index: Tensor) -> Tensor:
    """Hidden state of one position per row. (R, L, H), (R,) -> (R, H)"""
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), index]


def prototype_logits(anchor: Tensor, positive: Tensor, negative: Tensor | None, temperature: float) -> Tensor:
    """``[cos(a_i, p_j)/τ]_j ⊕ [cos(a_i, n_j)/τ]_j``. (B, H) ×3 -> (B, 2B); without negatives (B, B)."""
    logits = cosine_logits(anchor, positive, temperature)  # (B, B)
    if negative is not None:
        logits = torch.cat([logits, cosine_logits(anchor, negative, temperature)], dim=1)  # (B, 2B)
    return logits


def prototype_loss(anchor: Tensor, positive: Tensor, negative: Tensor | None, temperature: float) -> Tensor:
    """Cross-entropy of :func:`prototype_logits` with target i (anchor i's own positive prototype)."""
    logits = prototype_logits(anchor, positive, negative, temperature)
    target = torch.arange(anchor.shape[0], device=anchor.device)
    return nn.functional.cross_entropy(logits, target)


class TemplatedSentence(NamedTuple):
    """One training item: the sentence's token ids and the numbers of its positive / negative template."""

    ids: list[int]
    positive: int
    negative: int


class TemplatedCorpus:
    """The corpus as ConPVP's collate sees it: each sentence with its templates drawn from (seed, index)."""

    def __init__(self, corpus, seed: int, positives: int, negatives: int):
        self.corpus, self.seed, self.positives, self.negatives = corpus, seed, positives, negatives

    def __len__(self) -> int:
        return len(self.corpus)

    def __getitem__(self, index: int) -> TemplatedSentence:
        return TemplatedSentence(self.corpus[index],
                                 template_choice(self.seed, POSITIVE_STREAM, [index], self.positives)[0],
                                 template_choice(self.seed, NEGATIVE_STREAM, [index], self.negatives)[0])


class PromptVectors(nn.Module):
    """The continuous prompt: k trainable vectors, uniform[0, 1) as the release's ``torch.rand`` init."""

    def __init__(self, length: int, hidden: int):
        super().__init__()
        self.vectors = nn.Parameter(torch.rand(length, hidden))


# --- the method -------------------------------------------------------------------------------------


def _choice(params: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
    value = params.get(key, default)
    if value not in allowed:
        raise ValueError(f"conpvp param '{key}': '{value}' is not one of {', '.join(allowed)}")
    return value


class ConPVP(Method):
    kind = "conpvp"

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__(params, family, tokenizer)
        self.anchor = _choice(params, "anchor", ANCHORS, "continuous")
        self.prototypes = _choice(params, "prototypes", PROTOTYPES, "both")
        self.template_set = _choice(params, "templates", TEMPLATE_SETS, "released-code")
        self.denoise = bool(params.get("denoise", True))
        self.prompt_length = int(params.get("prompt_len", 4)) if self.anchor == "continuous" else 0
        if self.anchor == "continuous":
            self.anchor_suffix_text = conpvp_anchor_suffix(self.prompt_length, tokenizer.pad_token)
            self.anchor_template = raw_template_ids("", self.anchor_suffix_text, tokenizer)
        else:
            self.manual_template = resolve_template(MANUAL_ANCHOR, family, PROMPTBERT_TEMPLATES)
            self.anchor_template = template_ids(self.manual_template, tokenizer, require_consistent=False)
        positives = CONPVP_POSITIVE_TEMPLATES[self.template_set]
        negatives = CONPVP_NEGATIVE_TEMPLATES[self.template_set]
        self.positive_templates = [raw_template_ids(p, s, tokenizer) for p, s in positives]
        self.negative_templates = [raw_template_ids(p, s, tokenizer) for p, s in negatives]

    @property
    def views(self) -> int:
        """Sequences per sentence: anchor + positive (+ negative), or two anchors for ``none``."""
        return 3 if self.prototypes == "both" else 2

    def build_model(self, encoder) -> SentenceModel:
        hidden = encoder.config.hidden_size
        extras: dict[str, nn.Module] = {"mlp": MLPHead(hidden)}
        if self.prompt_length:
            extras["prompt"] = PromptVectors(self.prompt_length, hidden)
        return SentenceModel(encoder, extras)

    # --- training ----------------------------------------------------------------------------
    def training_items(self, corpus, seed: int) -> TemplatedCorpus:
        return TemplatedCorpus(corpus, seed, len(self.positive_templates), len(self.negative_templates))

    def collate(self, examples: list[TemplatedSentence]) -> dict[str, Tensor]:
        """Rows in blocks of B: anchors, then positives (then negatives); ``none``: anchors twice."""
        if not all(isinstance(e, TemplatedSentence) for e in examples):
            raise TypeError("conpvp.collate needs TemplatedSentence items (ids, positive, negative): read the corpus "
                            "through ConPVP.training_items(corpus, seed)")
        sentences = [e.ids[: self.params["max_seq_length"]] for e in examples]
        blocks: list[list[TemplateIds]] = [[self.anchor_template] * len(sentences)]
        if self.prototypes == "none":
            blocks.append([self.anchor_template] * len(sentences))
        else:
            blocks.append([self.positive_templates[e.positive] for e in examples])
        if self.prototypes == "both":
            blocks.append([self.negative_templates[e.negative] for e in examples])
        rows = [wrap_with_template(t, s) for block in blocks for t, s in zip(block, sentences)]
        input_ids, attention_mask = pad_sequences([r[0] for r in rows], self.tokenizer.pad_token_id)
        prompt_mask, _ = pad_sequences([r[1] for r in rows], 0)
        prompted = torch.zeros(len(rows), dtype=torch.bool)
        if self.prompt_length:
            prompted[: len(sentences) * (2 if self.prototypes == "none" else 1)] = True
        return {"input_ids": input_ids, "attention_mask": attention_mask, "prompt_mask": prompt_mask,
                "mask_index": torch.tensor([r[2] for r in rows], dtype=torch.long), "prompted": prompted}

    def _input_embeds(self, model: SentenceModel, input_ids: Tensor, rows: Tensor, mask_index: Tensor) -> Tensor:
        embeds = model.encoder.get_input_embeddings()(input_ids)  # (R, L, H)
        if self.prompt_length:
            embeds = insert_prompt(embeds, model.extras["prompt"].vectors, rows, mask_index)
        return embeds

    def representations(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        """Denoised [MASK] states of every row, before the MLP. -> (R, H)"""
        embeds = self._input_embeds(model, batch["input_ids"], batch["prompted"], batch["mask_index"])
        full = model.encoder(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).last_hidden_state
        states = gather_positions(full, batch["mask_index"])  # (R, H)
        if self.denoise:
            alone = model.encoder(inputs_embeds=embeds, attention_mask=batch["prompt_mask"]).last_hidden_state
            states = states - gather_positions(alone, batch["mask_index"])
        return states

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        z = model.extras["mlp"](self.representations(model, batch))  # (V*B, H)
        views = z.view(self.views, -1, z.shape[-1])  # (V, B, H)
        negative = views[2] if self.prototypes == "both" else None
        return prototype_loss(views[0], views[1], negative, self.params["temperature"])

    # --- evaluation --------------------------------------------------------------------------
    def eval_text(self, sentence: str) -> str:
        """The anchor wrapping at evaluation: the sentence substituted into the anchor as a string."""
        if self.anchor == "continuous":
            return sentence + self.anchor_suffix_text.replace(MASK, self.tokenizer.mask_token)
        return fill_template(self.manual_template, sentence, self.tokenizer.mask_token)

    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        encoded = self.tokenizer([self.eval_text(s) for s in sentences], padding=True, truncation=False,
                                 return_tensors="pt")
        input_ids = encoded["input_ids"]
        is_mask = input_ids == self.tokenizer.mask_token_id  # (N, L)
        positions = torch.arange(input_ids.shape[1]).expand_as(input_ids)
        mask_index = torch.where(is_mask, positions, -1).max(dim=1).values  # last mask token of each row
        return {"input_ids": input_ids, "attention_mask": encoded["attention_mask"], "mask_index": mask_index}

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        rows = torch.ones(inputs["input_ids"].shape[0], dtype=torch.bool, device=inputs["input_ids"].device)
        embeds = self._input_embeds(model, inputs["input_ids"], rows, inputs["mask_index"])
        out = model.encoder(inputs_embeds=embeds, attention_mask=inputs["attention_mask"])
        states = gather_positions(out.last_hidden_state, inputs["mask_index"])
        return states if self.params.get("mlp_only_train", False) else model.extras["mlp"](states)
