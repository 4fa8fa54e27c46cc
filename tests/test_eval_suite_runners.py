"""The clustering and WOS suite runners end to end on a stand-in encoder: what they read (the real clustering
sets, the WOS fixture), what they cut (max_samples, max_tokens), what they record (data files, subset, aggregation)
and that every number in the metrics file is the protocol's own on the same vectors. The encoder is a fixed
bag-of-hashed-words map, so no model is loaded and the unit tier stays fast."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from sentrepro.evaluation import suites
from sentrepro.evaluation.job import SuiteJob
from sentrepro.evaluation.subsets import SubsetLog
from sentrepro.planning.config import _with_defaults
from sentrepro.records.provenance import Provenance

DIM = 24


def bag_of_words(text: str) -> np.ndarray:
    """(DIM,) float32: each word adds 1 at a position fixed by its hash."""
    vector = np.zeros(DIM, dtype=np.float32)
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector


class WhitespaceTokenizer:
    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def convert_tokens_to_string(self, pieces: list[str]) -> str:
        return " ".join(pieces)


class _Method:
    tokenizer = WhitespaceTokenizer()


class StandInJob(SuiteJob):
    """A SuiteJob whose encoder is :func:`bag_of_words` (the runners only call embed / embed_groups)."""

    def embed(self, sentences: list[str]) -> np.ndarray:
        self.encoded += len(set(sentences))
        return np.stack([bag_of_words(s) for s in sentences]) if sentences else np.zeros((0, DIM), np.float32)


def _job(suite: str, settings: dict, *, synthetic: bool) -> StandInJob:
    settings = _with_defaults({"evaluation": {suite: {"device": "cpu", **settings}}})["evaluation"][suite]
    spec = {"run": {"backbone": "b", "method": "m", "seed": None}, "suite": suite, "source": "src",
            "synthetic": synthetic, "settings": {"batch_size": 8, **settings}}
    prov = Provenance(step=f"evaluate_{suite}", config=spec, seed=None, device="cpu", precision="fp32")
    return StandInJob(suite, spec, _Method(), None, "cpu", "fp32", prov)


@pytest.fixture
def clustering_manifest(shared_data, tmp_path) -> Path:
    (tmp_path / "files").symlink_to(shared_data / "short-text-clustering", target_is_directory=True)
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"name": "short-text-clustering", "files": {}}))
    return tmp_path / "MANIFEST.json"


def test_clustering_scores_each_set_on_its_subset_and_averages_them(clustering_manifest, tmp_path):
    from sentrepro.data.benchmarks.clustering import CLUSTERING_SETS, read_clustering
    from sentrepro.evaluation.clustering import evaluate_clustering

    sets, seeds = ["SearchSnippets", "Tweet"], [0, 1]
    job = _job("clustering", {"source": "src", "sets": sets, "seeds": seeds, "n_init": 2, "max_samples": 60,
                              "subset_seed": 3}, synthetic=False)
    payload = suites.run_clustering(job, clustering_manifest, tmp_path / "clustering.json")
    assert json.loads((tmp_path / "clustering.json").read_text())["results"] == payload["results"]
    root = clustering_manifest.parent / "files"
    log = SubsetLog(60, 3)
    for name in sets:
        items = read_clustering(root, name, check_counts=True)
        labels = np.array([item.label for item in items], dtype=np.int64)
        rows = log.take(name, "all", labels)
        vectors = np.stack([bag_of_words(items[i].text) for i in rows])
        want = evaluate_clustering(vectors, labels[rows], k=int(len(np.unique(labels[rows]))), seeds=seeds, n_init=2)
        assert payload["results"][name] == {**want, "reported": want["acc_mean"]}
    assert payload["results"]["avg"]["reported"] == pytest.approx(np.mean([payload["results"][n]["reported"]
                                                                            for n in sets]))
    assert payload["results"]["avg"]["nmi"] == pytest.approx(np.mean([payload["results"][n]["nmi_mean"]
                                                                       for n in sets]))
    assert payload["subset"] == log.record() and payload["subset"]["applied"]
    assert payload["aggregation"] == ("Hungarian acc x100, mean (population std) over 2 KMeans seeds; avg = plain "
                                      "mean over sets")
    roles = {Path(i["path"]).name: i["role"] for i in payload["provenance"]["inputs"]}
    assert {roles[Path(CLUSTERING_SETS[name]).name] for name in sets} == {"clustering data file"}
    assert payload["data"] == {"source": "src", "synthetic": False} and payload["encoded_sentences"] > 0


@pytest.fixture(scope="module")
def wos_manifest(tmp_path_factory) -> Path:
    from sentrepro.data.benchmarks.wos import write_wos_fixture

    root = tmp_path_factory.mktemp("wos")
    write_wos_fixture(root / "files", 160, 7)
    (root / "MANIFEST.json").write_text(json.dumps({"name": "wos", "files": {}}))
    return root / "MANIFEST.json"


@pytest.mark.parametrize("level, average", [("level2", "macro"), ("level1", "weighted")])
def test_wos_scores_the_probe_at_its_level_and_counts_the_documents_it_cut(wos_manifest, tmp_path, level, average):
    from sentrepro.data.benchmarks.wos import WOS_LABEL_FILES, WOS_TEXT_FILE, read_wos
    from sentrepro.evaluation.classification import evaluate_wos

    settings = {"source": "src", "version": "WOS5736", "level": level, "average": average, "test_fraction": 0.25,
                "split_seed": 5, "mode": "fasttest", "max_tokens": 12, "max_samples": 120, "subset_seed": 2}
    job = _job("wos", settings, synthetic=True)
    payload = suites.run_wos(job, wos_manifest, tmp_path / "wos.json")
    documents = read_wos(wos_manifest.parent / "files", "WOS5736", check_counts=False)
    labels = np.array([d.label for d in documents], dtype=np.int64)
    log = SubsetLog(120, 2)
    rows = log.take("WOS5736", "all", labels)
    cut = [" ".join(documents[i].text.split()[:12]) for i in rows]
    vectors = np.stack([bag_of_words(text) for text in cut])
    details = evaluate_wos(vectors, labels[rows], np.array([documents[i].parent for i in rows]), test_fraction=0.25,
                           split_seed=5, mode="fasttest", hidden_dim=job.settings["hidden_dim"], device="cpu",
                           seed=job.settings["seed"])
    found = details[level]
    assert payload["results"] == {"acc": {"reported": found["acc"]},
                                  "precision": {"reported": found[f"{average}_precision"]},
                                  "recall": {"reported": found[f"{average}_recall"]},
                                  "f1": {"reported": found[f"{average}_f1"]}}
    assert payload["wos"] == json.loads(json.dumps(details))
    assert payload["truncated_documents"] == sum(len(documents[i].text.split()) > 12 for i in rows) > 0
    assert payload["aggregation"] == (f"WOS5736 {level}: accuracy and {average} precision/recall/F1 x100 on a "
                                      "stratified 25% test split")
    assert payload["subset"] == log.record()
    names = {Path(i["path"]).name for i in payload["provenance"]["inputs"] if i["role"] == "WOS data file"}
    assert names == {WOS_TEXT_FILE, *WOS_LABEL_FILES}


def test_a_text_is_cut_to_its_first_tokens_only_when_longer():
    tokenizer = WhitespaceTokenizer()
    assert suites.truncate_to_tokens(tokenizer, "a b c d", None) == ("a b c d", False)
    assert suites.truncate_to_tokens(tokenizer, "a b c d", 4) == ("a b c d", False)
    assert suites.truncate_to_tokens(tokenizer, "a b c d", 3) == ("a b c", True)
