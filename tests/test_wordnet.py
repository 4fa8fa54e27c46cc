"""The WordNet database reader (NLTK semantics) and MoCoUTRL's view builder.

A tiny WNdb-format database is written byte-exactly in a temp directory (offsets are byte positions,
as in the real files), so the reader's parsing, pointer resolution and morphy are pinned without the
system copy; one test also reads the real WordNet 3.0 when it is installed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from sentrepro.cli import main as cli_main
from sentrepro.data.views import (
    AdjectiveTest,
    ViewSettings,
    ViewTriples,
    build_views,
    line_rng,
    make_views,
    read_views_tsv,
    word_tokenize,
)
from sentrepro.data.wordnet import WordNet, WordNetError, locate_database, parse_data_line
from sentrepro.records.recorded import content_record

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by  \n  2 Princeton University  \n"

# Synsets per data file: (key, ss_type, [words], [(symbol, target key, target pos, source/target)]).
# Keys stand for byte offsets, filled in once every line's position is known.
SYNSETS = {
    "adj": [
        ("good_a", "a", ["good"], [("!", "bad_a", "a", "0101"), ("&", "decent_s", "s", "0000")]),
        ("bad_a", "a", ["bad"], [("!", "good_a", "a", "0101")]),
        ("decent_s", "s", ["decent", "nice(a)"], [("&", "good_a", "a", "0000")]),
        ("happy_a", "a", ["happy", "felicitous(p)"], [("!", "unhappy_a", "a", "0101")]),
        ("unhappy_a", "a", ["unhappy"], [("!", "happy_a", "a", "0101")]),
        ("tall_a", "a", ["tall"], []),
    ],
    "noun": [
        ("good_n", "n", ["good", "goodness"], [("+", "good_a", "a", "0101")]),
        ("goose_n", "n", ["goose"], []),
    ],
    "verb": [
        ("run_v", "v", ["run"], []),
    ],
    "adv": [],
}
INDEX = {
    "adj": [("bad", ["bad_a"]), ("decent", ["decent_s"]), ("felicitous", ["happy_a"]), ("good", ["good_a"]),
            ("happy", ["happy_a"]), ("nice", ["decent_s"]), ("tall", ["tall_a"]), ("unhappy", ["unhappy_a"])],
    "noun": [("good", ["good_n"]), ("goodness", ["good_n"]), ("goose", ["goose_n"])],
    "verb": [("run", ["run_v"])],
    "adv": [],
}
EXCEPTIONS = {"adj": "better good\nhappier happy\n", "noun": "geese goose\n", "verb": "ran run\n", "adv": ""}


def _data_line(ss_type: str, words: list[str], pointers: list, offsets: dict[str, int], own: int) -> str:
    word_part = " ".join(f"{w} 0" for w in words)
    pointer_part = " ".join(f"{sym} {offsets.get(key, 0):08d} {pos} {st}" for sym, key, pos, st in pointers)
    return f"{own:08d} 00 {ss_type} {len(words):02x} {word_part} {len(pointers):03d} {pointer_part} | a gloss  \n"


def write_database(root: Path) -> Path:
    """Write the fixture database; returns ``root``. Line lengths do not depend on offset values."""
    root.mkdir(parents=True, exist_ok=True)
    offsets: dict[str, int] = {}
    for name, synsets in SYNSETS.items():
        position = len(HEADER.encode())
        for key, ss_type, words, pointers in synsets:
            offsets[key] = position
            position += len(_data_line(ss_type, words, pointers, {}, 0).encode())
    for name, synsets in SYNSETS.items():
        text = HEADER + "".join(_data_line(t, w, p, offsets, offsets[k]) for k, t, w, p in synsets)
        (root / f"data.{name}").write_text(text, encoding="utf-8")
        pos = {"adj": "a", "noun": "n", "verb": "v", "adv": "r"}[name]
        lines = [f"{lemma} {pos} {len(keys)} 0 {len(keys)} 0 " + " ".join(f"{offsets[k]:08d}" for k in keys) + "  \n"
                 for lemma, keys in INDEX[name]]
        (root / f"index.{name}").write_text(HEADER + "".join(lines), encoding="utf-8")
        (root / f"{name}.exc").write_text(EXCEPTIONS[name], encoding="utf-8")
    return root


@pytest.fixture()
def wordnet(tmp_path) -> WordNet:
    with WordNet(write_database(tmp_path / "wn")) as wn:
        yield wn


# --- reader ---------------------------------------------------------------------------------------


def test_parse_data_line_fields():
    line = "00001740 00 a 02 able 0 unable(p) 1 002 ! 00002098 a 0101 + 05207437 n 0000 | (usually followed by `to')\n"
    ss_type, words, pointers = parse_data_line(line)
    assert ss_type == "a"
    assert words == ("able", "unable")  # adjective marker dropped
    assert pointers == [("!", 2098, "a", 1, 1), ("+", 5207437, "n", 0, 0)]


def test_synsets_follow_nltk_pos_order_and_lemma_order(wordnet):
    synsets = wordnet.synsets("Good")  # lower-cased
    assert [s.pos for s in synsets] == ["n", "a"]  # noun before adjective
    assert wordnet.synonyms("good") == ["good", "goodness", "good"]  # duplicates kept


def test_antonyms_are_lexical_pointers_resolved_to_lemma_names(wordnet):
    assert wordnet.antonyms("good") == ["bad"]
    assert wordnet.antonyms("happy") == ["unhappy"]
    assert wordnet.antonyms("unhappy") == ["happy"]
    assert wordnet.antonyms("tall") == []
    assert wordnet.synonyms("happy") == ["happy", "felicitous"]  # "(p)" marker stripped


def test_satellite_synset_keeps_its_type(wordnet):
    (synset,) = wordnet.synsets("nice")
    assert synset.pos == "s" and synset.lemmas == ("decent", "nice")


def test_morphy_exceptions_then_detachment_rules(wordnet):
    assert wordnet.morphy("better", "a") == ["good"]  # adj.exc
    assert wordnet.morphy("geese", "n") == ["goose"]  # noun.exc
    assert wordnet.morphy("goods", "n") == ["good"]  # rule s -> ''
    assert wordnet.morphy("runs", "v") == ["run"]
    assert wordnet.morphy("taller", "a") == ["tall"]  # rule er -> ''
    assert wordnet.morphy("ran", "v") == ["run"]
    assert wordnet.morphy("xyzzy", "n") == []


def test_parts_of_speech(wordnet):
    assert wordnet.parts_of_speech("good") == {"n", "a"}
    assert wordnet.parts_of_speech("happier") == {"a"}
    assert wordnet.parts_of_speech("the") == set()


def test_missing_files_and_malformed_lines_are_named(tmp_path):
    with pytest.raises(WordNetError, match="missing"):
        WordNet(tmp_path)
    root = write_database(tmp_path / "wn")
    (root / "index.verb").write_text(HEADER + "run v two 0\n", encoding="utf-8")
    with pytest.raises(WordNetError, match=r"index\.verb:3"):
        WordNet(root)


def test_locate_database_in_root_or_dict(tmp_path):
    write_database(tmp_path / "a")
    write_database(tmp_path / "b" / "dict")
    assert locate_database(tmp_path / "a") == tmp_path / "a"
    assert locate_database(tmp_path / "b") == tmp_path / "b" / "dict"
    with pytest.raises(WordNetError):
        locate_database(tmp_path)


SYSTEM_WORDNET = Path(os.environ.get("SENTREPRO_WORDNET", "/usr/share/wordnet"))


@pytest.mark.skipif(not (SYSTEM_WORDNET / "data.adj").is_file(),
                    reason="WordNet 3.0 not installed (apt-get install wordnet-base, or set SENTREPRO_WORDNET)")
def test_real_wordnet_3():
    with WordNet(SYSTEM_WORDNET) as wn:
        assert set(wn.antonyms("good")) >= {"bad", "evil"}
        assert wn.parts_of_speech("happy") == {"a"}
        assert wn.morphy("happier", "a") == ["happy"]
        assert wn.antonyms("happy")[0] == "unhappy"
        assert "goose" in wn.synonyms("geese")
        assert len(wn.synsets("good")) == 27  # 4 noun + 21 adjective + 2 adverb senses (NLTK's count)


# --- views ----------------------------------------------------------------------------------------


def test_word_tokenize_treebank_conventions():
    assert word_tokenize('He said, "I can\'t go (now)." It\'s 3:30 -- fine...') == [
        "He", "said", ",", "``", "I", "ca", "n't", "go", "(", "now", ")", ".", "''", "It", "'s", "3:30", "--",
        "fine", "..."]
    assert word_tokenize("A tall man.") == ["A", "tall", "man", "."]


SETTINGS = ViewSettings(seed=0, min_words=3, max_words=50)


def test_make_views_swaps_the_adjective_in_place(wordnet):
    line = "A happy man walked home."
    views = make_views(line, AdjectiveTest(wordnet, "only-adjective"), wordnet, SETTINGS, random.Random(1))
    original, synonym, antonym = views
    assert original == "A happy man walked home ."
    assert synonym in ("A happy man walked home .", "A felicitous man walked home .")
    assert antonym == "A unhappy man walked home ."


def test_make_views_skips_short_lines_lines_without_adjectives_and_words_without_antonyms(wordnet):
    adjective = AdjectiveTest(wordnet, "only-adjective")
    rng = random.Random(0)
    assert make_views("happy man", adjective, wordnet, SETTINGS, rng) is None  # 2 words < min_words
    assert make_views("A man walked home.", adjective, wordnet, SETTINGS, rng) is None
    assert make_views("A tall man walked home.", adjective, wordnet, SETTINGS, rng) is None  # tall: no antonym


def test_adjective_rules(wordnet):
    only, any_sense = AdjectiveTest(wordnet, "only-adjective"), AdjectiveTest(wordnet, "any-adjective")
    assert only("happy") and any_sense("happy")
    assert not only("good") and any_sense("good")  # noun too
    assert not only(",") and not any_sense("goose")


def test_views_are_a_pure_function_of_seed_and_line_number(wordnet):
    line = "The happy and good and happy men walked home ."
    adjective = AdjectiveTest(wordnet, "any-adjective")
    settings = ViewSettings(seed=0, min_words=3, max_words=50, adjective_rule="any-adjective")
    first = make_views(line, adjective, wordnet, settings, line_rng(7, 12))
    assert make_views(line, adjective, wordnet, settings, line_rng(7, 12)) == first
    outcomes = {make_views(line, adjective, wordnet, settings, line_rng(seed, 12)) for seed in range(40)}
    assert len(outcomes) > 1  # the seed changes the draws


def _prepare_wordnet_source(tmp_path: Path) -> Path:
    from sentrepro.data.prepare import prepare

    source = write_database(tmp_path / "wordnet-src")
    prepare("wordnet", {"url": source.as_uri(), "format": "directory"}, tmp_path / "prepared", None)
    return tmp_path / "prepared" / "MANIFEST.json"


def test_build_views_outputs_and_triples_round_trip(tmp_path, wordnet):
    from transformers import AutoTokenizer

    from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus
    from tests.tiny_models import minilm_dir

    corpus = tmp_path / "sentences.txt"
    corpus.write_text("A happy man walked home.\nNothing here at all.\nAn unhappy woman ran home.\n"
                      "Short.\nThe happy dog ran home.\n", encoding="utf-8")
    # its record as prepare_corpus writes it: build_views verifies the text against it before reading
    (tmp_path / "sentences.txt.json").write_text(json.dumps({"corpus_files": content_record([corpus]),
                                                             "provenance": {"step": "prepare_corpus"}}))
    manifest = _prepare_wordnet_source(tmp_path)
    spec = {"wordnet_source": "wordnet", "seed": 3, "min_words": 3, "max_words": 50}
    assert cli_main(["build-views", "--spec", json.dumps(spec), "--corpus", str(corpus),
                     "--wordnet-manifest", str(manifest), "--out-dir", str(tmp_path / "views")]) == 0
    out = tmp_path / "views"
    triples = read_views_tsv(out / "views.tsv")
    assert [t[0] for t in triples] == ["A happy man walked home .", "An unhappy woman ran home .",
                                       "The happy dog ran home ."]
    assert [t[2] for t in triples] == ["A unhappy man walked home .", "An happy woman ran home .",
                                       "The unhappy dog ran home ."]
    stacked = (out / "sentences.txt").read_text(encoding="utf-8").splitlines()
    assert stacked == [t[0] for t in triples] + [t[1] for t in triples] + [t[2] for t in triples]
    record = json.loads((out / "sentences.txt.json").read_text())
    assert record["triples"] == 3 and record["sentences"] == 9 and record["corpus_lines"] == 5
    assert any(i["role"] == "WordNet database file" for i in record["provenance"]["inputs"])
    # same seed, same views: rebuilding gives identical bytes
    build_views(corpus, locate_database(manifest.parent / "files"), spec, tmp_path / "again")
    assert (tmp_path / "again" / "views.tsv").read_bytes() == (out / "views.tsv").read_bytes()

    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    tokenize_corpus(out / "sentences.txt", tokenizer, tmp_path / "tok", progress=False)
    views = ViewTriples(TokenizedCorpus.open(tmp_path / "tok"))
    assert len(views) == 3
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    assert views[1] == tuple(encode(t) for t in triples[1])
    with pytest.raises(IndexError):
        views[3]


def test_view_triples_needs_three_blocks():
    with pytest.raises(ValueError, match="3 x N"):
        ViewTriples([[1], [2]])


def test_read_views_tsv_names_the_bad_line(tmp_path):
    path = tmp_path / "views.tsv"
    path.write_text("original\tsynonym\tantonym\na\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"views\.tsv:2"):
        read_views_tsv(path)
