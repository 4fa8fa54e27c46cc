"""Every job verifies what another job wrote before it uses it (issue 48): a run's ``best/`` against its
``train.json``, a tokenized corpus against its ``tokenized.json``. Four flipped bytes or a missing file stop
the reading job with one line naming the file, the record, its writer and what differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sentrepro.encoder.load import load_tokenizer
from sentrepro.encoder.start import initial_model
from sentrepro.hashing import sha256_file
from sentrepro.records.integrity import IntegrityError

SPEC = {"backbone": {"family": "bert", "model": None}, "method": {"kind": "simcse", "params": {
    "max_seq_length": 32, "temperature": 0.05, "mlp_only_train": True, "lr": 1e-4, "batch_size": 8}},
    "seed": 7, "training": {"dev_file": "dev.tsv"}, "settings": {"batch_size": 8}}


def flip(path: Path, offset: int = -64) -> None:
    """Four bytes inverted in place (same size), as the issue's probe did."""
    data = bytearray(path.read_bytes())
    for i in range(4):
        data[offset + i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture
def trained_run(tmp_path, tiny_models):
    """A run directory as ``sentrepro train`` leaves it: ``best/`` and the ``train.json`` recording it."""
    from sentrepro.records.recorded import content_record

    spec = json.loads(json.dumps(SPEC))
    spec["backbone"]["model"] = str(tiny_models["bert"])
    run_dir = tmp_path / "runs" / "tiny" / "simcse" / "seed7"
    method, model = initial_model(spec["backbone"], spec["method"], 7, "eager", spec["backbone"]["model"])
    model.save(run_dir / "best", method.tokenizer, {"kind": "simcse"})
    summary = {"best_step": 3, "best_files": content_record(sorted((run_dir / "best").iterdir()))}
    (run_dir / "train.json").write_text(json.dumps(summary), encoding="utf-8")
    return spec, run_dir


def test_a_flipped_byte_in_best_stops_the_evaluation_naming_file_writer_and_hashes(trained_run):
    from sentrepro.evaluation.job import load_for_eval

    spec, run_dir = trained_run
    load_for_eval(spec, run_dir)  # untouched: loads
    flip(run_dir / "best" / "model.safetensors")
    with pytest.raises(IntegrityError) as caught:
        load_for_eval(spec, run_dir)
    message = str(caught.value)
    assert "\n" not in message
    assert f"{run_dir / 'best' / 'model.safetensors'}: written by the train job and recorded in " \
           f"{run_dir / 'train.json'}, differs: sha256 " in message
    assert "same size" in message and "--forcerun" in message


def test_a_file_missing_from_best_stops_the_evaluation_and_the_export(trained_run, tmp_path):
    from sentrepro.evaluation.job import load_for_eval
    from sentrepro.export.folder import export_run

    spec, run_dir = trained_run
    (run_dir / "best" / "tokenizer.json").unlink()
    with pytest.raises(IntegrityError, match=r"best/tokenizer\.json: written by the train job .* is missing"):
        load_for_eval(spec, run_dir)
    with pytest.raises(IntegrityError, match=r"best/tokenizer\.json: .* is missing"):
        export_run(spec, run_dir, None, tmp_path / "export")
    assert not (tmp_path / "export").exists()


def test_a_stray_file_in_best_is_named_and_a_summary_without_best_files_falls_back_to_its_provenance(trained_run):
    from sentrepro.records.recorded import BEST_ROLE, verify_best

    _, run_dir = trained_run
    summary = json.loads((run_dir / "train.json").read_text())
    (run_dir / "best" / "extra.bin").write_bytes(b"x")
    with pytest.raises(IntegrityError, match=r"best/extra\.bin: not recorded in .*train\.json by the train job"):
        verify_best(run_dir)
    (run_dir / "best" / "extra.bin").unlink()
    # a train.json of an older version: best/ listed among the provenance inputs only (sha256, no stamp)
    inputs = [{"role": BEST_ROLE, "path": str(run_dir / "best" / name), "sha256": entry["sha256"],
               "bytes": entry["bytes"]} for name, entry in summary["best_files"].items()]
    (run_dir / "train.json").write_text(json.dumps({"provenance": {"inputs": inputs}}))
    assert len(verify_best(run_dir)) == len(inputs)
    flip(run_dir / "best" / "model.safetensors")
    with pytest.raises(IntegrityError, match="differs"):
        verify_best(run_dir)


def test_an_unchanged_stamp_reads_nothing_and_a_moved_one_hashes(trained_run, monkeypatch):
    from sentrepro.records import recorded

    _, run_dir = trained_run

    def no_hashing(path):
        raise AssertionError(f"hashed {path}")

    monkeypatch.setattr(recorded, "file_sha256", no_hashing)
    verified = recorded.verify_best(run_dir)  # every stamp as recorded: one stat per file
    assert set(verified) == set((run_dir / "best").iterdir())
    monkeypatch.undo()
    copy = run_dir.parent / "copied"
    shutil.copytree(run_dir, copy)  # new inodes: hashed, and equal
    hashed = []
    monkeypatch.setattr(recorded, "file_sha256", lambda p: hashed.append(p) or sha256_file(p))
    assert sorted(recorded.verify_best(copy).values()) == sorted(verified.values())
    assert len(hashed) == len(verified)


@pytest.fixture
def tokenized(tmp_path, tiny_models, wiki_sentences):
    """A tokenized corpus as ``sentrepro tokenize`` writes it (``tokenized.json``: its meta plus provenance)."""
    from sentrepro.training.corpus import tokenize_corpus

    (tmp_path / "sentences.txt").write_text("\n".join(wiki_sentences[:32]) + "\n", encoding="utf-8")
    out = tmp_path / "tok"
    meta = tokenize_corpus(tmp_path / "sentences.txt", load_tokenizer(str(tiny_models["bert"])), out, progress=False)
    (out / "tokenized.json").write_text(json.dumps({**meta, "provenance": {"step": "tokenize"}}))
    return out


def test_a_flipped_byte_in_the_token_ids_stops_training_before_it_starts(tokenized, tmp_path, tiny_models):
    from sentrepro.training.job import run_training

    spec = json.loads(json.dumps(SPEC))
    spec["backbone"]["model"] = str(tiny_models["bert"])
    flip(tokenized / "ids.npy")
    with pytest.raises(IntegrityError) as caught:
        run_training(spec, tokenized, tmp_path / "no-dev" / "MANIFEST.json", tmp_path / "run")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tokenized / 'ids.npy'}: written by the tokenize job and recorded in "
                              f"{tokenized / 'tokenized.json'}, differs: sha256 ")
    assert not (tmp_path / "run").exists()


