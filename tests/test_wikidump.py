"""Demo training corpus: sentences from gensim's bundled Wikipedia sample and from a tiny dump."""

from __future__ import annotations

import bz2
import re
from pathlib import Path

import gensim
import pytest

from sentrepro.data.wikidump import split_sentences, wikidump_sentences, write_sentence_file

GENSIM_WIKI = (Path(gensim.__file__).parent / "test" / "test_data"
               / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
MARKUP = re.compile(r"[|{}\[\]<>]|==|'''|''|https?://|\balt=")

TINY_DUMP = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">
  <siteinfo><sitename>Wikipedia</sitename></siteinfo>
  <page><title>Albedo</title><ns>0</ns><id>1</id><revision><id>11</id><text xml:space="preserve">
'''Albedo''' is the fraction of sunlight that a surface reflects.{{cite web|url=http://example.org}} It is measured on a scale from zero to one.

== Examples ==
{| class="wikitable"
|-
| Fresh snow || 0.80 to 0.90 and more
|}
* A list item that is long enough to be a sentence.
Dr. Smith measured the [[snow|fresh snow]] albedo in 1990. Short one.
</text></revision></page>
  <page><title>AlbedoRedirect</title><ns>0</ns><id>2</id><revision><id>12</id><text xml:space="preserve">#REDIRECT [[Albedo]]</text></revision></page>
  <page><title>Talk:Albedo</title><ns>1</ns><id>3</id><revision><id>13</id><text xml:space="preserve">This talk page sentence must not appear in the corpus.</text></revision></page>
  <page><title>Template:Infobox</title><ns>10</ns><id>4</id><revision><id>14</id><text xml:space="preserve">This template sentence must not appear either.</text></revision></page>
</mediawiki>
"""


@pytest.fixture(scope="module")
def gensim_sentences() -> list[str]:
    assert GENSIM_WIKI.is_file(), f"gensim's Wikipedia sample is missing: {GENSIM_WIKI}"
    return list(wikidump_sentences(GENSIM_WIKI))


def test_gensim_sample_gives_a_plausible_clean_corpus(gensim_sentences):
    assert 10_000 < len(gensim_sentences) < 30_000
    assert len(set(gensim_sentences)) == len(gensim_sentences)
    for sentence in gensim_sentences:
        assert not MARKUP.search(sentence), sentence
        assert 5 <= len(sentence.split()) <= 64, sentence
        assert sentence == " ".join(sentence.split()), sentence
        assert sentence[-1] in ".!?\"')”’", sentence
    assert gensim_sentences[0].startswith("Anarchism is a political philosophy")


def test_gensim_sample_is_deterministic(gensim_sentences):
    assert list(wikidump_sentences(GENSIM_WIKI)) == gensim_sentences


def test_word_bounds_are_respected(gensim_sentences):
    narrow = list(wikidump_sentences(GENSIM_WIKI, min_words=10, max_words=12))
    assert narrow and all(10 <= len(s.split()) <= 12 for s in narrow)
    assert narrow == [s for s in gensim_sentences if 10 <= len(s.split()) <= 12]


def test_only_article_prose_survives(tmp_path):
    dump = tmp_path / "tiny.xml.bz2"
    dump.write_bytes(bz2.compress(TINY_DUMP.encode("utf-8")))
    assert list(wikidump_sentences(dump)) == [
        "Albedo is the fraction of sunlight that a surface reflects.",
        "It is measured on a scale from zero to one.",
        "Dr. Smith measured the fresh snow albedo in 1990.",
    ]


def test_splitter_keeps_initials_and_abbreviations_inside_sentences():
    text = ("J. R. R. Tolkien wrote it for the U.S. market. Dr. Who (e.g. Smith) came! "
            "\"Quoted end.\" Then 1990 began? yes.")
    assert split_sentences(text) == [
        "J. R. R. Tolkien wrote it for the U.S. market.",
        "Dr. Who (e.g. Smith) came!",
        "\"Quoted end.\"",
        "Then 1990 began? yes.",
    ]


def test_write_sentence_file_round_trips_and_counts(tmp_path, gensim_sentences):
    dest = tmp_path / "corpus" / "wiki_demo.txt"
    count = write_sentence_file(iter(gensim_sentences[:500]), dest)
    assert count == 500
    assert dest.read_text(encoding="utf-8").splitlines() == gensim_sentences[:500]


def test_write_sentence_file_refuses_line_breaks_and_leaves_nothing(tmp_path):
    dest = tmp_path / "wiki_demo.txt"
    with pytest.raises(ValueError, match="sentence 1 .*line break"):
        write_sentence_file(["A fine sentence here.", "Two\nlines."], dest)
    assert list(tmp_path.iterdir()) == []
