"""The package's layers, as docs/architecture.md documents them, hold for every import of every module.

The table in docs/architecture.md is the one place the layers are written: this test reads it, places
every module of the package in exactly one layer, and checks each import (every import counts, the ones
inside functions too: ``sentrepro.code.codedeps.direct_imports``) against the order -- a module imports only
its own layer or lower ones. The bottom layer imports nothing of the package, and the training job and the
evaluation jobs do not import each other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sentrepro.code.codedeps import direct_imports, module_closure, package_modules

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "sentrepro"
_ROW = re.compile(r"^\|\s*(\d+)\s+([a-z]+)\s*\|([^|]*)\|")


def parse_layers(text: str) -> list[tuple[str, list[str]]]:
    """``[(layer name, [patterns])]`` bottom first, from the doc's layer table (``| 3 plan | `registry`, ... |``).
    Patterns are full dotted names: a row's `runs` is ``sentrepro.runs``, `sentrepro` the package itself."""
    rows = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            if int(match.group(1)) != len(rows):
                raise AssertionError(f"{DOC}: layer rows must be numbered 0, 1, ... in order; got {line!r}")
            names = re.findall(r"`([^`]+)`", match.group(3))
            rows.append((match.group(2), [n if n == PACKAGE else f"{PACKAGE}.{n}" for n in names]))
    if not rows:
        raise AssertionError(f"{DOC}: no layer table found")
    return rows


def specificity(pattern: str, module: str) -> int | None:
    """How specifically ``pattern`` names ``module`` (higher wins), or None when it does not: a module's
    own name beats any pattern; ``pkg.*`` names every module under ``pkg`` (not ``pkg``), longer first."""
    if pattern == module:
        return 10_000
    if pattern.endswith(".*") and module.startswith(pattern[:-1]):
        return len(pattern)
    return None


def place(modules, layers) -> dict[str, int]:
    """Module -> layer index; an error names a module no row places, or two rows place equally."""
    placed = {}
    for module in modules:
        best: list[tuple[int, int]] = []
        for index, (_, patterns) in enumerate(layers):
            for pattern in patterns:
                score = specificity(pattern, module)
                if score is not None:
                    best.append((score, index))
        if not best:
            raise AssertionError(f"{module} is in no layer of {DOC.relative_to(ROOT)}: add it to a row")
        top = max(score for score, _ in best)
        winners = {index for score, index in best if score == top}
        if len(winners) > 1:
            raise AssertionError(f"{module} is placed in several layers of {DOC.relative_to(ROOT)}: {sorted(winners)}")
        placed[module] = winners.pop()
    return placed


def violations(graph: dict[str, set[str]], placed: dict[str, int], layers) -> list[str]:
    """Every import of a module from a higher layer, and every package import of a base-layer module."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets - {PACKAGE}):  # the package's __init__ runs with any import
            if placed[module] == 0:
                found.append(f"{module} (layer 0 {layers[0][0]}) imports {target}: the base imports nothing")
            elif placed[target] > placed[module]:
                found.append(f"{module} (layer {placed[module]} {layers[placed[module]][0]}) imports {target} "
                             f"(layer {placed[target]} {layers[placed[target]][0]})")
    return found


def package_graph() -> dict[str, set[str]]:
    return {module: set(direct_imports(module)) for module in package_modules()}


@pytest.fixture(scope="module")
def layers():
    return parse_layers(DOC.read_text(encoding="utf-8"))


def test_every_module_is_in_exactly_one_layer(layers):
    placed = place(package_modules(), layers)
    assert placed["sentrepro.runs"] == 0 and placed["sentrepro.cli"] == len(layers) - 1


def test_every_import_goes_to_its_own_layer_or_lower(layers):
    graph = package_graph()
    assert violations(graph, place(graph, layers), layers) == []


def test_the_bottom_layer_imports_nothing_of_the_package(layers):
    placed = place(package_modules(), layers)
    base = [m for m, index in placed.items() if index == 0]
    assert "sentrepro.runs" in base
    assert {m: sorted(direct_imports(m) - {PACKAGE}) for m in base if direct_imports(m) - {PACKAGE}} == {}


def test_training_and_evaluation_jobs_do_not_import_each_other():
    """Peers in the jobs layer: the training job's code holds no evaluation job module, and no evaluation
    suite's code holds the training job (what both need is in sentrepro.encoder)."""
    evaluation_jobs = {"sentrepro.evaluation.job", "sentrepro.evaluation.suites", "sentrepro.evaluation.sts_suite",
                       "sentrepro.evaluation.analyses"}
    assert module_closure(("sentrepro.training.job",)) & evaluation_jobs == set()
    assert module_closure(("cli:train",)) & evaluation_jobs == set()
    for module in evaluation_jobs:
        assert "sentrepro.training.job" not in module_closure((module,)), module


def test_the_checker_finds_an_upward_import_and_an_unplaced_module():
    layers = parse_layers("| 0 base | `runs` | x |\n| 1 plan | `planning.registry`, `data.*` | y |\n")
    graph = {"sentrepro.runs": {"sentrepro.planning.registry"}, "sentrepro.planning.registry": {"sentrepro.runs", "sentrepro.data.tasks"},
             "sentrepro.data.tasks": set()}
    placed = place(graph, layers)
    assert placed == {"sentrepro.runs": 0, "sentrepro.planning.registry": 1, "sentrepro.data.tasks": 1}
    assert violations(graph, placed, layers) == [
        "sentrepro.runs (layer 0 base) imports sentrepro.planning.registry: the base imports nothing"]
    upward = parse_layers("| 0 base | `runs` | x |\n| 1 data | `data.*` | y |\n| 2 plan | `planning.registry` | z |\n")
    graph = {"sentrepro.runs": set(), "sentrepro.data.tasks": {"sentrepro.planning.registry"}, "sentrepro.planning.registry": set()}
    assert violations(graph, place(graph, upward), upward) == [
        "sentrepro.data.tasks (layer 1 data) imports sentrepro.planning.registry (layer 2 plan)"]
    with pytest.raises(AssertionError, match="sentrepro.training.corpus is in no layer"):
        place(["sentrepro.training.corpus"], layers)
