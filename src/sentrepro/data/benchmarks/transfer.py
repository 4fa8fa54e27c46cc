"""Benchmark unit ``transfer``: SentEval's transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC), read the way
SentEval reads them.

One module holds the benchmark (sentrepro.data.benchmarks): its tasks (``TASKS``), documented counts and
parsers. The tasks sit in SentEval's tree, whose layout and fixture are the ``senteval`` unit's.

Layout is SentEval's ``data/downstream`` (docs/evaluation-and-data.md §2.2, §3). The rules below
follow SimCSE's SentEval copy (``senteval/{binary,sst,trec,mrpc}.py``):

* MR/CR/SUBJ/MPQA: one sentence per line, the file name gives the class. Latin-1,
  ``read().splitlines()`` with **no filter**, so a blank line is an empty sample. The real CR files
  have 4 blank lines and MPQA 3; they are kept and the documented totals (3,775 and 10,606)
  include them. Samples are ordered first class file then second, with SentEval's labels: MR, CR,
  MPQA ``pos`` = 1, ``neg`` = 0; SUBJ ``objective`` = 1, ``subjective`` = 0.
* SST-2: ``sentiment-{train,dev,test}``, ``sentence<TAB>label``, UTF-8.
* TREC: ``train_5500.label`` / ``TREC_10.label``, Latin-1, ``COARSE:fine question``; the coarse
  label becomes ABBR 0, DESC 1, ENTY 2, HUM 3, LOC 4, NUM 5.
* MRPC: ``msr_paraphrase_{train,test}.txt``, UTF-8 with a byte-order mark, a header row, then
  Quality, #1 ID, #2 ID, #1 String, #2 String.

Texts come back as SentEval's batcher sees them: whitespace-split, joined by single spaces, in file order.
SentEval's task classes then *sort* every split before embedding it, and its classifier receives the rows in
that sorted order (which decides the cross-validation folds, the 5 % hold-out and the mini-batches):
:func:`senteval_order` gives that order; the transfer suite applies it, the few-shot suite keeps file order.
"""

from __future__ import annotations

from pathlib import Path

from sentrepro.data.benchmarks import Benchmark
from sentrepro.data.counts import check_classes, check_count
from sentrepro.data.records import (
    DataFormatError,
    LabelledPair,
    LabelledText,
    parse_int,
    read_text_lines,
    split_fields,
    whitespace_tokens_joined,
)

# task -> ((file, label, count part), (file, label, count part)) in SentEval's concatenation order.
BINARY_TASK_FILES: dict[str, tuple[tuple[str, int, str], tuple[str, int, str]]] = {
    "MR": (("rt-polarity.pos", 1, "pos"), ("rt-polarity.neg", 0, "neg")),
    "CR": (("custrev.pos", 1, "pos"), ("custrev.neg", 0, "neg")),
    "SUBJ": (("subj.objective", 1, "objective"), ("subj.subjective", 0, "subjective")),
    "MPQA": (("mpqa.pos", 1, "pos"), ("mpqa.neg", 0, "neg")),
}

SST2_FILES: dict[str, str] = {"train": "sentiment-train", "dev": "sentiment-dev", "test": "sentiment-test"}
TREC_FILES: dict[str, str] = {"train": "train_5500.label", "test": "TREC_10.label"}
TREC_CLASSES: tuple[str, ...] = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")  # SentEval's tgt2idx order
MRPC_FILES: dict[str, str] = {"train": "msr_paraphrase_train.txt", "test": "msr_paraphrase_test.txt"}
MRPC_HEADER_FIRST_FIELD = "Quality"
BINARY_LABELS = (0, 1)


def read_binary(task_dir: Path, task: str, *, check_counts: bool = True) -> list[LabelledText]:
    """MR, CR, SUBJ or MPQA from ``task_dir`` (e.g. ``downstream/MR``), blank lines kept as ``""``."""
    if task not in BINARY_TASK_FILES:
        raise ValueError(f"task must be one of {sorted(BINARY_TASK_FILES)}, got {task!r}")
    samples: list[LabelledText] = []
    for file_name, label, part in BINARY_TASK_FILES[task]:
        path = Path(task_dir) / file_name
        lines = read_text_lines(path, "latin-1", splitting="splitlines")
        if check_counts:
            check_count(task, part, len(lines), path)
        samples += [LabelledText(whitespace_tokens_joined(line), label) for line in lines]
    if check_counts:
        check_count(task, "all", len(samples), task_dir)
    return samples


