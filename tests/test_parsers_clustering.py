"""Short-text clustering parsers on the real rashadulrakib files, and their error paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sentrepro.data.benchmarks.clustering import CLUSTERING_SETS, dense_label_map, read_clustering
from sentrepro.data.records import CountMismatch, DataFormatError

SIZES_AND_K = {
    "AgNews": (8000, 4),
    "SearchSnippets": (12340, 8),
    "StackOverflow": (20000, 20),
    "Biomedical": (20000, 20),
    "GoogleNews-S": (11108, 152),
    "GoogleNews-T": (11108, 152),
    "GoogleNews-TS": (11109, 152),
    "Tweet": (2472, 89),
}


@pytest.fixture(scope="module")
def clustering_dir(shared_data: Path) -> Path:
    return shared_data / "short-text-clustering"


@pytest.mark.parametrize("name", sorted(SIZES_AND_K))
def test_sizes_and_dense_labels(clustering_dir: Path, name: str) -> None:
    n, k = SIZES_AND_K[name]
    samples = read_clustering(clustering_dir, name)
    assert len(samples) == n
    assert {s.label for s in samples} == set(range(k))
    assert all(s.text and s.text == s.text.strip() and "\r" not in s.text for s in samples)


def test_every_documented_set_is_listed() -> None:
    assert set(CLUSTERING_SETS) == set(SIZES_AND_K)


def test_tweet_sparse_labels_are_remapped_in_order(clustering_dir: Path) -> None:
    raw_lines = (clustering_dir / "tweet-original-order.txt").read_text(encoding="utf-8").splitlines()
    originals = [int(line.split("\t")[0]) for line in raw_lines]
    distinct = sorted(set(originals))
    assert len(distinct) == 89 and distinct[-1] == 110
    samples = read_clustering(clustering_dir, "Tweet")
    assert [s.label for s in samples] == [distinct.index(label) for label in originals]


def test_stackoverflow_trailing_tab_and_inner_tab(clustering_dir: Path) -> None:
    samples = read_clustering(clustering_dir, "StackOverflow")
    assert not any(s.text.endswith("\t") for s in samples)
    # Line 10,344 has a tab inside its title and no trailing tab; the tab stays in the text.
    assert samples[10343].text == 'Phonon VideoWidget error: "the video widget could not be\tinitialized correctly"'
    assert samples[-1].text == "Magento : Call to a member function count() on a non-object"


def test_biomedical_last_record_without_final_newline(clustering_dir: Path) -> None:
    raw = (clustering_dir / CLUSTERING_SETS["Biomedical"]).read_bytes()
    assert not raw.endswith(b"\n")
    last_text = raw.split(b"\r\n")[-1].decode("utf-8").split("\t", 1)[1]
    assert read_clustering(clustering_dir, "Biomedical")[-1].text == last_text


def test_googlenews_files_are_parsed_on_their_own(clustering_dir: Path) -> None:
    titles = read_clustering(clustering_dir, "GoogleNews-T")
    snippets = read_clustering(clustering_dir, "GoogleNews-S")
    both = read_clustering(clustering_dir, "GoogleNews-TS")
    # T lacks TS line 4807 and S lacks TS line 9281 (1-based); otherwise they follow TS in order.
    assert all(both[i].text.startswith(titles[i].text) for i in range(4806))
    assert all(both[i + 1].text.startswith(titles[i].text) for i in range(4806, len(titles)))
    assert all(both[i].text.endswith(snippets[i].text) for i in range(9280))
    assert all(both[i + 1].text.endswith(snippets[i].text) for i in range(9280, len(snippets)))


def test_dense_label_map_sorts_original_ids() -> None:
    assert dense_label_map([7, 3, 3, 110, 1]) == {1: 0, 3: 1, 7: 2, 110: 3}


# ----------------------------------------------------------------------------- error paths


def _copy_set(clustering_dir: Path, tmp_path: Path, name: str) -> Path:
    relative = CLUSTERING_SETS[name]
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(clustering_dir / relative, tmp_path / relative)
    return tmp_path / relative


def _rewrite_line(path: Path, lineno: int, new_line: str | None) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    if new_line is None:
        del lines[lineno - 1]
    else:
        lines[lineno - 1] = new_line
    path.write_text("\n".join(lines), encoding="utf-8")


def test_line_without_tab_or_with_bad_label_names_file_and_line(clustering_dir: Path, tmp_path: Path) -> None:
    path = _copy_set(clustering_dir, tmp_path, "AgNews")
    _rewrite_line(path, 5, "3 no tab between label and text")
    with pytest.raises(DataFormatError, match=r"agnewsdataraw-8000:5: expected 'label<TAB>text'") as caught:
        read_clustering(tmp_path, "AgNews")
    assert caught.value.line == 5
    _rewrite_line(path, 5, "three\tsome text")
    with pytest.raises(DataFormatError, match=r"agnewsdataraw-8000:5: label is not an integer: 'three'"):
        read_clustering(tmp_path, "AgNews")
    _rewrite_line(path, 5, "3\t  ")
    with pytest.raises(DataFormatError, match=r"agnewsdataraw-8000:5: no text after the label"):
        read_clustering(tmp_path, "AgNews")


def test_crlf_file_error_line_numbers_count_physical_lines(clustering_dir: Path, tmp_path: Path) -> None:
    path = _copy_set(clustering_dir, tmp_path, "SearchSnippets")
    _rewrite_line(path, 12, "x\tbroken label\r")
    with pytest.raises(DataFormatError, match=r"search_snippets_true_text:12: label is not an integer"):
        read_clustering(tmp_path, "SearchSnippets")


def test_missing_line_is_a_count_mismatch(clustering_dir: Path, tmp_path: Path) -> None:
    path = _copy_set(clustering_dir, tmp_path, "Tweet")
    _rewrite_line(path, 1, None)
    with pytest.raises(CountMismatch, match=r"Tweet \[all\]: expected 2472, found 2471"):
        read_clustering(tmp_path, "Tweet")
    assert len(read_clustering(tmp_path, "Tweet", check_counts=False)) == 2471


def test_unknown_set_is_refused(clustering_dir: Path) -> None:
    with pytest.raises(ValueError, match="GoogleNews-TS"):
        read_clustering(clustering_dir, "GoogleNews")
