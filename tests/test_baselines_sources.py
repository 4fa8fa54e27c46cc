"""Where the static-token baseline's biased-token list comes from: Prompt-BERT's WordPiece list
(evaluation.py:178-182) is exactly the 36 most frequent tokens of STS-B (train, dev and test, SentEval's copy)
under bert-base-uncased's WordPiece vocabulary, so it is derived here from the real files rather than typed a
second time. (The BPE list of :180 needs roberta-base's vocabulary, which no offline package here ships.) Its
WordPiece punctuation set is likewise every token of the seven STS tasks with no letter or digit, plus [UNK]."""

from __future__ import annotations

import collections

from sentrepro.data.benchmarks.sts import read_sick, read_sts_benchmark, read_sts_year
from sentrepro.methods.baselines import FREQUENT_TOKENS, WORDPIECE_PUNCTUATION


def test_the_wordpiece_biased_tokens_are_the_36_most_frequent_of_sts_b(shared_data):
    from transformers import AutoTokenizer

    from sentrepro.pretrained.tiny import _minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(str(_minilm_dir()))     # bert-base-uncased's vocabulary
    counts = collections.Counter()
    for split in ("train", "dev", "test"):
        for pair in read_sts_benchmark(shared_data / "senteval" / "STS" / "STSBenchmark" / f"sts-{split}.csv"):
            counts.update(tokenizer.tokenize(pair.s1))
            counts.update(tokenizer.tokenize(pair.s2))
    ranked = counts.most_common(37)
    assert ranked[35][1] > ranked[36][1]                               # no tie at the cut
    assert FREQUENT_TOKENS["bert"] == frozenset(token for token, _ in ranked[:36])


def test_the_bpe_biased_tokens_are_the_same_words_in_byte_level_bpe():
    """Without roberta-base's vocabulary the BPE list cannot be counted here, but it can be read against the
    WordPiece one: it holds the same frequent STS-B words in byte-level BPE pieces. Every entry, its word-start
    mark "Ġ" taken off (and the release's "Ġ, ", with its trailing space, trimmed), is a word of the WordPiece
    list, and that list's words all appear but three: "two" and "white", and the continuation "##s", which BPE
    writes as the piece "s" (listed)."""
    from sentrepro.methods.baselines import BPE_SPACE

    bpe, wordpiece = FREQUENT_TOKENS["roberta"], FREQUENT_TOKENS["bert"]
    assert len(bpe) == len(wordpiece) == 36
    words = {token.removeprefix(BPE_SPACE).strip() for token in bpe}
    assert words <= wordpiece
    assert wordpiece - words == {"two", "white", "##s"}
    assert "Ġ, " in bpe and "s" in bpe  # kept verbatim from the release


def test_the_wordpiece_punctuation_is_every_token_of_the_sts_tasks_without_a_letter_or_digit(shared_data):
    """The released set of 47 is what bert-base-uncased's WordPiece makes of STS12-16, STS-B (all splits) and SICK
    (all files): the 46 tokens with no letter or digit among them, and [UNK], the token of a character outside the
    vocabulary (13 times in STS12-16). No one task holds them all (STS-B lacks five), the seven together hold no
    other."""
    from transformers import AutoTokenizer

    from sentrepro.pretrained.tiny import _minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(str(_minilm_dir()))     # bert-base-uncased's vocabulary
    sts = shared_data / "senteval" / "STS"
    pairs = [pair for year in (12, 13, 14, 15, 16) for subset in read_sts_year(sts, year).values() for pair in subset]
    pairs += [pair for split in ("train", "dev", "test")
              for pair in read_sts_benchmark(sts / "STSBenchmark" / f"sts-{split}.csv")]
    pairs += [pair for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt")
              for pair in read_sick(shared_data / "senteval" / "SICK" / name)]
    tokens = collections.Counter(token for pair in pairs for sentence in (pair.s1, pair.s2)
                                 for token in tokenizer.tokenize(sentence))
    no_letter_or_digit = {token for token in tokens if not any(ch.isalnum() for ch in token)}
    assert tokens["[UNK]"] > 0
    assert len(no_letter_or_digit) == 46
    assert WORDPIECE_PUNCTUATION == frozenset(no_letter_or_digit | {"[UNK]"})
