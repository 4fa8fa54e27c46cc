"""STS12-16, STS-B and SICK-R parsers on the real files in both text variants, and their error paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sentrepro.data.counts import check_count
from sentrepro.data.records import CountMismatch, DataFormatError, ScoredPair
from sentrepro.data.benchmarks.sts import (
    STS_SUBSETS,
    read_sick,
    read_sts_benchmark,
    read_sts_split,
    read_sts_subset,
    read_sts_year,
    sts_split_path,
)

YEAR_DIRS = {"senteval": "senteval/STS", "raw": "sts-raw"}
SPLIT_ROOTS = {"senteval": "senteval", "raw": "sts-raw"}
YEAR_TOTALS = {2012: 3108, 2013: 1500, 2014: 3750, 2015: 3000, 2016: 1186}
SPLIT_SIZES = {
    ("STSBenchmark", "train"): 5749,
    ("STSBenchmark", "dev"): 1500,
    ("STSBenchmark", "test"): 1379,
    ("SICKRelatedness", "train"): 4500,
    ("SICKRelatedness", "dev"): 500,
    ("SICKRelatedness", "test"): 4927,
}


def _is_normalised(sentence: str) -> bool:
    return sentence == " ".join(sentence.split())


@pytest.mark.parametrize("variant", ["senteval", "raw"])
@pytest.mark.parametrize("year", sorted(YEAR_TOTALS))
def test_sts_year_has_documented_counts_and_records_its_variant(shared_data: Path, variant: str, year: int) -> None:
    data = read_sts_year(shared_data / YEAR_DIRS[variant], year, variant)
    assert list(data) == list(STS_SUBSETS[year])
    assert len(data.all_pairs()) == YEAR_TOTALS[year]
    assert data.variant == variant
    record = data.source.record()
    assert record["text_variant"] == variant and record["dataset"] == f"STS{year - 2000}"
    json.dumps(record)  # goes into a metrics file
    for pair in data.all_pairs():
        assert isinstance(pair, ScoredPair) and 0.0 <= pair.score <= 5.0
        assert _is_normalised(pair.s1) and _is_normalised(pair.s2)


def test_both_variants_hold_the_same_pairs_in_the_same_order(shared_data: Path) -> None:
    for year in YEAR_TOTALS:
        processed = read_sts_year(shared_data / YEAR_DIRS["senteval"], year, "senteval")
        raw = read_sts_year(shared_data / YEAR_DIRS["raw"], year, "raw")
        assert [p.score for p in processed.all_pairs()] == [p.score for p in raw.all_pairs()]


def test_senteval_text_is_lowercased_and_raw_text_is_not(shared_data: Path) -> None:
    processed = read_sts_year(shared_data / YEAR_DIRS["senteval"], 12, "senteval").all_pairs()
    raw = read_sts_year(shared_data / YEAR_DIRS["raw"], 12, "raw").all_pairs()
    assert all(p.s1 == p.s1.lower() and p.s2 == p.s2.lower() for p in processed)
    assert any(p.s1 != p.s1.lower() for p in raw)
    assert processed[0].s1.endswith(" again .") and raw[0].s1.endswith(" again.")


def test_sts13_has_no_smt_subset(shared_data: Path) -> None:
    data = read_sts_year(shared_data / YEAR_DIRS["senteval"], 2013)
    assert set(data) == {"FNWN", "headlines", "OnWN"}
    assert {name: len(pairs) for name, pairs in data.items()} == {"FNWN": 189, "headlines": 750, "OnWN": 561}


def test_blank_gold_lines_drop_exactly_their_pairs(shared_data: Path) -> None:
    year_dir = shared_data / "senteval/STS/STS15-en-test"
    inputs = (year_dir / "STS.input.answers-forums.txt").read_text(encoding="utf-8").split("\n")[:-1]
    golds = (year_dir / "STS.gs.answers-forums.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(inputs) == len(golds) == 2000
    expected = [
        (" ".join(line.split("\t")[0].split()), " ".join(line.split("\t")[1].split()), float(gold))
        for line, gold in zip(inputs, golds)
        if gold
    ]
    pairs = read_sts_year(shared_data / YEAR_DIRS["senteval"], 2015)["answers-forums"]
    assert [(p.s1, p.s2, p.score) for p in pairs] == expected
    assert len(pairs) == 375


def test_raw_sts16_keeps_only_the_two_sentence_columns(shared_data: Path) -> None:
    headlines = read_sts_year(shared_data / YEAR_DIRS["raw"], 2016, "raw")["headlines"]
    input_path = shared_data / "sts-raw/STS16-en-test/STS2016.input.headlines.txt"
    first_line = input_path.read_text(encoding="utf-8").split("\n")[0]
    assert len(first_line.split("\t")) == 4
    assert all("Europe Media Monitor" not in p.s2 for p in headlines)
    assert len(headlines) == 249


@pytest.mark.parametrize("variant", ["senteval", "raw"])
@pytest.mark.parametrize("name,split", sorted(SPLIT_SIZES))
def test_sts_b_and_sick_splits_have_documented_sizes(shared_data: Path, variant: str, name: str, split: str) -> None:
    pairs = read_sts_split(shared_data / SPLIT_ROOTS[variant], name, split, variant)
    assert len(pairs) == SPLIT_SIZES[(name, split)]
    assert pairs.variant == variant and pairs.source.record()["split"] == split
    low = 1.0 if name == "SICKRelatedness" else 0.0
    assert all(low <= p.score <= 5.0 and _is_normalised(p.s1) and _is_normalised(p.s2) for p in pairs)


def test_sts_split_paths_follow_each_layout(tmp_path: Path) -> None:
    assert sts_split_path(tmp_path, "STSBenchmark", "dev") == tmp_path / "STS/STSBenchmark/sts-dev.csv"
    assert sts_split_path(tmp_path, "STSBenchmark", "dev", "raw") == tmp_path / "STSBenchmark/sts-dev.csv"
    assert sts_split_path(tmp_path, "SICKRelatedness", "dev") == tmp_path / "SICK/SICK_trial.txt"
    with pytest.raises(ValueError, match="variant"):
        sts_split_path(tmp_path, "STSBenchmark", "dev", "moses")
    with pytest.raises(FileNotFoundError, match="sts-dev.csv"):
        read_sts_split(tmp_path, "STSBenchmark", "dev")


def test_sts_b_extra_source_columns_are_ignored(shared_data: Path) -> None:
    path = shared_data / "sts-raw/STSBenchmark/sts-test.csv"
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    wide = [i for i, line in enumerate(lines) if len(line.split("\t")) == 9]
    assert wide, "the raw test split should have lines with two extra source columns"
    pairs = read_sts_benchmark(path)
    fields = lines[wide[0]].split("\t")
    assert pairs[wide[0]] == ScoredPair(" ".join(fields[5].split()), " ".join(fields[6].split()), float(fields[4]))


def test_sick_crlf_file_leaves_no_carriage_returns(shared_data: Path) -> None:
    path = shared_data / "senteval/SICK/SICK_test_annotated.txt"
    assert b"\r\n" in path.read_bytes()
    pairs = read_sick(path)
    assert len(pairs) == 4927
    assert not any("\r" in p.s1 or "\r" in p.s2 for p in pairs)
    assert any(p.s1 != p.s1.lower() for p in pairs)  # SentEval's SICK keeps case


def test_split_is_taken_from_the_file_name_or_must_be_given(shared_data: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "stsb-dev.tsv"
    shutil.copy(shared_data / "sts-raw/STSBenchmark/sts-dev.csv", renamed)
    with pytest.raises(ValueError, match="pass split="):
        read_sts_benchmark(renamed)
    assert len(read_sts_benchmark(renamed, split="dev")) == 1500
    with pytest.raises(CountMismatch):
        read_sts_benchmark(renamed, split="test")


# ----------------------------------------------------------------------------- error paths


def _copy_year(shared_data: Path, tmp_path: Path, year_name: str = "STS12-en-test") -> Path:
    shutil.copytree(shared_data / "senteval/STS" / year_name, tmp_path / year_name)
    return tmp_path / year_name


def _rewrite_line(path: Path, lineno: int, new_line: str | None) -> None:
    """Replace (or with None, delete) 1-based line ``lineno`` of ``path``."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if new_line is None:
        del lines[lineno - 1]
    else:
        lines[lineno - 1] = new_line
    path.write_text("\n".join(lines), encoding="utf-8")


