"""Benchmark unit ``sts``: STS12-16, STS-B and SICK-R, read the way SimCSE's SentEval copy reads them.

One module holds the benchmark (sentrepro.data.benchmarks): its tasks (``TASKS``), documented counts,
parsers and the layouts ``sts-raw`` and ``stsb``; the SentEval tree that bundles it with the transfer
tasks is the ``senteval`` unit, whose fixture writes its files too.

What the papers score (docs/evaluation-and-data.md §2):

* STS12-16: ``STS1x-en-test/STS.input.<subset>.txt`` (``sentence1<TAB>sentence2``) line-aligned with
  ``STS.gs.<subset>.txt`` (one score per line). A **blank gold line is an unscored pair** and is
  dropped (STS15/16). STS13 has no SMT subset. SentEval splits both files with
  ``str.splitlines`` and we do the same.
* STS-B: ``sts-{train,dev,test}.csv``, tab-separated despite the name: genre, file, year, id,
  score, s1, s2, and on some raw lines two more source columns, which are ignored.
* SICK-R: ``SICK_{train,trial,test_annotated}.txt`` with one header row; pair_ID, sentence_A,
  sentence_B, relatedness_score, entailment_judgment. The test file has CRLF endings. SentEval
  calls the trial file ``dev``.

Sentences come back as SentEval gives them to the encoder: split on whitespace and joined by single
spaces. Pairs keep file order (SentEval sorts them by length only to batch them).

Two text variants of the same pairs exist: ``senteval`` (the processed copy in SimCSE's
``senteval.tar``: Moses-tokenized, lowercased except SICK) and ``raw`` (the original SemEval/SICK
releases). The variant is always an explicit argument, and the containers returned by
:func:`read_sts_year` and :func:`read_sts_split` carry a :class:`StsSource` whose ``record()`` goes
into a metrics file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentrepro.data.benchmarks import TEXT_VARIANTS, Benchmark, Layout, relative_files
from sentrepro.data.counts import check_count
from sentrepro.data.records import (
    DataFormatError,
    ScoredPair,
    parse_score,
    read_text_lines,
    split_fields,
    whitespace_tokens_joined,
)


# Subsets in SentEval's order (SimCSE SentEval/senteval/sts.py).
STS_SUBSETS: dict[int, tuple[str, ...]] = {
    2012: ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    2013: ("FNWN", "headlines", "OnWN"),  # SMT is licensed by LDC only; SentEval omits it
    2014: ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    2015: ("answers-forums", "answers-students", "belief", "headlines", "images"),
    2016: ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}

STS_SPLIT_TASKS = ("STSBenchmark", "SICKRelatedness")
SPLITS = ("train", "dev", "test")
SICK_FILES: dict[str, str] = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}

STS_SCORE_RANGE = (0.0, 5.0)
SICK_SCORE_RANGE = (1.0, 5.0)
_STSB_FIELDS = (7, None)  # genre, file, year, id, score, s1, s2 [, source columns ...]
_SICK_FIELDS = 5
_STSB_NAME = re.compile(r"sts-(train|dev|test)\.csv")


@dataclass(frozen=True)
class StsSource:
    """Which STS data and which text variant a container holds, for metrics files."""

    dataset: str  # "STS12" ... "STS16", "STSBenchmark", "SICKRelatedness"
    split: str  # "test" for STS12-16
    variant: str  # a key of TEXT_VARIANTS
    files: tuple[Path, ...]

    def record(self) -> dict[str, object]:
        """JSON-ready description: dataset, split, text variant and the files read."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "text_variant": self.variant,
            "text_processing": TEXT_VARIANTS[self.variant],
            "files": [str(path) for path in self.files],
        }


class StsYear(dict[str, list[ScoredPair]]):
    """``{subset: [ScoredPair, ...]}`` for one STS year, in SentEval's subset order, plus ``source``."""

    def __init__(self, subsets: dict[str, list[ScoredPair]], source: StsSource) -> None:
        super().__init__(subsets)
        self.source = source

    @property
    def variant(self) -> str:
        return self.source.variant

    def all_pairs(self) -> list[ScoredPair]:
        """Every subset's pairs concatenated, the pool SimCSE's "all" Spearman is computed over."""
        return [pair for pairs in self.values() for pair in pairs]


class StsSplit(list[ScoredPair]):
    """``[ScoredPair, ...]`` of one STS-B or SICK-R split, plus ``source``."""

    def __init__(self, pairs: list[ScoredPair], source: StsSource) -> None:
        super().__init__(pairs)
        self.source = source

    @property
    def variant(self) -> str:
        return self.source.variant


