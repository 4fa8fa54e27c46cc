"""The tiny models' trained vocabularies, built twice from one corpus, must be the same: the rehearsal's results are
compared across sittings by their digest (benchmarks/slurm_faults_reference.json), and a tiny model's token ids
decide its random embedding rows. Stop 56's faulted run found the cased WordPiece vocabulary numbered differently
on each build (BENCHMARKS.md, "Finding 2"); the builder now hands the trainer its alphabet in sorted order."""

from __future__ import annotations

import pytest

from sentrepro.pretrained import tiny

# Words over many letters, cased, so that the trainer's alphabet and its ## continuation alphabet are large.
WORDS = ["Alpha", "bravo", "Charlie", "delta", "Echo", "foxtrot", "Golf", "hotel", "India", "juliett", "Kilo",
         "lima", "Mike", "november", "Oscar", "papa", "Quebec", "romeo", "Sierra", "tango", "Uniform", "victor",
         "Whiskey", "xray", "Yankee", "zulu"]
SENTENCES = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 9)) for i in range(200)]


def test_the_cased_wordpiece_vocabulary_is_numbered_the_same_on_every_build():
    builds = [tiny.bert_cased_tokenizer(SENTENCES, vocab_size=200) for _ in range(3)]
    # before the fix: on the rehearsal's corpus 148 ids differed; on this small corpus, merges that tie also changed
    # the set
    assert builds[0].get_vocab() == builds[1].get_vocab() == builds[2].get_vocab()
    assert builds[0].backend_tokenizer.to_str() == builds[1].backend_tokenizer.to_str()


def test_the_cased_wordpiece_vocabulary_is_a_bert_one_with_only_berts_special_tokens():
    tokenizer = tiny.bert_cased_tokenizer(SENTENCES, vocab_size=200)
    vocabulary = tokenizer.get_vocab()
    assert [token for token, _ in sorted(vocabulary.items(), key=lambda item: item[1])[:5]] == tiny.WORDPIECE_SPECIALS
    assert sorted(vocabulary.values()) == list(range(len(vocabulary))) and len(vocabulary) <= 200  # merges run out
    # the reserved alphabet is an ordinary vocabulary entry, not a special token: "##a" in text is not one piece
    assert tokenizer.all_special_tokens == sorted(tiny.WORDPIECE_SPECIALS, key=tokenizer.all_special_tokens.index)
    assert set(tokenizer.all_special_tokens) == set(tiny.WORDPIECE_SPECIALS)
    assert tokenizer.tokenize("##a") != ["##a"]
    pieces = tokenizer.tokenize("Quebec Whiskey zulu")
    assert "Q" in "".join(pieces) and any(piece.startswith("##") for piece in tokenizer.get_vocab())  # cased, ##
    assert tokenizer.convert_tokens_to_string(pieces) == "Quebec Whiskey zulu"


def test_a_vocabulary_too_small_for_the_alphabet_is_an_error_saying_so():
    with pytest.raises(tiny.TinyModelError, match="cannot hold the corpus's 3. characters"):
        tiny.bert_cased_tokenizer(SENTENCES, vocab_size=40)


def test_the_byte_level_bpe_vocabularies_are_the_same_on_every_build():
    for build in (tiny.roberta_tokenizer, tiny.deberta_tokenizer):
        first, second = (build(SENTENCES, vocab_size=300) for _ in range(2))
        assert first.get_vocab() == second.get_vocab()
        assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()