def test_unparsable_gold_score_names_file_and_line(shared_data: Path, tmp_path: Path) -> None:
    year_dir = _copy_year(shared_data, tmp_path)
    _rewrite_line(year_dir / "STS.gs.MSRvid.txt", 7, "four")
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRvid\.txt:7: gold score is not a number") as caught:
        read_sts_year(tmp_path, 2012)
    assert caught.value.line == 7 and caught.value.path.name == "STS.gs.MSRvid.txt"


def test_out_of_range_or_whitespace_gold_is_an_error(shared_data: Path, tmp_path: Path) -> None:
    year_dir = _copy_year(shared_data, tmp_path)
    _rewrite_line(year_dir / "STS.gs.MSRpar.txt", 2, "7.5")
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRpar\.txt:2: .*outside"):
        read_sts_year(tmp_path, 2012)
    _rewrite_line(year_dir / "STS.gs.MSRpar.txt", 2, "  ")
    with pytest.raises(DataFormatError, match=r"STS\.gs\.MSRpar\.txt:2: gold score is not a number"):
        read_sts_year(tmp_path, 2012)


def test_input_line_without_two_sentences_names_file_and_line(shared_data: Path, tmp_path: Path) -> None:
    year_dir = _copy_year(shared_data, tmp_path)
    _rewrite_line(year_dir / "STS.input.surprise.OnWN.txt", 3, "only one sentence here")
    expected = r"STS\.input\.surprise\.OnWN\.txt:3: expected 2 tab-separated fields, found 1"
    with pytest.raises(DataFormatError, match=expected):
        read_sts_year(tmp_path, 2012)


