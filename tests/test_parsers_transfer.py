"""SentEval transfer-task parsers (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC) on the real files."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sentrepro.data.records import CountMismatch, DataFormatError, LabelledPair, LabelledText
from sentrepro.data.benchmarks.transfer import TREC_CLASSES, read_binary, read_mrpc, read_sst2, read_trec, senteval_order


@pytest.fixture(scope="module")
def senteval(shared_data: Path) -> Path:
    return shared_data / "senteval"


@pytest.mark.parametrize(
    "task,n_positive,n_negative,n_empty",
    [("MR", 5331, 5331, 0), ("CR", 2407, 1368, 4), ("SUBJ", 5000, 5000, 0), ("MPQA", 3312, 7294, 3)],
)
def test_binary_tasks_keep_senteval_counts_and_blank_lines(
    senteval: Path, task: str, n_positive: int, n_negative: int, n_empty: int
) -> None:
    samples = read_binary(senteval / task, task)
    assert len(samples) == n_positive + n_negative
    assert Counter(s.label for s in samples) == {1: n_positive, 0: n_negative}
    # SentEval concatenates the label-1 file then the label-0 file.
    assert all(s.label == 1 for s in samples[:n_positive]) and all(s.label == 0 for s in samples[n_positive:])
    assert sum(s.text == "" for s in samples) == n_empty
    assert all(s.text == " ".join(s.text.split()) for s in samples)


def test_subj_objective_is_label_one_as_in_senteval(senteval: Path) -> None:
    samples = read_binary(senteval / "SUBJ", "SUBJ")
    first_objective = (senteval / "SUBJ/subj.objective").read_text(encoding="latin-1").split("\n")[0]
    assert samples[0] == LabelledText(" ".join(first_objective.split()), 1)


def test_sst2_splits(senteval: Path) -> None:
    splits = read_sst2(senteval / "SST/binary")
    assert {name: len(samples) for name, samples in splits.items()} == {"train": 67349, "dev": 872, "test": 1821}
    assert Counter(s.label for s in splits["test"]) == {0: 912, 1: 909}
    assert splits["train"][0] == LabelledText("hide new secretions from the parental units", 0)
    assert splits["test"][0] == LabelledText("uneasy mishmash of styles and genres .", 0)


def test_trec_is_latin1_with_six_coarse_classes(senteval: Path) -> None:
    splits = read_trec(senteval / "TREC")
    assert {name: len(samples) for name, samples in splits.items()} == {"train": 5452, "test": 500}
    assert {s.label for s in splits["train"]} == set(range(6)) == {s.label for s in splits["test"]}
    assert TREC_CLASSES == ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    # train_5500.label line 1 is "DESC:manner How did serfdom develop in and then leave Russia ?"
    assert splits["train"][0] == LabelledText("How did serfdom develop in and then leave Russia ?", 1)
    assert any("sister\u00f0city" in s.text for s in splits["train"])  # the one 0xF0 byte, decoded as Latin-1


def test_mrpc_drops_bom_header_and_reads_pairs(senteval: Path) -> None:
    splits = read_mrpc(senteval / "MRPC")
    assert {name: len(pairs) for name, pairs in splits.items()} == {"train": 4076, "test": 1725}
    first = splits["train"][0]
    assert isinstance(first, LabelledPair) and first.label == 1 and first.s1.startswith("Amrozi accused his brother")
    assert {p.label for p in splits["test"]} == {0, 1}
    assert not any("\ufeff" in p.s1 for p in splits["train"])


# ----------------------------------------------------------------------------- error paths


def _copy_dir(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _rewrite_line(path: Path, lineno: int, new_line: str | None, encoding: str = "utf-8") -> None:
    lines = path.read_text(encoding=encoding).split("\n")
    if new_line is None:
        del lines[lineno - 1]
    else:
        lines[lineno - 1] = new_line
    path.write_text("\n".join(lines), encoding=encoding)


def test_sst2_bad_label_names_file_and_line(senteval: Path, tmp_path: Path) -> None:
    sst = _copy_dir(senteval / "SST/binary", tmp_path / "binary")
    _rewrite_line(sst / "sentiment-dev", 3, "a fine film .\t2")
    with pytest.raises(DataFormatError, match=r"sentiment-dev:3: label must be 0 or 1, found 2") as caught:
        read_sst2(sst)
    assert caught.value.line == 3
    _rewrite_line(sst / "sentiment-dev", 3, "a fine film . 1")
    with pytest.raises(DataFormatError, match=r"sentiment-dev:3: expected 2 tab-separated fields, found 1"):
        read_sst2(sst)


def test_trec_malformed_lines(senteval: Path, tmp_path: Path) -> None:
    trec = _copy_dir(senteval / "TREC", tmp_path / "TREC")
    _rewrite_line(trec / "TREC_10.label", 4, "NUM date When was the war ?", encoding="latin-1")
    with pytest.raises(DataFormatError, match=r"TREC_10\.label:4: expected 'COARSE:fine question'"):
        read_trec(trec)
    _rewrite_line(trec / "TREC_10.label", 4, "NUMBER:date When was the war ?", encoding="latin-1")
    with pytest.raises(DataFormatError, match=r"TREC_10\.label:4: unknown coarse class 'NUMBER'"):
        read_trec(trec)


def test_mrpc_without_header_or_with_missing_field(senteval: Path, tmp_path: Path) -> None:
    mrpc = _copy_dir(senteval / "MRPC", tmp_path / "MRPC")
    fields = (mrpc / "msr_paraphrase_test.txt").read_text(encoding="utf-8-sig").split("\n")[1].split("\t")
    _rewrite_line(mrpc / "msr_paraphrase_test.txt", 2, "\t".join(fields[:4]), encoding="utf-8-sig")
    with pytest.raises(DataFormatError, match=r"msr_paraphrase_test\.txt:2: expected 5 tab-separated fields, found 4"):
        read_mrpc(mrpc)
    _rewrite_line(mrpc / "msr_paraphrase_train.txt", 1, None, encoding="utf-8-sig")
    with pytest.raises(DataFormatError, match=r"msr_paraphrase_train\.txt:1: expected the header row"):
        read_mrpc(mrpc)


def test_truncated_class_file_is_a_count_mismatch(senteval: Path, tmp_path: Path) -> None:
    mr = _copy_dir(senteval / "MR", tmp_path / "MR")
    _rewrite_line(mr / "rt-polarity.neg", 1, None, encoding="latin-1")
    with pytest.raises(CountMismatch, match=r"MR \[neg\]: expected 5331, found 5330"):
        read_binary(mr, "MR")
    assert len(read_binary(mr, "MR", check_counts=False)) == 10661


def test_unknown_binary_task_is_refused(senteval: Path) -> None:
    with pytest.raises(ValueError, match="MPQA"):
        read_binary(senteval / "SST", "SST2")


def test_senteval_order_sorts_by_token_count_then_label_stably(senteval: Path) -> None:
    """SentEval's "sort to reduce padding", checked against numpy's stable lexsort on the real CR and MRPC files."""
    samples = read_binary(senteval / "CR", "CR")
    texts, labels = [s.text for s in samples], [s.label for s in samples]
    expected = np.lexsort((labels, [len(t.split()) for t in texts]))
    assert senteval_order(texts, labels) == expected.tolist()
    assert senteval_order(texts, labels) != sorted(range(len(texts)), key=lambda i: len(texts[i].split()))

    pairs = read_mrpc(senteval / "MRPC")["train"]
    texts, labels = [(p.s1, p.s2) for p in pairs], [p.label for p in pairs]
    expected = np.lexsort((labels, [len(b.split()) for _, b in texts], [len(a.split()) for a, _ in texts]))
    assert senteval_order(texts, labels) == expected.tolist()
