"""Documented item counts of every benchmark, in one table, and the check every parser runs.

A parser that reads a file with the wrong rules (keeps unscored STS pairs, counts a header row,
splits on the wrong newline) or a truncated download shows up first as a wrong count, so every
reader compares what it parsed against these numbers and a mismatch is an error.

Keys are ``(dataset, part)``. ``part`` is a split (``train``/``dev``/``test``, or ``all`` for
sets that have no split) or a documented sub-part: an STS subset, or one class file of a binary
transfer task. Sources: docs/evaluation-and-data.md §0 rows 4-26 and §3.2, and
``shared/data/README.md`` (counts verified on the real files there).
"""

from __future__ import annotations

import os

from sentrepro.data.records import CountMismatch

_STS_SUBSETS: dict[str, dict[str, int]] = {
    "STS12": {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "surprise.OnWN": 750, "surprise.SMTnews": 399},
    "STS13": {"FNWN": 189, "headlines": 750, "OnWN": 561},  # no SMT subset (LDC licence), as in SentEval
    "STS14": {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750},
    # STS15/16: scored pairs only; the gold files leave the other lines blank.
    "STS15": {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
    "STS16": {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244, "question-question": 209},
}


def _sts_rows() -> dict[tuple[str, str], int]:
    rows: dict[tuple[str, str], int] = {}
    for year, subsets in _STS_SUBSETS.items():
        rows.update({(year, subset): n for subset, n in subsets.items()})
        rows[(year, "test")] = sum(subsets.values())
    return rows


EXPECTED: dict[tuple[str, str], int] = {
    **_sts_rows(),  # STS12 3108, STS13 1500, STS14 3750, STS15 3000, STS16 1186
    ("STSBenchmark", "train"): 5749,
    ("STSBenchmark", "dev"): 1500,
    ("STSBenchmark", "test"): 1379,
    ("SICKRelatedness", "train"): 4500,
    ("SICKRelatedness", "dev"): 500,  # SICK_trial.txt, which SentEval calls "dev"
    ("SICKRelatedness", "test"): 4927,
    # Binary transfer tasks: one file per class; SentEval keeps blank lines as empty samples and
    # the totals below include them (CR has 4, MPQA 3).
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
    # Short-text clustering (rashadulrakib/short-text-clustering-enhancement @ f363b66).
    ("AgNews", "all"): 8000,
    ("SearchSnippets", "all"): 12340,
    ("StackOverflow", "all"): 20000,
    ("Biomedical", "all"): 20000,
    ("GoogleNews-S", "all"): 11108,
    ("GoogleNews-T", "all"): 11108,
    ("GoogleNews-TS", "all"): 11109,
    ("Tweet", "all"): 2472,
    # Web of Science (Kowsari et al. 2017); the archive has no split.
    ("WOS5736", "all"): 5736,
    ("WOS11967", "all"): 11967,
    ("WOS46985", "all"): 46985,
}

EXPECTED_CLASSES: dict[str, int] = {
    "MR": 2,
    "CR": 2,
    "SUBJ": 2,
    "MPQA": 2,
    "SST2": 2,
    "TREC": 6,
    "MRPC": 2,
    "AgNews": 4,
    "SearchSnippets": 8,
    "StackOverflow": 20,
    "Biomedical": 20,
    "GoogleNews-S": 152,
    "GoogleNews-T": 152,
    "GoogleNews-TS": 152,
    "Tweet": 89,  # original ids are 1..110 with gaps
    "WOS5736": 11,
    "WOS11967": 35,
    "WOS46985": 134,
}

# Level-1 (parent) categories of the WOS versions.
EXPECTED_PARENT_CLASSES: dict[str, int] = {"WOS5736": 3, "WOS11967": 7, "WOS46985": 7}

CLASS_SPLIT = "classes"
PARENT_CLASS_SPLIT = "parent classes"


def expected_count(dataset: str, split: str) -> int:
    """The documented count for ``(dataset, split)``; KeyError naming the known parts otherwise."""
    try:
        return EXPECTED[(dataset, split)]
    except KeyError:
        known = sorted(part for name, part in EXPECTED if name == dataset)
        hint = f"documented parts of {dataset}: {known}" if known else f"no documented counts for {dataset!r}"
        raise KeyError(f"no documented count for ({dataset!r}, {split!r}); {hint}") from None


def check_count(dataset: str, split: str, n: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless ``n`` equals the documented count of ``(dataset, split)``."""
    expected = expected_count(dataset, split)
    if n != expected:
        raise CountMismatch(dataset, split, expected, n, where)


def check_classes(dataset: str, n_classes: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless ``n_classes`` distinct labels is the documented number."""
    if dataset not in EXPECTED_CLASSES:
        raise KeyError(f"no documented class count for {dataset!r}; known: {sorted(EXPECTED_CLASSES)}")
    if n_classes != EXPECTED_CLASSES[dataset]:
        raise CountMismatch(dataset, CLASS_SPLIT, EXPECTED_CLASSES[dataset], n_classes, where)


def check_parent_classes(dataset: str, n_parents: int, where: str | os.PathLike | None = None) -> None:
    """Raise :class:`CountMismatch` unless a WOS version has its documented number of parent categories."""
    if dataset not in EXPECTED_PARENT_CLASSES:
        raise KeyError(f"no documented parent-class count for {dataset!r}; known: {sorted(EXPECTED_PARENT_CLASSES)}")
    if n_parents != EXPECTED_PARENT_CLASSES[dataset]:
        raise CountMismatch(dataset, PARENT_CLASS_SPLIT, EXPECTED_PARENT_CLASSES[dataset], n_parents, where)
