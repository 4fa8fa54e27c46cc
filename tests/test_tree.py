"""The package's tree reads as the pipeline (docs/architecture.md, "The package's folders"): a short top level,
no two modules hiding behind one file name, no module that only re-exports another's names, and a backbone's
model located in one module only."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

from sentrepro.code.codedeps import PACKAGE_DIR, direct_imports, package_modules
from tests.test_layers import DOC, parse_layers, place

TOP_LEVEL_MAX = 8  # the command and what every layer uses
SCORING = "scoring"  # the layer of the evaluation maths, which any job may use


def folder_order(text: str) -> list[str]:
    """The folders of docs/architecture.md's "The package's folders" table, top to bottom (```name/``` cells)."""
    section = text.split("## The package's folders", 1)[1].split("\n## ", 1)[0]
    names = [line.split("|")[1].strip().strip("`").rstrip("/") for line in section.splitlines()
             if line.startswith("| `") and line.split("|")[1].strip().endswith("/`")]
    if not names:
        raise AssertionError(f"{DOC}: no folder table under \"The package's folders\"")
    return names


def _calls(module_file: Path) -> set[str]:
    """Names of the functions a module calls (``f(...)`` and ``x.f(...)``)."""
    names = set()
    for node in ast.walk(ast.parse(module_file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def _file(module: str) -> Path:
    rel = Path(*module.split(".")[1:])
    return PACKAGE_DIR / rel / "__init__.py" if (PACKAGE_DIR / rel).is_dir() else PACKAGE_DIR / f"{rel}.py"


def test_the_top_level_holds_only_a_few_modules():
    top = sorted(m for m in package_modules() if m.count(".") == 1 and not (PACKAGE_DIR / m.split(".")[1]).is_dir())
    assert "sentrepro.cli" in top and len(top) <= TOP_LEVEL_MAX, top


def test_no_file_name_is_shared_by_three_modules():
    names = collections.Counter(_file(m).name for m in package_modules() if not _file(m).name == "__init__.py")
    assert {name: count for name, count in names.items() if count >= 3} == {}


def test_no_module_only_re_exports_another():
    """Every import names the module that defines the thing: no ``import *``, no module made of imports alone."""
    offenders = []
    for module in package_modules():
        tree = ast.parse(_file(module).read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree))
        only_imports = body and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body)
        if star or only_imports:
            offenders.append(module)
    assert offenders == []


def test_a_model_is_located_in_one_module_and_resolved_once_at_each_job_entry():
    """Only sentrepro.pretrained.reference opens a snapshot or resolves a local model's directory; the jobs call
    its resolve_model at their entry and pass the reference's location down (nothing below re-resolves it)."""
    locating = {"open_snapshot", "local_directory", "resolve_url"}
    by_module = {m: _calls(_file(m)) for m in package_modules()}
    assert {m for m, calls in by_module.items() if calls & {"open_snapshot", "local_directory"}} == \
        {"sentrepro.pretrained.reference"}
    resolvers = {m for m, calls in by_module.items() if "resolve_model" in calls}
    assert resolvers == {"sentrepro.cli", "sentrepro.training.job", "sentrepro.evaluation.job",
                         "sentrepro.export.folder"}
    below = [m for m in package_modules() if m.startswith(("sentrepro.encoder.", "sentrepro.methods."))]
    assert below and not [m for m in below if by_module[m] & (locating | {"resolve_model"})]


def test_the_folders_import_in_the_order_the_architecture_doc_lists_them():
    text = DOC.read_text(encoding="utf-8")
    order = folder_order(text)
    folders = {m.split(".")[1] for m in package_modules() if m.count(".") >= 2}
    assert sorted(order) == sorted(folders), "every folder of the package has a row, and no other"
    layers = parse_layers(text)
    placed = place(package_modules(), layers)
    scoring = next(i for i, (name, _) in enumerate(layers) if name == SCORING)

    def rank(module: str) -> int:  # -1: the top level
        parts = module.split(".")
        return order.index(parts[1]) if len(parts) > 2 or parts[-1] in order else -1

    # a package's __init__ comes with any import of its modules: the import of the module itself is what counts
    backward = sorted(f"{m} -> {t}" for m in package_modules() for t in direct_imports(m) - {"sentrepro"}
                      if rank(t) > rank(m) >= 0 and placed[t] != scoring and not _file(t).name == "__init__.py")
    assert backward == []
