"""Benchmark unit ``clustering``: the eight short-text clustering sets of ConPVP Table 6 (SCCL / PairSupCon data).

One module holds the benchmark (sentrepro.data.benchmarks): its sets (``CLUSTERING_SETS``, task group
``clustering``), documented counts, parser, the layout ``short-text-clustering`` and the fixture
``clustering`` (synthetic copies of the 8 files, raw quirks included, for the offline demo).

Source: ``rashadulrakib/short-text-clustering-enhancement`` ``data/`` (docs/evaluation-and-data.md
§0 rows 18-25 and §4). Every file is ``label<TAB>text`` per line, with these quirks:

* labels are 1-based, and Tweet's are sparse (89 distinct ids in 1..110). Labels are remapped to
  0..K-1 in order of the original id, because SCCL's ``Confusion(K)`` indexes a K x K matrix;
* StackOverflow lines end in ``<TAB>\\r\\n`` (an empty third field, dropped); one title
  (line 10,344) has a tab inside it and no trailing tab, so only the first tab separates the
  label and an empty last field is the only thing dropped;
* SearchSnippets, StackOverflow, Biomedical and Tweet use CRLF; SearchSnippets texts end in a
  space; surrounding whitespace is stripped, inner whitespace is kept as is;
* Biomedical has no final newline (its last record is still read);
* GoogleNews S, T and TS are not line-aligned (TS 11,109 lines, S and T 11,108, each missing a
  different item), so each file is parsed on its own.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable

from sentrepro.data.benchmarks import Benchmark, Layout
from sentrepro.data.counts import check_classes, check_count
from sentrepro.data.fixtures.archives import write_tree
from sentrepro.data.fixtures.text import class_keywords, topical_words
from sentrepro.data.records import DataFormatError, LabelledText, parse_int, read_text_lines

# Task group ``clustering``: set name -> path relative to the repository's data/ folder (the local
# short-text-clustering dir).
CLUSTERING_SETS: dict[str, str] = {
    "AgNews": "agnewsdataraw-8000",
    "SearchSnippets": "search_snippets/search_snippets_true_text",
    "StackOverflow": "stackoverflow/stackoverflow_true_text",
    "Biomedical": "biomedical/biomedical_true_text",
    "GoogleNews-S": "S",
    "GoogleNews-T": "T",
    "GoogleNews-TS": "TS",
    "Tweet": "tweet-original-order.txt",
}


def read_clustering(root: Path, name: str, *, check_counts: bool = True) -> list[LabelledText]:
    """Read clustering set ``name`` from ``root`` (the short-text-clustering ``data/`` folder).

    Returns texts in file order with labels remapped to 0..K-1 (see :func:`dense_label_map`).
    Checks the documented size and K unless ``check_counts`` is false.
    """
    if name not in CLUSTERING_SETS:
        raise ValueError(f"clustering set must be one of {sorted(CLUSTERING_SETS)}, got {name!r}")
    path = Path(root) / CLUSTERING_SETS[name]
    lines = read_text_lines(path, "utf-8")
    rows = [parse_clustering_line(line, path, lineno) for lineno, line in enumerate(lines, start=1)]
    label_map = dense_label_map(label for label, _text in rows)
    if check_counts:
        check_count(name, "all", len(rows), path)
        check_classes(name, len(label_map), path)
    return [LabelledText(text, label_map[label]) for label, text in rows]


def parse_clustering_line(line: str, path: Path, lineno: int) -> tuple[int, str]:
    """``label<TAB>text[<TAB>]`` -> (original label, text without surrounding whitespace)."""
    label_field, tab, text = line.partition("\t")
    if not tab:
        raise DataFormatError(path, lineno, f"expected 'label<TAB>text', found no tab in {line[:60]!r}")
    if text.endswith("\t"):
        text = text[:-1]  # StackOverflow's empty trailing field
    label = parse_int(label_field, path, lineno, "label")
    text = text.strip()
    if not text:
        raise DataFormatError(path, lineno, "no text after the label")
    return label, text


def dense_label_map(labels: Iterable[int]) -> dict[int, int]:
    """Original label id -> 0..K-1, in ascending order of the original id (e.g. Tweet 1,2,4 -> 0,1,2)."""
    return {original: dense for dense, original in enumerate(sorted(set(labels)))}


# ----------------------------------------------------------------------------- the fixture ``clustering``
# Synthetic copies of the 8 files, in the same paths and formats as upstream
# (docs/evaluation-and-data.md §4), with the real number of clusters but a few texts per cluster:
# every line is ``label<TAB>text`` with 1-based labels; AgNews and the GoogleNews files end lines in
# ``\n``, SearchSnippets, StackOverflow, Biomedical and Tweet in ``\r\n``; SearchSnippets texts end
# in a space; StackOverflow lines end in ``<TAB>\r\n`` except its last line and one title that holds a
# tab of its own, and its text is cased, the others lowercase; Biomedical has no final newline;
# GoogleNews TS has one line more than S and T, which each miss a different item; Tweet uses 89
# distinct labels out of 1..110 and keeps its shuffled "original order".

SEED = "sentrepro-fixture-clustering"
# name -> (clusters, texts per cluster, words per text)
SIZES: dict[str, tuple[int, int, int]] = {
    "AgNews": (4, 10, 12),
    "SearchSnippets": (8, 6, 14),
    "StackOverflow": (20, 3, 8),
    "Biomedical": (20, 3, 10),
    "GoogleNews": (152, 2, 6),
    "Tweet": (89, 2, 6),
}
TWEET_LABEL_RANGE = 110


def _texts(rng: random.Random, name: str, labels: list[int]) -> list[tuple[int, str]]:
    """(label, lowercase text) for each label, texts of one label sharing that label's keywords."""
    n_clusters, _per_cluster, n_words = SIZES[name]
    keywords = class_keywords(n_clusters, f"{SEED}:{name}")
    ids = sorted(set(labels))
    return [(label, " ".join(topical_words(rng, keywords[ids.index(label)], n_words))) for label in labels]