def test_a_missing_offsets_file_or_an_unstamped_record_is_named(tokenized):
    from sentrepro.records.recorded import verify_tokenized

    assert set(verify_tokenized(tokenized)) == {tokenized / "ids.npy", tokenized / "offsets.npy"}
    (tokenized / "offsets.npy").unlink()
    with pytest.raises(IntegrityError, match=r"offsets\.npy: written by the tokenize job .* is missing"):
        verify_tokenized(tokenized)
    record = json.loads((tokenized / "tokenized.json").read_text())
    record.pop("token_files")
    (tokenized / "tokenized.json").write_text(json.dumps(record))
    with pytest.raises(IntegrityError, match=r"tokenized\.json: records no hashes .* rerun its tokenize job"):
        verify_tokenized(tokenized)


@pytest.fixture
def corpus_text(tmp_path, shared_data) -> Path:
    """``sentences.txt`` and its record as ``prepare_corpus`` (build_corpus) writes them."""
    import hashlib

    from sentrepro.data.prepare import build_corpus

    files = tmp_path / "src" / "files"
    files.mkdir(parents=True)
    head = (shared_data / "wiki" / "wiki1m_for_simcse.first1280000bytes.txt").read_bytes()[:20000]
    (files / "wiki.txt").write_bytes(head[:head.rindex(b"\n") + 1])
    digest = hashlib.sha256((files / "wiki.txt").read_bytes()).hexdigest()
    (tmp_path / "src" / "MANIFEST.json").write_text(json.dumps({"name": "w", "files": {"wiki.txt": digest}}))
    out = tmp_path / "corpus" / "sentences.txt"
    build_corpus({"name": "w", "source": "w", "file": "wiki.txt", "reader": "lines", "max_sentences": None},
                 tmp_path / "src" / "MANIFEST.json", out)
    return out


def test_a_flipped_byte_in_the_corpus_text_stops_tokenize_with_one_line(corpus_text, tmp_path, tiny_models, capsys):
    from sentrepro.cli import main

    args = ["tokenize", "--spec", json.dumps({"tokenizer": "tiny-bert", "model": str(tiny_models["bert"])}),
            "--corpus", str(corpus_text), "--out-dir", str(tmp_path / "tok"), "--quiet"]
    assert main(args) == 0  # intact: tokenized
    capsys.readouterr()
    data = corpus_text.read_bytes()
    corpus_text.write_bytes(data[:100] + bytes(b ^ 0x20 if chr(b).isalpha() else b for b in data[100:104])
                            + data[104:])  # four letters' case swapped: still text, same size
    assert corpus_text.read_bytes() != data
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sentrepro tokenize: {corpus_text}: written by the prepare_corpus job and recorded in "
                          f"{corpus_text}.json, differs: sha256 "), err
    assert "\n" not in err
