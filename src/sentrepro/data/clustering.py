"""The eight short-text clustering sets of ConPVP Table 6 (the SCCL / PairSupCon data).

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

from pathlib import Path
from typing import Iterable

from sentrepro.data.counts import check_classes, check_count
from sentrepro.data.records import DataFormatError, LabelledText, parse_int, read_text_lines
from sentrepro.data.tasks import clustering_sets

# name -> path relative to the repository's data/ folder (the local short-text-clustering dir): tasks.yaml
CLUSTERING_SETS: dict[str, str] = clustering_sets()


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
