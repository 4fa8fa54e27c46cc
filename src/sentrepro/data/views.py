"""MoCoUTRL's training views: each sentence with one adjective swapped for a synonym and an antonym.

What the released preprocessing does (MoCoUTRL_pub_ver ``prepro_dataset.py:53-128``) and how this
module reproduces it without NLTK's downloadable models:

1. Split the line into words with NLTK's ``word_tokenize`` -> here :func:`word_tokenize`, our own
   Penn-Treebank-style splitter (punctuation, brackets and clitics split off, double quotes turned
   into ``` `` ``` / ``''``). The corpus already holds one sentence per line, so NLTK's Punkt sentence
   splitting that precedes the Treebank rules is not needed.
2. Keep lines of ``min_words``..``max_words`` words (25..500 in the release).
3. Adjectives: the release keeps words that NLTK's averaged-perceptron tagger tags ``JJ``. That
   tagger's model is a separate download, so adjectives are decided from WordNet alone
   (``adjective_rule``): ``only-adjective`` (default) takes a word whose only WordNet part of speech
   is adjective, the closest context-free stand-in for a ``JJ`` tag (it never picks "good" used as
   a noun, at the price of skipping ambiguous adjectives); ``any-adjective`` takes every word with
   an adjective sense.
4. Pick one adjective at random (occurrences counted with repetition, as the release's list does);
   its position is its first occurrence in the line (``list.index``).
5. Synonyms: every lemma name of every synset of the word over all parts of speech, duplicates
   kept; antonyms: the first antonym of every lemma that has one (:mod:`sentrepro.data.wordnet`).
   If either list is empty the line is skipped (the release does not try another adjective).
6. Pick one synonym and one antonym at random and write ``original\\tsynonym\\tantonym``, each the
   words joined by single spaces; lemma names keep WordNet's underscores ("well_known").

Randomness is a pure function of (seed, line number): each line draws from its own
``random.Random`` seeded by both, so the views do not depend on the order or the chunking of the
work. Output (all written atomically) in ``out_dir``: ``views.tsv`` (header ``original synonym
antonym``), ``sentences.txt`` (the three columns stacked: N originals, then N synonyms, then N
antonyms, one per line, the layout :mod:`sentrepro.training.corpus` caches unchanged and
:class:`ViewTriples` reads back as triples) and ``sentences.txt.json`` (counts and provenance).
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from sentrepro.data.wordnet import ADJ, WordNet
from sentrepro.files import atomic_path, atomic_write_json

ADJECTIVE_RULES = ("only-adjective", "any-adjective")
VIEW_COLUMNS = ("original", "synonym", "antonym")

# --- word splitting (Penn Treebank conventions) ---------------------------------------------------

_QUOTE_AT_START = re.compile(r'^"')
_OPENING_QUOTE = re.compile(r'([ (\[{<])"')
_PUNCT_RULES = (
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.\.\."), " ... "),
    (re.compile(r"[;@#$%&?!]"), r" \g<0> "),
    (re.compile(r"""([^.])(\.)([\]\)}>"']*)\s*$"""), r"\1 \2\3 "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> "),
    (re.compile(r"--"), " -- "),
)
_CLOSING_QUOTE = re.compile(r'"')
_CLITICS = (
    re.compile(r"([^' ])('[sSmMdD]|') "),
    re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "),
)


def word_tokenize(text: str) -> list[str]:
    """Split a sentence into Penn-Treebank-style words (an NLTK ``word_tokenize`` stand-in)."""
    text = _QUOTE_AT_START.sub("``", text)
    text = _OPENING_QUOTE.sub(r"\1 `` ", text)
    for pattern, replacement in _PUNCT_RULES:
        text = pattern.sub(replacement, text)
    text = " " + _CLOSING_QUOTE.sub(" '' ", text) + " "
    for pattern in _CLITICS:
        text = pattern.sub(r"\1 \2 ", text)
    return text.split()


# --- one line -> one triple ------------------------------------------------------------------------


@dataclass(frozen=True)
class ViewSettings:
    seed: int = 0
    min_words: int = 25
    max_words: int = 500
    adjective_rule: str = "only-adjective"

    @classmethod
    def from_spec(cls, spec: dict) -> "ViewSettings":
        settings = cls(seed=int(spec.get("seed", 0)), min_words=int(spec.get("min_words", 25)),
                       max_words=int(spec.get("max_words", 500)),
                       adjective_rule=spec.get("adjective_rule", "only-adjective"))
        if settings.adjective_rule not in ADJECTIVE_RULES:
            raise ValueError(f"views.adjective_rule: '{settings.adjective_rule}' is not one of "
                             f"{', '.join(ADJECTIVE_RULES)}")
        return settings


