"""The spread a published number without its own ± is given comes from the ± the papers print beside means: a column
of another statistic (a Std, Max, Min or Range over seeds) is left out, and the mean columns and metric columns
after it in the same row still count. On a made-up spec and reported entry (in the papers' specs no statistic
column prints a ±, so the real tables cannot tell these apart)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sentrepro.verdicts.build import suite_spreads

SPEC = {"name": "made_up", "reported": "made_up", "suite": "sts", "key": "avg", "statistic": "mean",
        "columns": [{"label": "Std", "stat": "std", "reported_column": "std"},
                    {"label": "Mean", "stat": "mean", "reported_column": "mean"},
                    {"label": "Avg.", "reported_column": "avg"}],
        "rows": [{"label": "A", "backbone": "bert-base", "method": "simcse", "reported": "a"}]}
REPORTED = {"made_up": {"paper": "P", "file": "p.txt", "columns": ["std", "mean", "avg"],
                        "rows": {"a": {"line": 3, "values": [0.5, 70.0, 71.0], "std": [0.1, 0.4, 0.8]}}}}


def test_a_statistic_column_is_left_out_and_the_columns_after_it_still_count():
    spreads = suite_spreads(SimpleNamespace(specs={"made_up": SPEC}, reported=REPORTED))
    assert spreads == {("sts", "*"): (pytest.approx(0.6), 2), ("sts", "avg"): (pytest.approx(0.6), 2)}
