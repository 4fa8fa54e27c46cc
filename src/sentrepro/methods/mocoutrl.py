"""MoCoUTRL (Zou et al., Connection Science 35(1), 2023): the paper's method, or its released code.

Training data: (original, synonym, antonym) views of each corpus sentence, one adjective swapped
(``sentrepro.data.views``), tokenized once and read back as id triples (:meth:`training_items`).

``protocol: paper`` (default) — Algorithm 1 of the paper:

* sentence vectors ``x = p_SLS(f(x))`` for the three views; ``f`` = attention-masked mean of the
  encoder's last layer (the paper does not say how f pools; the release averages the last layer);
  ``p_SLS`` / ``p_TLS`` = nonlinear projectors, Linear(H,H)–ReLU–Linear(H,H) with Glorot (Xavier
  uniform) weights and zero biases (the paper: "nonlinear", "Glorot initialisation").
* long-span loss: the paper's formula (positive ``z_i·z_i+`` over a sum of ``z_i·z_i−`` terms) is
  read as InfoNCE with the synonym view as the positive and every synonym and antonym view of the
  batch as negatives: logits ``[cos(o_i, s_j)/τ]_j ⊕ [cos(o_i, a_j)/τ]_j`` (B × 2B), target i.
* token-level loss ``1/N Σ_i [MSE(e_i, w_i^syn) − MSE(e_i, w_i^ant)]`` with ``e_i`` = the momentum
  dictionary's embedding of the original word and ``w_i`` = ``p_TLS`` of the encoder state of the
  swapped word in the synonym / antonym view. A word split into several tokens is averaged over its
  tokens; its tokens are found by comparing the views' token ids (longest common prefix and suffix,
  at least one token). ``token_l2_norm`` (default true) L2-normalises ``e`` and ``w`` before the
  MSE: the "−MSE" term is unbounded below otherwise, and the paper's ablation lists an "L2 Norm"
  component (its "Gaussian Perturbation" is not described, so it is not implemented). Examples
  whose swapped word was truncated away are left out of the mean.
* ``L = λ·L_longspan + (1−λ)·L_token`` (``alpha`` = λ).
* dictionary ``d_ξ``: a copy of the word-embedding matrix, updated after every optimizer step as
  ``ξ ← m·ξ + (1−m)·φ`` (the paper prints ``(m−1)``, a sign slip: with it ξ would not be an average),
  detached (no gradient flows through it); zero_grad every step; shuffled epochs.
* evaluation: ``f`` alone — masked mean of the last layer, projectors discarded (Algorithm 1:
  "Output: encoder f_θ, discarding d_ξ, p_SLS and p_TLS"); texts truncated to ``max_seq_length``
  tokens as in training (only long WOS abstracts reach it).

``protocol: released-code`` — Uchiha-Monroe/MoCoUTRL_pub_ver ``contrastive_train.py`` where it
differs (methods.md §4.2), quirks included:

* every view ``[CLS] ids[:198] [SEP]`` padded to exactly ``max_seq_length`` = 200 and the sentence
  vector = plain mean over all 200 positions, padding included; no projectors.
* NT-Xent of pytorch-metric-learning over the 3B vectors with labels ``[0..B−1, 0..B−1, B..2B−1]``
  (:func:`ntxent_pml`: one term per ordered positive pair (o_i, s_i) and (s_i, o_i), negatives = all
  rows of other labels, ``log(num/den + tiny)``, mean over the 2B terms).
* token loss: the positions where the 200-padded original and antonym ids differ, collected over the
  batch into one list; only if that list has exactly B entries, MSE between the encoder states at
  those positions of rows 0, B and 2B (the FIRST example's three rows, a bug), the antonym state
  negated, and the dictionary rows of the token ids there; otherwise the MSE term is replaced by the
  NT-Xent value. (The release compares with the configured batch size and crashes on a short last
  batch; we compare with the actual one.)
* the dictionary is never detached: ``D_t = m·D_{t−1} + (1−m)·W`` keeps the word-embedding
  parameter W in the graph, so the MSE also sends ``(1 − m^t)·∂L/∂D`` to W after t updates (the sum of
  the chain's ``(1−m)·m^j`` factors). We add exactly that gradient without keeping the ever-growing
  graph (:meth:`MomentumDictionary.rows`).
* no ``zero_grad`` (gradients accumulate over all steps; ``reset_grads = False``); Adam lr 1e-6
  (``torch-adamw`` with weight decay 0 is Adam), batch 8, 5 epochs, τ 0.07, α 0.5, m 0.999, no
  gradient clipping, data in file order (``shuffle: false``). Its scheduler,
  ``CosineAnnealingWarmRestarts(T_0=2000, eta_min=1e-8)`` stepped in epochs, keeps the lr within
  0.002 % of 1e-6 over 5 epochs: config ``schedule: constant``.
* evaluation: the release has no STS evaluation; its WOS code embeds a text as the mean over all 200
  padded positions, which is used here.
* **no dropout**: ``DebertaModel.from_pretrained`` (``contrastive_train.py:55``) returns the model in
  eval mode and the script never calls ``.train()`` (unlike ``train_down_stream_wos.py:72``), so the
  released contrastive training runs without dropout: :meth:`MoCoUTRL.set_train_mode` puts the whole
  model in eval mode for ``released-code``; ``paper`` keeps train mode (dropout on), as a training
  procedure the paper does not qualify implies.

Precision (both protocols): fp32 — ``contrastive_train.py`` uses neither autocast nor a GradScaler,
so ``training.precision: authors`` resolves to ``fp32``.

Model selection is the project loop's STS-B dev evaluation (``eval_steps``); the release selects
nothing (config: one evaluation at the end). Hyper-parameters: the paper's available text states
none, so both protocols use the release's defaults (config.yaml). Data: the release preprocessed
BookCorpus lines (not redistributable); the views here are built from the configured training corpus
(wiki1m), with the release's filters (``sentrepro.data.views``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sentrepro.methods.blocks import pool_avg
from sentrepro.data.views import ViewTriples
from sentrepro.methods.base import Method, SentenceModel, cosine_logits, pad_sequences

PROTOCOLS = ("paper", "released-code")


# --- pure maths ---------------------------------------------------------------------------------------


def ntxent_pml(embeddings: Tensor, labels: Tensor, temperature: float) -> Tensor:
    """pytorch-metric-learning's NTXentLoss with its default (mean) reducer. (N, H), (N,) -> scalar

    For every ordered pair (a, p) with the same label, a ≠ p:
    ``−log( e^{s_ap/τ} / (e^{s_ap/τ} + Σ_{n: label_n ≠ label_a} e^{s_an/τ}) + tiny )``, s = cosine;
    the mean over those pairs (0 when there is no positive pair or no negative at all).
    """
    sims = cosine_logits(embeddings, embeddings, temperature)  # (N, N), already / τ
    same = labels.unsqueeze(0) == labels.unsqueeze(1)  # (N, N)
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    anchors, positives = torch.nonzero(same & ~eye, as_tuple=True)  # (P,), (P,)
    if anchors.numel() == 0 or bool(same.all()):
        return embeddings.sum() * 0.0
    pos = sims[anchors, positives]  # (P,)
    neg = sims[anchors].masked_fill(same[anchors], float("-inf"))  # (P, N)
    top = torch.maximum(pos, neg.max(dim=1).values).detach()  # (P,)
    numerator = torch.exp(pos - top)
    denominator = torch.exp(neg - top.unsqueeze(1)).sum(dim=1) + numerator
    tiny = torch.finfo(numerator.dtype).tiny
    return -torch.log(numerator / denominator + tiny).mean()


def released_labels(batch_size: int, device=None) -> Tensor:
    """``[0..B−1, 0..B−1, B..2B−1]``: originals and synonyms share labels, each antonym has its own."""
    first = torch.arange(batch_size, device=device)
    return torch.cat([first, first, first + batch_size])


def views_infonce(original: Tensor, synonym: Tensor, antonym: Tensor, temperature: float) -> Tensor:
    """The paper's long-span loss as read here: CE over ``[cos(o_i, s_j) ⊕ cos(o_i, a_j)]/τ``, target i."""
    logits = torch.cat([cosine_logits(original, synonym, temperature),
                        cosine_logits(original, antonym, temperature)], dim=1)  # (B, 2B)
    return nn.functional.cross_entropy(logits, torch.arange(original.shape[0], device=original.device))


