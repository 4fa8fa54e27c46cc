"""corpus.line_split: the reference's str.splitlines rule against newline-only splitting."""

from __future__ import annotations

import hashlib
import json

import pytest

from sentrepro.data.lines import count_lines, read_lines, split_line
from sentrepro.data.prepare import build_corpus

SPECIAL = "one\x85two\nthree\u2028four\nfive\x1csix\nseven\r\neight\rnine\n\nten\x0celeven\n"
# by hand: splitlines breaks at \x85, \u2028, \x1c, \x0c and (after universal newlines) \r\n and \r
BY_SPLITLINES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "", "ten", "eleven"]
BY_NEWLINE = ["one\x85two", "three\u2028four", "five\x1csix", "seven", "eight", "nine", "", "ten\x0celeven"]


def _file(tmp_path, text: str):
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("ending", ["last line\n", "last line"])  # with and without a final newline
def test_both_rules_by_hand(tmp_path, ending):
    path = _file(tmp_path, SPECIAL + ending)
    assert list(read_lines(path, "splitlines")) == BY_SPLITLINES + ["last line"]
    assert list(read_lines(path, "newline")) == BY_NEWLINE + ["last line"]
    # the reference: datasets 1.2.1 reads in text mode and applies str.splitlines to the text
    with open(path, encoding="utf-8") as handle:
        assert list(read_lines(path, "splitlines")) == handle.read().splitlines()
    assert count_lines(path) == {"splitlines": len(BY_SPLITLINES) + 1, "newline": len(BY_NEWLINE) + 1}
    with pytest.raises(ValueError, match="line_split"):
        split_line("x\n", "universal")


def test_real_file_with_one_separator_inside_a_line_gains_one_sentence(tmp_path, wiki_sentences):
    """The real sentences with the real ending (a final newline), one line carrying a \\u2028: the
    reference's rule reads one sentence more, as ESimCSE's log (1,000,001) against the Hub's 1,000,000."""
    lines = wiki_sentences[:200]
    lines[100] = lines[100].replace(" ", "\u2028", 1)
    path = _file(tmp_path, "\n".join(lines) + "\n")
    assert count_lines(path) == {"splitlines": 201, "newline": 200}


def test_corpus_record_states_the_rule_and_both_counts(tmp_path, shared_data):
    source = shared_data / "wiki" / "wiki1m_for_simcse.first1280000bytes.txt"
    files = tmp_path / "src" / "files"
    files.mkdir(parents=True)
    head = source.read_bytes()[:20000]
    head = head[:head.rindex(b"\n") + 1]  # whole real lines, ending in a newline
    (files / "wiki.txt").write_bytes(head + "a\x85b\n".encode())
    manifest = tmp_path / "src" / "MANIFEST.json"
    # a manifest records each file's sha256, which build_corpus checks before reading (issue 25)
    digest = hashlib.sha256((files / "wiki.txt").read_bytes()).hexdigest()
    manifest.write_text(json.dumps({"name": "w", "files": {"wiki.txt": digest}}))
    spec = {"name": "w", "source": "w", "file": "wiki.txt", "reader": "lines", "max_sentences": None}
    out = tmp_path / "sentences.txt"
    record = build_corpus({**spec, "line_split": "splitlines"}, manifest, out)
    newline_lines = head.count(b"\n") + 1
    assert record["source_lines"] == {"splitlines": newline_lines + 1, "newline": newline_lines}
    assert record["line_split"] == "splitlines" and record["sentences"] == newline_lines + 1
    assert out.read_text(encoding="utf-8").split("\n")[-3:] == ["a", "b", ""]
    record = build_corpus({**spec, "line_split": "newline", "max_sentences": 5}, manifest, out)
    assert record["sentences"] == 5 and record["source_lines"]["newline"] == newline_lines