# ----------------------------------------------------------------------------- STS12-16


def sts_dataset_name(year: int) -> str:
    """``"STS12"`` for 2012 or 12."""
    return f"STS{_full_year(year) - 2000}"


def read_sts_year(sts_dir: Path, year: int, variant: str = "senteval", *, check_counts: bool = True) -> StsYear:
    """Read every SentEval subset of one STS year (2012-2016, or 12-16).

    ``sts_dir`` holds ``STS12-en-test/`` ... ``STS16-en-test/``: ``senteval/STS`` for the
    ``senteval`` variant, ``sts-raw`` for ``raw``. The raw STS16 files keep their upstream names
    (``STS2016.input.<subset>.txt``) and have two extra source columns, which are ignored.
    Checks the documented per-subset and total counts unless ``check_counts`` is false.
    """
    _check_variant(variant)
    full_year = _full_year(year)
    dataset = sts_dataset_name(full_year)
    year_dir = Path(sts_dir) / f"{dataset}-en-test"
    if not year_dir.is_dir():
        raise FileNotFoundError(f"{year_dir}: no such directory (sts_dir should hold {dataset}-en-test/)")
    raw_2016 = variant == "raw" and full_year == 2016
    prefix = "STS2016" if raw_2016 else "STS"
    n_columns = 4 if raw_2016 else 2
    subsets: dict[str, list[ScoredPair]] = {}
    files: list[Path] = []
    for subset in STS_SUBSETS[full_year]:
        input_path = year_dir / f"{prefix}.input.{subset}.txt"
        gold_path = year_dir / f"{prefix}.gs.{subset}.txt"
        subsets[subset] = read_sts_subset(input_path, gold_path, n_columns)
        files += [input_path, gold_path]
        if check_counts:
            check_count(dataset, subset, len(subsets[subset]), gold_path)
    if check_counts:
        check_count(dataset, "test", sum(len(pairs) for pairs in subsets.values()), year_dir)
    return StsYear(subsets, StsSource(dataset, "test", variant, tuple(files)))


def read_sts_subset(input_path: Path, gold_path: Path, n_columns: int = 2) -> list[ScoredPair]:
    """Pair the lines of one ``STS.input`` file with its ``STS.gs`` file, dropping unscored pairs.

    Every input line must have ``n_columns`` tab-separated fields (sentences are the first two);
    only an exactly empty gold line marks an unscored pair, as in SentEval.
    """
    inputs = read_text_lines(input_path, "utf-8", splitting="splitlines")
    golds = read_text_lines(gold_path, "utf-8", splitting="splitlines")
    if len(inputs) != len(golds):
        what = f"has {len(golds)} lines but {input_path.name} has {len(inputs)}; the two must be line-aligned"
        raise DataFormatError(gold_path, None, what)
    pairs: list[ScoredPair] = []
    for lineno, (pair_line, gold_line) in enumerate(zip(inputs, golds), start=1):
        fields = split_fields(pair_line, input_path, lineno, n_columns)
        if gold_line == "":
            continue
        score = parse_score(gold_line, gold_path, lineno, *STS_SCORE_RANGE)
        pairs.append(ScoredPair(whitespace_tokens_joined(fields[0]), whitespace_tokens_joined(fields[1]), score))
    return pairs


# ----------------------------------------------------------------------------- STS-B and SICK-R


def read_sts_benchmark(path: Path, *, split: str | None = None, check_counts: bool = True) -> list[ScoredPair]:
    """Read one STS-B split file (``sts-train.csv``, ``sts-dev.csv`` or ``sts-test.csv``).

    Tab-separated; score is column 5, sentences columns 6 and 7 (1-based); extra columns are
    ignored. ``split`` defaults to the one in the file name and selects the documented count.
    """
    path = Path(path)
    split = split or _split_from_name(path, _stsb_split_of(path.name), "sts-<split>.csv", check_counts)
    pairs = []
    for lineno, line in enumerate(read_text_lines(path, "utf-8"), start=1):
        fields = split_fields(line.strip(), path, lineno, _STSB_FIELDS)
        score = parse_score(fields[4], path, lineno, *STS_SCORE_RANGE)
        pairs.append(ScoredPair(whitespace_tokens_joined(fields[5]), whitespace_tokens_joined(fields[6]), score))
    if check_counts:
        check_count("STSBenchmark", split, len(pairs), path)
    return pairs


