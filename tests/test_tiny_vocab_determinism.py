"""The tiny models' trained vocabularies, built twice from one corpus, must be the same: the rehearsal's results are
compared across sittings by their digest (benchmarks/slurm_faults_reference.json), and a tiny model's token ids
decide its random embedding rows. Stop 56's faulted run found the cased WordPiece vocabulary numbered differently
on each build (BENCHMARKS.md, "Finding 2"); this test holds the finding until the fix lands."""

from __future__ import annotations

import pytest

from sentrepro.pretrained import tiny

# Words over many letters, cased, so that the trainer's alphabet and its ## continuation alphabet are large.
WORDS = ["Alpha", "bravo", "Charlie", "delta", "Echo", "foxtrot", "Golf", "hotel", "India", "juliett", "Kilo",
         "lima", "Mike", "november", "Oscar", "papa", "Quebec", "romeo", "Sierra", "tango", "Uniform", "victor",
         "Whiskey", "xray", "Yankee", "zulu"]
SENTENCES = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 9)) for i in range(200)]


@pytest.mark.xfail(strict=True, reason="stop 56's finding 2: tokenizers' WordPiece trainer numbers the ## alphabet in "
                                       "hash-map order; the fix gives the vocabulary a canonical order")
def test_the_cased_wordpiece_vocabulary_is_numbered_the_same_on_every_build():
    builds = [tiny.bert_cased_tokenizer(SENTENCES, vocab_size=200).get_vocab() for _ in range(3)]
    # on the rehearsal's corpus the token set was the same and 148 ids differed; on this small corpus, merges that
    # tie also change the set
    assert builds[0] == builds[1] == builds[2]


def test_the_byte_level_bpe_vocabularies_are_the_same_on_every_build():
    for build in (tiny.roberta_tokenizer, tiny.deberta_tokenizer):
        first, second = (build(SENTENCES, vocab_size=300) for _ in range(2))
        assert first.get_vocab() == second.get_vocab()
        assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()
