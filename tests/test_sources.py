"""Source specs: multi-file sources, fixture:// URLs, trust on first use, and the local mirror."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sentrepro.planning.config import ConfigError, load_config
from sentrepro.runs import source_slice
from sentrepro.data.download import ChecksumMismatch
from sentrepro.data.prepare import download, first_use_record, prepare, source_files
from sentrepro.data.sources import SourceError, join_url, resolve_url
from sentrepro.files import read_json

REPO = Path(__file__).resolve().parents[1]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fixture_urls_resolve_inside_the_fixtures_directory(tmp_path):
    (tmp_path / "wos").mkdir()
    (tmp_path / "wos" / "WebOfScience.zip").write_bytes(b"zip")
    assert resolve_url("fixture://wos/WebOfScience.zip", tmp_path) == (tmp_path / "wos" / "WebOfScience.zip").as_uri()
    with pytest.raises(SourceError, match="sentrepro fixture senteval"):
        resolve_url("fixture://senteval/senteval.tar", tmp_path)
    with pytest.raises(SourceError, match="no fixtures directory"):
        resolve_url("fixture://wos/WebOfScience.zip")


def test_multi_file_source_joins_paths_to_the_base_url():
    spec = {"url": "https://host/repo/abc/data/", "format": "files",
            "files": [{"path": "search_snippets/search snippets", "sha256": "a" * 64},
                      {"path": "TS", "url": "https://elsewhere/TS"}]}
    files = source_files("clustering", spec)
    assert [(f.path, f.url, f.sha256) for f in files] == [
        ("search_snippets/search snippets", "https://host/repo/abc/data/search_snippets/search%20snippets", "a" * 64),
        ("TS", "https://elsewhere/TS", None)]
    assert join_url("fixture://clustering", "S") == "fixture://clustering/S"


@pytest.mark.parametrize("path", ["../escape", "/abs/path", "a/../../b", ""])
def test_multi_file_paths_must_stay_inside_the_source(path):
    with pytest.raises(ValueError, match="must be a relative path"):
        source_files("x", {"url": "https://h/d", "format": "files", "files": [{"path": path}]})


def _file_source(tmp_path: Path, files: dict[str, bytes], pins: dict[str, str | None]) -> dict:
    upstream = tmp_path / "upstream"
    for name, data in files.items():
        (upstream / name).parent.mkdir(parents=True, exist_ok=True)
        (upstream / name).write_bytes(data)
    return {"url": upstream.as_uri(), "format": "files",
            "files": [{"path": name, "sha256": pins.get(name)} for name in files]}


def test_multi_file_download_and_prepare_make_one_tree(tmp_path):
    files = {"a.txt": b"alpha\n", "sub/b.txt": b"beta\n"}
    spec = _file_source(tmp_path, files, {"a.txt": _sha(b"alpha\n")})
    record = download("two", spec, tmp_path / "downloads", progress=False)
    assert [(e["path"], e["verification"]) for e in record["files"]] == [
        ("a.txt", "pinned"), ("sub/b.txt", "trust-on-first-use")]
    assert record["verification"] == "trust-on-first-use"
    assert record["files"][1]["first_use"].startswith("first download")
    manifest = prepare("two", spec, tmp_path / "data", tmp_path / "downloads" / "download.json")
    assert manifest["files"] == {"a.txt": _sha(b"alpha\n"), "sub/b.txt": _sha(b"beta\n")}
    assert read_json(tmp_path / "data" / "MANIFEST.json")["provenance"]["inputs"][0]["role"] == "download record"


def test_unpinned_file_must_match_its_first_download_later(tmp_path):
    spec = _file_source(tmp_path, {"b.txt": b"beta\n"}, {})
    out = tmp_path / "downloads"
    download("one", spec, out, progress=False)
    assert first_use_record(out / "b.txt").read_text().strip() == _sha(b"beta\n")
    (out / "b.txt").unlink()  # a later run downloads it again
    again = download("one", spec, out, progress=False)
    assert again["files"][0]["first_use"] == "matches the hash recorded on first use"
    (out / "b.txt").unlink()
    (tmp_path / "upstream" / "b.txt").write_bytes(b"changed upstream\n")
    with pytest.raises(ChecksumMismatch, match="recorded on its first download") as caught:
        download("one", spec, out, progress=False)
    assert str(first_use_record(out / "b.txt")) in str(caught.value)
    assert not (out / "b.txt").exists()


def test_unpinned_fixture_is_marked_generated_and_may_change_with_its_generator(tmp_path):
    fixtures = tmp_path / "fixtures"
    (fixtures / "wos").mkdir(parents=True)
    (fixtures / "wos" / "WebOfScience.zip").write_bytes(b"first generation")
    spec = {"url": "fixture://wos/WebOfScience.zip", "format": "zip", "sha256": None, "synthetic": True}
    out = tmp_path / "downloads"
    record = download("wos", spec, out, progress=False, fixtures_dir=fixtures)
    assert record["verification"] == "generated" and record["synthetic"]
    assert record["resolved_url"] == (fixtures / "wos" / "WebOfScience.zip").as_uri()
    assert not first_use_record(out / "WebOfScience.zip").exists()
    (fixtures / "wos" / "WebOfScience.zip").write_bytes(b"second generation, after a code change")
    again = download("wos", spec, out, progress=False, fixtures_dir=fixtures)
    assert again["sha256"] == _sha(b"second generation, after a code change")


@pytest.fixture
def paper():
    return load_config(REPO / "config.yaml")


def test_mirror_directory_replaces_the_download_and_keeps_the_pins(paper, shared_data):
    paper["data"]["mirror"] = str(shared_data)
    spec = source_slice(paper, "clustering")
    assert spec["format"] == "directory" and spec["mirrored"]
    assert spec["url"] == (shared_data / "short-text-clustering").as_uri()
    assert len(spec["files"]) == 8  # kept so prepare can check the staged files against them
    assert source_slice(paper, "senteval")["url"] == (shared_data / "senteval").as_uri()


def test_mirror_file_keeps_format_and_pin(paper, tmp_path):
    (tmp_path / "senteval.tar").write_bytes(b"tar bytes")
    paper["data"]["mirror"] = str(tmp_path)
    paper["data"]["sources"]["senteval"].update(mirror_path="senteval.tar", sha256="c" * 64)
    spec = source_slice(paper, "senteval")
    assert spec["format"] == "tar" and spec["url"] == (tmp_path / "senteval.tar").as_uri()
    assert spec["sha256"] == "c" * 64  # the mirrored file is verified like a download


def test_mirror_missing_source_is_a_config_error_naming_the_path(paper, tmp_path):
    paper["data"]["mirror"] = str(tmp_path)
    with pytest.raises(ConfigError, match=r"data\.mirror: .*WebOfScience does not exist .*mirror_path"):
        source_slice(paper, "wos")


def test_mirror_does_not_apply_to_fixture_or_package_sources(paper, tmp_path):
    paper["data"]["mirror"] = str(tmp_path)
    paper["data"]["sources"]["wos"].update(url="fixture://wos/WebOfScience.zip", sha256=None, synthetic=True)
    spec = source_slice(paper, "wos")
    assert spec["url"] == "fixture://wos/WebOfScience.zip" and spec["format"] == "zip" and "mirrored" not in spec


def test_demo_overlay_marks_every_fixture_source_synthetic():
    demo = load_config(REPO / "config.yaml", REPO / "profiles/demo/overlay.yaml")
    sources = demo["data"]["sources"]
    for name in ("senteval", "clustering", "wos"):
        spec = sources[name]
        urls = [spec["url"]] if spec["format"] != "files" else [f.url for f in source_files(name, spec)]
        assert all(url.startswith("fixture://") for url in urls) and spec["synthetic"], name
        assert all(not f.sha256 for f in source_files(name, spec)), name
    assert sources["stsb_pypi"]["check"] == {"layout": "stsb", "text_variant": "raw"}
    assert not sources["stsb_pypi"]["synthetic"]  # the real STS-B from PyPI
