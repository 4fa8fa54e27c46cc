"""Download -> verify -> extract -> parse -> check through the real workflow rules.

Archives are built on the fly from the real files in ../shared/data (a senteval.tar in SimCSE's
layout, the 8 raw clustering files, a WOS-style zip of ``write_wos_fixture``) and served by a local
HTTP server at the upstream paths; snakemake runs the repository's rules on them. Every documented
count is checked on the real files; failures (wrong hash, cut-off download, corrupt archive,
malformed line) must stop the workflow with a clear error and leave nothing that looks complete.
"""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sentrepro.data.benchmarks.wos import WOS_ARCHIVE_DIR, write_wos_fixture
from sentrepro.files import read_json
from tests.http_server import ServerPlan, serve
from tests.workflow_helpers import REPO, planned_jobs, snakemake, write_overlay

pytestmark = pytest.mark.slow

CLUSTERING_PATH = "/rashadulrakib/short-text-clustering-enhancement/f363b66e6fd51f9dd1db679d2a9ce55538ab9868/data"
WOS_PATH = "/public-files/datasets/9rw3vkcfy4/files/c9ea673d-5542-44c0-ab7b-f1311f7d61df/file_downloaded"
CHECKED = {name: f"resources/data/{name}/CHECKED.json" for name in ("senteval", "clustering", "wos")}
FAST_RETRIES = {"SENTREPRO_DOWNLOAD_RETRIES": "1", "SENTREPRO_DOWNLOAD_BACKOFF_S": "0.01"}

