"""A metrics file is read against its suite's schema (issue 48): a result key its suite wrote that is missing, or
that holds something other than a number, stops the table (and so the verdicts) naming the file and the key,
never a blank cell with exit 0. A task the suite was not asked for stays an empty cell, as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from sentrepro.tables.build import MetricsError, build_table
from tests.test_tables import STS_KEYS, full_spec, sts_results, write_metrics


def written_as_the_job_writes(path: Path, tasks: list[str]) -> Path:
    """A hand-made metrics file given what an evaluation job records beside its results: ``result_keys``
    (declared by write_metrics) and its settings' task list."""
    payload = json.loads(path.read_text())
    payload["result_keys"] = sorted(payload["results"])
    payload["provenance"]["config"]["settings"] = {"tasks": tasks}
    path.write_text(json.dumps(payload))
    return path


def edited(path: Path, change) -> Path:
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))
    return path


def test_a_key_removed_from_a_metrics_file_stops_the_table_naming_file_and_key(tmp_path):
    path = written_as_the_job_writes(write_metrics(tmp_path, "bert-base", "simcse", 1, "sts",
                                                   sts_results([70.0] * 7)), STS_KEYS)
    assert build_table(full_spec(tmp_path), [path], {}).cells  # intact: builds
    edited(path, lambda p: p["results"].pop("STSBenchmark"))
    with pytest.raises(MetricsError) as caught:
        build_table(full_spec(tmp_path), [path], {})
    assert str(caught.value).startswith(f"{path}: results.STSBenchmark is missing, which its sts job wrote")
    assert "\n" not in str(caught.value)


def test_a_task_of_the_recorded_settings_is_required_even_without_result_keys(tmp_path):
    path = written_as_the_job_writes(write_metrics(tmp_path, "bert-base", "simcse", 1, "sts",
                                                   sts_results([70.0] * 7)), STS_KEYS)
    edited(path, lambda p: (p.pop("result_keys"), p["results"].pop("STS13")))
    with pytest.raises(MetricsError, match=r"sts\.json: results\.STS13 is missing"):
        build_table(full_spec(tmp_path), [path], {})


@pytest.mark.parametrize("value, shown", [("82.03", "'82.03' (str)"), (None, "missing"), (True, "True (bool)")])
def test_a_non_numeric_value_stops_the_table_naming_file_and_key(tmp_path, value, shown):
    path = written_as_the_job_writes(write_metrics(tmp_path, "bert-base", "simcse", 1, "sts",
                                                   sts_results([70.0] * 7)), STS_KEYS)
    edited(path, lambda p: p["results"]["STSBenchmark"].update(reported=value))
    expected = re.escape(f"sts.json: results.STSBenchmark.reported is {shown}, not a number")
    with pytest.raises(MetricsError, match=expected):
        build_table(full_spec(tmp_path), [path], {})


def test_a_task_the_suite_was_not_asked_for_is_still_an_empty_cell(tmp_path):
    path = written_as_the_job_writes(write_metrics(tmp_path, "bert-base", "simcse", 1, "sts",
                                                   {"STSBenchmark": 82.0, "avg": 82.0}), ["STSBenchmark"])
    cells = {c.column: c for c in build_table(full_spec(tmp_path), [path], {}).cells if c.row == "BERT-base SimCSE"}
    assert cells["STSBenchmark"].value == 82.0 and cells["STS12"].value is None  # the paper's number alone


def test_the_evaluation_job_declares_the_keys_a_table_can_read(tmp_path):
    from sentrepro.evaluation.job import SuiteJob, write_metrics as job_write_metrics
    from sentrepro.records.provenance import Provenance

    job = SuiteJob("sts", {"settings": {}}, method=None, model=torch.nn.Linear(2, 2), device="cpu",
                   precision="fp32", prov=Provenance(step="evaluate_sts", config={}))
    payload = job_write_metrics(job, tmp_path / "sts.json", {"STSBenchmark": {"reported": 73.5, "spearman": 0.7},
                                                             "avg": {"reported": 73.5}, "notes": {"k": "v"}},
                                aggregation="all")
    assert payload["result_keys"] == ["STSBenchmark", "avg"]
    assert json.loads((tmp_path / "sts.json").read_text())["result_keys"] == ["STSBenchmark", "avg"]