def token_contrast(dictionary: Tensor, synonym: Tensor, antonym: Tensor, valid: Tensor, l2_norm: bool) -> Tensor:
    """Mean over valid examples of ``MSE(e, w_syn) − MSE(e, w_ant)``; each MSE averages over H.

    dictionary, synonym, antonym: (B, H); valid (B,) bool. -> scalar (0 when nothing is valid)
    """
    if l2_norm:
        dictionary, synonym, antonym = (nn.functional.normalize(t.float(), dim=-1)
                                        for t in (dictionary, synonym, antonym))
    per_example = ((dictionary - synonym) ** 2).mean(-1) - ((dictionary - antonym) ** 2).mean(-1)  # (B,)
    if not bool(valid.any()):
        return per_example.sum() * 0.0
    return per_example[valid].mean()


def changed_span(a: list[int], b: list[int]) -> tuple[int, int, int]:
    """Where two id lists differ: (start, end in a, end in b) after the common prefix and suffix."""
    start = 0
    limit = min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        start += 1
    suffix = 0
    while suffix < limit - start and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    return start, len(a) - suffix, len(b) - suffix


def at_least_one_token(start: int, end: int, length: int) -> tuple[int, int]:
    """A span widened to one token when empty (a pure insertion), kept inside ``length``."""
    if end > start:
        return start, end
    start = min(start, length - 1)
    return start, start + 1


