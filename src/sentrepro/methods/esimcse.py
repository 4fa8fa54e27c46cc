"""Unsupervised ESimCSE (Wu et al., 2022), as caskcsg/sentemb's released ESimCSE code does it.

SimCSE plus two changes (methods.md §5.1):

* **Subword repetition on view 2 only.** View 1 is ``[CLS] + ids[:max_len-2] + [SEP]`` as in
  SimCSE; view 2 is the same sequence with ``add_len = randrange(min(10, int(dup_rate·n)))``
  tokens (n = sequence length with the special tokens; nothing is repeated when
  ``int(dup_rate·n) == 0``) drawn without replacement from positions 1..n−2 and each repeated in
  place (``train.py:516-523``). The result is not re-truncated.
  The reference draws this once, in preprocessing, with Python's ``random``, so each sentence keeps
  one augmentation for the whole run. Batches here are built on the fly, so the choice is made
  fixed per example by drawing it from a ``random.Random`` seeded by ``(seed << 32) | corpus
  index`` (run seed, sentence index): the same sentence gets the same repetition whenever and
  however often it is batched, and different seeds give different repetitions. ``training_items``
  wraps the corpus so each item carries that key (:class:`KeyedSentence`) into ``collate``.
* **Momentum encoder initial state** (``momentum_init``). In the release the momentum encoder is a
  separate ``BertModel(config)`` / ``RobertaModel(config)`` (``models.py:347``, ``:416``) that
  ``cl_init`` re-initialises with the rest of the model (``init_weights()``, ``models.py:94``);
  ``from_pretrained`` then loads only the online encoder, so the momentum encoder **starts random**
  (the released ``logs/bert-base-uncased.log:62`` and ``logs/roberta-base.log:67`` list every
  ``momentum_model.*`` weight as newly initialised). ``random`` (default) does the same:
  transformers 4.2.1's ``_init_weights`` — N(0, ``initializer_range``) for Linear and Embedding
  weights, zero Linear biases, LayerNorm 1 / 0 (:func:`reinitialise_`). With m = 0.995 the random
  part still weighs 0.995^125 = 0.53 at step 125, so the early queue negatives come mostly from it.
  ``copy`` starts from a copy of the pretrained encoder (MoCo's usual choice; not what was released).
* **Momentum-contrast negatives.** The momentum encoder (no gradient) follows the online
  encoder by EMA, ``θm ← m·θm + (1−m)·θ`` over the parameters (m = 0.995). The reference runs the
  update INSIDE the forward pass, right after the online encoder, i.e. with the parameters from
  before this step's optimizer update (``models.py:161-163``): ``momentum_update: in-forward``.
  ``after-step`` updates after the optimizer step instead. After the online pass (and the loss)
  the momentum encoder, in eval mode and without gradient, encodes view 1 (the original
  sentence); its [CLS] goes through the ONLINE MLP and is detached and appended to a FIFO queue of
  the last ``neg_size`` vectors (``trainers.py:619-636``). The loss is cross-entropy over
  ``[cos(z1, z2)/τ ⊕ cos(z1, queue)/τ]`` with target i, the queue holding previous steps' vectors
  only (the first step has none).

The momentum encoder and the queue are buffers / submodules of :class:`ESimCSEModel`, outside
``extras``: resumable ``last/`` checkpoints (the whole ``state_dict``) carry them, the ``best/``
checkpoint used for evaluation does not. Evaluation is SimCSE's: raw [CLS] (``mlp_only_train``).
Only the released ``dup_type: bpe`` (subword) variant is implemented; the code's ``word`` variant
is not used by its run script.

Precision: ``--fp16`` (``run.sh:52``, the released log's "Using amp fp16 backend",
``logs/roberta-base.log:71``), inherited from :class:`SimCSE` (``training.precision: authors``);
dev scoring outside autocast as SimCSE's trainer (``esimcse/trainers.py:105-118``).
"""

from __future__ import annotations

import copy
import random
from typing import NamedTuple

import torch
from torch import Tensor, nn

from sentrepro.methods.blocks import MLPHead, pool_cls
from sentrepro.methods.base import SentenceModel, cosine_logits, pad_sequences
from sentrepro.methods.simcse import SimCSE, with_special_tokens

DEFAULTS = {"momentum_update": "in-forward", "momentum_init": "random", "mlp_only_train": True}
MOMENTUM_INITS = ("random", "copy")
REQUIRED = ("temperature", "max_seq_length", "dup_rate", "neg_size", "momentum")


