"""The normalised in-memory records every benchmark parser returns, and the errors parsers raise.

Each benchmark has its own quirky file format (see docs/evaluation-and-data.md); the parsers in
``sts``, ``transfer``, ``clustering`` and ``wos`` turn them all into the four small records below, so
evaluation code never sees a file format. The helpers at the bottom are the few line-level
operations every parser shares: decoding a file into lines with line numbers that match an
editor's, and turning one bad field into an error that names the file and line.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ScoredPair:
    """Two sentences and their gold similarity score (STS12-16, STS-B, SICK-R)."""

    s1: str
    s2: str
    score: float


@dataclass(frozen=True, slots=True)
class LabelledText:
    """One text and its integer class id (transfer tasks, clustering sets)."""

    text: str
    label: int


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """Two sentences and their integer class id (MRPC: 1 = paraphrase)."""

    s1: str
    s2: str
    label: int


@dataclass(frozen=True, slots=True)
class Document:
    """A Web of Science abstract: flat class id, level-1 (parent) id and level-2 (child) id."""

    text: str
    label: int
    parent: int
    child: int


class DataFormatError(ValueError):
    """A data file does not have the documented format.

    The message reads ``<file>:<line>: <what is wrong>`` (``<file>: <what>`` when the fault is
    not on one line, e.g. two files that should be line-aligned are not); ``line`` is 1-based.
    """

    def __init__(self, path: str | os.PathLike, line: int | None, what: str) -> None:
        self.path = Path(path)
        self.line = line
        self.what = what
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        super().__init__(f"{where}: {what}")


class CountMismatch(ValueError):
    """A parsed data set does not have its documented number of items (see ``counts.EXPECTED``)."""

    def __init__(self, dataset: str, split: str, expected: int, actual: int, where: str | os.PathLike | None = None):
        self.dataset = dataset
        self.split = split
        self.expected = expected
        self.actual = actual
        self.where = None if where is None else str(where)
        source = f" (read from {self.where})" if self.where else ""
        super().__init__(
            f"{dataset} [{split}]: expected {expected}, found {actual}{source}; "
            "the file is truncated, a different release, or was parsed with the wrong rules"
        )


# ----------------------------------------------------------------------------- line helpers

LINE_SPLITTING = ("universal", "splitlines")
_INTEGER = re.compile(r"-?[0-9]+")


def read_text_lines(path: str | os.PathLike, encoding: str, splitting: str = "universal") -> list[str]:
    """Decode ``path`` and split it into lines without their terminators.

    ``splitting`` chooses how lines end, to match the reader a paper's code used:

    * ``"universal"``: ``\\n``, ``\\r\\n`` and ``\\r`` (Python's ``for line in open(...)``);
    * ``"splitlines"``: everything ``str.splitlines`` splits on, which adds ``\\v``, ``\\f``,
      ``\\x1c-\\x1e``, ``\\x85``, ``\\u2028`` and ``\\u2029`` (SentEval's ``read().splitlines()``).

    A final line terminator does not start an extra empty line; a missing one loses nothing.
    A byte sequence that does not decode raises :class:`DataFormatError` at its line.
    ``encoding="utf-8-sig"`` drops a leading byte-order mark.
    """
    if splitting not in LINE_SPLITTING:
        raise ValueError(f"splitting must be one of {LINE_SPLITTING}, got {splitting!r}")
    raw = Path(path).read_bytes()
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        what = f"not valid {encoding} (byte 0x{raw[error.start]:02x}: {error.reason})"
        raise DataFormatError(path, line, what) from None
    if splitting == "splitlines":
        return text.splitlines()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def whitespace_tokens_joined(text: str) -> str:
    """``text`` as SentEval hands it to a batcher: split on any whitespace, joined by one space."""
    return " ".join(text.split())


def split_fields(
    line: str, path: str | os.PathLike, lineno: int, n_fields: int | tuple[int, int | None], sep: str = "\t"
) -> list[str]:
    """Split ``line`` on ``sep`` and check the number of fields.

    ``n_fields`` is an exact count or an inclusive ``(min, max)`` range; ``max=None`` means extra
    columns are allowed (and ignored by the caller).
    """
    fields = line.split(sep)
    low, high = (n_fields, n_fields) if isinstance(n_fields, int) else n_fields
    if len(fields) < low or (high is not None and len(fields) > high):
        wanted = f"{low}" if low == high else (f"at least {low}" if high is None else f"{low} to {high}")
        what = f"expected {wanted} {_sep_name(sep)}-separated fields, found {len(fields)}: {_preview(line)}"
        raise DataFormatError(path, lineno, what)
    return fields


def parse_int(value: str, path: str | os.PathLike, lineno: int, what: str) -> int:
    """``int(value)`` for a label field; anything else (including blank) is a DataFormatError."""
    stripped = value.strip()
    if not _INTEGER.fullmatch(stripped):
        raise DataFormatError(path, lineno, f"{what} is not an integer: {value!r}")
    return int(stripped)


def parse_score(
    value: str, path: str | os.PathLike, lineno: int, low: float, high: float, what: str = "gold score"
) -> float:
    """``float(value)`` for a gold score, checked to be finite and within ``[low, high]``."""
    try:
        score = float(value)
    except ValueError:
        raise DataFormatError(path, lineno, f"{what} is not a number: {value!r}") from None
    if not math.isfinite(score) or not low <= score <= high:
        raise DataFormatError(path, lineno, f"{what} {value!r} is outside the documented range [{low:g}, {high:g}]")
    return score


def _sep_name(sep: str) -> str:
    return {"\t": "tab", " ": "space", ":": "colon"}.get(sep, repr(sep))


def _preview(line: str, width: int = 80) -> str:
    return repr(line if len(line) <= width else line[:width] + "...")
