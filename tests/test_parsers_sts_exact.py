"""STS-B and SICK-R line parsing pinned on tiny hand-written files: which column becomes which
sentence and score, the documented score ranges, the 1-based line numbers in errors, the header
rule of SICK, two-digit STS years, and that documented counts are checked by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentrepro.data.records import CountMismatch, DataFormatError, ScoredPair
from sentrepro.data.benchmarks.sts import read_sick, read_sts_benchmark, sts_dataset_name

SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_sick_columns_become_sentences_and_score(tmp_path):
    path = _write(tmp_path, "x.txt", SICK_HEADER + "7\ta  dog\tthe cat\t4.5\tNEUTRAL\n")
    assert read_sick(path, split="test", check_counts=False) == [ScoredPair("a dog", "the cat", 4.5)]


def test_sick_score_above_five_is_rejected(tmp_path):
    path = _write(tmp_path, "x.txt", SICK_HEADER + "7\ta\tb\t5.5\tNEUTRAL\n")
    with pytest.raises(DataFormatError) as info:
        read_sick(path, split="test", check_counts=False)
    assert info.value.line == 2
    assert info.value.what.startswith("relatedness score '5.5'")


def test_sick_error_names_the_file_line_of_the_bad_row(tmp_path):
    path = _write(tmp_path, "x.txt", SICK_HEADER + "1\ta\tb\t3\tNEUTRAL\n2\ta\tb\n")
    with pytest.raises(DataFormatError) as info:
        read_sick(path, split="test", check_counts=False)
    assert info.value.line == 3


def test_sick_header_of_one_column_is_accepted(tmp_path):
    path = _write(tmp_path, "x.txt", "pair_ID\n1\ta\tb\t1.0\tNEUTRAL\n")
    assert read_sick(path, split="test", check_counts=False) == [ScoredPair("a", "b", 1.0)]


def test_sick_counts_are_checked_by_default(tmp_path):
    path = _write(tmp_path, "SICK_train.txt", SICK_HEADER + "1\ta\tb\t3\tNEUTRAL\n")
    with pytest.raises(CountMismatch):
        read_sick(path)


def test_sick_file_name_without_split_names_the_pattern(tmp_path):
    path = _write(tmp_path, "other.txt", SICK_HEADER + "1\ta\tb\t3\tNEUTRAL\n")
    with pytest.raises(ValueError, match=r"\(expected SICK_\{train,trial,test_annotated\}\.txt\)"):
        read_sick(path)


def test_stsb_score_above_five_is_rejected(tmp_path):
    path = _write(tmp_path, "sts-test.csv", "g\tf\t2012\t1\t5.5\ta\tb\n")
    with pytest.raises(DataFormatError) as info:
        read_sts_benchmark(path, check_counts=False)
    assert info.value.line == 1


def test_stsb_score_five_and_zero_are_the_inclusive_bounds(tmp_path):
    path = _write(tmp_path, "sts-test.csv", "g\tf\t2012\t1\t5\ta  b\tc\ng\tf\t2012\t2\t0\td\te\n")
    assert read_sts_benchmark(path, check_counts=False) == [ScoredPair("a b", "c", 5.0), ScoredPair("d", "e", 0.0)]


def test_stsb_file_name_without_split_names_the_pattern(tmp_path):
    path = _write(tmp_path, "other.csv", "g\tf\t2012\t1\t5\ta\tb\n")
    with pytest.raises(ValueError, match=r"\(expected sts-<split>\.csv\)"):
        read_sts_benchmark(path)


def test_unknown_split_when_counts_are_not_checked(tmp_path):
    path = _write(tmp_path, "other.csv", "g\tf\t2012\t1\t5\ta\tb\n")
    assert len(read_sts_benchmark(path, check_counts=False)) == 1


@pytest.mark.parametrize("year, name", [(12, "STS12"), (16, "STS16"), (2016, "STS16")])
def test_two_digit_years_map_to_2012_2016(year, name):
    assert sts_dataset_name(year) == name


def test_year_17_is_rejected():
    with pytest.raises(ValueError):
        sts_dataset_name(17)