# --- pure helpers ----------------------------------------------------------------------------------


def example_key(seed: int, index: int) -> int:
    """The random-stream seed that fixes one corpus sentence's augmentation for a run."""
    return (int(seed) << 32) | int(index)


class KeyedSentence(NamedTuple):
    """A training item: the sentence's token ids (no special tokens) and its augmentation key."""

    ids: list[int]
    key: int


class KeyedCorpus:
    """The tokenized corpus seen through ESimCSE: item i is ``KeyedSentence(corpus[i], key(seed, i))``."""

    def __init__(self, corpus, seed: int):
        self.corpus = corpus
        self.seed = seed

    def __len__(self) -> int:
        return len(self.corpus)

    def __getitem__(self, index: int) -> KeyedSentence:
        return KeyedSentence(self.corpus[index], example_key(self.seed, index))


def repeat_subwords(sequence: list[int], dup_rate: float, rng: random.Random) -> list[int]:
    """ESimCSE's subword repetition of a sequence WITH its special tokens (first/last never repeated)."""
    n = len(sequence)
    limit = int(dup_rate * n)
    if limit <= 0:
        return list(sequence)
    add_len = rng.randrange(min(10, limit))
    repeated = set(rng.sample(range(1, n - 1), add_len))
    out: list[int] = []
    for position, token in enumerate(sequence):
        if position in repeated:
            out.append(token)
        out.append(token)
    return out


def enqueue(queue: Tensor, new: Tensor, capacity: int) -> Tensor:
    """FIFO: append ``new`` after ``queue`` and keep the last ``capacity`` rows. (Q, H), (B, H) -> (≤cap, H)"""
    if capacity < 1:
        raise ValueError(f"esimcse: neg_size must be at least 1, got {capacity}")
    return torch.cat([queue, new], dim=0)[-capacity:]


def esimcse_loss(z1: Tensor, z2: Tensor, negatives: Tensor, temperature: float) -> Tensor:
    """Cross-entropy over [cos(z1, z2) ⊕ cos(z1, negatives)] / τ, target i. (B,H), (B,H), (Q,H) -> scalar"""
    logits = cosine_logits(z1, z2, temperature)  # (B, B)
    if negatives.shape[0]:
        logits = torch.cat([logits, cosine_logits(z1, negatives, temperature)], dim=1)  # (B, B+Q)
    target = torch.arange(z1.shape[0], device=z1.device)
    return torch.nn.functional.cross_entropy(logits, target)


@torch.no_grad()
def reinitialise_(module: nn.Module, std: float) -> None:
    """Fresh weights for every submodule, as transformers 4.2.1's BERT/RoBERTa ``_init_weights``.

    Linear / Embedding weights ~ N(0, std²), Linear biases 0, LayerNorm weight 1 and bias 0. A
    parameter outside those module types would keep its value silently, so it is an error.
    """
    covered: set[int] = set()
    for sub in module.modules():
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            sub.weight.normal_(mean=0.0, std=std)
            covered.add(id(sub.weight))
        elif isinstance(sub, nn.LayerNorm):
            sub.weight.fill_(1.0)
            sub.bias.zero_()
            covered.update((id(sub.weight), id(sub.bias)))
        if isinstance(sub, nn.Linear) and sub.bias is not None:
            sub.bias.zero_()
            covered.add(id(sub.bias))
    missed = [name for name, param in module.named_parameters() if id(param) not in covered]
    if missed:
        raise ValueError(f"esimcse momentum_init random: no 4.2.1 initialisation rule for {', '.join(missed)}")


@torch.no_grad()
def ema_update(target: nn.Module, source: nn.Module, momentum: float) -> None:
    """θm ← m·θm + (1−m)·θ over the parameters (buffers untouched), in place."""
    for param_m, param in zip(target.parameters(), source.parameters()):
        param_m.mul_(momentum).add_(param.detach(), alpha=1.0 - momentum)


# --- model and method ------------------------------------------------------------------------------


