"""The documentation site builds in strict mode: a broken link, a missing page, an anchor that is not there, a
page left out of the navigation or a snippet whose file is gone (CONTRIBUTING.md, CHANGELOG.md) fails it.

MkDocs runs as its own command, as a reader would run it, into a temporary folder (the checkout's ``site/``
is left alone). ``mkdocs.yml`` sets ``strict: true``; ``--strict`` is passed as well, so that a change of
the file alone cannot turn the check off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def build(root: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "--clean", "-d", str(out)], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def copy_docs(tmp_path: Path) -> Path:
    """What the site is built from (mkdocs.yml, docs/, the files its snippets include), in a scratch folder."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "CONTRIBUTING.md", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, root / name)
    return root


@pytest.fixture(scope="module", autouse=True)
def _mkdocs_installed():
    if not MKDOCS.exists():
        pytest.fail(f"{MKDOCS} is missing: `make setup-test` installs requirements-test.txt (mkdocs)")


def test_the_site_builds_in_strict_mode(tmp_path):
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.parent.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")}
    assert {".", "usage", "troubleshooting", "reference/configuration", "reference/outputs", "changelog"} <= pages
    # the snippets were included, not left as their marker lines
    assert "Add a method" in (tmp_path / "site" / "contributing" / "index.html").read_text(encoding="utf-8")
    assert "Keep a Changelog" in (tmp_path / "site" / "changelog" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("breakage, said", [
    (lambda root: (root / "docs" / "usage.md").write_text("[gone](no-such-page.md)\n", encoding="utf-8"),
     "no-such-page.md"),
    (lambda root: (root / "docs" / "index.md").open("a", encoding="utf-8").write("[x](usage.md#no-such-anchor)\n"),
     "no-such-anchor"),
    (lambda root: (root / "docs" / "orphan.md").write_text("# Not in the navigation\n", encoding="utf-8"),
     "orphan.md"),
    (lambda root: (root / "CHANGELOG.md").unlink(), "CHANGELOG.md"),
])
def test_a_broken_site_fails_the_build(tmp_path, breakage, said):
    root = copy_docs(tmp_path)
    assert build(root, tmp_path / "ok").returncode == 0  # the copy alone builds
    breakage(root)
    done = build(root, tmp_path / "broken")
    assert done.returncode != 0 and said in done.stdout + done.stderr
