"""Synthetic fixtures: deterministic, in the exact upstream formats, readable by the real parsers."""

from __future__ import annotations

import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from sentrepro.data.benchmarks.clustering import CLUSTERING_SETS, read_clustering
from sentrepro.data.counts import EXPECTED_CLASSES, EXPECTED_PARENT_CLASSES
from sentrepro.data.extract import build_manifest, extract_archive
from sentrepro.data.fixtures import GENERATORS, write_fixture
from sentrepro.data.fixtures.archives import FIXED_MTIME
from sentrepro.data.benchmarks.sts import read_sts_year
from sentrepro.data.benchmarks.senteval import FEWSHOT_SHOTS
from sentrepro.data.benchmarks.transfer import read_mrpc, read_trec
from sentrepro.data.benchmarks.wos import WOS_VERSIONS, read_wos


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fixtures")
    for name in GENERATORS:
        write_fixture(name, root / name)
    return root


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generation_is_byte_identical_on_a_second_run(fixtures, tmp_path, name):
    write_fixture(name, tmp_path / name)
    assert build_manifest(tmp_path / name) == build_manifest(fixtures / name)


def test_unknown_generator_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown fixture generator 'mnist'"):
        write_fixture("mnist", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_senteval_tar_has_simcse_layout_with_task_folders_at_the_top(fixtures):
    with tarfile.open(fixtures / "senteval" / "senteval.tar") as tar:
        members = tar.getmembers()
    top = {member.name.split("/")[0] for member in members}
    assert top == {"STS", "SICK", "MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC"}
    names = {member.name for member in members}
    assert {"STS/STS13-en-test/STS.input.FNWN.txt", "STS/STSBenchmark/sts-dev.csv", "SICK/SICK_trial.txt",
            "SST/binary/sentiment-train", "TREC/TREC_10.label", "MRPC/msr_paraphrase_test.txt"} <= names
    assert not any("SMT.txt" in name and "STS13" in name for name in names)  # STS13 has no SMT subset
    assert {member.mtime for member in members} == {FIXED_MTIME} and {member.uid for member in members} == {0}


@pytest.fixture(scope="module")
def senteval_tree(fixtures, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("senteval-extracted") / "downstream"
    extract_archive(fixtures / "senteval" / "senteval.tar", root)
    return root


def test_senteval_fixture_keeps_the_upstream_quirks(senteval_tree):
    sts15_gold = (senteval_tree / "STS/STS15-en-test/STS.gs.belief.txt").read_text().split("\n")
    assert "" in sts15_gold[:-1]  # unscored pairs: blank gold lines
    assert all(line == "" or line.isdigit() for line in
               (senteval_tree / "STS/STS16-en-test/STS.gs.headlines.txt").read_text().split("\n"))
    assert (senteval_tree / "SICK/SICK_test_annotated.txt").read_bytes().count(b"\r\n") == 31
    assert b"\r" not in (senteval_tree / "SICK/SICK_train.txt").read_bytes()
    assert (senteval_tree / "MRPC/msr_paraphrase_train.txt").read_bytes().startswith(b"\xef\xbb\xbfQuality\t#1 ID")
    assert b"\xe9" in (senteval_tree / "TREC/train_5500.label").read_bytes()  # Latin-1, not UTF-8
    assert b"\n\n" in (senteval_tree / "CR/custrev.neg").read_bytes()  # a blank line, kept by SentEval
    sts_b = (senteval_tree / "STS/STSBenchmark/sts-test.csv").read_text().splitlines()
    assert {len(line.split("\t")) for line in sts_b} == {7}
    sst = (senteval_tree / "SST/binary/sentiment-dev").read_text().splitlines()
    assert all(line[-3:] in (" \t0", " \t1") for line in sst)


def test_senteval_fixture_reads_with_the_real_parsers(senteval_tree):
    sts15 = read_sts_year(senteval_tree / "STS", 2015, "senteval", check_counts=False)
    assert {subset: len(pairs) for subset, pairs in sts15.items()} == {
        "answers-forums": 12, "answers-students": 12, "belief": 12, "headlines": 12, "images": 12}
    trec = read_trec(senteval_tree / "TREC", check_counts=False)
    assert Counter(s.label for s in trec["train"]) == {label: FEWSHOT_SHOTS for label in range(6)}
    assert any("caf\u00e9" in s.text for s in trec["train"] + trec["test"])
    mrpc = read_mrpc(senteval_tree / "MRPC", check_counts=False)
    assert Counter(p.label for p in mrpc["train"]) == {0: 20, 1: 20}


def test_clustering_fixture_has_the_raw_quirks(fixtures):
    root = fixtures / "clustering"
    assert sorted(build_manifest(root)) == sorted(CLUSTERING_SETS.values())
    stack = (root / CLUSTERING_SETS["StackOverflow"]).read_bytes()
    assert stack.count(b"\t\r\n") == stack.count(b"\r\n") - 2  # all but the last line and the inner-tab line
    assert not (root / CLUSTERING_SETS["Biomedical"]).read_bytes().endswith(b"\n")
    snippets = (root / CLUSTERING_SETS["SearchSnippets"]).read_bytes()
    assert snippets.endswith(b" \r\n") and snippets.count(b" \r\n") == snippets.count(b"\n")
    lines = {name: (root / CLUSTERING_SETS[name]).read_bytes().count(b"\n")
             for name in ("GoogleNews-S", "GoogleNews-T", "GoogleNews-TS")}
    assert lines["GoogleNews-TS"] == lines["GoogleNews-S"] + 1 == lines["GoogleNews-T"] + 1
    assert (root / "S").read_bytes() != (root / "T").read_bytes()
    tweet_labels = {int(line.split(b"\t")[0]) for line in (root / CLUSTERING_SETS["Tweet"]).read_bytes().splitlines()}
    assert len(tweet_labels) == 89 and max(tweet_labels) <= 110 and tweet_labels != set(range(1, 90))


@pytest.mark.parametrize("name", sorted(CLUSTERING_SETS))
def test_clustering_fixture_has_the_real_number_of_clusters(fixtures, name):
    items = read_clustering(fixtures / "clustering", name, check_counts=False)
    assert len({item.label for item in items}) == EXPECTED_CLASSES[name]
    assert {item.label for item in items} == set(range(EXPECTED_CLASSES[name]))


def test_wos_zip_has_version_folders_at_the_top_and_full_hierarchies(fixtures, tmp_path):
    archive = fixtures / "wos" / "WebOfScience.zip"
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
    assert {name.split("/")[0] for name in names} == set(WOS_VERSIONS)
    assert "WOS5736/X.txt" in names and "WOS46985/YL2.txt" in names
    extract_archive(archive, tmp_path / "wos")
    for version in WOS_VERSIONS:
        documents = read_wos(tmp_path / "wos", version, check_counts=False)
        assert len({d.label for d in documents}) == EXPECTED_CLASSES[version]
        assert len({d.parent for d in documents}) == EXPECTED_PARENT_CLASSES[version]
