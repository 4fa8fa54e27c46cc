"""Test infrastructure: a test file whose module-level ``pytestmark`` makes the ``-m`` expression false for
all its tests is not imported (tests/conftest.py: pytest_ignore_collect), and no file with a selectable test
is ever skipped that way."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

from _pytest.mark.expression import Expression

from tests.conftest import module_marks, never_selected, pytest_ignore_collect

TESTS = Path(__file__).resolve().parent
FAST = "not slow and not slurm and not heavy"
UNIVERSE = ("slow", "slurm", "heavy", "parametrize", "other")
EXPRESSIONS = (FAST, "slow", "not slow", "slow or heavy", "not heavy or slow", "heavy and not slow",
               "(slow or slurm) and not other", "not (slow and heavy)", "other")


def brute_force_never_selected(markexpr: str, marks: frozenset[str]) -> bool:
    """Independent oracle: the expression on every explicit mark set that contains ``marks``."""
    expr = Expression.compile(markexpr)
    others = [name for name in UNIVERSE if name not in marks]
    for size in range(len(others) + 1):
        for extra in itertools.combinations(others, size):
            present = marks | set(extra)
            if expr.evaluate(lambda name, /, **kwargs: name in present):
                return False
    return True


def test_never_selected_agrees_with_every_explicit_mark_set():
    for markexpr in EXPRESSIONS:
        for size in range(3):
            for marks in itertools.combinations(UNIVERSE, size):
                expected = brute_force_never_selected(markexpr, frozenset(marks))
                assert never_selected(markexpr, frozenset(marks)) == expected, (markexpr, marks)


def test_module_marks_reads_plain_top_level_marks_only(tmp_path):
    cases = {
        "pytestmark = pytest.mark.slow\n": {"slow"},
        "pytestmark = [pytest.mark.slow, pytest.mark.heavy]\n": {"slow", "heavy"},
        "pytestmark = pytest.mark.skipif(True, reason='x')\n": set(),
        "def test_a():\n    pytestmark = pytest.mark.slow\n": set(),
        "import pytest\n\n@pytest.mark.slow\ndef test_a():\n    pass\n": set(),
    }
    for number, (source, expected) in enumerate(cases.items()):
        path = tmp_path / f"test_{number}.py"
        path.write_text(source, encoding="utf-8")
        assert module_marks(path) == expected, source


def test_make_test_fast_skips_exactly_the_files_whose_module_mark_it_deselects():
    fast = SimpleNamespace(option=SimpleNamespace(markexpr=FAST))
    everything = SimpleNamespace(option=SimpleNamespace(markexpr=""))
    skipped = {path.name for path in TESTS.rglob("test_*.py") if pytest_ignore_collect(path, fast)}
    assert {"test_workflow.py", "test_perf_parity.py", "test_slurm_mini.py"} <= skipped
    assert {"test_config.py", "test_cost.py", "test_test_collection.py"}.isdisjoint(skipped)
    for path in TESTS.rglob("test_*.py"):
        assert pytest_ignore_collect(path, everything) is None
        marks = module_marks(path)
        assert (path.name in skipped) == bool(marks & {"slow", "slurm", "heavy"}), path
