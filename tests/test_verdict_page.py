"""The verdict page's structure: grouped by paper and table, a badge per claim, notes said once (shared
ones above their table, long ones folded), the forest plot beside the page and inlined, no
multiplicity figure when nothing is judged. (Rendering in a browser: tests/test_verdict_page_browser.py.)"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from sentrepro.verdicts.page import BADGES
from tests.verdict_pages import demo_like_page, judged_page

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    return judged_page(tmp_path_factory.mktemp("judged"))


def test_claims_are_grouped_by_paper_and_table_with_a_badge_each(judged):
    result, paths = judged
    page = next(p for p in paths if p.suffix == ".html").read_text()
    assert [p for p in ("<h2>ConPVP</h2>", "<h2>PromptBERT</h2>", "<h2>MoCoUTRL</h2>") if p in page] == [
        "<h2>ConPVP</h2>", "<h2>PromptBERT</h2>", "<h2>MoCoUTRL</h2>"]
    assert page.count("<h2>ConPVP</h2>") == 1
    assert "<h3>ConPVP Table 3: unsupervised STS" in page
    assert page.count('<span class="badge ') == len(result.claims)
    assert page.count('<span class="badge holds"') == sum(1 for r in result.claims if r.verdict == "holds") > 0
    assert set(BADGES) >= {r.verdict for r in result.claims}


def test_each_note_is_said_once_per_table(judged):
    result, paths = judged
    page = next(p for p in paths if p.suffix == ".html").read_text()
    shared = "the stated gains are against SimCSE&#x27;s published single numbers"
    assert page.count(shared) == 1                      # 4 claims carry it: said once above Table 3
    section = page.split("<h3>ConPVP Table 4")[1].split("<h3>")[0]
    for r in (r for r in result.claims if r.claim["table"] == "conpvp_table4"):
        row = section.split(f'<tr id="{r.claim["id"]}">')[1].split("</tr>")[0]
        assert row.count("no run of ours in this experiment") <= 1


def test_the_forest_plot_is_written_beside_the_page_and_inlined(judged):
    result, paths = judged
    svg_path = next(p for p in paths if p.name.endswith(".forest.svg"))
    tree = ET.fromstring(svg_path.read_text())
    rows = [g for g in tree.iter(f"{SVG}g") if g.get("class") == "row"]
    plotted = [r for r in result.claims if r.ours_delta is not None]
    assert len(rows) == len(plotted) > 5
    assert [g.find(f"{SVG}title").text.split(":")[0] for g in rows] == [r.claim["id"] for r in plotted]
    page = next(p for p in paths if p.suffix == ".html").read_text()
    assert f'href="{svg_path.name}"' in page and page.count("<svg ") == 1


def test_the_demo_like_page_with_nothing_judged_states_no_multiplicity(tmp_path):
    result, paths = demo_like_page(tmp_path)
    assert all(r.verdict in ("not judged", "not run") for r in result.claims)
    page = next(p for p in paths if p.suffix == ".html").read_text()
    assert "Multiplicity" not in page and "Judged on the papers&#x27; backbones and real data: 0" in page
    assert '<span class="badge not-judged"' in page
