"""``sentrepro export``: every method kind and frozen baseline loads in sentence-transformers, in a fresh process
that cannot import sentrepro, and ``encode()`` gives the evaluation's own vectors (max |diff| <= 1e-5), on tiny
BERT, RoBERTa and DeBERTa backbones where the kind supports them; the MTEB files validate with mteb's TaskResult.

Runs: trained kinds are saved as a training job saves its best checkpoint (``SentenceModel.save`` of the model
``initial_model`` builds, every parameter then moved off its initial value so a head or prompt the export
dropped or re-initialised shows); frozen baselines export the backbone itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sentrepro.encoder.encode import encode_sentences
from sentrepro.evaluation.job import load_for_eval
from sentrepro.records.recorded import content_record
from sentrepro.export.folder import export_run, rename_imports
from sentrepro.encoder.start import initial_model
from sentrepro.export.mteb_results import MTEB_STS, mteb_results

REPO = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-5
HEAVY = pytest.mark.heavy  # the tests of `exported`: 23 runs exported, encoded, loaded in a fresh process (~1 min)
STS_SCORED = "promptbert-bert"  # its STS-B test score is reproduced from the folder alone
# (config.yaml method name, families): OptiPrompt is BERT-only (its template); MoCoUTRL's paper backbone is
# DeBERTa, so it runs on all three; the frozen poolers on all three.
CASES = [
    ("simcse", ["bert", "roberta"]),
    ("esimcse", ["bert", "roberta"]),
    ("promptbert", ["bert", "roberta"]),
    ("optiprompt", ["bert"]),
    ("conpvp", ["bert", "roberta"]),
    ("mocoutrl", ["bert", "roberta", "deberta"]),
    ("mocoutrl-released", ["bert"]),
    ("frozen-cls", ["bert", "roberta", "deberta"]),
    ("frozen-first-last", ["bert", "roberta"]),
    ("manual_prompt", ["bert"]),  # the manual template is named for BERT only
    ("static_token_avg", ["bert", "roberta"]),
    ("static_token_avg_knowl5", ["bert"]),
    ("whitening", ["bert"]),
]
OVERRIDES = {"optiprompt": {"mlp": "linear-tanh"},  # tiny models have no MLM head to copy
             "mocoutrl": {"max_seq_length": 64}, "mocoutrl-released": {"max_seq_length": 64},
             "esimcse": {"neg_size": 8}}
LOADER = r"""
import importlib.abc, json, sys
import numpy as np
repo, folders, sentences_file, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
batches = json.loads(sys.argv[5])