def test_gold_and_input_of_different_length_is_an_error(shared_data: Path, tmp_path: Path) -> None:
    year_dir = _copy_year(shared_data, tmp_path)
    _rewrite_line(year_dir / "STS.gs.SMTeuroparl.txt", 10, None)
    expected = r"STS\.gs\.SMTeuroparl\.txt: has 458 lines but STS\.input\.SMTeuroparl\.txt has 459"
    with pytest.raises(DataFormatError, match=expected):
        read_sts_year(tmp_path, 2012)


def test_missing_pair_is_a_count_mismatch(shared_data: Path, tmp_path: Path) -> None:
    year_dir = _copy_year(shared_data, tmp_path)
    _rewrite_line(year_dir / "STS.gs.MSRpar.txt", 1, None)
    _rewrite_line(year_dir / "STS.input.MSRpar.txt", 1, None)
    with pytest.raises(CountMismatch, match=r"STS12 \[MSRpar\]: expected 750, found 749") as caught:
        read_sts_year(tmp_path, 2012)
    assert (caught.value.expected, caught.value.actual) == (750, 749)
    assert sum(len(p) for p in read_sts_year(tmp_path, 2012, check_counts=False).values()) == 3107


def test_blank_gold_only_drops_that_pair(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("A  b\tc\n d\te \nf\tg\n", encoding="utf-8")
    (tmp_path / "gs.txt").write_text("1.5\n\n4\n", encoding="utf-8")
    pairs = read_sts_subset(tmp_path / "in.txt", tmp_path / "gs.txt")
    assert pairs == [ScoredPair("A b", "c", 1.5), ScoredPair("f", "g", 4.0)]


def test_sts_b_and_sick_malformed_lines(shared_data: Path, tmp_path: Path) -> None:
    stsb = tmp_path / "sts-test.csv"
    shutil.copy(shared_data / "senteval/STS/STSBenchmark/sts-test.csv", stsb)
    fields = stsb.read_text(encoding="utf-8").split("\n")[1].split("\t")
    _rewrite_line(stsb, 2, "\t".join(fields[:4] + ["n/a"] + fields[5:]))
    with pytest.raises(DataFormatError, match=r"sts-test\.csv:2: gold score is not a number: 'n/a'"):
        read_sts_benchmark(stsb)
    _rewrite_line(stsb, 2, "\t".join(fields[:6]))
    with pytest.raises(DataFormatError, match=r"sts-test\.csv:2: expected at least 7 tab-separated fields, found 6"):
        read_sts_benchmark(stsb)

    sick = tmp_path / "SICK_trial.txt"
    shutil.copy(shared_data / "senteval/SICK/SICK_trial.txt", sick)
    _rewrite_line(sick, 1, None)
    with pytest.raises(DataFormatError, match=r"SICK_trial\.txt:1: expected the header row"):
        read_sick(sick)


def test_invalid_year_or_variant_is_refused(shared_data: Path) -> None:
    with pytest.raises(ValueError, match="2012-2016"):
        read_sts_year(shared_data / "senteval/STS", 2017)
    with pytest.raises(ValueError, match="variant"):
        read_sts_year(shared_data / "senteval/STS", 2012, "tokenized")


def test_check_count_knows_every_sts_total() -> None:
    for year, total in YEAR_TOTALS.items():
        check_count(f"STS{year - 2000}", "test", total)
    with pytest.raises(CountMismatch):
        check_count("STS16", "test", 9183)  # raw line count, unscored pairs included
    with pytest.raises(KeyError, match="documented parts of STS13"):
        check_count("STS13", "SMT", 750)
