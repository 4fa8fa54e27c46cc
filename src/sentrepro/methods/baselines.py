"""Non-fine-tuned baselines of the PromptBERT paper (its Table of non-fine-tuned models and Knowl 5).

None of these trains (``trains: false`` in the registry): each embeds with the pretrained backbone as loaded.
(The last-2 average is ``frozen`` with ``pooler: avg_top2``.)

* ``manual_prompt`` — the [MASK] state of a hand-written prompt, no fine-tuning, no denoising
  (Prompt-BERT ``run.sh`` ``bert-prompt``: template ``*cls*_This_sentence_:_"*sent_0*"_means*mask*.*sep+*``,
  expected avg 67.85 on BERT-base). The released evaluation appends "." to sentences not ending in
  ``.?"'`` (``append_period``; issue #22: 62 → 67 with it), substitutes the sentence into the
  template string and tokenizes the whole string.
* ``whitening`` — BERT-whitening (Su et al., 2021; bojone/BERT-whitening ``compute_kernel_bias``):
  pooled vectors x are mapped to ``(x − μ) W`` with μ the mean and ``W = U diag(1/√s)`` from the
  SVD ``U diag(s) Uᵀ`` of their (unbiased) covariance; ``whitening_dims`` keeps the first k columns
  of W (null = all). Statistics: the vectors of ONE encoding call — for the STS suite, every
  sentence occurrence of every evaluated test set (STS12-16, STS-B test, SICK-R test) together.
  BERT-whitening's "target" setting instead fits one transform per task on all of that task's
  pairs (STS-B and SICK-R including their train and dev splits). Pooling defaults to BERT-whitening's
  first-last average (``avg_first_last`` with ``first_last_definition: first-layer``: the first
  Transformer layer's output and the last layer, ``Transformer-0-FeedForward-Norm``).
* ``static_token_avg`` — the average of static token embeddings (the input word-embedding rows,
  no position / type embeddings, no LayerNorm), Prompt-BERT ``evaluation.py --embedding_only``.
  ``remove`` lists the biased tokens taken out (Knowl 5): ``frequent`` (the released list of 36
  frequent tokens per family), ``subwords`` (WordPiece ``##`` pieces; BPE pieces without ``Ġ``),
  ``uppercase`` (the released code lower-cases every kept token) and ``punctuation`` (the released
  set for WordPiece; pieces without a letter or digit for BPE). With an empty list: the plain
  tokenization, [CLS]/[SEP] included in the average (``static-embedding``). With any removal:
  the sentence (prefixed by a space) is tokenized without special tokens and filtered, [CLS]/[SEP]
  are left out of the average (``--remove_continue_word``). When ``subwords`` is removed the kept
  tokens are joined with spaces and re-tokenized, exactly as the released code does (a sentence
  left empty becomes [PAD] for WordPiece, a lone space for BPE); otherwise the kept ids are averaged
  as they are (re-joining would split ``##`` pieces), with ``uppercase`` mapping a token to its
  lower-cased vocabulary entry when one exists. The released code only has all four removals at
  once; the intermediate rows of Knowl 5 come from unreleased code, so their handling here is ours.
"""

from __future__ import annotations

import re

import numpy as np
from torch import Tensor

from sentrepro.methods.blocks import pool_avg, pooled_embedding
from sentrepro.methods.base import Method, SentenceModel, pad_sequences
from sentrepro.methods.promptbert import gather_positions, string_level_inputs
from sentrepro.methods.templates import PROMPTBERT_TEMPLATES, resolve_template

# Prompt-BERT evaluation.py:178-182 (WordPiece: bert-base-uncased) and :180 (BPE: roberta-base). The
# BPE list holds 'Ġ, ' with a trailing space, which matches no token (kept verbatim; ',' goes with
# the punctuation anyway).
FREQUENT_TOKENS = {
    "bert": frozenset({".", "a", "the", "in", ",", "is", "to", "of", "and", "'", "on", "man", "-", "s", "with",
                       "for", "\"", "at", "##s", "woman", "are", "it", "two", "that", "you", "dog", "said",
                       "playing", "i", "an", "as", "was", "from", ":", "by", "white"}),
    "roberta": frozenset({"Ġ.", "Ġa", "Ġthe", "Ġin", "a", "Ġ, ", "Ġis", "Ġto", "Ġof", "Ġand", "Ġon", "Ġ'", "s",
                          ".", "the", "Ġman", "-", "Ġwith", "Ġfor", "Ġat", "Ġwoman", "Ġare", "Ġ\"", "Ġthat",
                          "Ġit", "Ġdog", "Ġsaid", "Ġplaying", "Ġwas", "Ġas", "Ġfrom", "Ġ:", "Ġyou", "Ġan", "i",
                          "Ġby"}),
}
WORDPIECE_PUNCTUATION = frozenset({
    "?", "*", "#", "´", "’", "=", "…", "|", "~", "/", "‚", "¿", "–", "»", "-", "€", "‘", "\"", "(", "•", "`",
    "$", ":", "[", "”", "%", "£", "<", "[UNK]", ";", "“", "@", "_", "{", "^", ",", ".", "!", "™", "&", "]",
    ">", "\\", "'", ")", "+", "—"})
REMOVALS = ("frequent", "subwords", "uppercase", "punctuation")
BPE_SPACE = "Ġ"


class NotTrained(Method):
    """A method that only embeds: no batches, no loss (``trains: false`` in the registry)."""

    def collate(self, examples):
        raise TypeError(f"'{self.kind}' is a non-fine-tuned baseline and is not trained")

    def loss(self, model, batch):
        raise TypeError(f"'{self.kind}' is a non-fine-tuned baseline and is not trained")


# --- manual prompt ---------------------------------------------------------------------------------


