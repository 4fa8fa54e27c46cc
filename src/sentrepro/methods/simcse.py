"""Unsupervised SimCSE (Gao et al., 2021), as princeton-nlp/SimCSE's released code does it.

Batch: each sentence twice, ``[CLS] + ids[:max_len-2] + [SEP]`` (max_seq_length counts the special
tokens), both copies in ONE encoder call so the views differ only by dropout (methods.md §1.2-1.3).
Representation: last-layer [CLS] -> fresh MLP (Linear+Tanh) in training; raw [CLS] at evaluation
when ``mlp_only_train`` (the unsup recipe's ``cls_before_pooler``). Loss: cross-entropy over
cos(z1_i, z2_j)/tau with target i, one direction, no in-view negatives.

Precision and dev scoring (``training.precision: authors``, ``training.dev_precision: fp32``): the
authors trained with ``--fp16`` (``run_unsup_example.sh:25``; native AMP with loss scaling under
transformers 4.2.1), so ``authors`` resolves to ``fp16``; STS-B dev is scored by
``CLTrainer.evaluate``'s SentEval batcher under ``torch.no_grad()`` only, outside the training
step's ``autocast`` (``simcse/trainers.py:105-118``), i.e. in fp32.
"""

from __future__ import annotations

import torch
from torch import Tensor

from sentrepro.methods.blocks import MLPHead, pool_cls
from sentrepro.methods.base import Method, SentenceModel, cosine_logits, pad_sequences


def simcse_loss(z1: Tensor, z2: Tensor, temperature: float) -> Tensor:
    """InfoNCE with in-batch negatives. z1, z2: (B, H) -> scalar. Row i's positive is column i."""
    logits = cosine_logits(z1, z2, temperature)  # (B, B)
    target = torch.arange(z1.shape[0], device=z1.device)
    return torch.nn.functional.cross_entropy(logits, target)


def with_special_tokens(ids: list[int], cls_id: int, sep_id: int, max_len: int) -> list[int]:
    """``[CLS] + ids + [SEP]`` truncated so the whole sequence has at most ``max_len`` tokens."""
    return [cls_id] + ids[: max_len - 2] + [sep_id]


class SimCSE(Method):
    kind = "simcse"

    def build_model(self, encoder) -> SentenceModel:
        return SentenceModel(encoder, {"mlp": MLPHead(encoder.config.hidden_size)})

    def collate(self, examples: list[list[int]]) -> dict[str, Tensor]:
        tok = self.tokenizer
        max_len = self.params["max_seq_length"]
        sequences = [with_special_tokens(ids, tok.cls_token_id, tok.sep_token_id, max_len) for ids in examples]
        # (B, 2, L) flattened to (2B, L): rows 2i and 2i+1 are the two views of sentence i
        doubled = [seq for seq in sequences for _ in range(2)]
        input_ids, attention_mask = pad_sequences(doubled, tok.pad_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        out = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        pooled = model.extras["mlp"](pool_cls(out.last_hidden_state))  # (2B, H)
        pairs = pooled.view(-1, 2, pooled.shape[-1])  # (B, 2, H)
        return simcse_loss(pairs[:, 0], pairs[:, 1], self.params["temperature"])

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        out = model.encoder(**inputs)
        cls = pool_cls(out.last_hidden_state)
        return cls if self.params.get("mlp_only_train", True) else model.extras["mlp"](cls)
