"""The analyses on a real tokenizer and encoder (tests/test_eval_analyses_exact.py uses toy ones that ignore the
tokenizer's arguments): the static token average pads a batch of unequal sentences, truncates at the tokenizer's
maximum length and runs outside autograd on an encoder that trains; align counts only pairs above the threshold;
the anisotropy corpus keeps a line's last character."""

from __future__ import annotations

import numpy as np
import pytest

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.evaluation import analyses
from tests.test_eval_analyses_exact import PAIRS, FakeJob, captured, write_stsb  # noqa: F401 (fixture)


def test_the_static_token_average_pads_truncates_and_needs_no_gradient(tiny_models):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    tokenizer.model_max_length = 8  # [CLS] + 6 ids + [SEP]
    encoder = load_encoder(str(tiny_models["bert"]), "bert")
    table = encoder.get_input_embeddings().weight
    assert table.requires_grad  # as in a job: the encoder is a trainable module
    job = FakeJob({"batch_size": 3})
    job.model, job.tokenizer, job.device = type("Model", (), {"encoder": encoder})(), tokenizer, "cpu"
    sentences = ["the cat", "the cat sat on the mat today in the sun", "a dog ran", "one"]
    out = analyses.static_token_average(job, sentences)
    rows = table.detach().numpy().astype(np.float64)
    for sentence, vector in zip(sentences, out):
        ids = tokenizer(sentence)["input_ids"]
        kept = [tokenizer.cls_token_id, *ids[1:-1][:6], tokenizer.sep_token_id]
        np.testing.assert_allclose(vector, rows[kept].mean(0), rtol=1e-5, atol=1e-6)


def test_align_leaves_out_a_pair_at_the_threshold(tmp_path, captured):  # noqa: F811 (fixture)
    write_stsb(tmp_path, "test", [*PAIRS, (4.0, "a b c", "a b d")])
    job = FakeJob({"positive_threshold": 4, "splits": ["test"], "sts": {"variant": "sv"}})
    analyses.run_align_uniform(job, tmp_path / "MANIFEST.json", tmp_path / "out.json")
    assert captured["results"]["align"]["n_pairs"] == 2  # 4.5 and 5.0; gold 4.0 is not above 4


def test_the_anisotropy_corpus_keeps_a_lines_last_character(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("Planet X\nMalcolm X spoke\n", encoding="utf-8")
    assert analyses.corpus_sentences(corpus, 5, 32) == ["planet x", "malcolm x spoke"]
