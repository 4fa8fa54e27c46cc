"""The package's import graph, read with ``ast``: no module imports itself back, directly or through others.

Every import counts, the ones inside functions too (an import placed in a function to dodge a cycle is
still a cycle). Checked twice: between modules, and between the package's folders (each subpackage one
node, each top-level module its own), so a folder cannot lean on a module that leans back on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "sentrepro"


def module_names() -> dict[str, Path]:
    """``sentrepro.evaluation.job`` -> its file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("sentrepro",) + path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports anywhere in its source (absolute and relative imports)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]  # `from x import submodule`
        else:
            continue
        for name in names:
            while name and name not in known:  # `sentrepro.x.func` -> module `sentrepro.x`
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def module_graph() -> dict[str, set[str]]:
    known = module_names()
    return {module: imported(module, path, known) for module, path in known.items()}


def folder(module: str) -> str:
    """A module's node in the folder graph: its subpackage (``sentrepro.evaluation``), or itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() else module


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_are_read_from_every_module():
    graph = module_graph()
    assert {"sentrepro.runs", "sentrepro.planning.registry"} <= graph["sentrepro.planning.config"]
    assert "sentrepro.evaluation.sts" in graph["sentrepro.training.job"]
    # an import inside a function counts (the CLI imports each command's code lazily)
    assert "sentrepro.evaluation.job" in graph["sentrepro.cli"]


@pytest.mark.parametrize("level", ["module", "folder"])
def test_the_package_has_no_import_cycle(level):
    graph = module_graph()
    if level == "folder":
        folded: dict[str, set[str]] = {}
        for module, targets in graph.items():
            folded.setdefault(folder(module), set()).update(folder(t) for t in targets if folder(t) != folder(module))
        graph = folded
    assert cycles(graph) == []
