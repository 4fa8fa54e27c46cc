"""Where the static-token baseline's biased-token list comes from: Prompt-BERT's WordPiece list
(evaluation.py:178-182) is exactly the 36 most frequent tokens of STS-B (train, dev and test, SentEval's copy)
under bert-base-uncased's WordPiece vocabulary, so it is derived here from the real files rather than typed a
second time. (The BPE list of :180 needs roberta-base's vocabulary, which no offline package here ships.)"""

from __future__ import annotations

import collections

from sentrepro.data.benchmarks.sts import read_sts_benchmark
from sentrepro.methods.baselines import FREQUENT_TOKENS


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
