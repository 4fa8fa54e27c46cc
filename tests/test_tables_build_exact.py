"""The table builder's reading of metrics files and what each cell carries, exactly: dotted metric keys and what
is not a number, the provenance chains it follows (synthetic data, stale code, the training precision; cycles),
the published number's lookup, the labels of stand-in and synthetic rows and columns, and which cells a table
keeps. Metrics files are small hand-made JSONs (tests/test_tables.py's helpers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentrepro.planning.reported import ReportedError, ReportedValue, load_reported
from sentrepro.tables import build
from sentrepro.tables.build import Cell, MetricsError, build_table, metric_value
from tests.test_tables import STS_KEYS, full_spec, mini_spec, sts_results, write_metrics


def test_metric_value_follows_dotted_keys_and_reads_only_numbers():
    results = {"MR": {"acc": {"reported": 81.5}, "n": 3}, "flag": True, "name": "x", "avg": {"reported": 70}}
    assert metric_value(results, "MR.acc") == 81.5 and metric_value(results, "MR.n") == 3.0
    assert metric_value(results, "avg") == 70.0 and isinstance(metric_value(results, "avg"), float)
    assert metric_value(results, "flag") is None                  # a bool is not a score
    assert metric_value(results, "name") is None                  # nor is a string
    assert metric_value(results, "MR.f1") is None and metric_value(results, "MR.acc.x") is None


def test_a_cell_without_a_number_of_ours_has_no_delta_and_carries_nothing():
    paper = ReportedValue(80.0, None, None, None, "p.txt:1", "t", "r")
    cell = Cell("t", "r", "c", None, None, None, 0, "best", None, paper, False)
    assert cell.delta is None
    assert (cell.files, cell.per_seed, cell.stand_in, cell.forced, cell.digits) == ({}, {}, None, False, 2)
    assert Cell("t", "r", "c", None, 81.0, None, 1, "best", None, paper, False).delta == pytest.approx(1.0)


def _json(path: Path, payload: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_synthetic_data_is_found_along_the_chain_and_a_cycle_ends(tmp_path):
    manifest = _json(tmp_path / "data" / "MANIFEST.json", {"synthetic": True, "name": "syn-sts"})
    unnamed = _json(tmp_path / "other" / "MANIFEST.json", {"synthetic": True})
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _json(a, {"provenance": {"inputs": [{"path": str(b)}, {"role": "model"}, {"path": str(manifest)}]}})
    _json(b, {"provenance": {"inputs": [{"path": str(a)}, {"path": str(unnamed)}, {"path": str(tmp_path / "x.txt")}]}})
    assert build.synthetic_datasets(a, {}) == ["other", "syn-sts"]    # a manifest without a name: its directory
    suite = _json(tmp_path / "sts.json", {"data": {"synthetic": True, "source": "synthetic-sts"}})
    assert build.synthetic_datasets(suite, {}) == ["synthetic-sts"]
    bare = _json(tmp_path / "clustering.json", {"data": {"synthetic": True}})
    assert build.synthetic_datasets(bare, {}) == ["clustering"]
    assert build.synthetic_datasets(_json(tmp_path / "real.json", {"data": {"source": "x"}}), {}) == []


def _stale_record() -> dict:
    from sentrepro.code.codedeps import code_record

    record = json.loads(json.dumps(code_record(["cli:evaluate"])))
    record["fingerprint"] = "0" * 16
    record["modules"]["evaluation/job.py"] = "1" * 16
    return record


def test_stale_code_is_found_along_the_chain_and_a_cycle_ends(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "train.json"
    _json(a, {"provenance": {"inputs": [{"path": str(b)}, {"role": "x"}, {"path": str(tmp_path / "log.txt")}]}})
    _json(b, {"provenance": {"code_fingerprint": _stale_record(), "inputs": [{"path": str(a)}]}})
    found = build.stale_links(a, {})
    assert list(found) == [str(b)] and "evaluation/job.py" in found[str(b)]
    assert build.stale_links(_json(tmp_path / "list.json", {"provenance": []}), {}) == {}


def test_the_training_precision_is_read_from_the_training_summary_the_file_names(tmp_path):
    train = _json(tmp_path / "run" / "train.json", {"precision": {"used": "fp32", "authors": "fp16"}})
    metrics = _json(tmp_path / "run" / "sts.json", {"provenance": {"inputs": [
        {"path": str(tmp_path / "run" / "model.json")}, {"role": "x"}, {"path": str(train)}]}})
    assert build.training_precision(metrics, {}) == {"used": "fp32", "authors": "fp16"}
    frozen = _json(tmp_path / "frozen" / "sts.json", {"provenance": {"inputs": []}})
    assert build.training_precision(frozen, {}) is None


def test_a_metrics_file_without_its_suite_is_refused(tmp_path):
    path = _json(tmp_path / "sts.json", {"results": {}})
    with pytest.raises(MetricsError, match="a metrics file needs 'suite' and a 'results' mapping"):
        build.index_metrics([path])


def test_a_reported_row_missing_from_reported_yaml_is_an_error_naming_it(tmp_path):
    reported = load_reported()
    spec = mini_spec(tmp_path)
    row, column = spec["rows"][1], spec["columns"][0]
    assert build.paper_value(reported, spec, row, column, "STS12").value is not None
    with pytest.raises(ReportedError, match="no-such-row"):
        build.paper_value(reported, spec, {**row, "reported": "bert-base/no-such-row"}, column, "STS12")
    # also where the paper prints no such column: the missing row is the error, not a silent "no number"
    with pytest.raises(ReportedError, match=r"^reported.yaml conpvp_table3 has no row 'bert-base/no-such-row'"):
        build.paper_value(reported, spec, {**row, "reported": "bert-base/no-such-row"}, {"key": "MR", "label": "MR"},
                          "MR")
    with pytest.raises(ReportedError, match="no_such_entry"):
        build.paper_value(reported, spec, {**row, "reported": "no_such_entry:bert-base/SimCSE"}, column, "STS12")


def test_an_empty_average_names_the_columns_it_lacks_by_their_labels(tmp_path):
    columns = [{"key": k, "label": {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R"}.get(k, k)}
               for k in STS_KEYS] + [{"key": "avg", "label": "Avg."}]
    spec = mini_spec(tmp_path, columns=columns, max_seeds=4)
    values = dict(zip(STS_KEYS, [70.0] * 7))
    del values["STSBenchmark"], values["STS12"]
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", {**values, "avg": 70.0})]
    result = build_table(spec, files, {})
    avg = next(c for c in result.cells if c.column == "Avg." and c.row == "BERT-base SimCSE")
    assert avg.missing == ["STS-B", "STS12"] and result.incomplete == {"Avg.": {"BERT-base SimCSE": ["STS-B", "STS12"]}}


def test_cells_carry_their_group_and_forced_statistic_and_rows_their_reported_only_flag(tmp_path):
    spec = mini_spec(tmp_path, columns=[{"key": "STS12", "label": "STS12"},
                                        {"key": "STS12", "label": "Std", "stat": "std", "reported_column": None}])
    files = [write_metrics(tmp_path, "bert-base", "simcse", s, "sts", sts_results([70.0 + s] * 7)) for s in (1, 2)]
    result = build_table(spec, files, {})
    cells = {(c.row, c.column): c for c in result.cells}
    assert cells[("BERT-base SimCSE", "STS12")].group == "BERT-base"
    assert not cells[("BERT-base SimCSE", "STS12")].forced and cells[("BERT-base SimCSE", "Std")].forced
    assert [(label, reported_only) for label, _, reported_only in result.rows] == [
        ("BERT-base ConSERT † (reported only)", True), ("BERT-base SimCSE", False)]
    # the reported-only row has no Std of the paper and no number of ours: no cell
    assert ("BERT-base ConSERT † (reported only)", "Std") not in cells
    assert ("BERT-base ConSERT † (reported only)", "STS12") in cells


def test_a_tiny_stand_in_for_another_backbone_is_named_with_both(tmp_path):
    files = [write_metrics(tmp_path, "tiny-bert", "simcse", 1, "sts", sts_results([70.0] * 7))]
    backbones = {"tiny-bert": {"stands_in_for": "bert-base", "stand_in": "tiny://bert-uncased/base"}}
    result = build_table(full_spec(tmp_path), files, backbones)
    cell = next(c for c in result.cells if c.value is not None)
    assert cell.stand_in == "tiny://bert-uncased/base tiny-bert"
    assert cell.row == "BERT-base SimCSE [tiny://bert-uncased/base tiny-bert in place of bert-base]"


def test_labels_join_every_stand_in_and_synthetic_source():
    def cell(stand_in=None, synthetic=()):
        return Cell("t", "r", "c", None, 1.0, None, 1, "mean", None, None, False, stand_in=stand_in,
                    synthetic=list(synthetic))

    row = {"label": "SimCSE", "backbone": "bert-base"}
    assert build._row_label(row, [cell("b1", ["s2"]), cell("b2", ["s1"])]) == \
        "SimCSE [b1, b2 in place of bert-base] [SYNTHETIC data: s1, s2]"
    assert build._column_label({"label": "BERT", "backbone": "bert-base"}, [cell("b2"), cell("b1")]) == \
        "BERT [b1, b2 in place of bert-base]"
    assert build._column_label({"label": "BERT", "backbone": "bert-base"}, [cell()]) == "BERT"
    marked = ReportedValue(1.0, None, "†", None, "p:1", "t", "r"), ReportedValue(1.0, None, "*", None, "p:2", "t", "r")
    cells = [Cell("t", "r", "c", None, None, None, 0, "mean", None, m, True) for m in marked]
    assert build._row_label({"label": "ConSERT", "reported_only": "x"}, cells) == "ConSERT *† (reported only)"


def test_a_table_names_the_stale_files_behind_its_cells(tmp_path):
    spec = mini_spec(tmp_path, rows=[{"group": "BERT-base", "label": "BERT-base SimCSE", "backbone": "bert-base",
                                      "method": "simcse", "reported": "bert-base/SimCSE"}])
    path = write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7))
    payload = json.loads(path.read_text())
    payload["provenance"]["code_fingerprint"] = _stale_record()
    path.write_text(json.dumps(payload))
    result = build_table(spec, [path], {})
    assert all(str(path) in c.stale for c in result.cells) and list(result.stale) == [str(path)]