def read_sick(path: Path, *, split: str | None = None, check_counts: bool = True) -> list[ScoredPair]:
    """Read one SICK file (``SICK_train.txt``, ``SICK_trial.txt`` = dev, ``SICK_test_annotated.txt``).

    The first line must be the ``pair_ID ...`` header (SentEval skips line 1 unconditionally, so
    a file without it would silently lose a pair). CRLF line endings are accepted.
    """
    path = Path(path)
    pattern = "SICK_{train,trial,test_annotated}.txt"
    split = split or _split_from_name(path, _sick_split_of(path.name), pattern, check_counts)
    lines = read_text_lines(path, "utf-8")
    if not lines or split_fields(lines[0].strip(), path, 1, (1, None))[0] != "pair_ID":
        raise DataFormatError(path, 1, "expected the header row 'pair_ID<TAB>sentence_A<TAB>...'")
    pairs = []
    for lineno, line in enumerate(lines[1:], start=2):
        fields = split_fields(line.strip(), path, lineno, _SICK_FIELDS)
        score = parse_score(fields[3], path, lineno, *SICK_SCORE_RANGE, what="relatedness score")
        pairs.append(ScoredPair(whitespace_tokens_joined(fields[1]), whitespace_tokens_joined(fields[2]), score))
    if check_counts:
        check_count("SICKRelatedness", split, len(pairs), path)
    return pairs


