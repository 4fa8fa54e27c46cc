"""WOS parsing pinned on small hand-written folders: the layout summary (family, parts, classes, parent
classes, files), which file a class-count mismatch names, the line-alignment message, the documented
sizes (5,736 / 11,967 / 46,985), the unit's task group and layout names, and the smallest fixture (1 doc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentrepro.data.benchmarks import expected_counts
from sentrepro.data.benchmarks.wos import WOS_VERSIONS, BENCHMARK, read_wos, read_wos_layout, write_wos_fixture
from sentrepro.data.records import CountMismatch, DataFormatError


def _version(root: Path, version: str, labels: list[tuple[int, int, int]], texts=None) -> Path:
    folder = root / "WebOfScience" / version
    folder.mkdir(parents=True)
    texts = texts or [f"doc {i}" for i in range(len(labels))]
    (folder / "X.txt").write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    for column, name in enumerate(("Y.txt", "YL1.txt", "YL2.txt")):
        (folder / name).write_text("".join(f"{row[column]}\n" for row in labels), encoding="utf-8")
    return folder


def test_layout_summary_of_small_folders(tmp_path):
    rows = [(0, 0, 0), (1, 0, 1), (2, 1, 0)]
    for version in WOS_VERSIONS:
        _version(tmp_path, version, rows)
    found = read_wos_layout(tmp_path, None, False)
    for version in WOS_VERSIONS:
        assert found[version] == {
            "family": "wos", "parts": {"all": 3}, "classes": 3, "parent_classes": 2,
            "files": [f"WebOfScience/{version}/{name}" for name in ("X.txt", "Y.txt", "YL1.txt", "YL2.txt")]}


def test_class_mismatch_names_y_txt(tmp_path):
    _version(tmp_path, "WOS5736", [(0, 0, 0)] * 5736)
    with pytest.raises(CountMismatch) as info:
        read_wos(tmp_path, "WOS5736")
    assert Path(info.value.where).name == "Y.txt"


def test_parent_class_mismatch_names_yl1_txt(tmp_path):
    _version(tmp_path, "WOS5736", [(i % 11, 0, i % 11) for i in range(5736)])
    with pytest.raises(CountMismatch) as info:
        read_wos(tmp_path, "WOS5736")
    assert Path(info.value.where).name == "YL1.txt"


def test_misaligned_files_message(tmp_path):
    folder = _version(tmp_path, "WOS5736", [(0, 0, 0), (1, 0, 1)], texts=["a"])
    with pytest.raises(DataFormatError) as info:
        read_wos(tmp_path, "WOS5736", check_counts=False)
    assert info.value.what == ("the four files must be line-aligned but their line counts differ: "
                               "X.txt 1, Y.txt 2, YL1.txt 2, YL2.txt 2")
    assert info.value.path == folder


def test_documented_sizes():
    counts = expected_counts()
    assert {v: counts[(v, "all")] for v in WOS_VERSIONS} == {"WOS5736": 5736, "WOS11967": 11967, "WOS46985": 46985}


def test_task_group_and_layout_names():
    assert list(BENCHMARK.tasks) == ["wos"]
    assert list(BENCHMARK.tasks["wos"]) == list(WOS_VERSIONS)
    assert list(BENCHMARK.layouts) == ["wos"]


def test_fixture_of_one_document(tmp_path):
    write_wos_fixture(tmp_path, 1, 0)
    for version in WOS_VERSIONS:
        assert len(read_wos(tmp_path, version, check_counts=False)) == 1
