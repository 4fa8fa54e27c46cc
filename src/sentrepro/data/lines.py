"""Where a line of a one-sentence-per-line corpus file ends (``corpus.line_split``).

The reference trainers load ``wiki1m_for_simcse.txt`` with ``datasets.load_dataset("text")``
(SimCSE ``train.py:302-311``). SimCSE and Prompt-BERT pin ``datasets==1.2.1`` (SimCSE
``requirements.txt`` from fb0e512 until 00cfc7a, 2022-06-26; Prompt-BERT ``requirements.txt`` at
690ba6e), whose text loader (``datasets/text/text.py`` ``_generate_tables``, unchanged from 1.1.1 to
1.18.x) opens the file in text mode — universal newlines: ``\\r\\n`` and ``\\r`` become ``\\n`` — and
cuts each chunk with ``str.splitlines()``, which also ends a line at ``\\v``, ``\\f``, ``\\x1c``,
``\\x1d``, ``\\x1e``, ``\\x85``, ``\\u2028`` and ``\\u2029``. ESimCSE's released log names the loader
it ran: its cache path ``text/default-89c8c5c92e8dbb43/0.0.0/daf90a707a43…``
(``logs/roberta-base.log:5``) carries the hash of that very ``text.py`` (datasets 1.1.3–1.3.0), and
the same log counts 1,000,001 examples (``:73``) where the file has 1,000,000 newline-terminated
lines by the Hub's count (datasets >= 2.0 splits on newlines only, PR #3910): one extra break
character inside a line would explain it. Only the first 1.28 MB of the file are available offline
(none of those characters there), so the count itself could not be re-measured here; the corpus
record states both counts of whatever file is read.

* ``splitlines`` (default): the reference's rule, as above.
* ``newline``: only ``\\n``, ``\\r\\n`` and ``\\r`` end a line (datasets >= 2.0, the Hub viewer).

Both keep empty lines as empty sentences, as both loaders do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

LINE_SPLITS = ("splitlines", "newline")


def split_line(line: str, rule: str) -> list[str]:
    """The sentences of one universal-newline line (its ``\\n`` terminator kept, or the file's last line)."""
    if rule == "newline":
        return [line[:-1] if line.endswith("\n") else line]
    if rule == "splitlines":
        # with the terminator kept, "\n" -> [""] (an empty line stays one sentence) and line-wise
        # splitting equals str.splitlines() over the whole text
        return line.splitlines()
    raise ValueError(f"corpus.line_split: '{rule}' is not one of {', '.join(LINE_SPLITS)}")


def physical_lines(path: Path) -> Iterator[str]:
    """Lines as text mode reads them: universal newlines, each ending in ``\\n`` except perhaps the last."""
    with open(path, encoding="utf-8", newline=None) as handle:
        yield from handle


def read_lines(path: Path, rule: str) -> Iterator[str]:
    """The sentences of a one-sentence-per-line file under ``rule``."""
    for line in physical_lines(path):
        yield from split_line(line, rule)


def count_lines(path: Path) -> dict[str, int]:
    """How many sentences each rule reads from ``path``: ``{"splitlines": n, "newline": m}``."""
    counts = {rule: 0 for rule in LINE_SPLITS}
    for line in physical_lines(path):
        for rule in LINE_SPLITS:
            counts[rule] += len(split_line(line, rule))
    return counts
