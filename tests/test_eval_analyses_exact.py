"""The figure analyses (evaluation/analyses.py) in process on tiny hand-made STS-B files and a toy embedding: which
file each reads and records, the cosine/gold bins, alignment/uniformity, the corpus cut, the static token average
and the anisotropy record. Expected values are recomputed here with plain numpy. The workflow tests run these
suites only in a job's subprocess (slow tier); this is the unit-speed check."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentrepro.data.prepare import FILES
from sentrepro.evaluation import analyses

# (score, s1, s2): s1 and s2 share more words the higher the score
PAIRS = [(0.0, "a b", "c d"), (0.5, "a c", "e e f"), (1.2, "a b", "a e"), (2.0, "b c d", "b c f"),
         (3.0, "a b c", "a a a b d"), (3.7, "c d e", "d d e f"), (4.5, "a b c d", "a b c e"), (5.0, "e f", "e f")]


def toy_embed(sentences):
    """A letter-count vector per sentence (N, 8), plus a small constant so no row is zero."""
    out = np.full((len(sentences), 8), 0.1, dtype=np.float32)
    for row, sentence in enumerate(sentences):
        for word in sentence.split():
            out[row, (ord(word[0]) - ord("a")) % 8] += 1.0
    return out


class FakeProvenance:
    def __init__(self):
        self.inputs = []

    def add_input(self, path, role):
        self.inputs.append((path, role))


class FakeJob:
    def __init__(self, settings):
        self.settings, self.check_counts, self.prov = settings, False, FakeProvenance()
        self.calls = []

    def embed(self, sentences):
        self.calls.append(list(sentences))
        return toy_embed(sentences)

    def embed_groups(self, groups):
        return {key: toy_embed(s) for key, s in groups.items()}

    def add_data_files(self, paths, role):
        for path in paths:
            self.prov.add_input(path, role)


def write_stsb(root, split, pairs, stsb_dir="STS/STSBenchmark"):
    folder = root / FILES / stsb_dir
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"genre\tfile\t2012\t{i:04d}\t{score}\t{s1}\t{s2}" for i, (score, s1, s2) in enumerate(pairs)]
    (folder / f"sts-{split}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / f"sts-{split}.csv"


@pytest.fixture
def captured(monkeypatch):
    written = {}

    def write_metrics(job, out, results, *, aggregation, extra=None):
        written.update(results=results, aggregation=aggregation, extra=extra, out=out)
        return {"written": True}

    monkeypatch.setattr(analyses, "write_metrics", write_metrics)
    return written


def units(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_stsb_path_uses_the_configured_folder_and_defaults_to_sts_stsbenchmark(tmp_path):
    manifest = tmp_path / "MANIFEST.json"
    assert analyses._stsb_path(manifest, {}, "dev") == tmp_path / FILES / "STS" / "STSBenchmark" / "sts-dev.csv"
    assert analyses._stsb_path(manifest, {"stsb_dir": "X/Y"}, "test") == tmp_path / FILES / "X" / "Y" / "sts-test.csv"


def test_cosine_gold_bins_scaled_cosines_by_gold_and_records_the_file(tmp_path, captured):
    path = write_stsb(tmp_path, "test", PAIRS)
    job = FakeJob({"split": "test", "sts": {"variant": "senteval"}})
    assert analyses.run_cosine_gold(job, tmp_path / "MANIFEST.json", tmp_path / "out.json") == {"written": True}
    assert job.prov.inputs == [(path, "STS-B test")]
    gold = np.array([p[0] for p in PAIRS])
    a, b = units(toy_embed([p[1] for p in PAIRS])), units(toy_embed([p[2] for p in PAIRS]))
    cosine = (a * b).sum(1)
    scaled = (cosine - cosine.min()) / (cosine.max() - cosine.min())
    from scipy.stats import spearmanr
    results = captured["results"]
    assert results["spearman"]["n"] == 8
    assert results["spearman"]["reported"] == pytest.approx(100 * spearmanr(cosine, gold).correlation)
    bins = {0: [0, 1], 1: [2], 2: [3], 3: [4, 5], 4: [6, 7]}  # [low, low+1), the last bin closed at 5
    for low, rows in bins.items():
        key = f"scaled_mean_gold_{low}_{low + 1}"
        assert results[key]["n"] == len(rows)
        assert results[key]["reported"] == pytest.approx(scaled[rows].mean())
    assert list(results) == ["spearman", *[f"scaled_mean_gold_{k}_{k + 1}" for k in range(5)]]
    pairs = captured["extra"]["pairs"]
    assert captured["extra"]["variant"] == "senteval" and pairs["split"] == "test"
    assert pairs["gold"] == gold.tolist()
    np.testing.assert_allclose(pairs["cosine"], cosine, rtol=1e-6)
    np.testing.assert_allclose(pairs["scaled"], scaled, rtol=1e-5, atol=1e-7)
    assert captured["aggregation"] == "per pair; scaled = min-max over this run's cosines; spearman x100"


def test_cosine_gold_reports_none_for_an_empty_bin_and_reads_the_configured_split(tmp_path, captured):
    write_stsb(tmp_path, "dev", [p for p in PAIRS if p[0] < 3])
    job = FakeJob({"split": "dev", "sts": {"variant": "v"}})
    analyses.run_cosine_gold(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
    assert captured["results"]["scaled_mean_gold_3_4"] == {"reported": None, "n": 0}
    assert captured["results"]["scaled_mean_gold_4_5"] == {"reported": None, "n": 0}
    assert captured["extra"]["pairs"]["split"] == "dev" and job.prov.inputs[0][1] == "STS-B dev"


def test_align_uniform_over_positive_pairs_and_distinct_sentences_of_all_splits(tmp_path, captured):
    write_stsb(tmp_path, "dev", PAIRS[:4])
    write_stsb(tmp_path, "test", PAIRS[4:])
    job = FakeJob({"positive_threshold": 4, "splits": ["dev", "test"], "sts": {"variant": "sv"}})
    analyses.run_align_uniform(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
    assert [role for _, role in job.prov.inputs] == ["STS-B dev", "STS-B test"]
    positives = [p for p in PAIRS if p[0] > 4]  # 4.5 and 5.0
    x, y = units(toy_embed([p[1] for p in positives])), units(toy_embed([p[2] for p in positives]))
    align = np.mean(np.sum((x - y) ** 2, axis=1))
    sentences = sorted({s for p in PAIRS for s in p[1:]})
    u = units(toy_embed(sentences))
    i, j = np.triu_indices(len(u), k=1)
    uniform = np.log(np.mean(np.exp(-2 * np.sum((u[i] - u[j]) ** 2, axis=1))))
    results = captured["results"]
    assert results["align"]["n_pairs"] == 2 and results["uniform"]["n_sentences"] == len(sentences)
    assert results["align"]["reported"] == pytest.approx(align)
    assert results["uniform"]["reported"] == pytest.approx(uniform)
    assert captured["extra"] == {"variant": "sv"}
    assert captured["aggregation"] == ("L2-normalised; align over STS-B pairs with gold > 4 (alpha 2), "
                                       "uniform over distinct sentences (t 2)")


def test_corpus_sentences_takes_the_first_n_lines_lowercased_and_cut_to_max_words(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("The  Cat sat ON the mat\nB c\nthird line here\n", encoding="utf-8")
    assert analyses.corpus_sentences(corpus, 2, 3) == ["the cat sat", "b c"]
    assert analyses.corpus_sentences(corpus, 10, 32) == ["the cat sat on the mat", "b c", "third line here"]
    assert analyses.corpus_sentences(corpus, 1, 32) == ["the cat sat on the mat"]
    empty = tmp_path / "e.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="no sentences"):
        analyses.corpus_sentences(empty, 5, 32)


class ToyTokenizer:
    """Word ids = vocabulary index; [CLS]=0 and [SEP]=1 around every sentence; pads with 2 (mask 0)."""

    vocab = {"[CLS]": 0, "[SEP]": 1, "[PAD]": 2, "a": 3, "b": 4, "c": 5}

    def __call__(self, texts, padding, truncation, return_tensors):
        ids = [[0, *[self.vocab[w] for w in t.split()], 1] for t in texts]
        width = max(len(r) for r in ids)
        return {"input_ids": torch.tensor([r + [2] * (width - len(r)) for r in ids]),
                "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ids])}


class ToyEncoder(torch.nn.Module):
    def __init__(self, table):
        super().__init__()
        self.embeddings = torch.nn.Embedding.from_pretrained(torch.tensor(table, dtype=torch.float32))

    def get_input_embeddings(self):
        return self.embeddings


class ToyModel:
    def __init__(self, table):
        self.encoder = ToyEncoder(table)


TABLE = np.array([[1, 0, 0], [0, 1, 0], [9, 9, 9], [1, 1, 0], [0, 2, 1], [3, 0, 1]], dtype=np.float64)


def static_expected(sentences):
    vocab = ToyTokenizer.vocab
    return np.array([TABLE[[0, *[vocab[w] for w in s.split()], 1]].mean(0) for s in sentences])


@pytest.mark.parametrize("batch_size", [1, 2, 10])
def test_static_token_average_is_the_masked_mean_with_special_tokens_in_input_order(batch_size):
    job = FakeJob({"batch_size": batch_size})
    job.model, job.tokenizer, job.device = ToyModel(TABLE), ToyTokenizer(), "cpu"
    sentences = ["a b c a", "b", "c a", "a b c"]  # lengths differ: padding matters, order is restored
    out = analyses.static_token_average(job, sentences)
    assert out.dtype == np.float32 and out.shape == (4, 3)
    np.testing.assert_allclose(out, static_expected(sentences), rtol=1e-6)


def test_anisotropy_records_the_three_mean_pairwise_cosines(tmp_path, captured):
    corpus = tmp_path / "c.txt"
    corpus.write_text("A B C\nb\nC A a b\nunused line\n", encoding="utf-8")
    job = FakeJob({"n_sentences": 3, "max_words": 3, "batch_size": 2})
    job.model, job.tokenizer, job.device = ToyModel(TABLE), ToyTokenizer(), "cpu"
    analyses.run_anisotropy(job, corpus, tmp_path / "out.json")
    sentences = ["a b c", "b", "c a a"]
    assert job.calls == [sentences]

    def mean_cos(x):
        u = units(x)
        return float((u @ u.T).mean())

    results = captured["results"]
    assert results["sentence"] == {"reported": pytest.approx(mean_cos(toy_embed(sentences))), "n": 3}
    assert results["static_sentence"] == {"reported": pytest.approx(mean_cos(static_expected(sentences))), "n": 3}
    assert results["static_token"] == {"reported": pytest.approx(mean_cos(TABLE)), "n": 6}
    assert captured["aggregation"] == "mean pairwise cosine, diagonal included (PromptBERT cal_avg_cosine)"


class WordTokenizer:
    """Pieces are the words; detokenising joins with '-' (one word), so a reduced sentence embeds differently."""

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_string(self, tokens):
        return "-".join(tokens)


def test_token_removal_drops_the_k_most_frequent_stsb_test_tokens_and_rescores(tmp_path, captured):
    from sentrepro.evaluation.sts_suite import score_tasks

    path = write_stsb(tmp_path, "test", PAIRS)
    job = FakeJob({"ks": [2, 0, 1, 2], "sts": {"tasks": ["STSBenchmark"], "variant": "senteval"}})
    job.tokenizer = WordTokenizer()
    analyses.run_token_removal(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
    assert job.prov.inputs == [(path, "STS data file"), (path, "STS-B test")]
    words = [w for p in PAIRS for s in p[1:] for w in s.split()]
    counts = {w: words.count(w) for w in set(words)}
    ranked = sorted(counts, key=lambda w: (-counts[w], w))[:2]
    assert ranked == ["a", "b"]  # a: 12, b: 9 (by hand)
    tasks = {"STSBenchmark": {"test": [type("P", (), {"s1": p[1], "s2": p[2], "score": p[0]})() for p in PAIRS]}}

    def reduced(sentence, k):
        kept = [w for w in sentence.split() if w not in ranked[:k]]
        return sentence if len(kept) == len(sentence.split()) else "-".join(kept)

    results = captured["results"]
    assert list(results) == ["k0", "k1", "k2"]
    for k in (0, 1, 2):
        expected = score_tasks(tasks, lambda batch, k=k: toy_embed([reduced(s, k) for s in batch]))
        assert results[f"k{k}"] == {"reported": pytest.approx(expected["avg"]["reported"]), "k": k}
        assert captured["extra"]["curve"]["per_task"][str(k)]["STSBenchmark"] == pytest.approx(
            expected["STSBenchmark"]["reported"])
    curve = captured["extra"]["curve"]
    assert curve["ks"] == [0, 1, 2] and curve["removed_tokens"] == ranked
    assert curve["token_counts"] == {"a": counts["a"], "b": counts["b"]}
    assert curve["avg"] == [results[f"k{k}"]["reported"] for k in (0, 1, 2)]
    assert curve["frequency_source"] == "STS-B test split, run's tokenizer"
    assert captured["extra"]["variant"] == "senteval"
    assert captured["aggregation"] == "STS average (as the sts suite) per k removed tokens"
    # every distinct sentence (original or reduced) is encoded once, in one call
    distinct = {reduced(s, k) for k in (0, 1, 2) for p in PAIRS for s in p[1:]}
    assert len(job.calls) == 1 and sorted(job.calls[0]) == sorted(distinct)


def test_tsne_draws_pairs_at_each_gold_score_and_reports_the_mean_pair_cosine(tmp_path, captured):
    from sentrepro.evaluation import geometry

    pairs = [(0.0, "a b", "c d"), (0.0, "a a", "e f"), (0.0, "b", "d"), (3.0, "a b c", "a b d"),
             (3.0, "c d e", "c d f"), (3.0, "b c", "b d"), (5.0, "e f", "e f"), (5.0, "a b", "a b"), (5.0, "c", "c"),
             (1.0, "a", "b")]
    write_stsb(tmp_path, "test", pairs)
    job = FakeJob({"gold_scores": [0, 3, 5], "pairs_per_score": 2, "seed": 7, "perplexity": 3.0,
                   "sts": {"variant": "tv"}})
    analyses.run_tsne(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
    assert [role for _, role in job.prov.inputs] == ["STS-B test"]
    points = captured["extra"]["points"]
    assert captured["extra"]["variant"] == "tv" and len(points) == 12
    groups = geometry.pairs_at_scores([p[0] for p in pairs], [0, 3, 5], 2, 7)
    for n, point in enumerate(points):
        pair_id, side = divmod(n, 2)
        index = groups[pair_id // 2][pair_id % 2]
        assert (point["pair"], point["side"], point["stsb_index"], point["gold"]) == (pair_id, side, index,
                                                                                      [0, 3, 5][pair_id // 2])
        assert point["text"] == pairs[index][1 + side] and pairs[index][0] == point["gold"]
    texts = [p["text"] for p in points]
    assert job.calls == [texts]
    coords = geometry.tsne_coordinates(toy_embed(texts), 7, 3.0)
    np.testing.assert_allclose([[p["x"], p["y"]] for p in points], coords)
    assert all(type(p["x"]) is float and type(p["y"]) is float for p in points)
    u = units(toy_embed(texts))
    cos = (u[0::2] * u[1::2]).sum(1)
    results = captured["results"]
    assert list(results) == ["pair_cosine_gold_0", "pair_cosine_gold_3", "pair_cosine_gold_5"]
    for g, gold in enumerate([0, 3, 5]):
        assert results[f"pair_cosine_gold_{gold}"] == {"reported": pytest.approx(cos[2 * g:2 * g + 2].mean()),
                                                       "n": 2}
    assert results["pair_cosine_gold_5"]["reported"] == pytest.approx(1.0)
    assert captured["aggregation"] == "t-SNE coordinates per sentence; reported = mean pair cosine per gold group"


class BareTokenizer(ToyTokenizer):
    """As ToyTokenizer without the special tokens: a one-word sentence has a mask sum of 1."""

    def __call__(self, texts, padding, truncation, return_tensors):
        ids = [[self.vocab[w] for w in t.split()] for t in texts]
        width = max(len(r) for r in ids)
        return {"input_ids": torch.tensor([r + [2] * (width - len(r)) for r in ids]),
                "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ids])}


def test_static_token_average_of_a_one_token_sentence_is_that_token_row():
    job = FakeJob({"batch_size": 4})
    job.model, job.tokenizer, job.device = ToyModel(TABLE), BareTokenizer(), "cpu"
    out = analyses.static_token_average(job, ["b", "a c"])
    np.testing.assert_allclose(out, [TABLE[4], (TABLE[3] + TABLE[5]) / 2], rtol=1e-6)


def test_the_analyses_hold_documented_counts_on_real_data(tmp_path):
    write_stsb(tmp_path, "test", PAIRS)  # 8 pairs, not STS-B test's documented 1379
    job = FakeJob({"split": "test", "sts": {"variant": "senteval"}})
    job.check_counts = True
    with pytest.raises(Exception, match="sts-test.csv"):
        analyses._read_stsb(job, tmp_path / "MANIFEST.json", "test")
    job.settings = {"ks": [1], "sts": {"tasks": ["STSBenchmark"], "variant": "senteval"}}
    job.tokenizer = WordTokenizer()
    with pytest.raises(Exception, match="sts-test.csv"):
        analyses.run_token_removal(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
