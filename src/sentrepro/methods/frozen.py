"""Non-fine-tuned baselines: a pretrained encoder pooled by [CLS], average, first-last or last-2 average.

``avg_first_last`` defaults to the ``hidden_states[0]`` (embedding output) definition the papers'
baseline rows used; ``first_last_definition: first-layer`` gives SimCSE's post-2022 variant.
"""

from __future__ import annotations

from torch import Tensor

from sentrepro.methods.blocks import pooled_embedding
from sentrepro.methods.base import Method, SentenceModel


class Frozen(Method):
    kind = "frozen"

    def collate(self, examples):  # pragma: no cover - frozen baselines never train
        raise TypeError("frozen baselines are not trained")

    def loss(self, model, batch):  # pragma: no cover
        raise TypeError("frozen baselines are not trained")

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        return pooled_embedding(model.encoder, inputs, self.params["pooler"],
                                self.params.get("first_last_definition", "embeddings"))
