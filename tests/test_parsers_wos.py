"""Web of Science parser on hand-built and generated WOS-style folders (no real copy offline)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sentrepro.data.counts import EXPECTED_CLASSES, EXPECTED_PARENT_CLASSES
from sentrepro.data.records import CountMismatch, DataFormatError, Document
from sentrepro.data.benchmarks.wos import WOS_VERSIONS, fixture_hierarchy, read_wos, write_wos_fixture


def _write_version(root: Path, version: str, columns: dict[str, str]) -> Path:
    version_dir = root / version
    version_dir.mkdir(parents=True)
    for name, content in columns.items():
        (version_dir / name).write_bytes(content.encode("utf-8"))
    return version_dir


def test_hand_built_folder_is_read_line_aligned(tmp_path: Path) -> None:
    _write_version(
        tmp_path,
        "WOS5736",
        {
            "X.txt": "First abstract on circuits.\r\nSecond abstract, on proteins. \r\nThird abstract\r\n",
            "Y.txt": "3\r\n10\r\n0\r\n",
            "YL1.txt": "1\r\n2\r\n0\r\n",
            "YL2.txt": "0\r\n2\r\n0",  # no final newline
        },
    )
    documents = read_wos(tmp_path, "WOS5736", check_counts=False)
    assert documents == [
        Document("First abstract on circuits.", 3, 1, 0),
        Document("Second abstract, on proteins.", 10, 2, 2),
        Document("Third abstract", 0, 0, 0),
    ]


def test_misaligned_files_name_every_file_and_count(tmp_path: Path) -> None:
    version_dir = _write_version(
        tmp_path, "WOS11967", {"X.txt": "a\nb\nc\n", "Y.txt": "1\n2\n3\n", "YL1.txt": "0\n1\n", "YL2.txt": "1\n1\n1\n"}
    )
    with pytest.raises(DataFormatError, match=r"X\.txt 3, Y\.txt 3, YL1\.txt 2, YL2\.txt 3") as caught:
        read_wos(tmp_path, "WOS11967", check_counts=False)
    assert caught.value.path == version_dir and caught.value.line is None


def test_bad_label_names_file_and_line(tmp_path: Path) -> None:
    columns = {"X.txt": "a\nb\nc\n", "Y.txt": "1\n2\nCS\n", "YL1.txt": "0\n1\n1\n", "YL2.txt": "1\n1\n1\n"}
    _write_version(tmp_path, "WOS46985", columns)
    with pytest.raises(DataFormatError, match=r"WOS46985/Y\.txt:3: category id is not an integer: 'CS'"):
        read_wos(tmp_path, "WOS46985", check_counts=False)


def test_fixture_has_upstream_layout_and_consistent_hierarchy(tmp_path: Path) -> None:
    write_wos_fixture(tmp_path, n_docs=150, seed=7)
    for version in WOS_VERSIONS:
        version_dir = tmp_path / "WebOfScience" / version
        assert sorted(p.name for p in version_dir.iterdir()) == ["X.txt", "Y.txt", "YL1.txt", "YL2.txt"]
        hierarchy = fixture_hierarchy(version)
        assert len(hierarchy) == EXPECTED_CLASSES[version]
        assert len({parent for parent, _child in hierarchy}) == EXPECTED_PARENT_CLASSES[version]
        documents = read_wos(tmp_path, version, check_counts=False)
        assert len(documents) == 150
        assert all((doc.parent, doc.child) == hierarchy[doc.label] and doc.text for doc in documents)
        if len(hierarchy) <= 150:
            assert {doc.label for doc in documents} == set(range(len(hierarchy)))
    # The WebOfScience folder itself is also accepted as root.
    from_archive_dir = read_wos(tmp_path / "WebOfScience", "WOS5736", check_counts=False)
    assert from_archive_dir == read_wos(tmp_path, "WOS5736", check_counts=False)


def test_fixture_is_deterministic_per_seed(tmp_path: Path) -> None:
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        write_wos_fixture(tmp_path / name, n_docs=40, seed=seed)
    names = ("X.txt", "Y.txt", "YL1.txt", "YL2.txt")
    files = [Path("WebOfScience", version, name) for version in WOS_VERSIONS for name in names]
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    abstracts = [(tmp_path / run / "WebOfScience/WOS46985/X.txt").read_bytes() for run in ("a", "c")]
    assert abstracts[0] != abstracts[1]


def test_fixture_rewrite_replaces_the_folder(tmp_path: Path) -> None:
    write_wos_fixture(tmp_path, n_docs=30, seed=1)
    write_wos_fixture(tmp_path, n_docs=12, seed=1)
    assert len(read_wos(tmp_path, "WOS11967", check_counts=False)) == 12
    assert [p.name for p in tmp_path.iterdir()] == ["WebOfScience"]


def test_documented_counts_are_checked(tmp_path: Path) -> None:
    write_wos_fixture(tmp_path, n_docs=5736, seed=0)
    documents = read_wos(tmp_path, "WOS5736")  # right size, 11 classes, 3 parents: passes
    assert len(documents) == 5736 and len(Counter(doc.label for doc in documents)) == 11
    with pytest.raises(CountMismatch, match=r"WOS11967 \[all\]: expected 11967, found 5736"):
        read_wos(tmp_path, "WOS11967")


def test_unknown_version_or_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="WOS46985"):
        read_wos(tmp_path, "WOS1000")
    with pytest.raises(FileNotFoundError, match="WOS5736"):
        read_wos(tmp_path, "WOS5736")
    with pytest.raises(ValueError, match="n_docs"):
        write_wos_fixture(tmp_path, n_docs=0, seed=0)
