"""README.md is the front door: short, the two commands first, a picture, and no changelog or dated figure.

What it must hold and must not (issue 46): at most 250 lines; its first fenced block exactly the two commands
(``make demo``, then ``make test``: CI and the Makefile name them as "the README's"); the rule-graph picture,
an image file that exists; links into the manual that resolve (the site's own strict build checks the
manual's links, not this file's); no changelog section and no dated measurement (they belong in CHANGELOG.md
and docs/performance.md / BENCHMARKS.md, which the README names instead).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 250


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_short():
    assert len(_text().splitlines()) <= MAX_LINES


def test_the_first_block_is_the_two_commands():
    first = re.search(r"^```[^\n]*\n(.*?)^```", _text(), flags=re.MULTILINE | re.DOTALL)
    assert first is not None and first.group(1) == "make demo\nmake test\n"


def test_the_rule_graph_picture_and_every_local_link_resolve():
    text = _text()
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    assert "docs/img/rulegraph.svg" in images
    links = [target.split("#", 1)[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)
             if not re.match(r"[a-z]+://", target) and not target.startswith("#")]
    assert len(links) > 10
    missing = sorted({link for link in links if not (ROOT / link).exists()})
    assert not missing, missing


def test_no_changelog_and_no_dated_measurement():
    text = _text()
    assert not re.search(r"^#+ .*change ?log", text, flags=re.IGNORECASE | re.MULTILINE)
    assert "Changelog," not in text
    dated = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
    assert not dated, dated
