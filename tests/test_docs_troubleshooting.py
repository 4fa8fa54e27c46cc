"""Every error class of the package has its entry on the troubleshooting page (docs/troubleshooting.md).

The classes are found in the code, never listed: every class defined at the top level of a module under
``src/sentrepro`` whose bases lead (through classes of the package) to a built-in exception, read with ``ast``
so no module is imported. A class whose name starts with ``_`` is internal (caught where it is raised) and
needs none. An entry is a heading ``### <Name>`` whose first line is ``Class: `sentrepro.<module>.<Name>``` with
its cause and fix beneath; an entry for a class that no longer exists fails too, so the page follows renames.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "sentrepro"
PAGE = ROOT / "docs" / "troubleshooting.md"
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
ENTRY = re.compile(r"^### (\w+)\n\nClass: `(sentrepro\.[\w.]+)`$", re.MULTILINE)


def error_classes(package: Path = PACKAGE) -> dict[str, str]:
    """Qualified name -> base names, of every public exception class defined in the package."""
    defined: dict[str, list[str]] = {}  # qualified name -> its bases as written
    by_name: dict[str, list[str]] = {}  # a class's own name -> its qualified names
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                qualified = f"{module}.{node.name}"
                defined[qualified] = [ast.unparse(base) for base in node.bases]
                by_name.setdefault(node.name, []).append(qualified)

    def is_error(qualified: str, seen: frozenset = frozenset()) -> bool:
        for base in defined[qualified]:
            last = base.rsplit(".", 1)[-1]
            if last in BUILTIN_EXCEPTIONS or base == "json.JSONDecodeError":
                return True
            if any(is_error(other, seen | {qualified}) for other in by_name.get(last, []) if other not in seen):
                return True
        return False

    return {q: ", ".join(bases) for q, bases in defined.items()
            if not q.rsplit(".", 1)[-1].startswith("_") and is_error(q)}


def entries(text: str) -> dict[str, str]:
    """Qualified name -> the entry's text (up to the next heading)."""
    found = {}
    matches = list(ENTRY.finditer(text))
    for match, after in zip(matches, matches[1:] + [None]):
        name, qualified = match.groups()
        assert qualified.endswith(f".{name}"), match.group(0)
        found[qualified] = text[match.end():after.start() if after else len(text)]
    return found


def test_every_error_class_has_an_entry_with_cause_and_fix():
    classes = error_classes()
    page = entries(PAGE.read_text(encoding="utf-8"))
    assert len(classes) >= 40  # the walk finds the package's errors (a broken walk would find none)
    missing = sorted(set(classes) - set(page))
    assert not missing, f"errors without a troubleshooting entry: {missing}"
    stale = sorted(set(page) - set(classes))
    assert not stale, f"entries for classes the package no longer defines: {stale}"
    thin = [q for q, text in page.items() if not all(f"**{part}:**" in text for part in ("Looks like", "Cause", "Fix"))]
    assert not thin, thin


def test_the_walk_finds_errors_through_the_packages_own_classes(tmp_path):
    (tmp_path / "sentrepro").mkdir()
    (tmp_path / "sentrepro" / "a.py").write_text(
        "import json\nclass Base(RuntimeError): pass\nclass _Hidden(Exception): pass\nclass Plain: pass\n"
        "class BadJSON(json.JSONDecodeError): pass\n", encoding="utf-8")
    (tmp_path / "sentrepro" / "b.py").write_text(
        "from sentrepro.a import Base\nclass Child(Base): pass\nclass NotAnError(dict): pass\n", encoding="utf-8")
    assert set(error_classes(tmp_path / "sentrepro")) == {"sentrepro.a.Base", "sentrepro.a.BadJSON", "sentrepro.b.Child"}