def sts_split_path(root: Path, name: str, split: str, variant: str = "senteval") -> Path:
    """Where ``name``'s ``split`` file lives.

    ``senteval``: ``root`` is SentEval's ``data/downstream`` (holding ``STS/`` and ``SICK/``), so
    STS-B is ``root/STS/STSBenchmark/`` and SICK ``root/SICK/``. ``raw``: ``root`` is the raw
    copy's folder, holding ``STSBenchmark/`` and ``SICK/``.
    """
    _check_variant(variant)
    if name not in STS_SPLIT_TASKS:
        raise ValueError(f"name must be one of {STS_SPLIT_TASKS}, got {name!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    root = Path(root)
    if name == "SICKRelatedness":
        return root / "SICK" / SICK_FILES[split]
    benchmark_dir = root / "STS" / "STSBenchmark" if variant == "senteval" else root / "STSBenchmark"
    return benchmark_dir / f"sts-{split}.csv"


def read_sts_split(
    root: Path, name: str, split: str, variant: str = "senteval", *, check_counts: bool = True
) -> StsSplit:
    """One split of STS-B (``name="STSBenchmark"``) or SICK-R (``"SICKRelatedness"``); see :func:`sts_split_path`."""
    path = sts_split_path(root, name, split, variant)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file ({name} {split}, {variant} layout)")
    reader = read_sick if name == "SICKRelatedness" else read_sts_benchmark
    pairs = reader(path, split=split, check_counts=check_counts)
    return StsSplit(pairs, StsSource(name, split, variant, (path,)))


# ----------------------------------------------------------------------------- helpers


def _check_variant(variant: str) -> None:
    if variant not in TEXT_VARIANTS:
        raise ValueError(f"STS text variant must be one of {sorted(TEXT_VARIANTS)}, got {variant!r}")


def _full_year(year: int) -> int:
    full = year + 2000 if 12 <= year <= 16 else year
    if full not in STS_SUBSETS:
        raise ValueError(f"STS year must be 2012-2016 (or 12-16), got {year!r}")
    return full


def _stsb_split_of(name: str) -> str | None:
    match = _STSB_NAME.fullmatch(name)
    return match.group(1) if match else None


def _sick_split_of(name: str) -> str | None:
    return next((split for split, file_name in SICK_FILES.items() if file_name == name), None)


def _split_from_name(path: Path, split: str | None, pattern: str, needed: bool) -> str:
    if split is None and needed:
        raise ValueError(f"{path}: cannot tell the split from the file name (expected {pattern}); pass split=")
    return split or "unknown"


# ----------------------------------------------------------------------------- the benchmark unit

# Task group ``sts``, the tasks the STS suite scores: STS12-16 are read per year from
# <sts_dir>/STS<yy>-en-test/ and scored "all" over their subsets; STS-B and SICK-R from one test file
# (``reader``: its format). Each sits in the directory the suite's setting ``dir_key`` names (default:
# ``default_dir``).
TASKS: dict[str, dict] = {
    "STS12": {"year": 2012, "dir_key": "sts_dir", "default_dir": "STS"},
    "STS13": {"year": 2013, "dir_key": "sts_dir", "default_dir": "STS"},
    "STS14": {"year": 2014, "dir_key": "sts_dir", "default_dir": "STS"},
    "STS15": {"year": 2015, "dir_key": "sts_dir", "default_dir": "STS"},
    "STS16": {"year": 2016, "dir_key": "sts_dir", "default_dir": "STS"},
    "STSBenchmark": {"dir_key": "stsb_dir", "default_dir": "STS/STSBenchmark", "file": "sts-test.csv",
                     "reader": "stsb"},
    "SICKRelatedness": {"dir_key": "sick_dir", "default_dir": "SICK", "file": "SICK_test_annotated.txt",
                        "reader": "sick"},
}

# Documented pairs per STS subset (docs/evaluation-and-data.md §0, §3.2; verified on the real files).
SUBSET_COUNTS: dict[str, dict[str, int]] = {
    "STS12": {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399},
    "STS13": {"FNWN": 189, "headlines": 750, "OnWN": 561},  # no SMT subset (LDC licence), as in SentEval
    "STS14": {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750},
    # STS15/16: scored pairs only; the gold files leave the other lines blank.
    "STS15": {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
    "STS16": {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244, "question-question": 209},
}


def _subset_rows() -> dict[tuple[str, str], int]:
    rows: dict[tuple[str, str], int] = {}
    for year, subsets in SUBSET_COUNTS.items():
        rows.update({(year, subset): n for subset, n in subsets.items()})
        rows[(year, "test")] = sum(subsets.values())
    return rows


COUNTS: dict[tuple[str, str], int] = {
    **_subset_rows(),  # STS12 3108, STS13 1500, STS14 3750, STS15 3000, STS16 1186
    ("STSBenchmark", "train"): 5749,
    ("STSBenchmark", "dev"): 1500,
    ("STSBenchmark", "test"): 1379,
    ("SICKRelatedness", "train"): 4500,
    ("SICKRelatedness", "dev"): 500,  # SICK_trial.txt, which SentEval calls "dev"
    ("SICKRelatedness", "test"): 4927,
}


def year_summaries(root: Path, sts_dir: Path, variant: str, check_counts: bool) -> dict[str, dict]:
    """STS12-16 under ``sts_dir``, parsed: {data set: summary} (files relative to ``root``)."""
    found = {}
    for year in STS_SUBSETS:
        data = read_sts_year(sts_dir, year, variant, check_counts=check_counts)
        parts = {subset: len(pairs) for subset, pairs in data.items()}
        parts["test"] = sum(parts.values())
        found[sts_dataset_name(year)] = {"family": "sts", "parts": parts,
                                         "files": relative_files(data.source.files, root)}
    return found


def split_summaries(root: Path, split_root: Path, variant: str, check_counts: bool) -> dict[str, dict]:
    """STS-B and SICK-R, every split, parsed: {data set: summary}."""
    found = {}
    for name in STS_SPLIT_TASKS:
        parts, files = {}, []
        for split in SPLITS:
            data = read_sts_split(split_root, name, split, variant, check_counts=check_counts)
            parts[split] = len(data)
            files += data.source.files
        found[name] = {"family": "sts", "parts": parts, "files": relative_files(files, root)}
    return found


def read_sts_raw_layout(root: Path, variant: str | None, check_counts: bool) -> dict[str, dict]:
    return {**year_summaries(root, root, variant, check_counts), **split_summaries(root, root, variant, check_counts)}


def read_stsb_layout(root: Path, variant: str | None, check_counts: bool) -> dict[str, dict]:
    parts, files = {}, []
    for split in SPLITS:
        path = root / f"sts-{split}.csv"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file (layout 'stsb' holds sts-{{train,dev,test}}.csv)")
        parts[split] = len(read_sts_benchmark(path, split=split, check_counts=check_counts))
        files.append(path)
    return {"STSBenchmark": {"family": "sts", "parts": parts, "files": relative_files(files, root)}}


BENCHMARK = Benchmark(
    name="sts",
    description="STS12-16, STS-B and SICK-R (unsupervised STS, every paper's main table)",
    tasks={"sts": TASKS},
    counts=COUNTS,
    layouts={
        "sts-raw": Layout("original SemEval STS12-16, STS-B and SICK releases", read_sts_raw_layout, "raw", True),
        "stsb": Layout("a directory of sts-{train,dev,test}.csv", read_stsb_layout, None, True),
    },
)
