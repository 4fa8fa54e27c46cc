"""What a ``tiny://<tokenizer>/<size>`` URL names, where its build lives and how its build record reads.

Every command that meets a tiny backbone needs this (config checks, fetch, tables' stand-in labels, the
rules' wildcards); only ``sentrepro tiny-model`` needs the builder (:mod:`sentrepro.pretrained.tiny`). Kept
apart so that an edit to how a tiny model is built reruns the ``tiny_model`` jobs and what reads their files,
not every job of a run through the code closure (found by issue 45's faulted SLURM run, finding 2).
"""

from __future__ import annotations

from pathlib import Path

SCHEME = "tiny://"
BUILD_RECORD = "BUILD.json"
BUILD_KIND = "sentrepro-tiny-model"
TINY_DIR = "tiny-models"  # under the resources directory: <resources>/tiny-models/<tokenizer>-<size>/
# tokenizer kind -> the model family it belongs to (config backbones' `family`)
TOKENIZER_FAMILIES = {"bert-uncased": "bert", "bert-cased": "bert", "roberta": "roberta", "deberta": "deberta"}
SIZE_NAMES = ("base", "large")  # their dimensions: sentrepro.pretrained.tiny.SIZES


class TinyModelError(ValueError):
    """A tiny:// URL names no tiny model, or its family disagrees with the backbone's."""


def is_tiny(model: str) -> bool:
    return str(model).startswith(SCHEME)


def names() -> list[str]:
    """Every tiny model: ``<tokenizer>-<size>``."""
    return [f"{kind}-{size}" for kind in TOKENIZER_FAMILIES for size in SIZE_NAMES]


def parse(model: str) -> tuple[str, str]:
    """``tiny://roberta/large`` -> ("roberta", "large"); anything else raises :class:`TinyModelError`."""
    parts = model[len(SCHEME):].split("/") if is_tiny(model) else []
    if len(parts) != 2 or parts[0] not in TOKENIZER_FAMILIES or parts[1] not in SIZE_NAMES:
        raise TinyModelError(f"{model!r} is not a tiny model: write tiny://<tokenizer>/<size> with tokenizer one of "
                             f"{', '.join(TOKENIZER_FAMILIES)} and size one of {', '.join(SIZE_NAMES)}")
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
