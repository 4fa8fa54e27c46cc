"""Transfer-task parsers: documented counts are checked unless asked not to, a bad label names the
'label' field, and the per-task summary of the real SentEval files (part sizes and class counts)
agrees with the documented class counts (MR/CR/SUBJ/MPQA/SST2/MRPC binary, TREC's 6 coarse classes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentrepro.data.benchmarks import expected_classes
from sentrepro.data.records import CountMismatch, DataFormatError
from sentrepro.data.benchmarks.transfer import read_mrpc, read_sst2, read_trec, transfer_summaries

DOCUMENTED_CLASSES = {"MR": 2, "CR": 2, "SUBJ": 2, "MPQA": 2, "SST2": 2, "TREC": 6, "MRPC": 2}
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _sst_dir(tmp_path: Path, label: str = "1") -> Path:
    for name in ("sentiment-train", "sentiment-dev", "sentiment-test"):
        (tmp_path / name).write_text(f"a  film\t{label}\n", encoding="utf-8")
    return tmp_path


def test_sst2_counts_are_checked_by_default(tmp_path):
    with pytest.raises(CountMismatch):
        read_sst2(_sst_dir(tmp_path))


def test_sst2_bad_label_names_the_label_field(tmp_path):
    with pytest.raises(DataFormatError) as info:
        read_sst2(_sst_dir(tmp_path, "x"), check_counts=False)
    assert info.value.line == 1
    assert info.value.what == "label is not an integer: 'x'"


def test_trec_counts_are_checked_by_default(tmp_path):
    for name in ("train_5500.label", "TREC_10.label"):
        (tmp_path / name).write_text("NUM:date When was it ?\n", encoding="latin-1")
    with pytest.raises(CountMismatch):
        read_trec(tmp_path)


def test_mrpc_counts_are_checked_by_default(tmp_path):
    for name in ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"):
        (tmp_path / name).write_text(MRPC_HEADER + "1\t1\t2\ta b\tc d\n", encoding="utf-8")
    with pytest.raises(CountMismatch):
        read_mrpc(tmp_path)


def test_documented_class_counts():
    classes = expected_classes()
    assert {task: classes[task] for task in DOCUMENTED_CLASSES} == DOCUMENTED_CLASSES


def test_summaries_of_the_real_files_match_documented_classes(shared_data):
    found = transfer_summaries(shared_data / "senteval", True)
    assert {task: entry["classes"] for task, entry in found.items()} == DOCUMENTED_CLASSES
    # what the data check holds each task's labels to: the transfer unit's own table, under its registry name
    from sentrepro.data.benchmarks import benchmarks
    assert benchmarks()["transfer"].classes == DOCUMENTED_CLASSES
    assert {task: entry["family"] for task, entry in found.items()} == {task: "transfer" for task in DOCUMENTED_CLASSES}
    for task in ("MR", "CR", "SUBJ", "MPQA"):
        parts = found[task]["parts"]
        assert sum(value for key, value in parts.items() if key != "all") == parts["all"]
        assert min(value for key, value in parts.items() if key != "all") > 0
    assert found["MR"]["files"] == ["MR/rt-polarity.pos", "MR/rt-polarity.neg"]
    assert found["SST2"]["parts"] == {"train": 67349, "dev": 872, "test": 1821}
    assert found["TREC"]["parts"] == {"train": 5452, "test": 500}
    assert found["MRPC"]["parts"] == {"train": 4076, "test": 1725}
    assert found["MRPC"]["files"] == ["MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt"]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="latin-1").splitlines())


def test_binary_parts_count_each_class_file(shared_data):
    found = transfer_summaries(shared_data / "senteval", False)
    cr = shared_data / "senteval" / "CR"
    assert found["CR"]["parts"] == {"pos": _lines(cr / "custrev.pos"), "neg": _lines(cr / "custrev.neg"),
                                    "all": _lines(cr / "custrev.pos") + _lines(cr / "custrev.neg")}
    assert found["CR"]["parts"]["pos"] != found["CR"]["parts"]["neg"]