class NoSentrepro(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "sentrepro" or name.startswith("sentrepro."):
            raise ImportError("sentrepro is blocked in this process")

sys.meta_path.insert(0, NoSentrepro())
sys.path = [p for p in sys.path if p not in ("", ".", repo) and not p.startswith(repo + "/src")]  # .venv stays
from sentence_transformers import SentenceTransformer
sentences = json.loads(open(sentences_file).read())
vectors = {}
for key, folder in folders.items():
    model = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
    vectors[key] = model.encode(sentences[key], batch_size=batches[key], convert_to_numpy=True)
assert not any(m == "sentrepro" or m.startswith("sentrepro.") for m in sys.modules), "sentrepro was imported"
np.savez(out, **vectors)
"""


def method_specs() -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    return config["methods"]


def knowl5(methods: dict) -> str:
    """A static_token_avg entry of config.yaml that removes tokens (Knowl 5), any of them."""
    return next(n for n, m in methods.items() if m["kind"] == "static_token_avg" and m.get("params", {}).get("remove"))


def method_entry(name: str, methods: dict) -> dict:
    """config.yaml's method of that name, else its first method of that kind."""
    if name == "static_token_avg_knowl5":
        return methods[knowl5(methods)]
    return methods.get(name) or next(m for m in methods.values() if m["kind"] == name)


def run_spec(name: str, family: str, tiny_models, methods: dict) -> dict:
    entry = method_entry(name, methods)
    params = {**entry.get("params", {}), **OVERRIDES.get(name, {})}
    return {"run": {"backbone": f"tiny-{family}", "method": name, "seed": 1},
            "backbone": {"model": str(tiny_models[family]), "family": family},
            "method": {"kind": entry["kind"], "params": params}, "seed": 1, "attention": "eager",
            "settings": {"batch_size": 16, "tasks": ["STSBenchmark"], "variant": "senteval"}}


def save_run(spec: dict, run_dir: Path) -> None:
    """A trained run's best/ as the training job writes it, every parameter moved off its start."""
    method, model = initial_model(spec["backbone"], spec["method"], spec["seed"], "eager",
                                  spec["backbone"]["model"])
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
    model.save(run_dir / "best", method.tokenizer, {"kind": spec["method"]["kind"]})
    best_files = content_record(sorted((run_dir / "best").iterdir()))  # as run_training records best/
    (run_dir / "train.json").write_text(json.dumps({"best_step": 3, "history": [], "best_files": best_files}),
                                        encoding="utf-8")


def full_rank_copy(source: Path, dest: Path) -> Path:
    """The tiny backbone with LayerNorm gains drawn per layer: a fresh model's all-ones gains put every layer's
    output in one hyperplane, and whitening's covariance would be singular (tests/test_method_baselines.py)."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(source)
    torch.manual_seed(0)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
    model.save_pretrained(dest)
    AutoTokenizer.from_pretrained(source).save_pretrained(dest)
    return dest


@pytest.fixture(scope="module")
def sts_source(tmp_path_factory, shared_data) -> Path:
    """A prepared-source layout holding the real STS-B test file (the STS suite reads <source>/files/...)."""
    root = tmp_path_factory.mktemp("sts-source")
    (root / "files" / "STS").mkdir(parents=True)
    (root / "files" / "STS" / "STSBenchmark").symlink_to(shared_data / "senteval" / "STS" / "STSBenchmark")
    (root / "MANIFEST.json").write_text("{}\n", encoding="utf-8")
    return root / "MANIFEST.json"


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_models, wiki_sentences, sts_source):
    """Every case exported, its evaluation vectors, and the vectors SentenceTransformer gives in a clean process."""
    from sentrepro.planning import registry
    from sentrepro.evaluation.job import source_root
    from sentrepro.evaluation.sts_suite import load_sts_tasks

    methods = method_specs()
    root = tmp_path_factory.mktemp("export")
    sample = [s for s in wiki_sentences[:400] if s.strip()][::7][:40]
    sample += [sample[0], "A man is playing a guitar.", "Short."]  # a duplicate and two short ones
    folders, sentences, expected, batches = {}, {}, {}, {}
    for name, families in CASES:
        for family in families:
            key = f"{name}-{family}"
            spec = run_spec(name, family, tiny_models, methods)
            trained = registry.method(spec["method"]["kind"]).trains
            run_dir = root / "runs" / key if trained else None
            if trained:
                save_run(spec, run_dir)
            texts = sample
            if spec["method"]["kind"] == "whitening" or key == STS_SCORED:  # whitening: fitted on these
                if spec["method"]["kind"] == "whitening":
                    spec["backbone"]["model"] = str(full_rank_copy(tiny_models[family], root / f"full-rank-{family}"))
                tasks, _ = load_sts_tasks(source_root(sts_source), spec["settings"])
                texts = [s for pairs in tasks["STSBenchmark"].values() for p in pairs for s in (p.s1, p.s2)]
            export_run(spec, run_dir, None, root / "out" / key, sts_data=sts_source)
            method, model, _ = load_for_eval(spec, run_dir, None)
            # whitening's kernel (1/sqrt of small eigenvalues) magnifies the fp32 noise of different padding
            # (~1e-7) past 1e-5, so both sides encode its sentences in one batch, padded alike
            batches[key] = len(texts) if spec["method"]["kind"] == "whitening" else 16
            expected[key] = encode_sentences(method, model, texts, purpose="test", batch_size=batches[key])
            folders[key], sentences[key] = str(root / "out" / key), texts
    (root / "sentences.json").write_text(json.dumps(sentences), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(root / "hf-modules"),
           "HOME": str(root), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", LOADER, str(REPO), json.dumps(folders), str(root / "sentences.json"),
                           str(root / "vectors.npz"), json.dumps(batches)], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    loaded = dict(np.load(root / "vectors.npz"))
    return folders, expected, loaded


@HEAVY
@pytest.mark.parametrize("key", [f"{n}-{f}" for n, families in CASES for f in families])
def test_sentence_transformers_encode_equals_evaluation(exported, key):
    folders, expected, loaded = exported
    assert loaded[key].shape == expected[key].shape
    assert float(np.abs(loaded[key] - expected[key]).max()) <= TOLERANCE
    assert float(np.abs(expected[key]).max()) > 1e-3  # not a vacuous comparison of zeros


@HEAVY
def test_every_kind_is_exported(exported):
    from sentrepro.planning import registry

    methods = method_specs()
    kinds = {method_entry(n, methods)["kind"] for n, _ in CASES}
    assert kinds == set(registry.methods())


@HEAVY
def test_folder_carries_code_card_and_record(exported):
    folders, _, _ = exported
    folder = Path(folders["promptbert-bert"])
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlibrary_name: sentence-transformers")
    assert "trust_remote_code=True" in card and '"template"' in card
    record = json.loads((folder / "sentrepro_export.json").read_text(encoding="utf-8"))
    assert "sentrepro_st.py" in record["folder_files"] and "encoder/sentrepro_heads.safetensors" in record["folder_files"]
    assert record["provenance"]["inputs"][0]["role"] == "training summary"


@HEAVY
def test_audit_verifies_an_exported_folder(exported, tmp_path):
    import shutil

    from sentrepro.records.audit import audit_export

    folders, _, _ = exported
    folder = tmp_path / "copy"
    shutil.copytree(folders["simcse-bert"], folder)
    assert audit_export(folder).ok
    (folder / "sentrepro_st.py").write_text("# changed\n", encoding="utf-8")
    report = audit_export(folder)
    assert not report.ok and any("sentrepro_st.py" in p for p in report.problems)


def test_rename_imports_touches_import_statements_only():
    source = "from sentrepro.x import y\nimport sentrepro.z\n    from sentrepro import a\ns = 'sentrepro.x'\nimport sentreprox\n"
    assert rename_imports(source, "pkg") == ("from pkg.x import y\nimport pkg.z\n    from pkg import a\n"
                                             "s = 'sentrepro.x'\nimport sentreprox\n")


def test_mteb_task_metadata_matches_mteb():
    mteb = pytest.importorskip("mteb")
    for ours, entry in MTEB_STS.items():
        meta = mteb.get_task(entry["task"]).metadata
        assert meta.dataset["path"] == entry["dataset"] and meta.dataset["revision"] == entry["revision"], ours
        assert meta.main_score == "cosine_spearman" and "test" in meta.eval_splits


def test_mteb_result_files_validate_with_mteb():
    pytest.importorskip("mteb")
    from mteb.results import TaskResult

    metrics = {"results": {"STS12": {"all": 0.61, "mean": 0.6, "wmean": 0.6, "n": 10, "reported": 61.0},
                           "STSBenchmark": {"spearman": 0.7512, "pearson": 0.74, "n": 5, "reported": 75.12},
                           "SICKRelatedness": {"spearman": 0.7, "pearson": 0.7, "n": 5, "reported": 70.0},
                           "avg": {"reported": 68.7}}}
    files = mteb_results(metrics, mteb_version=None, evaluation_time=1.5)
    assert set(files) == {"STS12", "STSBenchmark"}  # SICK-R: MTEB scores other pairs
    for task, payload in files.items():
        result = TaskResult.model_validate(json.loads(json.dumps(payload)))
        assert result.task_name == task
    stsb = TaskResult.model_validate(files["STSBenchmark"])
    assert stsb.get_score() == pytest.approx(0.7512)


@HEAVY
def test_stsb_test_score_from_the_folder_alone(exported, shared_data):
    """The README's recipe on a tiny PromptBERT run: cosine Spearman of the folder's vectors on STS-B test equals
    the STS suite's score of the same run (score_tasks with the evaluation's embedding)."""
    from scipy.stats import spearmanr

    from sentrepro.data.benchmarks.sts import read_sts_benchmark
    from sentrepro.evaluation.sts import cosine_rows
    from sentrepro.evaluation.sts_suite import score_tasks

    _, expected, loaded = exported
    pairs = read_sts_benchmark(shared_data / "senteval" / "STS" / "STSBenchmark" / "sts-test.csv")
    vectors = loaded[STS_SCORED]
    n = len(pairs)
    ours = spearmanr(cosine_rows(vectors[0::2][:n], vectors[1::2][:n]), [p.score for p in pairs]).statistic
    index = {}
    for row, pair in enumerate(pairs):
        index.setdefault(pair.s1, expected[STS_SCORED][2 * row])
        index.setdefault(pair.s2, expected[STS_SCORED][2 * row + 1])
    suite = score_tasks({"STSBenchmark": {"test": pairs}}, lambda texts: np.stack([index[t] for t in texts]))
    # the vectors agree to 1e-5 (above); a tiny random model's cosines crowd so closely that such differences
    # swap a few ranks, moving Spearman x100 by ~0.002 here (measured); a change of template, readout or
    # denoising moves it by whole points
    assert 100 * ours == pytest.approx(suite["STSBenchmark"]["reported"], abs=0.01)


@HEAVY
def test_a_loaded_export_saves_to_a_folder_that_loads_and_encodes_alike(exported, tmp_path):
    """``SentenceTransformer.save`` of a loaded export writes a folder that loads again and gives the same vectors;
    the export record (the audited hashes) is not carried over to the copy."""
    from sentence_transformers import SentenceTransformer

    folders, _, _ = exported
    key = next(k for k in folders if k.startswith("promptbert"))
    texts = ["A man is playing a guitar.", "Short.", "Two dogs run across a snowy field."]
    model = SentenceTransformer(folders[key], trust_remote_code=True, device="cpu")
    model.save(str(tmp_path / "saved"))
    assert not (tmp_path / "saved" / "sentrepro_export.json").exists()
    again = SentenceTransformer(str(tmp_path / "saved"), trust_remote_code=True, device="cpu")
    assert np.array_equal(model.encode(texts), again.encode(texts))