def word_spans(original: list[int], synonym: list[int], antonym: list[int]) -> list[tuple[int, int]]:
    """Token spans of the swapped word in the original, synonym and antonym ids (no special tokens)."""
    start, end_original, end_antonym = changed_span(original, antonym)
    original_span = at_least_one_token(start, end_original, len(original))
    antonym_span = at_least_one_token(start, end_antonym, len(antonym))
    if original == synonym:  # the synonym drawn was the word itself
        synonym_span = original_span
    else:
        start, _, end_synonym = changed_span(original, synonym)
        synonym_span = at_least_one_token(start, end_synonym, len(synonym))
    return [original_span, synonym_span, antonym_span]


def differing_positions(a: list[int], b: list[int]) -> list[int]:
    """Indices (over the shorter length) where two id sequences differ (the release's collate_fn_for_ctl)."""
    return [i for i in range(min(len(a), len(b))) if a[i] != b[i]]


# --- modules ------------------------------------------------------------------------------------------


class Projector(nn.Module):
    """Nonlinear projector Linear(H,H)–ReLU–Linear(H,H), Glorot-uniform weights, zero biases."""

    def __init__(self, hidden: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        for layer in (self.layers[0], self.layers[2]):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, features: Tensor) -> Tensor:  # (..., H) -> (..., H)
        return self.layers(features)


class MomentumDictionary(nn.Module):
    """A copy of the word-embedding matrix kept as an exponential moving average of it (buffers)."""

    def __init__(self, weight: Tensor):
        super().__init__()
        self.register_buffer("table", weight.detach().clone().float())  # (V, H)
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def update(self, weight: Tensor, momentum: float) -> None:
        """``table ← m·table + (1−m)·weight`` (after an optimizer step)."""
        self.table.mul_(momentum).add_(weight.detach().float(), alpha=1 - momentum)
        self.updates += 1

    def rows(self, token_ids: Tensor, weight: Tensor | None = None, momentum: float = 0.0) -> Tensor:
        """Dictionary rows of ``token_ids`` (…,) -> (…, H).

        With ``weight`` (released-code protocol) the rows carry the gradient the release's undetached
        EMA chain sends to the embedding matrix: value unchanged, d rows / d weight = 1 − m^t.
        """
        rows = self.table[token_ids]
        if weight is None:
            return rows
        coefficient = 1.0 - momentum ** int(self.updates)
        current = weight[token_ids]
        return rows + coefficient * (current - current.detach())


# --- the method ---------------------------------------------------------------------------------------