# The counts the issue lists (docs/evaluation-and-data.md §0), written out here independently of
# sentrepro.data.counts, which the code checks against.
SENTEVAL_COUNTS = {
    "STS12": {"test": 3108}, "STS13": {"test": 1500}, "STS14": {"test": 3750}, "STS15": {"test": 3000},
    "STS16": {"test": 1186}, "STSBenchmark": {"test": 1379}, "SICKRelatedness": {"test": 4927},
    "MR": {"all": 10662}, "CR": {"all": 3775}, "SUBJ": {"all": 10000}, "MPQA": {"all": 10606},
    "SST2": {"train": 67349, "dev": 872, "test": 1821}, "TREC": {"train": 5452, "test": 500},
    "MRPC": {"train": 4076, "test": 1725},
}
CLUSTERING_COUNTS = {  # size, clusters
    "AgNews": (8000, 4), "SearchSnippets": (12340, 8), "StackOverflow": (20000, 20), "Biomedical": (20000, 20),
    "GoogleNews-S": (11108, 152), "GoogleNews-T": (11108, 152), "GoogleNews-TS": (11109, 152), "Tweet": (2472, 89),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def senteval_tar(senteval_dir: Path) -> bytes:
    """The real SentEval tree as SimCSE's senteval.tar holds it: task folders at the top."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for child in sorted(senteval_dir.iterdir()):
            tar.add(child, arcname=child.name)
    return buffer.getvalue()


def wos_zip(work: Path) -> bytes:
    """A WOS-style zip (version folders at the top, as the Mendeley archive) of write_wos_fixture's files."""
    write_wos_fixture(work, n_docs=150, seed=11)
    root = work / WOS_ARCHIVE_DIR
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            zf.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


@dataclass
class Upstream:
    base: str
    plan: ServerPlan
    files: dict[str, bytes]  # the real bytes by URL path

    def sources(self) -> dict:
        """Overlay sources fetching senteval, clustering and WOS from this server (clustering pins: config.yaml)."""
        return {
            "senteval": {"url": f"{self.base}/senteval.tar", "sha256": _sha(self.files["/senteval.tar"])},
            "clustering": {"url": f"{self.base}{CLUSTERING_PATH}"},
            "wos": {"url": f"{self.base}{WOS_PATH}", "sha256": _sha(self.files[WOS_PATH]), "synthetic": True},
        }


@pytest.fixture(scope="module")
def upstream(shared_data, tmp_path_factory):
    files = {"/senteval.tar": senteval_tar(shared_data / "senteval"),
             WOS_PATH: wos_zip(tmp_path_factory.mktemp("wos"))}
    for path in sorted(p for p in (shared_data / "short-text-clustering").rglob("*") if p.is_file()):
        files[f"{CLUSTERING_PATH}/{path.relative_to(shared_data / 'short-text-clustering').as_posix()}"] = \
            path.read_bytes()
    plan = ServerPlan(files=dict(files))
    with serve(plan) as base:
        yield Upstream(base, plan, files)


def _overlay(workdir: Path, sources: dict, mirror: str | None = None) -> Path:
    return write_overlay(workdir, {"experiment": "datatest", "data": {"mirror": mirror, "sources": sources}})


def _log(workdir: Path, step: str, source: str) -> str:
    return (workdir / "resources" / "logs" / step / f"{source}.log").read_text()


def _visible(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# ----------------------------------------------------------------------------- the happy path


@pytest.fixture(scope="module")
def served_run(upstream, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("served")
    _overlay(workdir, upstream.sources())
    snakemake(workdir, *CHECKED.values())
    return workdir


def test_every_documented_count_is_checked_on_the_real_files(served_run):
    senteval = read_json(served_run / CHECKED["senteval"])
    assert senteval["counts_checked"] and senteval["text_variant"] == "senteval" and senteval["layout"] == "senteval"
    for dataset, parts in SENTEVAL_COUNTS.items():
        found = senteval["datasets"][dataset]["parts"]
        assert {part: found[part] for part in parts} == parts, dataset
    assert senteval["datasets"]["TREC"]["classes"] == 6
    clustering = read_json(served_run / CHECKED["clustering"])
    assert clustering["counts_checked"]
    assert {name: (d["parts"]["all"], d["classes"]) for name, d in clustering["datasets"].items()} == CLUSTERING_COUNTS


def test_synthetic_wos_zip_is_parsed_but_its_counts_are_not_checked(served_run):
    wos = read_json(served_run / CHECKED["wos"])
    assert not wos["counts_checked"] and "synthetic" in wos["counts_not_checked_because"]
    assert {name: (d["parts"]["all"], d["classes"], d["parent_classes"]) for name, d in wos["datasets"].items()} == \
        {"WOS5736": (150, 11, 3), "WOS11967": (150, 35, 7), "WOS46985": (150, 134, 7)}
    assert read_json(served_run / "resources/data/wos/MANIFEST.json")["synthetic"]


def test_downloads_are_pinned_recorded_and_logged(served_run, upstream):
    clustering = read_json(served_run / "resources/downloads/clustering/download.json")
    assert [entry["verification"] for entry in clustering["files"]] == ["pinned"] * 8
    assert clustering["files"][0]["url"] == f"{upstream.base}{CLUSTERING_PATH}/agnewsdataraw-8000"
    manifest = read_json(served_run / "resources/data/clustering/MANIFEST.json")
    assert sorted(manifest["files"]) == sorted(p.removeprefix(CLUSTERING_PATH + "/") for p in upstream.files
                                               if p.startswith(CLUSTERING_PATH))  # one tree, upstream layout
    senteval = read_json(served_run / "resources/downloads/senteval/download.json")
    assert senteval["verification"] == "pinned" and senteval["sha256"] == _sha(upstream.files["/senteval.tar"])
    log = _log(served_run, "download", "senteval")
    assert f"fetching {upstream.base}/senteval.tar" in log
    assert re.search(r"senteval\.tar: finished, \d+\.\d MiB of \d+\.\d MiB \(100%\)", log)
    assert "file 8 of 8: tweet-original-order.txt" in _log(served_run, "download", "clustering")
    assert "MR: pos 5331, neg 5331, all 10662; 2 classes" in _log(served_run, "check_dataset", "senteval")


def test_a_second_run_has_nothing_to_do(served_run):
    assert planned_jobs(snakemake(served_run, "-n", *CHECKED.values())) == {}


# ----------------------------------------------------------------------------- failures
# One snakemake run (--keep-going) fetches five broken sources side by side; each test reads its own.


@dataclass
class FailedRun:
    workdir: Path
    returncode: int
    bodies: dict[str, bytes]  # what the server held for each source


def _broken_sources(upstream: Upstream) -> tuple[dict, dict[str, bytes]]:
    """Source specs (complete: their names are not in config.yaml) and the bytes served for each."""
    tar, zip_ = upstream.files["/senteval.tar"], upstream.files[WOS_PATH]
    corrupt = bytearray(zip_)
    corrupt[len(zip_) // 2: len(zip_) // 2 + 64] = bytes(64)  # damaged upstream: its pin matches the damage
    half_tar = tar[: len(tar) // 2]
    stack = upstream.files[f"{CLUSTERING_PATH}/stackoverflow/stackoverflow_true_text"].split(b"\n")
    stack[1233] = b"18 " + stack[1233].split(b"\t", 1)[1]  # line 1234: the label's tab became a space
    bodies = {"senteval_wrong_hash": tar, "wos_cut": zip_, "wos_corrupt": bytes(corrupt), "senteval_half": half_tar,
              "clustering_malformed": b"\n".join(stack)}
    senteval = {"format": "tar", "filename": "senteval.tar", "check": {"layout": "senteval"}}
    wos = {"format": "zip", "filename": "WebOfScience.zip", "synthetic": True, "check": {"layout": "wos"}}
    paper = yaml.safe_load((REPO / "config.yaml").read_text())
    files = [dict(entry) for entry in paper["data"]["sources"]["clustering"]["files"]]
    next(entry for entry in files if entry["path"].startswith("stackoverflow"))["sha256"] = None
    sources = {
        "senteval_wrong_hash": {**senteval, "sha256": "0" * 64},
        "wos_cut": {**wos, "sha256": _sha(zip_)},
        "wos_corrupt": {**wos, "sha256": _sha(bytes(corrupt))},
        "senteval_half": {**senteval, "sha256": None},
        "clustering_malformed": {"format": "files", "files": files, "check": {"layout": "short-text-clustering"},
                                 "url": f"{upstream.base}/clustering_malformed/data"},
    }
    for name in ("senteval_wrong_hash", "wos_cut", "wos_corrupt", "senteval_half"):
        upstream.plan.files[f"/{name}/file"] = bodies[name]
        sources[name]["url"] = f"{upstream.base}/{name}/file"
    for path, data in upstream.files.items():
        if path.startswith(CLUSTERING_PATH):
            upstream.plan.files["/clustering_malformed/data" + path.removeprefix(CLUSTERING_PATH)] = data
    upstream.plan.files["/clustering_malformed/data/stackoverflow/stackoverflow_true_text"] = bodies[
        "clustering_malformed"]
    upstream.plan.truncate_to["/wos_cut/file"] = [4000, 4000]  # the first attempt and its one retry are cut short
    return sources, bodies


@pytest.fixture(scope="module")
def failed_run(upstream, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("broken")
    sources, bodies = _broken_sources(upstream)
    _overlay(workdir, sources)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in FAST_RETRIES.items():
            patch.setenv(key, value)
        result = snakemake(workdir, "--keep-going", *(f"resources/data/{name}/CHECKED.json" for name in sources),
                           check=False)
    return FailedRun(workdir, result.returncode, bodies)


def test_failed_run_fails(failed_run):
    assert failed_run.returncode != 0
    assert not list(failed_run.workdir.glob("resources/data/*/CHECKED.json"))


def test_wrong_hash_stops_the_download_and_leaves_nothing(failed_run):
    log = _log(failed_run.workdir, "download", "senteval_wrong_hash")
    assert "FAILED: sha256 mismatch" in log and "0" * 64 in log and _sha(failed_run.bodies["senteval_wrong_hash"]) in log
    assert _visible(failed_run.workdir / "resources" / "downloads" / "senteval_wrong_hash") == []
    assert not (failed_run.workdir / "resources" / "data" / "senteval_wrong_hash").exists()


def test_cut_off_download_keeps_only_its_hidden_partial_and_resumes_on_the_next_run(failed_run, upstream):
    workdir = failed_run.workdir
    log = _log(workdir, "download", "wos_cut")
    assert "download of source 'wos_cut' FAILED" in log and "gave up after 2 attempts" in log
    assert "8000 bytes kept in resources/downloads/wos_cut/.WebOfScience.zip.part for a later call to resume" in log
    downloads = workdir / "resources" / "downloads" / "wos_cut"
    assert _visible(downloads) == [".WebOfScience.zip.part"]  # nothing under a final name, no download.json

    snakemake(workdir, "resources/data/wos_cut/CHECKED.json")  # the server now answers in full
    ranges = [header for requested, header in upstream.plan.requests if requested == "/wos_cut/file"]
    assert ranges == [None, "bytes=4000-", "bytes=8000-"]
    assert (downloads / "WebOfScience.zip").read_bytes() == failed_run.bodies["wos_cut"]
    assert read_json(downloads / "download.json")["resumed"]
    assert read_json(workdir / "resources/data/wos_cut/CHECKED.json")["datasets"]["WOS5736"]["parts"] == {"all": 150}


@pytest.mark.parametrize("name", ["wos_corrupt", "senteval_half"])
def test_damaged_archive_stops_extraction_and_leaves_no_tree(failed_run, name):
    log = _log(failed_run.workdir, "prepare_dataset", name)
    assert f"preparing source '{name}' FAILED: archive" in log
    assert "could not be extracted, it is probably corrupt or truncated" in log
    assert _visible(failed_run.workdir / "resources" / "data" / name) == []  # no files/, no MANIFEST.json


def test_malformed_line_stops_the_check_naming_file_and_line(failed_run):
    log = _log(failed_run.workdir, "check_dataset", "clustering_malformed")
    assert ("check of source 'clustering_malformed' FAILED: resources/data/clustering_malformed/files/stackoverflow/"
            "stackoverflow_true_text:1234: label is not an integer") in log
    assert (failed_run.workdir / "resources/data/clustering_malformed/MANIFEST.json").exists()


# ----------------------------------------------------------------------------- mirror and the DAG


def test_local_mirror_stages_shared_data_checks_pins_and_counts(shared_data, tmp_path):
    _overlay(tmp_path, {}, mirror=str(shared_data))
    snakemake(tmp_path, CHECKED["senteval"], CHECKED["clustering"])
    assert not (tmp_path / "resources" / "downloads").exists()  # the mirror replaced the network
    clustering = read_json(tmp_path / "resources/data/clustering/MANIFEST.json")
    assert clustering["staged_from"] == str(shared_data / "short-text-clustering") and clustering["pins_checked"] == 8
    checked = read_json(tmp_path / CHECKED["clustering"])
    assert {name: d["parts"]["all"] for name, d in checked["datasets"].items()} == \
        {name: size for name, (size, _k) in CLUSTERING_COUNTS.items()}
    senteval = read_json(tmp_path / CHECKED["senteval"])
    assert senteval["counts_checked"] and senteval["datasets"]["STS16"]["parts"]["test"] == 1186
    assert read_json(tmp_path / "resources/data/senteval/MANIFEST.json")["staged_from"] == str(shared_data / "senteval")


def test_paper_dry_run_lists_every_download_once_and_checks_before_evaluating(tmp_path):
    result = snakemake(tmp_path, "-n", overlay=write_overlay(tmp_path, {}))
    text = result.stdout + result.stderr
    downloads = Counter(re.findall(r"output: resources/downloads/([^/\s]+)/download\.json", text))
    assert {"wiki1m", "senteval", "clustering", "wos"} <= set(downloads)
    assert set(downloads.values()) == {1}, downloads
    checks = Counter(re.findall(r"output: resources/data/([^/\s]+)/CHECKED\.json", text))
    assert checks == {"senteval": 1, "clustering": 1, "wos": 1}
    evaluate_inputs = re.findall(r"rule evaluate_sts:\n\s+input: ([^\n]*)", text)
    assert evaluate_inputs and all("resources/data/senteval/CHECKED.json" in line for line in evaluate_inputs)
