"""A small reader of the WordNet 3.0 database files, answering what MoCoUTRL's view builder asks NLTK.

MoCoUTRL's preprocessing (``prepro_dataset.py:53-128``) calls ``nltk.corpus.wordnet.synsets(word)``
and walks each synset's lemmas and their first antonym. NLTK needs its own data download; this
module reads the same Princeton ``WNdb-3.0`` files directly (Debian's ``wordnet-base`` package
installs them in ``/usr/share/wordnet``; the Princeton tarball unpacks them under ``dict/``):

* ``index.<pos>`` (pos = noun, verb, adj, adv): ``lemma pos synset_cnt p_cnt [ptr_symbol]*
  sense_cnt tagsense_cnt synset_offset+``. Lines starting with a space are the licence header.
* ``data.<pos>``: one synset per line, found by its byte offset: ``offset lex_filenum ss_type
  w_cnt(hex) (word lex_id(hex))+ p_cnt (symbol target_offset pos source/target(hex))* ... | gloss``.
  A pointer whose source/target field is not ``0000`` is lexical: word number ``source`` of this
  synset points at word number ``target`` of the target synset. Antonyms are ``!`` pointers.
* ``<pos>.exc``: irregular inflections, ``inflected base+`` per line.

Lookups follow NLTK 3's semantics so the views match what the released code would build: a word
is lower-cased, lemmatised per part of speech by ``morphy`` (exception list first, then the
detachment rules applied until a form is in the index), and ``synsets`` visits parts of speech in
the order noun, verb, adjective, adverb, forms in ``morphy`` order and offsets in index order.
Lemma names keep their case and underscores; adjective markers such as ``(a)``, ``(p)``,
``(ip)`` are dropped, as NLTK does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

NOUN, VERB, ADJ, ADJ_SAT, ADV = "n", "v", "a", "s", "r"
# NLTK's POS_LIST: the order in which ``synsets(word)`` visits the parts of speech.
POS_ORDER = (NOUN, VERB, ADJ, ADV)
FILE_SUFFIX = {NOUN: "noun", VERB: "verb", ADJ: "adj", ADJ_SAT: "adj", ADV: "adv"}
ANTONYM = "!"
DATABASE_FILES = tuple(f"{kind}.{FILE_SUFFIX[pos]}" for pos in POS_ORDER for kind in ("index", "data"))

# Detachment rules of WordNet's morphy (wnintro(7WN) "morphy"), as (ending, replacement) pairs.
DETACHMENT_RULES = {
    NOUN: (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
           ("men", "man"), ("ies", "y")),
    VERB: (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    ADJ: (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    ADV: (),
}

_ADJECTIVE_MARKER = re.compile(r"\((?:a|p|ip)\)$")


class WordNetError(ValueError):
    """The WordNet database is missing a file or a line does not follow the WNdb format."""


@dataclass(frozen=True)
class Synset:
    """One synset: its lemma names in file order and, per lemma, the lemma names its ``!`` pointers reach."""

    pos: str  # n, v, a, s (adjective satellite) or r
    offset: int
    lemmas: tuple[str, ...]
    antonyms: tuple[tuple[str, ...], ...]  # antonyms[k]: antonyms of lemmas[k], in pointer order


def _clean_lemma(word: str) -> str:
    return _ADJECTIVE_MARKER.sub("", word)


def parse_data_line(line: str) -> tuple[str, tuple[str, ...], list[tuple[str, int, str, int, int]]]:
    """One ``data.<pos>`` line -> (ss_type, lemma names, pointers).

    Each pointer is (symbol, target_offset, target_pos, source_word, target_word); word numbers are
    1-based and 0 for a semantic (synset-to-synset) pointer.
    """
    fields = line.split(" | ", 1)[0].split()
    try:
        ss_type = fields[2]
        word_count = int(fields[3], 16)
        words = tuple(_clean_lemma(fields[4 + 2 * k]) for k in range(word_count))
        at = 4 + 2 * word_count
        pointer_count = int(fields[at])
        pointers = []
        for k in range(pointer_count):
            symbol, target, pos, source_target = fields[at + 1 + 4 * k: at + 5 + 4 * k]
            pointers.append((symbol, int(target), pos, int(source_target[:2], 16), int(source_target[2:], 16)))
    except (IndexError, ValueError) as exc:
        raise WordNetError(f"malformed WordNet data line: {line[:120]!r} ({exc})") from exc
    return ss_type, words, pointers


def locate_database(root: Path) -> Path:
    """The WNdb directory inside a prepared source: ``root`` itself or its ``dict/`` (Princeton's tarball)."""
    root = Path(root)
    for candidate in (root, root / "dict"):
        if all((candidate / name).is_file() for name in DATABASE_FILES):
            return candidate
    raise WordNetError(f"no WordNet database (index.noun, data.noun, ...) in {root} or {root / 'dict'}")


class WordNet:
    """Read-only access to a WNdb-3.0 directory (the files named in ``DATABASE_FILES`` and ``*.exc``)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        missing = [name for name in DATABASE_FILES if not (self.directory / name).is_file()]
        if missing:
            raise WordNetError(f"{self.directory} is not a WordNet database directory: missing {', '.join(missing)} "
                               "(install Debian's wordnet-base or unpack Princeton's WNdb-3.0.tar.gz)")
        self._index: dict[str, dict[str, tuple[int, ...]]] = {pos: self._read_index(pos) for pos in POS_ORDER}
        self._exceptions = {pos: self._read_exceptions(pos) for pos in POS_ORDER}
        self._data = {pos: open(self.directory / f"data.{FILE_SUFFIX[pos]}", "rb") for pos in POS_ORDER}
        self._synset = lru_cache(maxsize=200_000)(self._load_synset)

    def close(self) -> None:
        for handle in self._data.values():
            handle.close()

    def __enter__(self) -> "WordNet":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- files ---------------------------------------------------------------------------------
    def _read_index(self, pos: str) -> dict[str, tuple[int, ...]]:
        path = self.directory / f"index.{FILE_SUFFIX[pos]}"
        table: dict[str, tuple[int, ...]] = {}
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.startswith(" "):
                    continue  # licence header
                fields = line.split()
                try:
                    synset_count, pointer_count = int(fields[2]), int(fields[3])
                    offsets = fields[6 + pointer_count: 6 + pointer_count + synset_count]
                    table[fields[0]] = tuple(int(offset) for offset in offsets)
                except (IndexError, ValueError) as exc:
                    raise WordNetError(f"{path}:{number}: malformed index line ({exc})") from exc
                if len(offsets) != synset_count:
                    raise WordNetError(f"{path}:{number}: expected {synset_count} synset offsets, "
                                       f"found {len(offsets)}")
        return table

    def _read_exceptions(self, pos: str) -> dict[str, tuple[str, ...]]:
        path = self.directory / f"{FILE_SUFFIX[pos]}.exc"
        table: dict[str, tuple[str, ...]] = {}
        if path.is_file():
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    fields = line.split()
                    if len(fields) >= 2:
                        table[fields[0]] = tuple(fields[1:])
        return table

    def _read_line(self, pos: str, offset: int) -> tuple[str, tuple[str, ...], list]:
        """The parsed ``data.<pos>`` line of the synset at byte ``offset``."""
        data_pos = ADJ if pos == ADJ_SAT else pos
        handle = self._data[data_pos]
        handle.seek(offset)
        line = handle.readline().decode("utf-8")
        if not line.startswith(f"{offset:08d} "):
            raise WordNetError(f"data.{FILE_SUFFIX[data_pos]}: no synset at byte offset {offset}")
        return parse_data_line(line)

    def _load_synset(self, pos: str, offset: int) -> Synset:
        ss_type, words, pointers = self._read_line(pos, offset)
        antonyms: list[list[str]] = [[] for _ in words]
        for symbol, target, target_pos, source_word, target_word in pointers:
            if symbol == ANTONYM and source_word > 0:
                # antonym pointers come in pairs, so read the target's words only (no recursion)
                antonyms[source_word - 1].append(self._read_line(target_pos, target)[1][target_word - 1])
        return Synset(pos=ss_type, offset=offset, lemmas=words, antonyms=tuple(tuple(a) for a in antonyms))

    # --- lookups -------------------------------------------------------------------------------
    def morphy(self, form: str, pos: str) -> list[str]:
        """Base forms of ``form`` present in the ``pos`` index, in NLTK's ``_morphy`` order."""
        index = self._index[pos]
        rules = DETACHMENT_RULES[pos]

        def in_index(forms: list[str]) -> list[str]:
            found: list[str] = []
            for candidate in forms:
                if candidate in index and candidate not in found:
                    found.append(candidate)
            return found

        def detach(forms: list[str]) -> list[str]:
            return [f[: -len(ending)] + replacement
                    for f in forms for ending, replacement in rules if f.endswith(ending)]

        exceptions = self._exceptions[pos]
        if form in exceptions:
            return in_index([form, *exceptions[form]])
        forms = detach([form])
        found = in_index([form, *forms])
        while not found and forms:
            forms = detach(forms)
            found = in_index(forms)
        return found

    def synsets(self, word: str, pos: str | None = None) -> list[Synset]:
        """Synsets of ``word`` (lower-cased) as NLTK's ``wordnet.synsets(word)`` lists them."""
        word = word.lower()
        order = POS_ORDER if pos is None else (pos,)
        return [self._synset(p, offset)
                for p in order for form in self.morphy(word, p) for offset in self._index[p][form]]

    def parts_of_speech(self, word: str) -> set[str]:
        """The parts of speech (n, v, a, r) under which ``word`` has at least one synset."""
        word = word.lower()
        return {pos for pos in POS_ORDER if self.morphy(word, pos)}

    def synonyms(self, word: str) -> list[str]:
        """Every lemma name of every synset of ``word``, duplicates kept (the released code's list)."""
        return [lemma for synset in self.synsets(word) for lemma in synset.lemmas]

    def antonyms(self, word: str) -> list[str]:
        """For every lemma of every synset of ``word`` that has antonyms, its first antonym."""
        return [antonyms[0] for synset in self.synsets(word) for antonyms in synset.antonyms if antonyms]