def read_sst2(sst_dir: Path, *, check_counts: bool = True) -> dict[str, list[LabelledText]]:
    """SST-2 train/dev/test from ``sst_dir`` (SentEval's ``downstream/SST/binary``)."""
    splits: dict[str, list[LabelledText]] = {}
    for split, file_name in SST2_FILES.items():
        path = Path(sst_dir) / file_name
        samples = []
        for lineno, line in enumerate(read_text_lines(path, "utf-8"), start=1):
            text, label_field = split_fields(line.strip(), path, lineno, 2)
            samples.append(LabelledText(whitespace_tokens_joined(text), _binary_label(label_field, path, lineno)))
        if check_counts:
            check_count("SST2", split, len(samples), path)
        splits[split] = samples
    return splits


def read_trec(trec_dir: Path, *, check_counts: bool = True) -> dict[str, list[LabelledText]]:
    """TREC train (5,452) and test (500) with the 6 coarse classes as ids 0-5 (see ``TREC_CLASSES``)."""
    splits: dict[str, list[LabelledText]] = {}
    for split, file_name in TREC_FILES.items():
        path = Path(trec_dir) / file_name
        lines = read_text_lines(path, "latin-1")
        samples = [_trec_sample(line, path, lineno) for lineno, line in enumerate(lines, start=1)]
        if check_counts:
            check_count("TREC", split, len(samples), path)
            check_classes("TREC", len({sample.label for sample in samples}), path)
        splits[split] = samples
    return splits


def read_mrpc(mrpc_dir: Path, *, check_counts: bool = True) -> dict[str, list[LabelledPair]]:
    """MRPC train (4,076) and test (1,725) pairs; label 1 = paraphrase."""
    splits: dict[str, list[LabelledPair]] = {}
    for split, file_name in MRPC_FILES.items():
        path = Path(mrpc_dir) / file_name
        lines = read_text_lines(path, "utf-8-sig")
        if not lines or lines[0].split("\t")[0].strip() != MRPC_HEADER_FIRST_FIELD:
            raise DataFormatError(path, 1, f"expected the header row '{MRPC_HEADER_FIRST_FIELD}<TAB>#1 ID<TAB>...'")
        pairs = []
        for lineno, line in enumerate(lines[1:], start=2):
            quality, _id1, _id2, s1, s2 = split_fields(line.strip(), path, lineno, 5)
            label = _binary_label(quality, path, lineno)
            pairs.append(LabelledPair(whitespace_tokens_joined(s1), whitespace_tokens_joined(s2), label))
        if check_counts:
            check_count("MRPC", split, len(pairs), path)
        splits[split] = pairs
    return splits


def senteval_order(texts: list, labels) -> list[int]:
    """Row order SentEval's task class gives one split before embedding it (its "sort to reduce padding").

    A stable sort (Python's ``sorted``, as SentEval's) on the whitespace-token counts, then the label:
    ``(len(s), label)`` for single sentences (``binary.py`` on all of MR/CR/SUBJ/MPQA, ``sst.py`` per SST split,
    ``trec.py`` per TREC split) and ``(len(s1), len(s2), label)`` for sentence pairs (``mrpc.py`` per split).
    ``texts`` holds strings or (s1, s2) tuples; rows of equal key keep their file order.
    """
    if len(texts) != len(labels):
        raise ValueError(f"senteval_order: {len(texts)} texts but {len(labels)} labels")

    def key(row: int) -> tuple:
        text = texts[row]
        lengths = tuple(len(part.split()) for part in text) if isinstance(text, tuple) else (len(text.split()),)
        return (*lengths, int(labels[row]))

    return sorted(range(len(texts)), key=key)


def _binary_label(field: str, path: Path, lineno: int) -> int:
    label = parse_int(field, path, lineno, "label")
    if label not in BINARY_LABELS:
        raise DataFormatError(path, lineno, f"label must be 0 or 1, found {label}")
    return label


def _trec_sample(line: str, path: Path, lineno: int) -> LabelledText:
    """``COARSE:fine question words`` -> question text with the coarse class id."""
    coarse, colon, rest = line.strip().partition(":")
    if not colon:
        raise DataFormatError(path, lineno, f"expected 'COARSE:fine question', found no ':' in {line[:60]!r}")
    if coarse not in TREC_CLASSES:
        raise DataFormatError(path, lineno, f"unknown coarse class {coarse!r}; expected one of {TREC_CLASSES}")
    _fine, space, question = rest.partition(" ")
    if not space:
        raise DataFormatError(path, lineno, f"expected a question after the fine label, found {line[:60]!r}")
    return LabelledText(whitespace_tokens_joined(question), TREC_CLASSES.index(coarse))