class AdjectiveTest:
    """Decides (and remembers) whether a word counts as an adjective under ``rule``."""

    def __init__(self, wordnet: WordNet, rule: str):
        self.wordnet, self.rule = wordnet, rule
        self._known: dict[str, bool] = {}

    def __call__(self, word: str) -> bool:
        key = word.lower()
        if key not in self._known:
            pos = self.wordnet.parts_of_speech(key) if any(c.isalpha() for c in key) else set()
            self._known[key] = pos == {ADJ} if self.rule == "only-adjective" else ADJ in pos
        return self._known[key]


def line_rng(seed: int, line_number: int) -> random.Random:
    """The random stream of one corpus line: a pure function of (seed, line number)."""
    return random.Random(seed * 1_000_003_000_000 + line_number)


def make_views(line: str, words_are_adjective: AdjectiveTest, wordnet: WordNet, settings: ViewSettings,
               rng: random.Random) -> tuple[str, str, str] | None:
    """(original, synonym view, antonym view) of one line, or None when the line is skipped."""
    words = word_tokenize(line)
    if not settings.min_words <= len(words) <= settings.max_words:
        return None
    adjectives = [w for w in words if words_are_adjective(w)]
    if not adjectives:
        return None
    chosen = rng.choice(adjectives)
    position = words.index(chosen)
    synonyms, antonyms = wordnet.synonyms(chosen), wordnet.antonyms(chosen)
    if not synonyms or not antonyms:
        return None
    synonym, antonym = rng.choice(synonyms), rng.choice(antonyms)
    views = []
    for replacement in (None, synonym, antonym):
        swapped = list(words)
        if replacement is not None:
            swapped[position] = replacement
        views.append(" ".join(swapped))
    return views[0], views[1], views[2]


# --- whole corpus --------------------------------------------------------------------------------


def build_views(sentences_file: Path, wordnet_dir: Path, spec: dict, out_dir: Path, *,
                progress: bool = False) -> dict:
    """Write ``views.tsv``, ``sentences.txt`` (stacked columns) and ``sentences.txt.json`` into ``out_dir``."""
    from sentrepro.records.provenance import Provenance
    from sentrepro.records.recorded import CORPUS_FILES, add_verified_input, content_record, verify_corpus

    settings = ViewSettings.from_spec(spec)
    prov = Provenance(step="build_views", config=spec, seed=settings.seed)
    verified = verify_corpus(sentences_file)  # as prepare_corpus recorded it, before a line is read
    add_verified_input(prov, sentences_file, "corpus sentences", verified.get(Path(sentences_file)))
    wordnet_dir = Path(wordnet_dir)
    for name in sorted(p.name for p in wordnet_dir.iterdir() if p.is_file() and "." in p.name):
        if name.split(".")[0] in ("index", "data") or name.endswith(".exc"):
            prov.add_input(wordnet_dir / name, "WordNet database file")
    triples: list[tuple[str, str, str]] = []
    lines = 0
    with WordNet(wordnet_dir) as wordnet, open(sentences_file, encoding="utf-8") as handle:
        is_adjective = AdjectiveTest(wordnet, settings.adjective_rule)
        for number, line in enumerate(handle):
            lines += 1
            views = make_views(line.rstrip("\n"), is_adjective, wordnet, settings, line_rng(settings.seed, number))
            if views is not None:
                triples.append(views)
            if progress and number % 100_000 == 0:
                print(f"views: line {number}, {len(triples)} triples", file=sys.stderr)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "views.tsv") as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write("\t".join(VIEW_COLUMNS) + "\n")
            for triple in triples:
                handle.write("\t".join(triple) + "\n")
    with atomic_path(out_dir / "sentences.txt") as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            for column in range(3):
                for triple in triples:
                    handle.write(triple[column] + "\n")
    record = {"sentences": 3 * len(triples), "triples": len(triples), "corpus_lines": lines,
              "layout": "stacked: originals, synonyms, antonyms (triples lines each)",
              "settings": settings.__dict__,
              CORPUS_FILES: content_record([out_dir / "views.tsv", out_dir / "sentences.txt"])}
    record["provenance"] = prov.finish()
    atomic_write_json(out_dir / "sentences.txt.json", record)
    return record


def read_views_tsv(path: Path) -> list[tuple[str, str, str]]:
    """The triples of a ``views.tsv`` (header checked)."""
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        if tuple(header) != VIEW_COLUMNS:
            raise ValueError(f"{path}:1: expected the header {list(VIEW_COLUMNS)}, found {header}")
        triples = []
        for number, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(f"{path}:{number}: expected 3 tab-separated views, found {len(fields)}")
            triples.append((fields[0], fields[1], fields[2]))
    return triples


class ViewTriples:
    """A tokenized stacked-views corpus (3N sentences) seen as N (original, synonym, antonym) id triples."""

    def __init__(self, corpus):
        total = len(corpus)
        if total % 3:
            raise ValueError(f"a views corpus holds 3 x N sentences (originals, synonyms, antonyms); found {total}")
        self.corpus, self.size = corpus, total // 3

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[list[int], list[int], list[int]]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        return self.corpus[index], self.corpus[self.size + index], self.corpus[2 * self.size + index]
