"""STS layout summaries of the real files (the ``stsb`` and ``sts-raw`` layouts: family, parts, files),
the metrics-file record of an STS source, and the suite task table (years, directory setting names)."""

from __future__ import annotations

from sentrepro.data.benchmarks.sts import BENCHMARK, TASKS, read_sts_raw_layout, read_sts_year, read_stsb_layout

STSB_PARTS = {"train": 5749, "dev": 1500, "test": 1379}
SICK_PARTS = {"train": 4500, "dev": 500, "test": 4927}


def test_stsb_layout_of_the_real_directory(shared_data):
    root = shared_data / "sts-raw" / "STSBenchmark"
    assert read_stsb_layout(root, None, True) == {"STSBenchmark": {
        "family": "sts", "parts": STSB_PARTS, "files": sorted(["sts-train.csv", "sts-dev.csv", "sts-test.csv"])}}


def test_sts_raw_layout_of_the_real_directory(shared_data):
    found = read_sts_raw_layout(shared_data / "sts-raw", "raw", True)
    assert {name: entry["family"] for name, entry in found.items()} == {
        name: "sts" for name in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")}
    assert found["STS13"]["parts"] == {"FNWN": 189, "headlines": 750, "OnWN": 561, "test": 1500}
    assert found["STSBenchmark"]["parts"] == STSB_PARTS
    assert found["SICKRelatedness"]["parts"] == SICK_PARTS
    assert found["SICKRelatedness"]["files"] == sorted([
        "SICK/SICK_train.txt", "SICK/SICK_trial.txt", "SICK/SICK_test_annotated.txt"])
    assert found["STSBenchmark"]["files"] == sorted(f"STSBenchmark/sts-{s}.csv" for s in ("train", "dev", "test"))


def test_year_source_record(shared_data):
    data = read_sts_year(shared_data / "senteval" / "STS", 2013)
    record = data.source.record()
    assert record["dataset"] == "STS13" and record["split"] == "test" and record["text_variant"] == "senteval"
    assert record["text_processing"] == ("SentEval/SimCSE senteval.tar copy: Moses-tokenized; STS and STS-B "
                                         "lowercased, SICK keeps case")  # what evaluation-and-data.md says of it
    assert record["files"][:2] == [str(shared_data / "senteval" / "STS" / "STS13-en-test" / name)
                                   for name in ("STS.input.FNWN.txt", "STS.gs.FNWN.txt")]
    assert len(record["files"]) == 6


def test_task_table():
    assert {name: entry.get("year") for name, entry in TASKS.items()} == {
        "STS12": 2012, "STS13": 2013, "STS14": 2014, "STS15": 2015, "STS16": 2016,
        "STSBenchmark": None, "SICKRelatedness": None}
    assert {name: (entry["dir_key"], entry["default_dir"]) for name, entry in TASKS.items()} == {
        **{f"STS1{i}": ("sts_dir", "STS") for i in range(2, 7)},
        "STSBenchmark": ("stsb_dir", "STS/STSBenchmark"), "SICKRelatedness": ("sick_dir", "SICK")}
    assert list(BENCHMARK.tasks) == ["sts"]
    from sentrepro.data.benchmarks import benchmark_module, benchmarks
    assert BENCHMARK.name == "sts" and benchmarks()["sts"] is BENCHMARK  # the name `sentrepro fixture` takes
    assert benchmark_module("sts") == "sentrepro.data.benchmarks.sts"
    assert list(BENCHMARK.layouts) == ["sts-raw", "stsb"]
    assert BENCHMARK.layouts["stsb"].holds_sts is True
    assert BENCHMARK.layouts["sts-raw"].holds_sts is True


def test_read_sts_split_checks_counts_by_default(tmp_path):
    import pytest
    from sentrepro.data.records import CountMismatch
    from sentrepro.data.benchmarks.sts import read_sts_split
    (tmp_path / "SICK").mkdir()
    (tmp_path / "SICK" / "SICK_train.txt").write_text("pair_ID\tA\tB\ts\tj\n1\ta\tb\t3\tNEUTRAL\n", encoding="utf-8")
    with pytest.raises(CountMismatch):
        read_sts_split(tmp_path, "SICKRelatedness", "train")


def test_sources_and_units_are_immutable():
    import dataclasses
    import pytest
    from sentrepro.data.benchmarks import Benchmark, Layout
    from sentrepro.data.benchmarks.sts import StsSource
    for value, attribute in ((StsSource("STS12", "test", "raw", ()), "split"), (Benchmark("a", "b"), "name"),
                             (Layout("d", read_stsb_layout), "description")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, attribute, "x")
