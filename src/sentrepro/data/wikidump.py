"""Plain English Wikipedia sentences from a MediaWiki XML dump, for the offline demo corpus.

The papers train on ``wiki1m_for_simcse.txt``: one million sentences sampled from English
Wikipedia, one per line. The offline demo cannot download it, so it builds a small corpus of the
same kind from the Wikipedia sample that gensim ships as test data
(``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``).

Pipeline, in order (every step is deterministic, so the output is the same on every run):

1. Pages come from gensim's own XML iterator (``gensim.corpora.wikicorpus.extract_pages``) in
   dump order. Only the article namespace (``ns`` 0) is kept; redirects and empty pages are skipped.
2. Wiki markup is removed with gensim's ``filter_wiki`` (templates, links, refs, tables, tags),
   then the ``''italic''``/``'''bold'''`` quote runs it leaves are dropped.
3. The text is cut into lines. Lines that are markup leftovers are dropped: headings
   (``== ... ==``), list/indent items (starting with ``*``, ``#``, ``:`` or ``;``), and lines that
   still contain ``|``, ``{``, ``}``, ``[``, ``]``, ``<``, ``>``, a run of ``==``, a URL, an image
   parameter glued to a word (``alt=``) or a section anchor (``Page#Section``).
4. Each remaining line (a paragraph) is split into sentences by ``split_sentences``: a boundary is
   a ``.``, ``!`` or ``?`` (optionally followed by a closing quote or bracket), then whitespace,
   then an uppercase letter, digit or opening quote/bracket. A piece ending in a single capital
   initial (``J.``, ``U.S.``) or a common abbreviation (``Mr.``, ``Dr.``, ``St.``, ``e.g.``, ...)
   is joined to the next piece instead of ending a sentence.
5. Whitespace is normalised (one space, none before ``,.;:!?``), empty brackets and stray
   punctuation just inside an opening bracket (``(; ...``), left by removed templates, are
   dropped, and a sentence is kept only if it starts with an uppercase letter,
   digit or quote, ends with ``.``, ``!`` or ``?`` (optionally plus a closing quote/bracket), has
   ``min_words..max_words`` whitespace-separated words, and has not been seen before.
"""

from __future__ import annotations

import bz2
import re
from pathlib import Path
from typing import Iterable, Iterator

from gensim.corpora.wikicorpus import extract_pages, filter_wiki

from sentrepro.files import atomic_path

ARTICLE_NAMESPACE = "0"

_QUOTE_RUN = re.compile(r"'{2,}")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;:]?\s*\)")
_PUNCT_AFTER_BRACKET = re.compile(r"\(\s*[,;:]+\s*")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_MARKUP_LINE_START = ("*", "#", ":", ";", "=", "!")
# Markup leftovers: table/template/link/tag characters, heading runs, URLs, image parameters
# glued to a word (``alt=...``, ``upright=1``) and section anchors (``Algorithm#Examples``).
_MARKUP_CHARS = re.compile(r"[|{}\[\]<>]|==|https?://|www\.|\w=|\w#\w", re.IGNORECASE)
# Two fixed-width look-behinds: Python's `re` does not allow one of variable width.
_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]”’]))\s+(?=[A-Z0-9\"'(“‘])")
_ENDS_WITH_INITIAL = re.compile(r"(?:^|[\s.])[A-Z]\.$")
_ABBREVIATIONS = ("Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "Mt.", "Jr.", "Sr.", "No.", "Vol.",
                  "vs.", "e.g.", "i.e.", "c.", "ca.", "cf.", "approx.", "Gen.", "Col.", "Lt.", "Capt.")
_SENTENCE_START = re.compile(r"^[A-Z0-9\"'“‘(]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]?$")


def wikidump_sentences(bz2_xml: Path, *, min_words: int = 5, max_words: int = 64) -> Iterator[str]:
    """Yield clean, unique sentences of ``min_words..max_words`` words from a bzip2 MediaWiki dump."""
    if min_words < 1 or max_words < min_words:
        raise ValueError(f"need 1 <= min_words <= max_words, got min_words={min_words}, max_words={max_words}")
    seen: set[str] = set()
    for text in article_texts(Path(bz2_xml)):
        for paragraph in prose_lines(filter_wiki(text)):
            for sentence in split_sentences(paragraph):
                cleaned = normalise_sentence(sentence)
                if cleaned not in seen and is_clean_sentence(cleaned, min_words, max_words):
                    seen.add(cleaned)
                    yield cleaned


def write_sentence_file(sentences: Iterable[str], dest: Path) -> int:
    """Write one sentence per line to ``dest`` atomically; return how many were written.

    A sentence that is empty or contains a line break would corrupt the one-per-line format, so
    it is refused with its position.
    """
    count = 0
    with atomic_path(dest) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        for index, sentence in enumerate(sentences):
            if not sentence.strip() or "\n" in sentence or "\r" in sentence:
                raise ValueError(f"sentence {index} for {dest} is empty or contains a line break: {sentence!r}")
            handle.write(sentence + "\n")
            count += 1
    return count


def article_texts(bz2_xml: Path) -> Iterator[str]:
    """Raw wikitext of every non-redirect article (namespace 0) in dump order."""
    with bz2.open(bz2_xml, "rb") as handle:
        for _title, text, _page_id in extract_pages(handle, filter_namespaces=(ARTICLE_NAMESPACE,)):
            if text and not is_redirect(text):
                yield text


def is_redirect(wikitext: str) -> bool:
    return wikitext.lstrip().upper().startswith("#REDIRECT")


def prose_lines(plain_text: str) -> Iterator[str]:
    """Lines of ``filter_wiki`` output that are running prose, not markup leftovers."""
    for line in _QUOTE_RUN.sub("", plain_text).splitlines():
        line = line.strip()
        if line and not line.startswith(_MARKUP_LINE_START) and not _MARKUP_CHARS.search(line):
            yield line


def split_sentences(paragraph: str) -> list[str]:
    """Cut a paragraph at sentence boundaries (see the module docstring, step 4)."""
    sentences: list[str] = []
    pending = ""
    for piece in _BOUNDARY.split(paragraph):
        pending = f"{pending} {piece}" if pending else piece
        if not _ends_with_abbreviation(pending):
            sentences.append(pending)
            pending = ""
    if pending:
        sentences.append(pending)
    return sentences


def _ends_with_abbreviation(text: str) -> bool:
    """True if ``text`` ends in a capital initial or a listed abbreviation, i.e. not a sentence end."""
    last_word = text.rsplit(None, 1)[-1].lstrip("(\"'“‘")
    return bool(_ENDS_WITH_INITIAL.search(text)) or last_word in _ABBREVIATIONS


def normalise_sentence(sentence: str) -> str:
    """One space between words, no space before punctuation, no empty or ``(;``-style brackets."""
    text = _EMPTY_BRACKETS.sub("", sentence)
    text = _PUNCT_AFTER_BRACKET.sub("(", text)
    text = " ".join(text.split())
    return _SPACE_BEFORE_PUNCT.sub(r"\1", text)


def is_clean_sentence(sentence: str, min_words: int, max_words: int) -> bool:
    """Starts like a sentence, ends like one, has no markup, and is within the word bounds."""
    n_words = len(sentence.split())
    return (
        min_words <= n_words <= max_words
        and bool(_SENTENCE_START.match(sentence))
        and bool(_SENTENCE_END.search(sentence))
        and not _MARKUP_CHARS.search(sentence)
    )