class MoCoUTRL(Method):
    kind = "mocoutrl"

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__(params, family, tokenizer)
        self.protocol = params.get("protocol", "paper")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"mocoutrl param 'protocol': '{self.protocol}' is not one of {', '.join(PROTOCOLS)}")
        self.released = self.protocol == "released-code"
        self.reset_grads = not self.released  # the release never calls zero_grad
        self.max_len = int(params.get("max_seq_length", 200))

    def build_model(self, encoder) -> SentenceModel:
        hidden = encoder.config.hidden_size
        extras: dict[str, nn.Module] = {"dictionary": MomentumDictionary(encoder.get_input_embeddings().weight)}
        if not self.released:
            extras["sentence_projector"] = Projector(hidden)
            extras["token_projector"] = Projector(hidden)
        return SentenceModel(encoder, extras)

    # --- training ----------------------------------------------------------------------------
    def set_train_mode(self, model: SentenceModel) -> None:
        """``released-code``: eval mode throughout (no dropout), as the release; ``paper``: train mode."""
        model.train(not self.released)

    def training_items(self, corpus, seed: int):
        return ViewTriples(corpus)

    def _with_special_tokens(self, ids: list[int]) -> list[int]:
        tok = self.tokenizer
        return [tok.cls_token_id] + ids[: self.max_len - 2] + [tok.sep_token_id]

    def collate(self, examples: list[tuple[list[int], list[int], list[int]]]) -> dict[str, Tensor]:
        """Rows: B originals, B synonyms, B antonyms, each ``[CLS] ids [SEP]`` (truncated to max_seq_length)."""
        batch = len(examples)
        rows = [self._with_special_tokens(triple[view]) for view in range(3) for triple in examples]
        input_ids, attention_mask = pad_sequences(rows, self.tokenizer.pad_token_id)
        if self.released:
            extra = self.max_len - input_ids.shape[1]  # padding="max_length"
            input_ids = nn.functional.pad(input_ids, (0, extra), value=self.tokenizer.pad_token_id)
            attention_mask = nn.functional.pad(attention_mask, (0, extra), value=0)
            positions = [p for b in range(batch) for p in differing_positions(input_ids[b].tolist(),
                                                                              input_ids[2 * batch + b].tolist())]
            return {"input_ids": input_ids, "attention_mask": attention_mask,
                    "word_index": torch.tensor(positions, dtype=torch.long)}
        span_mask = torch.zeros(input_ids.shape, dtype=torch.float)
        valid = torch.zeros(batch, dtype=torch.bool)
        for b, triple in enumerate(examples):
            spans = word_spans(*triple)
            inside = []
            for view, (start, end) in enumerate(spans):
                limit = len(rows[view * batch + b]) - 1  # [SEP] index: the first position past the kept ids
                start, end = start + 1, min(end + 1, limit)  # +1 for [CLS]
                inside.append(start < end)
                if start < end:
                    span_mask[view * batch + b, start:end] = 1.0
            valid[b] = all(inside)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "span_mask": span_mask, "valid": valid}

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        hidden = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        alpha, temperature = self.params["alpha"], self.params["temperature"]
        if self.released:
            return self._released_loss(model, batch, hidden, alpha, temperature)
        sentences = model.extras["sentence_projector"](pool_avg(hidden, batch["attention_mask"]))  # (3B, H)
        original, synonym, antonym = sentences.view(3, -1, sentences.shape[-1])
        long_span = views_infonce(original, synonym, antonym, temperature)
        span_mask = batch["span_mask"]  # (3B, L)
        words = pool_avg(hidden, span_mask)  # (3B, H) mean state over each view's swapped-word tokens
        words = model.extras["token_projector"](words).view(3, -1, words.shape[-1])
        batch_size = original.shape[0]
        looked_up = model.extras["dictionary"].rows(batch["input_ids"][:batch_size])  # (B, L, H), detached
        dictionary = pool_avg(looked_up, span_mask[:batch_size])  # (B, H)
        token = token_contrast(dictionary, words[1], words[2], batch["valid"], self.params.get("token_l2_norm", True))
        return alpha * long_span + (1 - alpha) * token

    def _released_loss(self, model: SentenceModel, batch: dict[str, Tensor], hidden: Tensor, alpha: float,
                       temperature: float) -> Tensor:
        batch_size = hidden.shape[0] // 3
        representations = hidden.mean(dim=1)  # (3B, H): all positions, padding included
        ntxent = ntxent_pml(representations, released_labels(batch_size, hidden.device), temperature)
        index = batch["word_index"]
        if index.numel() != batch_size:
            return alpha * ntxent + (1 - alpha) * ntxent
        first_rows = (0, batch_size, 2 * batch_size)  # the release's rows 0, B and 2B for every i
        states = torch.cat([hidden[first_rows[0], index], hidden[first_rows[1], index],
                            -hidden[first_rows[2], index]])  # (3B, H)
        gold_ids = torch.cat([batch["input_ids"][row, index] for row in first_rows])  # (3B,)
        weight = model.encoder.get_input_embeddings().weight
        golds = model.extras["dictionary"].rows(gold_ids, weight, self.params["momentum"])
        mse = nn.functional.mse_loss(states.float(), golds.float())
        return alpha * ntxent + (1 - alpha) * mse

    def after_step(self, model: SentenceModel, step: int) -> None:
        model.extras["dictionary"].update(model.encoder.get_input_embeddings().weight, self.params["momentum"])

    # --- evaluation --------------------------------------------------------------------------
    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        if self.released:
            encoded = self.tokenizer(sentences, padding="max_length", truncation=True, max_length=self.max_len,
                                     return_tensors="pt")
        else:  # truncated like training (and the release's WOS code): long WOS abstracts fit BERT/RoBERTa too
            encoded = self.tokenizer(sentences, padding=True, truncation=True, max_length=self.max_len,
                                     return_tensors="pt")
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        hidden = model.encoder(**inputs).last_hidden_state
        return hidden.mean(dim=1) if self.released else pool_avg(hidden, inputs["attention_mask"])
