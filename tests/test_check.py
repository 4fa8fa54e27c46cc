"""check_dataset: every data set of a prepared source parsed, counts checked, errors naming file:line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sentrepro.cli import main
from sentrepro.planning.config import ConfigError, load_config, load_yaml, validate
from sentrepro.data.check import CheckConfigError, check_source, text_variant
from sentrepro.data.prepare import PinMismatch, prepare
from sentrepro.data.records import CountMismatch, DataFormatError
from sentrepro.files import read_json

REPO = Path(__file__).resolve().parents[1]


def _prepared(tmp_path: Path, name: str, source_dir: Path, **spec) -> Path:
    """Stage ``source_dir`` as prepared source ``name`` (the local-mirror path); return its MANIFEST.json."""
    prepare(name, {"url": source_dir.as_uri(), "format": "directory", **spec}, tmp_path / name, None)
    return tmp_path / name / "MANIFEST.json"


def test_raw_sts_layout_on_the_real_files(shared_data, tmp_path):
    check = {"layout": "sts-raw"}
    manifest = _prepared(tmp_path, "sts_raw", shared_data / "sts-raw", check=check)
    payload = check_source("sts_raw", {"check": check}, manifest)
    assert payload["text_variant"] == "raw" and payload["counts_checked"]
    assert payload["text_processing"] == "original SemEval STS / SICK release text, untokenized"
    parts = {name: summary["parts"] for name, summary in payload["datasets"].items()}
    assert parts["STS16"]["test"] == 1186 and parts["STS16"]["postediting"] == 244
    assert parts["STSBenchmark"] == {"train": 5749, "dev": 1500, "test": 1379}
    assert parts["SICKRelatedness"] == {"train": 4500, "dev": 500, "test": 4927}
    assert "STS16-en-test/STS2016.gs.headlines.txt" in payload["datasets"]["STS16"]["files"]
    assert payload["provenance"]["inputs"][0]["role"] == "dataset manifest"


@pytest.fixture
def clustering_copy(shared_data, tmp_path) -> Path:
    copy = tmp_path / "mirror" / "short-text-clustering"
    shutil.copytree(shared_data / "short-text-clustering", copy)
    return copy


def test_malformed_line_names_file_and_line(clustering_copy, tmp_path):
    path = clustering_copy / "agnewsdataraw-8000"
    lines = path.read_bytes().split(b"\n")
    lines[16] = b"x" + lines[16]  # line 17: label "x3"
    path.write_bytes(b"\n".join(lines))
    check = {"layout": "short-text-clustering"}
    manifest = _prepared(tmp_path / "prepared", "clustering", clustering_copy, check=check)
    with pytest.raises(DataFormatError) as caught:
        check_source("clustering", {"check": check}, manifest)
    assert str(caught.value).startswith(f"{manifest.parent / 'files' / 'agnewsdataraw-8000'}:17: label is not an integer")


def test_a_missing_line_is_a_count_mismatch_unless_synthetic(clustering_copy, tmp_path):
    path = clustering_copy / "T"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))
    check = {"layout": "short-text-clustering"}
    manifest = _prepared(tmp_path / "prepared", "clustering", clustering_copy, check=check)
    with pytest.raises(CountMismatch, match=r"GoogleNews-T \[all\]: expected 11108, found 11107"):
        check_source("clustering", {"check": check}, manifest)
    payload = check_source("clustering", {"check": check, "synthetic": True}, manifest)
    assert not payload["counts_checked"] and "synthetic fixture" in payload["counts_not_checked_because"]
    assert payload["datasets"]["GoogleNews-T"]["parts"] == {"all": 11107}
    assert payload["datasets"]["Tweet"]["classes"] == 89


def test_cli_reports_failure_without_writing_checked_json(clustering_copy, tmp_path, capsys):
    (clustering_copy / "TS").write_text("1\tonly one line\n")
    spec = '{"check": {"layout": "short-text-clustering"}}'
    manifest = _prepared(tmp_path / "prepared", "clustering", clustering_copy)
    assert main(["check-dataset", "--name", "clustering", "--spec", spec, "--manifest", str(manifest)]) == 1
    assert "check of source 'clustering' FAILED: GoogleNews-TS [all]: expected 11109, found 1" in capsys.readouterr().err
    assert not (manifest.parent / "CHECKED.json").exists()


def test_staged_mirror_files_are_held_to_their_pins(clustering_copy, tmp_path):
    paper = load_config(REPO / "config.yaml")
    spec = {k: v for k, v in paper["data"]["sources"]["clustering"].items() if k in ("files", "check")}
    manifest = read_json(_prepared(tmp_path / "ok", "clustering", clustering_copy, **spec))
    assert manifest["pins_checked"] == 8 and len(manifest["files"]) == 8
    with open(clustering_copy / "S", "ab") as handle:
        handle.write(b"1\tone more snippet\n")
    with pytest.raises(PinMismatch) as caught:
        _prepared(tmp_path / "bad", "clustering", clustering_copy, **spec)
    message = str(caught.value)
    assert str(clustering_copy / "S") in message and "004e6210fbfcd114" in message and "nothing was prepared" in message
    assert not (tmp_path / "bad" / "clustering" / "files").exists()


def test_text_variant_rules():
    assert text_variant("s", {"layout": "senteval"}) == "senteval"
    assert text_variant("s", {"layout": "sts-raw"}) == "raw"
    assert text_variant("s", {"layout": "stsb", "text_variant": "raw"}) == "raw"
    assert text_variant("s", {"layout": "wos"}) is None
    with pytest.raises(CheckConfigError, match=r"data\.sources\.s\.check\.text_variant: required for layout 'stsb'"):
        text_variant("s", {"layout": "stsb"})
    with pytest.raises(CheckConfigError, match="holds no STS text"):
        text_variant("s", {"layout": "short-text-clustering", "text_variant": "raw"})


def test_config_requires_a_checked_sts_source_of_the_evaluated_variant():
    paper = load_yaml(REPO / "config.yaml")  # the file as written: validate() takes the named (mapping) form
    paper["evaluation"]["sts"]["variant"] = "raw"
    with pytest.raises(ConfigError, match=r"evaluation\.sts\.variant: 'raw', but source 'senteval' holds the "
                                          r"'senteval' text"):
        validate(paper)
    paper["evaluation"]["sts"]["variant"] = "senteval"
    del paper["data"]["sources"]["senteval"]["check"]
    with pytest.raises(ConfigError, match="source 'senteval' has no 'check' block"):
        validate(paper)


def test_config_sources_pin_every_clustering_file_and_the_wos_zip():
    sources = load_config(REPO / "config.yaml")["data"]["sources"]
    files = sources["clustering"]["files"]
    assert len(files) == 8 and all(len(entry["sha256"]) == 64 for entry in files)
    assert "f363b66e6fd51f9dd1db679d2a9ce55538ab9868/data" in sources["clustering"]["url"]
    assert sources["wos"]["sha256"] == "b787d484bff88b0dcdb3fa291d06ec9d2f025dc2a67ce1045d0c688cd96ccf8a"
    assert "e145e8bb659b2aa2669f32ef79cb4cdef6c58fef" in sources["senteval"]["url"]


def test_clustering_pins_match_the_real_files(shared_data):
    from sentrepro.hashing import sha256_file

    sources = load_config(REPO / "config.yaml")["data"]["sources"]
    for entry in sources["clustering"]["files"]:
        assert sha256_file(shared_data / "short-text-clustering" / entry["path"]) == entry["sha256"], entry["path"]