class ESimCSEModel(SentenceModel):
    """SimCSE's model plus the momentum encoder and the negative queue (state of the run, not of best/)."""

    def __init__(self, encoder: nn.Module, extras: dict[str, nn.Module], neg_size: int,
                 momentum_init: str = "random"):
        super().__init__(encoder, extras)
        self.momentum_encoder = copy.deepcopy(encoder)  # same architecture, so the EMA pairs parameters 1:1
        if momentum_init == "random":
            reinitialise_(self.momentum_encoder, encoder.config.initializer_range)
        elif momentum_init != "copy":
            raise ValueError(f"esimcse: momentum_init '{momentum_init}' ({' | '.join(MOMENTUM_INITS)})")
        for parameter in self.momentum_encoder.parameters():
            parameter.requires_grad_(False)
        self.register_buffer("queue", torch.zeros(neg_size, encoder.config.hidden_size))
        self.register_buffer("queue_length", torch.zeros((), dtype=torch.long))

    def queued(self) -> Tensor:
        """The queue's valid rows, oldest first. -> (Q, H)"""
        return self.queue[: int(self.queue_length)]

    def set_queue(self, rows: Tensor) -> None:
        self.queue[: rows.shape[0]] = rows.to(self.queue.dtype)
        self.queue_length.fill_(rows.shape[0])


class ESimCSE(SimCSE):
    kind = "esimcse"

    def __init__(self, params: dict, family: str, tokenizer):
        super().__init__({**DEFAULTS, **params}, family, tokenizer)
        missing = [key for key in REQUIRED if self.params.get(key) is None]
        if missing:
            raise ValueError(f"esimcse: missing param(s) {', '.join(missing)} (config methods.<name>.params)")
        mode = self.params["momentum_update"]
        if mode not in ("in-forward", "after-step"):
            raise ValueError(f"esimcse: momentum_update '{mode}' (in-forward | after-step)")
        if self.params["momentum_init"] not in MOMENTUM_INITS:
            raise ValueError(f"esimcse: momentum_init '{self.params['momentum_init']}' ({' | '.join(MOMENTUM_INITS)})")

    def build_model(self, encoder) -> ESimCSEModel:
        return ESimCSEModel(encoder, {"mlp": MLPHead(encoder.config.hidden_size)}, self.params["neg_size"],
                            self.params["momentum_init"])

    # --- batches -------------------------------------------------------------------------------
    def training_items(self, corpus, seed: int) -> KeyedCorpus:
        return KeyedCorpus(corpus, seed)

    def collate(self, examples: list[KeyedSentence]) -> dict[str, Tensor]:
        tok = self.tokenizer
        max_len = self.params["max_seq_length"]
        rows = []
        # (B, 2, L) flattened to (2B, L): row 2i = original (view 1), row 2i+1 = repeated (view 2)
        for item in examples:
            if not isinstance(item, KeyedSentence):
                raise TypeError("esimcse.collate needs KeyedSentence items (ids, key): read the corpus through "
                                "ESimCSE.training_items(corpus, seed)")
            sequence = with_special_tokens(list(item.ids), tok.cls_token_id, tok.sep_token_id, max_len)
            rows.append(sequence)
            rows.append(repeat_subwords(sequence, self.params["dup_rate"], random.Random(item.key)))
        input_ids, attention_mask = pad_sequences(rows, tok.pad_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    # --- training ------------------------------------------------------------------------------
    @torch.no_grad()
    def momentum_vectors(self, model: ESimCSEModel, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Momentum encoder (eval mode) [CLS] through the online MLP, detached. -> (B, H)"""
        encoder = model.momentum_encoder
        was_training = encoder.training
        encoder.eval()
        try:
            out = encoder(input_ids=input_ids, attention_mask=attention_mask)
        finally:
            encoder.train(was_training)
        return model.extras["mlp"](pool_cls(out.last_hidden_state)).detach().float()

    def loss(self, model: ESimCSEModel, batch: dict[str, Tensor]) -> Tensor:
        input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
        out = model.encoder(input_ids=input_ids, attention_mask=attention_mask)
        if self.params["momentum_update"] == "in-forward":
            ema_update(model.momentum_encoder, model.encoder, self.params["momentum"])
        pooled = model.extras["mlp"](pool_cls(out.last_hidden_state))  # (2B, H)
        pairs = pooled.view(-1, 2, pooled.shape[-1])  # (B, 2, H)
        loss = esimcse_loss(pairs[:, 0], pairs[:, 1], model.queued().clone(), self.params["temperature"])
        new = self.momentum_vectors(model, input_ids[0::2], attention_mask[0::2])
        model.set_queue(enqueue(model.queued(), new, self.params["neg_size"]))
        return loss

    def after_step(self, model: ESimCSEModel, step: int) -> None:
        if self.params["momentum_update"] == "after-step":
            ema_update(model.momentum_encoder, model.encoder, self.params["momentum"])
