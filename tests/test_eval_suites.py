"""Suite runners on a tiny BERT and a small SentEval-layout tree: encode-once, determinism, subsetting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sentrepro.planning.config import _with_defaults
from sentrepro.encoder.encode import encode_sentences
from sentrepro.evaluation.fewshot import evaluate_fewshot, evaluate_fewshot_cv_task
from sentrepro.evaluation.job import load_for_eval, run_suite
from sentrepro.encoder.device import resolve_device
from sentrepro.evaluation.suites import read_transfer_task, truncate_to_tokens
from sentrepro.evaluation.transfer import mrpc_features

WORDS = {0: ["dull", "boring", "awful", "tedious", "flat"], 1: ["great", "moving", "funny", "fresh", "brilliant"]}
TREC = {"ABBR": "what does {} stand for ?", "DESC": "why is the {} blue ?", "HUM": "who invented the {} ?",
        "LOC": "where is the biggest {} ?", "NUM": "how many {} are there ?", "ENTY": "what {} do people like ?"}
NOUNS = ["car", "river", "phone", "city", "lamp", "horse", "bridge", "book", "song", "tree", "clock", "ship"]


def write_tree(root: Path) -> None:
    """A SentEval data/downstream tree with MR, TREC and MRPC in their real formats, a few dozen items each."""
    (root / "MR").mkdir(parents=True)
    for name, label in (("rt-polarity.pos", 1), ("rt-polarity.neg", 0)):
        lines = [f"the {NOUNS[i % 12]} was {WORDS[label][i % 5]} and {WORDS[label][(i + 2) % 5]} ." for i in range(30)]
        (root / "MR" / name).write_text("\n".join(lines) + "\n", encoding="latin-1")
    (root / "TREC").mkdir()
    for name, per_class in (("train_5500.label", 10), ("TREC_10.label", 5)):
        lines = [f"{coarse}:x {template.format(NOUNS[(i + len(coarse)) % 12])}" for coarse, template in TREC.items()
                 for i in range(per_class)]
        (root / "TREC" / name).write_text("\n".join(lines) + "\n", encoding="latin-1")
    (root / "MRPC").mkdir()
    for name, n in (("msr_paraphrase_train.txt", 20), ("msr_paraphrase_test.txt", 10)):
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for i in range(n):
            a = f"the {NOUNS[i % 12]} stood near the {NOUNS[(i + 3) % 12]} ."
            b = a if i % 2 else f"a {NOUNS[(i + 5) % 12]} sang to the {NOUNS[(i + 7) % 12]} ."
            rows.append(f"{i % 2}\t{i}\t{i + 100}\t{a}\t{b}")
        (root / "MRPC" / name).write_text("\ufeff" + "\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def senteval_manifest(tmp_path_factory) -> Path:
    """A prepared-source layout (<dir>/files/ + MANIFEST.json) holding the small tree."""
    source = tmp_path_factory.mktemp("senteval-small")
    write_tree(source / "files")
    (source / "MANIFEST.json").write_text(json.dumps({"name": "senteval-small", "files": {}}))
    return source / "MANIFEST.json"


def spec_for(model_dir: Path, suite: str, settings: dict) -> dict:
    """A job spec as the workflow writes it: the suite's settings with the schema's defaults filled."""
    settings = _with_defaults({"evaluation": {suite: {"device": "cpu", **settings}}})["evaluation"][suite]
    return {"run": {"backbone": "tiny-bert", "method": "frozen-avg", "seed": None},
            "backbone": {"model": str(model_dir), "tokenizer": "tiny-bert", "family": "bert"},
            "method": {"kind": "frozen", "params": {"pooler": "avg"}}, "seed": None, "attention": "eager",
            "suite": suite, "source": "senteval-small", "synthetic": True,
            "settings": {"batch_size": 16, **settings}}


@pytest.mark.heavy
def test_fewshot_encodes_only_the_sampled_rows_and_matches_full_encoding(tiny_models, senteval_manifest, tmp_path):
    settings = {"tasks": ["MR", "TREC", "MRPC"], "shots": 4, "seeds": [0, 1], "mode": "fasttest", "n_epochs": 3}
    spec = spec_for(tiny_models["bert"], "fewshot", settings)
    payload = run_suite("fewshot", spec, None, senteval_manifest, tmp_path / "fewshot.json")
    assert json.loads((tmp_path / "fewshot.json").read_text())["results"] == payload["results"]

    # the same protocol on embeddings of every sentence, encoded without the suite's shortcut
    method, model, _ = load_for_eval(spec, None)
    root = senteval_manifest.parent / "files"

    def embed(sentences):
        return encode_sentences(method, model, sentences, purpose="test", batch_size=16)

    mr, _ = read_transfer_task(root, "MR", check_counts=False)
    expected_mr = evaluate_fewshot_cv_task(embed(mr["all"].texts), mr["all"].labels, shots=4, seeds=[0, 1],
                                           mode="fasttest", n_epochs=3, device="cpu")
    trec, _ = read_transfer_task(root, "TREC", check_counts=False)
    expected_trec = evaluate_fewshot(embed(trec["train"].texts), trec["train"].labels, embed(trec["test"].texts),
                                     trec["test"].labels, shots=4, seeds=[0, 1], mode="fasttest", n_epochs=3)
    mrpc, _ = read_transfer_task(root, "MRPC", check_counts=False)
    pair_features = {split: mrpc_features(embed([p[0] for p in mrpc[split].texts]),
                                          embed([p[1] for p in mrpc[split].texts])) for split in ("train", "test")}
    expected_mrpc = evaluate_fewshot(pair_features["train"], mrpc["train"].labels, pair_features["test"],
                                     mrpc["test"].labels, shots=4, seeds=[0, 1], mode="fasttest", n_epochs=3)
    for task, expected in (("MR", expected_mr), ("TREC", expected_trec), ("MRPC", expected_mrpc)):
        assert payload["results"][task]["accs"] == expected["accs"], task
        assert payload["results"][task]["reported"] == expected["acc_mean"]
    assert payload["results"]["TREC"]["n_encoded_pool"] <= 2 * 4 * 6 < len(trec["train"].labels)
    assert payload["results"]["MR"]["holdout"] == {"folds": 10, "seed": 1111}
    assert payload["results"]["avg"]["reported"] == pytest.approx(
        np.mean([payload["results"][t]["reported"] for t in ("MR", "TREC", "MRPC")]))


@pytest.mark.heavy
def test_transfer_suite_is_deterministic_and_records_its_subset(tiny_models, senteval_manifest, tmp_path):
    settings = {"tasks": ["MR", "TREC", "MRPC"], "mode": "fasttest", "max_samples": 40, "subset_seed": 0}
    spec = spec_for(tiny_models["bert"], "transfer", settings)
    first = run_suite("transfer", spec, None, senteval_manifest, tmp_path / "a.json")
    second = run_suite("transfer", spec, None, senteval_manifest, tmp_path / "b.json")
    assert first["results"] == second["results"]
    assert first["subset"] == {"max_samples": 40, "seed": 0, "applied": True,
                               "sizes": {"MR": {"all": [40, 60]}, "TREC": {"train": [40, 60], "test": [30, 30]},
                                         "MRPC": {"train": [20, 20], "test": [10, 10]}}}
    assert first["results"]["MR"]["protocol"] == "nested_cv" and first["results"]["MR"]["n_samples"] == 40
    assert first["results"]["TREC"]["protocol"] == "kfold_fixed_test" and first["results"]["TREC"]["n_classes"] == 6
    assert "f1" in first["results"]["MRPC"]  # binary pair task with [|u-v|, u*v] features
    assert first["results"]["avg"] == {"reported": pytest.approx(np.mean(
        [first["results"][t]["acc"] for t in ("MR", "TREC", "MRPC")])), "n": 3}
    inputs = {Path(i["path"]).name: i for i in first["provenance"]["inputs"]}
    assert {"rt-polarity.pos", "train_5500.label", "msr_paraphrase_test.txt", "MANIFEST.json"} <= set(inputs)
    assert first["provenance"]["config"]["run"] == {"backbone": "tiny-bert", "method": "frozen-avg", "seed": None}
    assert first["data"] == {"source": "senteval-small", "synthetic": True}


def test_truncate_to_tokens_cuts_long_texts_only(tiny_models):
    from sentrepro.encoder.load import load_tokenizer

    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    text = " ".join(["photosynthesis"] * 50)
    cut, was_cut = truncate_to_tokens(tokenizer, text, 10)
    assert was_cut and len(tokenizer.tokenize(cut)) <= 10 and text.startswith(cut.split()[0])
    assert truncate_to_tokens(tokenizer, "a short text", 10) == ("a short text", False)
    assert truncate_to_tokens(tokenizer, text, None) == (text, False)


def test_device_resolution():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="auto, cpu or cuda"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no GPU"):
            resolve_device("cuda")
