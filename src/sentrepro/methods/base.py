"""What every method provides: how a batch is built, the loss, and the embedding used at evaluation.

One training loop (``sentrepro.training.loop``) serves every method through this interface. A method owns
the tokenizer; the model it builds is an ``nn.Module`` holding the encoder and any head or prompt
parameters, saved with ``save_pretrained`` for the encoder and safetensors for the rest.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path

import torch
from torch import Tensor, nn

from sentrepro.files import atomic_dir

EXTRA_STATE = "sentrepro_heads.safetensors"
METHOD_META = "sentrepro_method.json"


class SentenceModel(nn.Module):
    """An encoder plus named extra modules/parameters (MLP head, prompt vectors, ...)."""

    def __init__(self, encoder: nn.Module, extras: dict[str, nn.Module] | None = None):
        super().__init__()
        self.encoder = encoder
        self.extras = nn.ModuleDict(extras or {})

    @property
    def hidden_size(self) -> int:
        return self.encoder.config.hidden_size

    def save(self, directory: Path, tokenizer, meta: dict) -> None:
        """Write the model atomically: encoder via save_pretrained, extras, tokenizer, method meta."""
        from safetensors.torch import save_file

        with atomic_dir(directory) as tmp:
            self.encoder.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            extras = {k: v.detach().cpu().contiguous() for k, v in self.extras.state_dict().items()}
            if extras:
                save_file(extras, str(tmp / EXTRA_STATE))
            (tmp / METHOD_META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")

    def load_extras(self, directory: Path) -> None:
        from safetensors.torch import load_file

        path = Path(directory) / EXTRA_STATE
        if path.exists():
            self.extras.load_state_dict(load_file(str(path)))


class Method(ABC):
    """Base class. Subclasses set ``kind`` and implement the three abstract hooks below
    (``collate``, ``loss``, ``embed``); the other methods have defaults a kind may override."""

    # The kind's name (its unit: the <module>.units.yaml sidecar beside the module), which also says whether the kind
    # trains, on which corpus, and in which precision its authors trained.
    kind: str = ""
    # False reproduces code that never calls zero_grad (gradients accumulate over all steps).
    reset_grads: bool = True

    def __init__(self, params: dict, family: str, tokenizer):
        self.params = params
        self.family = family
        self.tokenizer = tokenizer

    # --- model -------------------------------------------------------------------------------
    def build_model(self, encoder: nn.Module) -> SentenceModel:
        """Wrap a freshly loaded encoder with this method's extra modules (created here, seeded)."""
        return SentenceModel(encoder)

    # --- training ----------------------------------------------------------------------------
    def set_train_mode(self, model: SentenceModel) -> None:
        """Put ``model`` in the mode the method trains in; the training loop calls this, never ``.train()``.

        Default: train mode (dropout on), as every HF Trainer-based release. A method whose reference
        trains a model left in eval mode (MoCoUTRL's released code) overrides it.
        """
        model.train()

    def training_items(self, corpus, seed: int):
        """What ``collate`` receives for each corpus index; by default the token ids themselves.

        A method that needs more per example (a template choice drawn from the seed and the index,
        the three rows of a view triple) wraps the corpus here; the result must support ``len()``
        and integer indexing.
        """
        return corpus

    @abstractmethod
    def collate(self, examples: list[list[int]]) -> dict[str, Tensor]:
        """B training items (by default token ids without special tokens) -> the tensors of one step."""

    @abstractmethod
    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        """Scalar training loss for one batch (model in train mode)."""

    def after_step(self, model: SentenceModel, step: int) -> None:
        """Hook run after each optimizer step (momentum updates, queues). Default: nothing."""

    # --- evaluation --------------------------------------------------------------------------
    def eval_inputs(self, sentences: list[str], purpose: str) -> dict[str, Tensor]:
        """Tokenize sentences for evaluation; ``purpose`` is ``dev`` (in-training) or ``test``.

        Default: plain tokenization with special tokens, padding, no truncation (SentEval batcher).
        """
        return self.tokenizer(sentences, padding=True, truncation=False, return_tensors="pt")

    @abstractmethod
    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        """Sentence vectors (B, H) for evaluation (model in eval mode, no grad)."""

    def transform_embeddings(self, vectors, purpose: str):
        """Post-process the vectors of one encoding call, (N, H) numpy rows in input order (whitening).

        Default: unchanged.
        """
        return vectors

    def eval_length(self, sentence: str) -> int:
        """Sort key for length-bucketed evaluation batches."""
        return len(sentence.split())


def cosine_logits(a: Tensor, b: Tensor, temperature: float) -> Tensor:
    """Pairwise cosine similarity divided by the temperature. (N, H), (M, H) -> (N, M)"""
    a = torch.nn.functional.normalize(a.float(), dim=-1)
    b = torch.nn.functional.normalize(b.float(), dim=-1)
    return a @ b.T / temperature


def pad_sequences(sequences: list[list[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """Right-pad to the longest sequence. -> input_ids (N, L) long, attention_mask (N, L) long"""
    length = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), length), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return ids, mask
