"""Non-fine-tuned baselines: a pretrained encoder pooled by [CLS], average, first-last or last-2 average.

``avg_first_last`` defaults to the ``hidden_states[0]`` (embedding output) definition the papers'
baseline rows used; ``first_last_definition: first-layer`` gives SimCSE's post-2022 variant.
"""

from __future__ import annotations

from torch import Tensor

from sentrepro.backbones import pool_avg, pool_cls, pool_first_last, pool_top2
from sentrepro.methods.base import Method, SentenceModel


class Frozen(Method):
    kind = "frozen"
    trains = False

    def collate(self, examples):  # pragma: no cover - frozen baselines never train
        raise TypeError("frozen baselines are not trained")

    def loss(self, model, batch):  # pragma: no cover
        raise TypeError("frozen baselines are not trained")

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        pooler = self.params["pooler"]
        needs_all = pooler in ("avg_first_last", "avg_top2")
        out = model.encoder(**inputs, output_hidden_states=needs_all)
        mask = inputs["attention_mask"]
        if pooler == "cls":
            return pool_cls(out.last_hidden_state)
        if pooler == "avg":
            return pool_avg(out.last_hidden_state, mask)
        if pooler == "avg_first_last":
            return pool_first_last(out.hidden_states, mask, self.params.get("first_last_definition", "embeddings"))
        if pooler == "avg_top2":
            return pool_top2(out.hidden_states, mask)
        raise ValueError(f"unknown pooler '{pooler}'")
