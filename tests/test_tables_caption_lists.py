"""A caption's lists read as lists: each stale file, each incomplete row and column, each mark and each stand-in
named once and separated as written ("; " between entries, ", " inside one), a mark without a meaning shown bare,
and the best-of-N sentence without the second table's line when no cell has a spread. On a TableResult built by
hand, so every list has two entries (the mutants of each separator survived the built tables' tests)."""

from __future__ import annotations

from sentrepro.planning.reported import ReportedValue
from sentrepro.tables.build import Cell, TableResult
from sentrepro.tables.render import caption_paragraphs


def cell(row: str, column: str, mark: str | None = None, meaning: str | None = None) -> Cell:
    reported = ReportedValue(value=70.0, std=None, mark=mark, mark_meaning=meaning, where="conpvp-paper.txt:1",
                             entry="conpvp_table3", row=row)
    return Cell(table="t", row=row, column=column, group=None, value=71.0, std=0.0, n=1, statistic="best",
                summary=None, reported=reported, reported_only=False)


def result() -> TableResult:
    spec = {"statistic": "best-of-n", "select_by": "stsb", "columns": [{"label": "STS-B", "key": "stsb"},
                                                                       {"label": "Avg.", "key": "avg"}]}
    cells = [cell("A", "STS-B", "†", "reproduced"), cell("B", "STS-B", "*", None)]
    return TableResult(spec=spec, cells=cells, rows=[("A", None, False), ("B", None, False)],
                       columns=["STS-B", "Avg."], stand_ins={"tiny-b": ["x", "y"], "tiny-a": ["z", "w"]},
                       synthetic=[], incomplete={"Avg.": {"B": ["SICK-R"], "A": ["STS12", "SICK-R"]}},
                       stale={"m1.json": "sts.py changed", "m2.json": "probe.py changed"})


def test_every_list_of_a_caption_is_joined_as_written():
    paragraphs = caption_paragraphs(result(), "What the table shows.", "demo", "t.csv")
    text = "\n".join(paragraphs)
    assert paragraphs[0] == ("STALE: cells of this table come from outputs written by code that has changed since "
                             "(rerun the workflow to refresh them): m1.json: sts.py changed; m2.json: probe.py "
                             "changed.")
    assert ("Avg. is left empty in rows A, B: they lack SICK-R, STS12, so an average of theirs would not be the "
            "average the column (and the paper) takes over all its columns.") in paragraphs
    assert "Marks: † reproduced; * ." in paragraphs  # a mark with no meaning: nothing after it
    assert ("Stand-ins: tiny-a fills the z, w cells; tiny-b fills the x, y cells (a reduced experiment: not the "
            "paper's backbones).") in paragraphs
    assert ("Ours: best of N seeds (N = 1): the seed with the highest STS-B is chosen once per row and every cell "
            "of the row is that one run. Each cell:") in text