class ManualPrompt(NotTrained):
    kind = "manual_prompt"

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__({"template": "manual", "append_period": True, **params}, family, tokenizer)
        self.template = resolve_template(self.params["template"], family, PROMPTBERT_TEMPLATES)

    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        return string_level_inputs(sentences, self.template, self.tokenizer,
                                   period=bool(self.params["append_period"]))

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        out = model.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
        return gather_positions(out.last_hidden_state, inputs["mask_positions"])


# --- whitening -------------------------------------------------------------------------------------


def whitening_kernel(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BERT-whitening's transform. (N, H) -> kernel W (H, H), mean μ (H,); whitened = (x − μ) W."""
    x = np.asarray(vectors, dtype=np.float64)
    mean = x.mean(axis=0)
    covariance = np.cov(x.T)  # (H, H), unbiased
    u, s, _ = np.linalg.svd(covariance)
    if s[-1] <= s[0] * 1e-12:
        raise ValueError(f"whitening: the covariance of {x.shape[0]} vectors of dimension {x.shape[1]} is "
                         f"singular (smallest singular value {s[-1]:.3g}): fewer distinct sentences than "
                         f"dimensions, or vectors confined to a subspace (an untrained LayerNorm, gain 1 and bias "
                         f"0, makes every hidden state sum to zero)")
    return u / np.sqrt(s)[None, :], mean


def whiten(vectors: np.ndarray, kernel: np.ndarray, mean: np.ndarray, dims: int | None = None) -> np.ndarray:
    """(x − μ) W[:, :dims]. (N, H) -> (N, dims or H) float32"""
    w = kernel if dims is None else kernel[:, :dims]
    return ((np.asarray(vectors, dtype=np.float64) - mean) @ w).astype(np.float32)


class Whitening(NotTrained):
    kind = "whitening"

    def __init__(self, params: dict, family: str, tokenizer):
        defaults = {"pooler": "avg_first_last", "first_last_definition": "first-layer", "whitening_dims": None}
        super().__init__({**defaults, **params}, family, tokenizer)

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        return pooled_embedding(model.encoder, inputs, self.params["pooler"], self.params["first_last_definition"])

    def transform_embeddings(self, vectors: np.ndarray, purpose: str) -> np.ndarray:
        kernel, mean = whitening_kernel(vectors)
        return whiten(vectors, kernel, mean, self.params["whitening_dims"])


# --- static token embeddings -----------------------------------------------------------------------


def is_subword(token: str, family: str) -> bool:
    """A word-internal piece: WordPiece ``##x``; byte-level BPE pieces without the space marker ``Ġ``."""
    return "##" in token if family == "bert" else BPE_SPACE not in token


def is_punctuation(token: str, family: str) -> bool:
    """Released rules: the WordPiece punctuation set; for BPE, a piece with no letter or digit."""
    if family == "bert":
        return token in WORDPIECE_PUNCTUATION
    return re.search("[a-zA-Z0-9]", token) is None


def keep_token(token: str, family: str, remove: frozenset[str]) -> bool:
    if "frequent" in remove and token in FREQUENT_TOKENS[family]:
        return False
    if "subwords" in remove and is_subword(token, family):
        return False
    return not ("punctuation" in remove and is_punctuation(token, family))


def rebuild_text(tokens: list[str], family: str, lowercase: bool) -> str:
    """The released code's re-joined sentence (each kept word followed by a space)."""
    if family == "bert":
        text = "".join((t.lower() if lowercase else t) + " " for t in tokens)
        return text if text else "[PAD]"
    words = [t.replace(BPE_SPACE, "") for t in tokens]
    return " " + "".join((w.lower() if lowercase else w) + " " for w in words)


class StaticTokenAvg(NotTrained):
    kind = "static_token_avg"

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__({"remove": [], **params}, family, tokenizer)
        unknown = sorted(set(self.params["remove"]) - set(REMOVALS))
        if unknown:
            raise ValueError(f"static_token_avg: unknown removal(s) {unknown} (known: {', '.join(REMOVALS)})")
        if self.params["remove"] and family not in FREQUENT_TOKENS:
            raise ValueError(f"static_token_avg: no biased-token lists for backbone family '{family}' "
                             f"(known: {', '.join(sorted(FREQUENT_TOKENS))})")
        self.remove = frozenset(self.params["remove"])

    def filtered_ids(self, sentence: str) -> list[int]:
        """Token ids (with [CLS]/[SEP]) of the sentence after the configured removals."""
        tok = self.tokenizer
        pieces = tok.convert_ids_to_tokens(tok.encode(" " + sentence, add_special_tokens=False))
        kept = [p for p in pieces if keep_token(p, self.family, self.remove)]
        lowercase = "uppercase" in self.remove
        if "subwords" in self.remove:
            return tok.encode(rebuild_text(kept, self.family, lowercase))
        ids = [self.lowercased_id(p) if lowercase else tok.convert_tokens_to_ids(p) for p in kept]
        return [tok.cls_token_id, *(ids or [tok.pad_token_id]), tok.sep_token_id]

    def lowercased_id(self, token: str) -> int:
        vocab = self.tokenizer.get_vocab()
        lower = token.lower()
        return vocab[lower] if lower in vocab else vocab[token]

    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        tok = self.tokenizer
        if not self.remove:
            encoded = tok(sentences, padding=True, truncation=False, return_tensors="pt")
            return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
        input_ids, attention_mask = pad_sequences([self.filtered_ids(s) for s in sentences], tok.pad_token_id)
        specials = (input_ids == tok.cls_token_id) | (input_ids == tok.sep_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask.masked_fill(specials, 0)}

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        static = model.encoder.get_input_embeddings()(inputs["input_ids"])  # (B, L, H)
        return pool_avg(static, inputs["attention_mask"])