# ----------------------------------------------------------------------------- the benchmark unit

# cv = nested 10-fold CV on all data (MR, CR, SUBJ, MPQA); dev = train/dev/test files, dev-selected (SST-2);
# fixed_test = CV on train, fixed test split (TREC, MRPC).
PROTOCOLS = ("cv", "dev", "fixed_test")

# Task group ``transfer``: each task's folder in SentEval's data/downstream layout and its protocol.
TASKS: dict[str, dict] = {
    "MR": {"dir": "MR", "protocol": "cv"},
    "CR": {"dir": "CR", "protocol": "cv"},
    "SUBJ": {"dir": "SUBJ", "protocol": "cv"},
    "MPQA": {"dir": "MPQA", "protocol": "cv"},
    "SST2": {"dir": "SST/binary", "protocol": "dev"},
    "TREC": {"dir": "TREC", "protocol": "fixed_test"},
    "MRPC": {"dir": "MRPC", "protocol": "fixed_test"},
}

# Binary tasks: one file per class; SentEval keeps blank lines as empty samples and the totals below
# include them (CR has 4, MPQA 3). Sources: docs/evaluation-and-data.md §0 and shared/data/README.md.
COUNTS: dict[tuple[str, str], int] = {
    ("MR", "pos"): 5331,
    ("MR", "neg"): 5331,
    ("MR", "all"): 10662,
    ("CR", "pos"): 2407,
    ("CR", "neg"): 1368,
    ("CR", "all"): 3775,
    ("SUBJ", "objective"): 5000,
    ("SUBJ", "subjective"): 5000,
    ("SUBJ", "all"): 10000,
    ("MPQA", "pos"): 3312,
    ("MPQA", "neg"): 7294,
    ("MPQA", "all"): 10606,
    ("SST2", "train"): 67349,
    ("SST2", "dev"): 872,
    ("SST2", "test"): 1821,
    ("TREC", "train"): 5452,
    ("TREC", "test"): 500,
    ("MRPC", "train"): 4076,
    ("MRPC", "test"): 1725,
}
CLASSES: dict[str, int] = {"MR": 2, "CR": 2, "SUBJ": 2, "MPQA": 2, "SST2": 2, "TREC": 6, "MRPC": 2}


def transfer_summaries(root: Path, check_counts: bool) -> dict[str, dict]:
    """Every transfer task under ``root`` (SentEval's data/downstream), parsed: {task: summary}."""
    found = {}
    for task, class_files in BINARY_TASK_FILES.items():
        samples = read_binary(root / task, task, check_counts=check_counts)
        parts = {part: sum(1 for s in samples if s.label == label) for _file, label, part in class_files}
        parts["all"] = len(samples)
        found[task] = {"family": "transfer", "parts": parts, "classes": len({s.label for s in samples}),
                       "files": [f"{task}/{file_name}" for file_name, _label, _part in class_files]}
    readers = (
        ("SST2", "SST/binary", SST2_FILES, read_sst2),
        ("TREC", "TREC", TREC_FILES, read_trec),
        ("MRPC", "MRPC", MRPC_FILES, read_mrpc),
    )
    for task, folder, file_names, reader in readers:
        splits = reader(root / folder, check_counts=check_counts)
        found[task] = {"family": "transfer", "parts": {split: len(items) for split, items in splits.items()},
                       "classes": len({item.label for items in splits.values() for item in items}),
                       "files": [f"{folder}/{name}" for name in file_names.values()]}
    return found


def _check_protocols(tasks: dict[str, dict]) -> dict[str, dict]:
    for task, entry in tasks.items():
        if entry.get("protocol") not in PROTOCOLS:
            raise ValueError(f"{__name__}: TASKS['{task}']['protocol'] must be one of {', '.join(PROTOCOLS)}")
    return tasks


BENCHMARK = Benchmark(
    name="transfer",
    description="SentEval transfer tasks, logistic-regression probe on frozen embeddings",
    tasks={"transfer": _check_protocols(TASKS)},
    counts=COUNTS,
    classes=CLASSES,
)
