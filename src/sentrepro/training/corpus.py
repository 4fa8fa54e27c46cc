"""Tokenize the training corpus once per tokenizer and store it memory-mappable.

Layout of ``<dir>/``: ``ids.npy`` (int32, every sentence's token ids concatenated, no special
tokens, untruncated), ``offsets.npy`` (int64, N+1 boundaries) and ``meta.json`` (which records both
files' sha256 and stamps, :func:`sentrepro.records.recorded.content_record`; the tokenize job copies it into
``tokenized.json``, which a training job verifies them against). Every method
truncates and wraps (special tokens, templates) at batch time, so one cache serves SimCSE,
PromptBERT, ConPVP and ESimCSE alike. Because the ids carry no special tokens, the SimCSE sequence
``[CLS] + ids[:30] + [SEP]`` equals the reference's tokenization with ``max_length=32``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentrepro.runs import canonical_json
from sentrepro.files import atomic_path, atomic_write_json, read_json
from sentrepro.hashing import sha256_bytes
from sentrepro.records.recorded import TOKEN_FILES, content_record

CHUNK = 4096


def tokenize_corpus(sentences_file: Path, tokenizer, out_dir: Path, *, progress: bool = True) -> dict:
    """Tokenize every line of ``sentences_file``; write ids/offsets/meta atomically into ``out_dir``."""
    from tqdm import tqdm

    lines = Path(sentences_file).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline, not an empty sentence
    chunks: list[np.ndarray] = []
    lengths = np.zeros(len(lines), dtype=np.int64)
    for start in tqdm(range(0, len(lines), CHUNK), disable=not progress, desc="tokenize", unit="chunk"):
        batch = lines[start:start + CHUNK]
        encoded = tokenizer(batch, add_special_tokens=False, truncation=False)["input_ids"]
        for offset, ids in enumerate(encoded):
            lengths[start + offset] = len(ids)
            chunks.append(np.asarray(ids, dtype=np.int32))
    ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "ids.npy", suffix=".npy") as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, ids)
    with atomic_path(out_dir / "offsets.npy", suffix=".npy") as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, offsets)
    meta = {
        # each token file's sha256, size and stamp: what a training job checks before it trains on them
        TOKEN_FILES: content_record([out_dir / "ids.npy", out_dir / "offsets.npy"]),
        "sentences": len(lines),
        "tokens": int(ids.size),
        "max_length": int(lengths.max()) if len(lines) else 0,
        "mean_length": float(lengths.mean()) if len(lines) else 0.0,
        "tokenizer": getattr(tokenizer, "name_or_path", str(tokenizer)),
        "tokenizer_class": type(tokenizer).__name__,
        "vocab_size": len(tokenizer),
        "vocab_sha256": vocab_fingerprint(tokenizer),
    }
    atomic_write_json(out_dir / "meta.json", meta)
    return meta


def vocab_fingerprint(tokenizer) -> str:
    """sha256 of a tokenizer's token -> id map: equal for tokenizers that give the same ids."""
    return sha256_bytes(canonical_json(sorted(tokenizer.get_vocab().items())).encode())


class VocabularyMismatch(ValueError):
    """A backbone's tokenizer is not the one its (shared) token-id cache was built with."""


def check_vocabulary(tokenizer, directory: Path) -> None:
    """Refuse to train on a cache built by a tokenizer with another vocabulary.

    Backbones that name the same ``tokenizer`` share one cache, built from the first of them; a
    revision of another one that changed the vocabulary would otherwise train on foreign ids.
    """
    expected = TokenizedCorpus.meta(directory).get("vocab_sha256")
    if expected is not None and vocab_fingerprint(tokenizer) != expected:
        raise VocabularyMismatch(
            f"the token ids in {directory} were made by a tokenizer with another vocabulary than this backbone's "
            f"({getattr(tokenizer, 'name_or_path', tokenizer)}); give the backbone its own `tokenizer` name in "
            "config.yaml")


@dataclass
class TokenizedCorpus:
    """Read-only, memory-mapped view of a tokenized corpus."""

    ids: np.ndarray
    offsets: np.ndarray

    @classmethod
    def open(cls, directory: Path) -> "TokenizedCorpus":
        directory = Path(directory)
        ids = np.load(directory / "ids.npy", mmap_mode="r")
        offsets = np.load(directory / "offsets.npy", mmap_mode="r")
        return cls(ids=ids, offsets=offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> list[int]:
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        return self.ids[start:end].tolist()

    @staticmethod
    def meta(directory: Path) -> dict:
        return read_json(Path(directory) / "meta.json")
