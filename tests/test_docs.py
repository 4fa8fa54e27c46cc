"""Every ``docs/...`` path the project names exists, and every section the code cites in a doc is a heading of it.

The code, the rules, the tests and the user documentation cite the project's own notes (``docs/methods.md
§2.4``, ``docs/evaluation-and-data.md §0 rows 4-26``); a moved or missing note, or a renumbered section,
would leave those citations pointing nowhere. Read from the files' text, so a citation in a docstring or
a comment counts.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where the project names its docs: the package, the workflow, the tests, the benchmarks and the top-level files.
SCANNED_DIRS = ("src", "workflow", "tests", "benchmarks", "profiles")
SCANNED_FILES = ("README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "CHANGELOG.md", "Snakefile", "config.yaml", "Makefile",
                 "mkdocs.yml")
SUFFIXES = {".py", ".smk", ".md", ".yaml", ".rst", ".txt", ".toml", ""}
# a path starting at docs/ (not the tail of another path such as ../shared/docs/)
DOC_PATH = re.compile(r"(?<![\w./-])docs/[\w./-]*\w")
# "<name>.md §2.4" or "§1.2-1.3": the section (and range end) cited right after a doc's file name
SECTION = re.compile(r"\b([\w-]+)\.md,?\s+§\s*(\d+(?:\.\d+)?)(?:\s*-\s*(\d+(?:\.\d+)?))?")


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for folder in SCANNED_DIRS:
        files += [p for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts and ".egg-info" not in str(p)]
    return [p for p in files if p != Path(__file__).resolve()]  # this file's citations are examples


def doc_paths(text: str) -> set[str]:
    return {match.rstrip(".") for match in DOC_PATH.findall(text)}


def cited_sections(text: str) -> set[tuple[str, str]]:
    found = set()
    for name, first, last in SECTION.findall(text):
        found.add((name, first))
        if last:
            found.add((name, last if "." in last or "." not in first else f"{first.split('.')[0]}.{last}"))
    return found


def headings(doc: Path) -> set[str]:
    """Section numbers of a doc's numbered headings (``## 2. STS`` -> 2, ``### 2.3 Scoring`` -> 2.3)."""
    return set(re.findall(r"^#{2,4}\s+(\d+(?:\.\d+)?)\.?\s", doc.read_text(encoding="utf-8"), flags=re.MULTILINE))


def test_every_named_doc_exists():
    named: dict[str, set[str]] = {}
    for path in scanned_files():
        for doc in doc_paths(path.read_text(encoding="utf-8", errors="replace")):
            named.setdefault(doc, set()).add(str(path.relative_to(ROOT)))
    assert {"docs/methods.md", "docs/evaluation-and-data.md", "docs/architecture.md"} <= set(named)
    missing = {doc: sorted(where) for doc, where in named.items() if not (ROOT / doc).exists()}
    assert missing == {}


def test_every_cited_section_is_a_heading_of_its_doc():
    docs = {p.stem: p for p in (ROOT / "docs").glob("*.md")}
    unresolved = []
    for path in scanned_files():
        for name, section in cited_sections(path.read_text(encoding="utf-8", errors="replace")):
            if name in docs and section not in headings(docs[name]):
                unresolved.append(f"{path.relative_to(ROOT)}: {name}.md §{section}")
    assert unresolved == []


def test_the_scanners_find_what_they_should():
    text = 'see docs/methods.md and ../shared/docs/other.md, (docs/evaluation-and-data.md §0 rows 4-26 and §3.2)'
    assert doc_paths(text) == {"docs/methods.md", "docs/evaluation-and-data.md"}
    assert cited_sections(text) == {("evaluation-and-data", "0")}
    assert cited_sections("(methods.md §1.2-1.3)") == {("methods", "1.2"), ("methods", "1.3")}
    assert cited_sections("methods.md §2.2-2.3") == {("methods", "2.2"), ("methods", "2.3")}
    assert headings(ROOT / "docs" / "methods.md") >= {"0", "1", "2", "2.4", "2.5", "3", "4", "4.2", "5.1"}


MERGE_MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def test_no_file_holds_a_left_over_merge_conflict():
    """A conflict resolved by committing both sides (CONTRIBUTING.md once held one) is no documentation."""
    files = scanned_files() + [ROOT / "docs" / p.name for p in (ROOT / "docs").glob("*.md")]
    marked = [str(p.relative_to(ROOT)) for p in files if MERGE_MARKER.search(p.read_text(encoding="utf-8"))]
    assert not marked, marked