def _labels(rng: random.Random, name: str, *, shuffled: bool, ids: list[int] | None = None) -> list[int]:
    n_clusters, per_cluster, _ = SIZES[name]
    ids = ids or list(range(1, n_clusters + 1))
    labels = [label for label in ids for _ in range(per_cluster)]
    if shuffled:
        rng.shuffle(labels)
    return labels


def _join(rows: list[str], newline: str, final_newline: bool = True) -> bytes:
    text = newline.join(rows) + (newline if final_newline else "")
    return text.encode("utf-8")


def clustering_tree(seed: str = SEED) -> dict[str, bytes]:
    """The fixture's files (path relative to the repository's ``data/`` folder -> bytes)."""
    rng = random.Random(seed)
    tree: dict[str, bytes] = {}

    rows = _texts(rng, "AgNews", _labels(rng, "AgNews", shuffled=True))
    tree[CLUSTERING_SETS["AgNews"]] = _join([f"{label}\t{text}" for label, text in rows], "\n")

    rows = _texts(rng, "SearchSnippets", _labels(rng, "SearchSnippets", shuffled=False))
    tree[CLUSTERING_SETS["SearchSnippets"]] = _join([f"{label}\t{text} " for label, text in rows], "\r\n")

    rows = _texts(rng, "StackOverflow", _labels(rng, "StackOverflow", shuffled=True))
    lines = [f"{label}\t{text[0].upper()}{text[1:]} ?\t" for label, text in rows]
    label, text = rows[len(rows) // 2]
    words = text.split()
    lines[len(rows) // 2] = f"{label}\t{' '.join(words[:3])}\t{' '.join(words[3:])}"  # a tab inside the title
    lines[-1] = lines[-1].rstrip("\t")
    tree[CLUSTERING_SETS["StackOverflow"]] = _join(lines, "\r\n")

    rows = _texts(rng, "Biomedical", _labels(rng, "Biomedical", shuffled=False))
    tree[CLUSTERING_SETS["Biomedical"]] = _join([f"{label}\t{text}" for label, text in rows], "\r\n",
                                                final_newline=False)

    full = _texts(rng, "GoogleNews", _labels(rng, "GoogleNews", shuffled=False))
    missing_in_title, missing_in_snippet = rng.sample(range(len(full)), 2)
    titles = [(label, " ".join(text.split()[:3])) for label, text in full]
    snippets = [(label, " ".join(text.split()[3:])) for label, text in full]
    tree[CLUSTERING_SETS["GoogleNews-TS"]] = _join([f"{label}\t{text}" for label, text in full], "\n")
    tree[CLUSTERING_SETS["GoogleNews-T"]] = _join(
        [f"{label}\t{text}" for index, (label, text) in enumerate(titles) if index != missing_in_title], "\n")
    tree[CLUSTERING_SETS["GoogleNews-S"]] = _join(
        [f"{label}\t{text}" for index, (label, text) in enumerate(snippets) if index != missing_in_snippet], "\n")

    tweet_ids = sorted(rng.sample(range(1, TWEET_LABEL_RANGE + 1), SIZES["Tweet"][0]))
    rows = _texts(rng, "Tweet", _labels(rng, "Tweet", shuffled=True, ids=tweet_ids))
    tree[CLUSTERING_SETS["Tweet"]] = _join([f"{label}\t{text}" for label, text in rows], "\r\n")
    return tree


def write_clustering_fixture(out_dir: Path) -> list[Path]:
    """Write the 8 raw files under ``out_dir`` at their repository paths; same bytes on every run."""
    tree = clustering_tree()
    write_tree(tree, out_dir)
    return [Path(out_dir) / name for name in sorted(tree)]


# ----------------------------------------------------------------------------- the benchmark unit

COUNTS: dict[tuple[str, str], int] = {  # rashadulrakib/short-text-clustering-enhancement @ f363b66
    ("AgNews", "all"): 8000,
    ("SearchSnippets", "all"): 12340,
    ("StackOverflow", "all"): 20000,
    ("Biomedical", "all"): 20000,
    ("GoogleNews-S", "all"): 11108,
    ("GoogleNews-T", "all"): 11108,
    ("GoogleNews-TS", "all"): 11109,
    ("Tweet", "all"): 2472,
}
CLASSES: dict[str, int] = {
    "AgNews": 4,
    "SearchSnippets": 8,
    "StackOverflow": 20,
    "Biomedical": 20,
    "GoogleNews-S": 152,
    "GoogleNews-T": 152,
    "GoogleNews-TS": 152,
    "Tweet": 89,  # original ids are 1..110 with gaps
}


def read_clustering_layout(root: Path, variant: str | None, check_counts: bool) -> dict[str, dict]:
    found = {}
    for name, relative in CLUSTERING_SETS.items():
        items = read_clustering(root, name, check_counts=check_counts)
        found[name] = {"family": "clustering", "parts": {"all": len(items)},
                       "classes": len({item.label for item in items}), "files": [relative]}
    return found


BENCHMARK = Benchmark(
    name="clustering",
    description="the 8 short-text clustering sets of ConPVP Table 6",
    tasks={"clustering": CLUSTERING_SETS},
    counts=COUNTS,
    classes=CLASSES,
    layouts={"short-text-clustering": Layout("the 8 short-text clustering sets (rashadulrakib/short-text-clustering-"
                                             "enhancement data/)", read_clustering_layout)},
    fixture=write_clustering_fixture,
)
