"""Which files of a model repository a backbone needs: its config, its tokenizer, its weights.

Weights in safetensors are taken when the repository has them (one file or shards with their index),
otherwise PyTorch pickles; TensorFlow, Flax, ONNX and the rest are never fetched. Every other file
(README, sentence-transformers heads, training args) is left where it is.
"""

from __future__ import annotations

import re

CONFIG = "config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spm.model", "sentencepiece.bpe.model",
                   "tokenizer.model")
# (format, single file, shard pattern, shard index), in order of preference
WEIGHT_FORMATS = (
    ("safetensors", "model.safetensors", re.compile(r"^model-\d+-of-\d+\.safetensors$"),
     "model.safetensors.index.json"),
    ("pytorch", "pytorch_model.bin", re.compile(r"^pytorch_model-\d+-of-\d+\.bin$"), "pytorch_model.bin.index.json"),
)
WEIGHTS, TOKENIZER, CONFIG_ROLE = "weights", "tokenizer", "config"


class MissingModelFiles(ValueError):
    """A repository lacks the config or any usable weights."""


def select_files(available: list[str], where: str) -> tuple[str, dict[str, str]]:
    """Pick the files to fetch from a repository listing. -> (weights format, {path: role}).

    ``where`` names the repository (and commit) in errors.
    """
    present = set(available)
    if CONFIG not in present:
        raise MissingModelFiles(f"{where} has no {CONFIG}")
    chosen = {CONFIG: CONFIG_ROLE}
    chosen.update({name: TOKENIZER for name in TOKENIZER_FILES if name in present})
    for fmt, single, shard, index in WEIGHT_FORMATS:
        if single in present:
            chosen[single] = WEIGHTS
            return fmt, chosen
        shards = sorted(name for name in present if shard.match(name))
        if shards and index in present:
            chosen[index] = WEIGHTS
            chosen.update({name: WEIGHTS for name in shards})
            return fmt, chosen
    names = ", ".join(single for _, single, _, _ in WEIGHT_FORMATS)
    raise MissingModelFiles(f"{where} has no weights ({names}, or their shards with an index)")
