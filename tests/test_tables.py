"""Paper tables: seed aggregation, specs, building from metrics files, rendering, the CLI and the audit.

Metrics files here are small hand-made JSONs in the suite contract of sentrepro.tables.build, so
every expected number below is computed by hand from the values written.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from sentrepro.records.audit import audit_cell
from sentrepro.hashing import sha256_file
from sentrepro.planning.table_cells import lowest_seeds
from sentrepro.tables.aggregate import best_seed, summarize
from sentrepro.tables.build import MetricsError, build_table
from sentrepro.tables.render import (caption_paragraphs, to_csv, to_html, to_latex, to_markdown, to_seeds_csv,
                                     write_outputs)
from sentrepro.planning.reported import ReportedError, load_reported
from sentrepro.planning.table_specs import SpecError, available_specs, load_spec, spec_methods, validate_spec

REPO = Path(__file__).resolve().parents[1]
STS_KEYS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]


def write_metrics(root: Path, backbone: str, method: str, seed, suite: str, results: dict,
                  inputs: list[dict] | None = None) -> Path:
    run = "frozen" if seed is None else f"seed{seed}"
    path = root / "metrics" / backbone / method / run / f"{suite}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"suite": suite, "results": {k: {"reported": v} for k, v in results.items()},
               "provenance": {"config": {"run": {"backbone": backbone, "method": method, "seed": seed}},
                              "inputs": inputs or []}}
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def sts_results(values: list[float]) -> dict:
    """Seven task values -> results with their plain mean as avg."""
    results = dict(zip(STS_KEYS, values))
    results["avg"] = sum(values) / len(values)
    return results


def mini_spec(tmp_path: Path, **overrides) -> dict:
    spec = {
        "name": "mini", "paper": "ConPVP", "title": "mini", "reported": "conpvp_table3", "suite": "sts",
        "statistic": "best-of-n", "select_by": "avg",
        "columns": [{"key": "STS12", "label": "STS12"}, {"key": "avg", "label": "Avg."}],
        "rows": [
            {"group": "BERT-base", "label": "BERT-base ConSERT", "backbone": "bert-base",
             "reported": "bert-base/ConSERT", "reported_only": "not run"},
            {"group": "BERT-base", "label": "BERT-base SimCSE", "backbone": "bert-base", "method": "simcse",
             "reported": "bert-base/SimCSE"},
        ],
    }
    spec.update(overrides)
    return validate_spec(spec, tmp_path / "mini.yaml")


# --- aggregation ----------------------------------------------------------------------------------


def test_best_seed_is_chosen_by_the_selection_metric_and_ties_go_to_the_smallest_seed():
    assert best_seed({42: 70.0, 43: 72.0, 44: 71.0}) == 43
    assert best_seed({45: 72.0, 43: 72.0, 44: 71.0}) == 43


def test_summary_mean_population_std_and_best_of_n():
    # values 1, 2, 6: mean 3, population std sqrt(((-2)^2 + (-1)^2 + 3^2) / 3) = sqrt(14/3)
    summary = summarize({1: 1.0, 2: 2.0, 3: 6.0}, selection={1: 10.0, 2: 30.0, 3: 20.0})
    assert summary.n == 3 and summary.mean == pytest.approx(3.0)
    assert summary.std == pytest.approx((14 / 3) ** 0.5)
    assert summary.best_seed == 2 and summary.best == 2.0  # selected by the other metric, not the max value
    assert (summary.min, summary.max, summary.range) == (1.0, 6.0, 5.0)
    single = summarize({None: 5.0}, selection={None: 5.0})
    assert single.std is None and single.best == 5.0 and single.n == 1


def test_lowest_seeds_caps_to_the_papers_n():
    assert lowest_seeds([45, 42, 46, 43, 44], 4) == [42, 43, 44, 45]
    assert lowest_seeds([None], 4) == [None]
    assert lowest_seeds([3, 1], None) == [1, 3]


def test_best_of_n_takes_every_column_of_a_row_from_the_seed_with_the_best_average(tmp_path):
    # seed 1 has the best STS12 but the worse average: the row must come entirely from seed 2
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([90, 60, 60, 60, 60, 60, 60])),
             write_metrics(tmp_path, "bert-base", "simcse", 2, "sts", sts_results([70, 80, 80, 80, 80, 80, 80]))]
    result = build_table(mini_spec(tmp_path), files, {})
    cells = {(c.row, c.column): c for c in result.cells}
    sts12 = cells[("BERT-base SimCSE", "STS12")]
    avg = cells[("BERT-base SimCSE", "Avg.")]
    assert sts12.value == 70.0 and avg.value == pytest.approx(550 / 7)
    assert sts12.n == 2 and sts12.std == pytest.approx(10.0)  # population std of 90 and 70
    assert sts12.reported.value == 68.40 and sts12.reported.mark == "†"
    assert sts12.delta == pytest.approx(70.0 - 68.40)
    sources = sts12.sources()
    assert sources[0] == f"{files[1]}#sha256={sha256_file(files[1])}"      # the selected seed first
    assert sources[1] == f"candidate={files[0]}#sha256={sha256_file(files[0])}"
    assert sources[2] == "paper=conpvp-paper.txt:104"


def test_mean_statistic_uses_every_seed_up_to_max_seeds(tmp_path):
    files = [write_metrics(tmp_path, "bert-base", "simcse", seed, "sts", sts_results([v] * 7))
             for seed, v in ((42, 70.0), (43, 72.0), (44, 74.0), (45, 76.0), (46, 100.0))]
    result = build_table(mini_spec(tmp_path, statistic="mean", max_seeds=4), files, {})
    cell = next(c for c in result.cells if c.row == "BERT-base SimCSE" and c.column == "Avg.")
    assert cell.value == pytest.approx(73.0) and cell.n == 4  # seed 46 is beyond the paper's 4 seeds
    assert cell.std == pytest.approx(5 ** 0.5)
    assert [s for s in cell.sources() if not s.startswith("paper=")] == \
        [f"{files[i]}#sha256={sha256_file(files[i])}" for i in range(4)]


def test_reported_only_rows_carry_the_papers_number_and_no_metrics(tmp_path):
    result = build_table(mini_spec(tmp_path), [], {})
    consert = [c for c in result.cells if c.row.startswith("BERT-base ConSERT")]
    assert {c.row for c in consert} == {"BERT-base ConSERT † (reported only)"}
    assert [c.reported.value for c in consert] == [64.64, 72.74]
    assert all(c.value is None and c.sources() == ["paper=conpvp-paper.txt:103"] for c in consert)
    simcse = [c for c in result.cells if c.row == "BERT-base SimCSE"]
    assert all(c.value is None and c.reported is not None for c in simcse)  # not run: paper number only


def test_a_stand_in_backbone_fills_the_paper_rows_and_says_so(tmp_path):
    files = [write_metrics(tmp_path, "minilm", "simcse", 42, "sts", sts_results([70.0] * 7))]
    result = build_table(mini_spec(tmp_path), files, {"minilm": {"stands_in_for": ["bert-base", "roberta-large"]}})
    rows = {c.row for c in result.cells if c.value is not None}
    assert rows == {"BERT-base SimCSE [minilm in place of bert-base]"}
    assert result.stand_ins == {"minilm": ["bert-base"]}


def test_a_stand_in_row_shows_the_paper_as_context_and_no_delta_in_any_format(tmp_path):
    files = [write_metrics(tmp_path, "minilm", "simcse", 42, "sts", sts_results([61.46] * 7))]
    result = build_table(full_spec(tmp_path), files, {"minilm": {"stands_in_for": "bert-base"}})
    cells = [c for c in result.cells if c.stand_in and c.value is not None and c.reported is not None]
    assert cells and all(c.delta is None for c in cells)
    paragraphs = caption_paragraphs(result, "", "x", "mini.csv")
    for text in (to_markdown(result, paragraphs), to_html(result, paragraphs)):
        row = text.split("[minilm in place of bert-base]")[1].split("</tr>")[0].splitlines()[0]
        assert not any(f"Δ {sign}" in row for sign in "+-−") and "stand-in, no Δ" in row
    assert r"$\Delta$" not in to_latex(result, []).split("[minilm in place of bert-base]")[1].splitlines()[0]


def test_a_real_backbone_wins_over_a_stand_in(tmp_path):
    files = [write_metrics(tmp_path, "minilm", "simcse", 42, "sts", sts_results([50.0] * 7)),
             write_metrics(tmp_path, "bert-base", "simcse", 42, "sts", sts_results([70.0] * 7))]
    result = build_table(mini_spec(tmp_path), files, {"minilm": {"stands_in_for": "bert-base"}, "bert-base": {}})
    cell = next(c for c in result.cells if c.column == "Avg." and c.value is not None)
    assert cell.value == 70.0 and cell.row == "BERT-base SimCSE"


def test_transposed_spec_labels_the_stand_in_column(tmp_path):
    files = [write_metrics(tmp_path, "minilm", m, None, "sts", sts_results([v] * 7))
             for m, v in (("static-avg", 40.0), ("static-avg-no-frequent", 45.0))]
    result = build_table(load_spec("promptbert_knowl5"), files, {"minilm": {"stands_in_for": ["bert-base"]}})
    cells = {(c.row, c.column): c for c in result.cells}
    column = "BERT-base-uncased [minilm in place of bert-base]"
    assert column in result.columns
    assert cells[("Raw static token avg.", column)].value == 40.0
    assert cells[("Raw static token avg.", column)].reported.value == 56.02
    assert cells[("− top-36 frequent tokens", column)].reported.value == 59.65
    assert cells[("Raw static token avg.", "RoBERTa-base")].value is None


def test_stat_columns_show_their_statistic_over_seeds(tmp_path):
    files = [write_metrics(tmp_path, "bert-base", "simcse", s, "sts", sts_results([v] * 7))
             for s, v in ((1, 74.0), (2, 76.0), (3, 75.0))]
    result = build_table(load_spec("promptbert_knowl9_stability"), files, {})
    values = {c.column: c.value for c in result.cells if c.row == "SimCSE-BERT-base"}
    assert values["Mean"] == pytest.approx(75.0) and values["Max"] == 76.0 and values["Min"] == 74.0
    assert values["Range"] == 2.0 and values["Std"] == pytest.approx((2 / 3) ** 0.5)


def test_synthetic_inputs_are_labelled_from_the_dataset_manifest(tmp_path):
    manifest = tmp_path / "resources" / "data" / "wos" / "MANIFEST.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "wos", "synthetic": True, "files": {}}))
    inputs = [{"role": "dataset manifest", "path": str(manifest), "sha256": sha256_file(manifest)}]
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7), inputs)]
    result = build_table(mini_spec(tmp_path), files, {})
    assert result.synthetic == ["wos"]
    assert any(c.row == "BERT-base SimCSE [SYNTHETIC data: wos]" for c in result.cells)


def test_best_of_n_without_the_selection_metric_is_an_error_naming_the_files(tmp_path):
    path = write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", {"STS12": 70.0})
    with pytest.raises(MetricsError, match="ranks seeds by 'avg'.*seed1/sts.json"):
        build_table(mini_spec(tmp_path), [path], {})


def test_a_metrics_file_without_its_run_is_an_error_naming_it(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"suite": "sts", "results": {}, "provenance": {}}))
    with pytest.raises(MetricsError, match="bad.json: no provenance.config.run"):
        build_table(mini_spec(tmp_path), [path], {})


# --- specs --------------------------------------------------------------------------------------


def test_every_shipped_spec_loads_and_resolves_its_reported_numbers():
    reported = load_reported()
    for name in available_specs():
        spec = load_spec(name)
        result = build_table(spec, [], {}, reported=reported)  # raises on a dangling reported reference
        assert result.rows, name


def test_spec_methods_exist_in_the_paper_config():
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    for name in available_specs():
        unknown = spec_methods(load_spec(name)) - set(config["methods"])
        assert not unknown, f"{name}: methods not in config.yaml: {sorted(unknown)}"


def test_paper_config_builds_every_table():
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    assert sorted(config["tables"]) == sorted(available_specs())


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(statistic="median"), "statistic 'median'"),
    (lambda s: s["rows"][1].pop("method"), "no method; say why in 'reported_only'"),
    (lambda s: s["rows"][1].update(colour="red"), r"rows\[1\]: unknown field\(s\) colour"),
    (lambda s: s["columns"][0].update(backbone="bert-base"), "both set backbone"),
    (lambda s: s.pop("select_by"), "best-of-n needs 'select_by'"),
])
def test_spec_errors_name_the_file_and_key(tmp_path, edit, message):
    spec = {
        "name": "mini", "paper": "x", "title": "x", "reported": "conpvp_table3", "suite": "sts",
        "statistic": "best-of-n", "select_by": "avg", "columns": [{"key": "avg", "label": "Avg."}],
        "rows": [{"label": "A", "reported": "bert-base/ConSERT", "reported_only": "not run"},
                 {"label": "B", "backbone": "bert-base", "method": "simcse"}],
    }
    edit(spec)
    with pytest.raises(SpecError, match=message) as info:
        validate_spec(spec, tmp_path / "mini.yaml")
    assert "mini.yaml" in str(info.value)


def test_unknown_reported_row_is_an_error_naming_it(tmp_path):
    spec = mini_spec(tmp_path)
    spec["rows"][1]["reported"] = "bert-base/SimCSF"
    with pytest.raises(ReportedError, match="conpvp_table3 has no row 'bert-base/SimCSF'"):
        build_table(spec, [], {})


# --- rendering ----------------------------------------------------------------------------------


@pytest.fixture
def two_seed_table(tmp_path):
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7)),
             write_metrics(tmp_path, "bert-base", "simcse", 2, "sts", sts_results([72.0] * 7))]
    return build_table(mini_spec(tmp_path), files, {})


def test_long_csv_header_and_cells(two_seed_table):
    rows = list(csv.reader(io.StringIO(to_csv(two_seed_table))))
    assert rows[0] == ["table", "row", "column", "value", "std", "n", "reported", "provenance"]
    simcse = [r for r in rows[1:] if r[1] == "BERT-base SimCSE" and r[2] == "Avg."][0]
    assert simcse[3:7] == ["72.00", "1.00", "2", "76.25"]
    seeds = list(csv.reader(io.StringIO(to_seeds_csv(two_seed_table))))
    assert seeds[0] == ["table", "row", "column", "seed", "value", "selected", "metrics_file", "in_table", "statistic"]
    assert [(r[3], r[5]) for r in seeds[1:] if r[2] == "Avg."] == [("1", "0"), ("2", "1")]


def test_markdown_shows_headline_and_the_other_statistic_with_paper_and_delta(two_seed_table):
    text = to_markdown(two_seed_table, ["What the table shows."])
    assert "| BERT-base SimCSE | 72.00 (68.40†; Δ +3.60) | 72.00 (76.25†; Δ -4.25) |" in text
    assert "### Same cells, mean ± std over seeds" in text
    assert "| BERT-base SimCSE | 71.00 ±1.00 (68.40†; Δ +2.60) | 71.00 ±1.00 (76.25†; Δ -5.25) |" in text
    assert "| BERT-base ConSERT † (reported only) | – (64.64†) | – (72.74†) |" in text
    assert "| *BERT-base* |" in text


def test_latex_is_booktabs_and_escaped(two_seed_table):
    text = to_latex(two_seed_table, ["Shows 100% of STS_12 & more."])
    for needle in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrr}", r"\label{tab:mini}",
                   r"100\% of STS\_12 \& more", r"72.00 {\scriptsize(68.40\dag{}; $\Delta$+3.60)}",
                   r"71.00 $\pm$1.00", r"\textit{BERT-base}"):
        assert needle in text, needle
    assert text.count(r"\begin{table}") == 2  # headline and the other statistic


def test_captions_state_the_statistic_and_synthetic_inputs(tmp_path, two_seed_table):
    paths = write_outputs(two_seed_table, tmp_path / "out" / "mini", "demo", "It shows STS.\n\nTwo paragraphs.")
    assert [p.name for p in paths] == ["mini.csv", "mini.seeds.csv", "mini.md", "mini.tex", "mini.html"]
    markdown = paths[2].read_text()
    assert "It shows STS." in markdown and "Two paragraphs." in markdown
    assert "Ours: best of N seeds (N = 2)" in markdown and "highest Avg." in markdown
    assert "conpvp-paper.txt, Table 3" in markdown and "† copied by the ConPVP authors" in markdown
    html = paths[4].read_text()
    assert html.startswith("<!DOCTYPE html>") and "<table>" in html and "Δ +3.60" in html


# --- the CLI and the audit on a hand-made chain ---------------------------------------------------


def _chain(tmp_path: Path) -> tuple[Path, Path, Path]:
    """data file <- train.json (with provenance, best step, history) <- metrics file; returns all three."""
    data = tmp_path / "resources" / "corpus.txt"
    data.parent.mkdir(parents=True)
    data.write_text("a sentence\n")
    train = tmp_path / "results" / "x" / "runs" / "bert-base" / "simcse" / "seed1" / "train.json"
    train.parent.mkdir(parents=True)
    log = tmp_path / "results" / "x" / "logs" / "train" / "bert-base" / "simcse" / "seed1.log"
    log.parent.mkdir(parents=True)
    log.write_text("step 2: dev 61.00\nstep 4: dev 63.50 (best)\n")
    train.write_text(json.dumps({
        "steps": 6, "best_step": 4, "best_stsb_dev_spearman": 63.5, "loss_first": 2.1, "loss_last": 0.4,
        "history": [{"step": 2, "stsb_dev_spearman": 61.0}, {"step": 4, "stsb_dev_spearman": 63.5},
                    {"step": 6, "stsb_dev_spearman": 62.0}],
        "provenance": {"step": "train", "seed": 1, "config": {"lr": 3e-5}, "code": {"commit": "abc123", "dirty": False},
                       "libraries": {"torch": "2.x"}, "device": {"device": "cpu"}, "slurm_job_id": "4242",
                       "inputs": [{"role": "tokenized corpus", "path": str(data), "sha256": sha256_file(data)}]}}))
    inputs = [{"role": "training summary", "path": str(train), "sha256": sha256_file(train)}]
    metrics = write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7), inputs)
    other = write_metrics(tmp_path, "bert-base", "simcse", 2, "sts", sts_results([60.0] * 7))
    return data, metrics, other


def test_table_cli_and_audit_print_the_selected_step_and_detect_tampering(tmp_path, monkeypatch, capsys):
    from sentrepro.cli import main

    data, metrics, other = _chain(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = json.dumps({"experiment": "x", "backbones": {"bert-base": {"stands_in_for": "bert-base"}}})
    description = tmp_path / "conpvp_table3.rst"
    description.write_text("ConPVP Table 3 caption.")
    prefix = tmp_path / "results" / "x" / "tables" / "conpvp_table3"
    assert main(["table", "conpvp_table3", "--spec", spec, "--out-prefix", str(prefix), "--description",
                 str(description), "--metrics", str(metrics), str(other)]) == 0
    table = Path(f"{prefix}.csv")
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    text = report.text()
    assert report.ok, text
    for needle in (f"metrics: {metrics}", "selected step 4 of 6 (best STS-B dev Spearman 63.50; 3 dev evaluations)",
                   "dev history: 2: 61.00, 4: 63.50, 6: 62.00", "training log:", "SLURM job 4242",
                   "code abc123", "tokenized corpus:", "paper: 76.85 transcribed from conpvp-paper.txt:104",
                   f"compared: {other}"):
        assert needle in text, needle
    data.write_text("a changed sentence\n")
    capsys.readouterr()
    assert main(["audit", str(table), "BERT-base SimCSE", "STS-B"]) == 1
    out = capsys.readouterr().out
    assert f"{data} (sha256 recorded" in out and "FAILED: 1 of" in out


def test_audit_of_a_reported_only_cell(tmp_path, monkeypatch):
    from sentrepro.cli import main

    monkeypatch.chdir(tmp_path)
    prefix = tmp_path / "t" / "conpvp_table3"
    assert main(["table", "conpvp_table3", "--spec", json.dumps({"experiment": "x", "backbones": {}}),
                 "--out-prefix", str(prefix)]) == 0
    text = audit_cell(Path(f"{prefix}.csv"), "BERT-large ConSERT", "Avg.").text()
    assert "paper: 76.45 transcribed from conpvp-paper.txt:109" in text and "reported-only cell" in text


def test_std_of_a_single_seed_renders_as_a_dash(tmp_path):
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7))]
    result = build_table(load_spec("promptbert_knowl9_stability"), files, {})
    text = to_markdown(result, [])
    assert "| SimCSE-BERT-base | 70.00 (75.42; Δ -5.42) | – (0.86) | 70.00 (76.64; Δ -6.64) |" in text


def test_caption_carries_the_notes_on_the_papers_numbers(tmp_path):
    from sentrepro.tables.render import caption_paragraphs

    result = build_table(load_spec("conpvp_table3"), [], {})
    text = "\n".join(caption_paragraphs(result, "", "paper", "t.csv"))
    assert "bert-base/PromptBERT (conpvp-paper.txt:106): the 7 task values average 78.52, not 78.54" in text
    assert "– = not run in this experiment" in text and "Stand-ins" not in text


def test_subsampled_suite_metrics_are_stated_in_the_caption(tmp_path):
    from sentrepro.tables.render import caption_paragraphs

    path = write_metrics(tmp_path, "bert-base", "frozen-avg", None, "clustering", {"AgNews": 30.0, "avg": 30.0})
    payload = json.loads(path.read_text())
    payload["subset"] = {"applied": True, "max_samples": 150, "seed": 0, "sizes": {}}
    path.write_text(json.dumps(payload))
    result = build_table(load_spec("conpvp_table6"), [path], {})
    assert result.subsets == {"clustering": 150}
    assert any("at most 150 examples per data set" in p for p in caption_paragraphs(result, "", "x", "t.csv"))


# --- like with like: incomplete averages, synthetic cells, another statistic, stale code -----------


def full_spec(tmp_path: Path) -> dict:
    """The 7 STS columns and Avg., as ConPVP Table 3."""
    columns = [{"key": k, "label": k} for k in STS_KEYS] + [{"key": "avg", "label": "Avg."}]
    return mini_spec(tmp_path, columns=columns, max_seeds=4)


def test_avg_is_empty_on_a_row_that_lacks_an_averaged_column_and_the_caption_names_it(tmp_path):
    # the run has STS-B only: its avg (82.0) averages one task, the paper's seven
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", {"STSBenchmark": 82.0, "avg": 82.0})]
    result = build_table(full_spec(tmp_path), files, {})
    cells = {c.column: c for c in result.cells if c.row == "BERT-base SimCSE"}
    assert cells["STSBenchmark"].value == 82.0
    assert cells["Avg."].value is None and cells["Avg."].summary is None
    assert cells["Avg."].missing == ["SICKRelatedness", "STS12", "STS13", "STS14", "STS15", "STS16"]
    markdown = to_markdown(result, caption_paragraphs(result, "", "x", "mini.csv"))
    row = next(line for line in markdown.splitlines() if line.startswith("| BERT-base SimCSE"))
    assert row.endswith("| – (76.25†) |"), row  # the paper's Avg. alone, no Δ against one task
    assert "Avg. is left empty in rows BERT-base SimCSE: they lack SICKRelatedness, STS12" in markdown
    table = tmp_path / "mini.csv"
    table.write_text(to_csv(result))
    text = audit_cell(table, "BERT-base SimCSE", "Avg.").text()
    assert "no value: the row's runs lack SICKRelatedness, STS12, STS13" in text, text
    # with all seven tasks the same run's Avg. is shown, with its Δ
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7))]
    result = build_table(full_spec(tmp_path), files, {})
    assert {c.column: c for c in result.cells if c.row == "BERT-base SimCSE"}["Avg."].value == 70.0
    assert not result.incomplete


def test_a_synthetic_cell_shows_ours_and_the_paper_but_no_delta(tmp_path):
    manifest = tmp_path / "data" / "senteval" / "MANIFEST.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "senteval", "synthetic": True, "files": {}}))
    files = [write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7),
                           inputs=[{"role": "STS dataset manifest", "path": str(manifest),
                                    "sha256": sha256_file(manifest)}])]
    result = build_table(full_spec(tmp_path), files, {})
    cell = next(c for c in result.cells if c.row.startswith("BERT-base SimCSE") and c.column == "STS12")
    assert cell.synthetic == ["senteval"] and cell.delta is None
    markdown = to_markdown(result, caption_paragraphs(result, "", "x", "mini.csv"))
    assert "70.00 (68.40†; synthetic, no Δ)" in markdown
    assert "Δ +" not in markdown.split("### ")[0].split("| BERT-base SimCSE")[1].splitlines()[0]
    assert "Δ -" not in markdown.split("| BERT-base SimCSE")[1].splitlines()[0]
    assert r"$\Delta$" not in to_latex(result, []).split("SimCSE")[1].splitlines()[0]
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert next(r for r in rows if r["row"] == cell.row and r["column"] == "STS12")["reported"] == "68.40"


def test_a_row_whose_paper_number_is_another_statistic_gets_both_in_the_seeds_csv_and_the_caption(tmp_path):
    # ConPVP Table 3's † PromptBERT rows: PromptBERT's mean of 10 seeds beside the table's best of 4
    spec = mini_spec(tmp_path, max_seeds=4, rows=[
        {"group": "BERT-base", "label": "BERT-base PromptBERT", "backbone": "bert-base", "method": "promptbert",
         "reported": "bert-base/PromptBERT"}])
    values = [70.0 + seed for seed in range(10)]  # seed s: every task 70 + s
    files = [write_metrics(tmp_path, "bert-base", "promptbert", seed, "sts", sts_results([values[seed]] * 7))
             for seed in range(10)]
    result = build_table(spec, files, {})
    avg = next(c for c in result.cells if c.column == "Avg.")
    assert avg.value == 73.0 and avg.n == 4  # best of the 4 lowest seeds
    assert sorted(avg.extra_seeds) == [4, 5, 6, 7, 8, 9]
    seeds = [r for r in csv.DictReader(io.StringIO(to_seeds_csv(result))) if r["column"] == "Avg."]
    assert [r["in_table"] for r in seeds if r["seed"]] == ["1"] * 4 + ["0"] * 6
    stats = {r["statistic"]: float(r["value"]) for r in seeds if r["statistic"]}
    assert stats == {"best of N, N = 4 (this table)": 73.0,
                     "mean of 10 seeds (the paper's statistic for this row)": pytest.approx(74.5)}
    markdown = to_markdown(result, caption_paragraphs(result, "", "x", "mini.csv"))
    assert "the paper's number is PromptBERT's mean of 10 seeds, not the table's best of 4" in markdown


def test_cells_from_stale_code_are_named_in_the_caption(tmp_path):
    from sentrepro.code.codedeps import code_record

    record = code_record(["cli:evaluate"])
    stale = json.loads(json.dumps(record))
    stale["fingerprint"] = "0" * 16
    stale["modules"]["evaluation/job.py"] = "1" * 16
    path = write_metrics(tmp_path, "bert-base", "simcse", 1, "sts", sts_results([70.0] * 7))
    payload = json.loads(path.read_text())
    payload["provenance"]["code_fingerprint"] = stale
    path.write_text(json.dumps(payload))
    result = build_table(full_spec(tmp_path), [path], {})
    assert list(result.stale) == [str(path)]
    text = to_markdown(result, caption_paragraphs(result, "", "x", "mini.csv"))
    assert "STALE: cells of this table come from outputs written by code that has changed since" in text
    assert f"evaluation/job.py: {'1' * 16} -> {record['modules']['evaluation/job.py']}" in text
    payload["provenance"]["code_fingerprint"] = record  # today's code: nothing stale
    path.write_text(json.dumps(payload))
    assert not build_table(full_spec(tmp_path), [path], {}).stale


# --- issue 12: Knowl 4 (four decimals), Knowl 6 (reported only), README stds, the precision caption ---


def test_knowl4_compares_the_anisotropy_suite_with_four_decimals(tmp_path):
    spec = load_spec("promptbert_knowl4")
    files = [write_metrics(tmp_path, backbone, "static-avg", None, "anisotropy",
                           {"static_token": value, "sentence": 0.9, "static_sentence": 0.8})
             for backbone, value in (("bert-base", 0.41234), ("bert-base-cased", 0.15), ("roberta-base", 0.02))]
    result = build_table(spec, files, {})
    cells = {c.column: c for c in result.cells}
    assert cells["BERT-base-uncased"].value == pytest.approx(0.41234)
    assert cells["BERT-base-uncased"].reported.value == 0.4445 and cells["RoBERTa-base"].reported.value == 0.0235
    markdown = to_markdown(result, [])
    assert "0.4123 (0.4445; Δ -0.0322)" in markdown and "0.1500 (0.1465; Δ +0.0035)" in markdown
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert rows[0]["value"] == "0.4123" and rows[0]["reported"] == "0.4445"
    assert rows[0]["provenance"].endswith("paper=promptbert-paper.txt:128")


def test_knowl6_is_reported_only_and_builds_without_metrics():
    result = build_table(load_spec("promptbert_knowl6"), [], {})
    assert [(c.row, c.reported.value) for c in result.cells] == [
        ("Untied: static token embeddings (reported only)", 49.41),
        ("Tied: static token embeddings (reported only)", 45.68),
        ("Untied: MLM head weights (reported only)", 43.33)]
    assert all(c.value is None and c.reported_only for c in result.cells)


def test_supervised_rows_and_readme_stds_in_knowl8(tmp_path):
    result = build_table(load_spec("promptbert_knowl8"), [], {})
    by = {(c.row, c.column): c for c in result.cells}
    assert by[("PromptBERT-base (supervised) (reported only)", "Avg.")].reported.value == 81.97
    assert by[("PromptRoBERTa-base (supervised) (reported only)", "STS12")].reported.where == "promptbert-paper.txt:185"
    cell = by[("PromptBERT-base", "Avg.")]
    assert (cell.reported.value, cell.reported.std) == (78.54, 0.15)
    assert cell.sources() == ["paper=promptbert-paper.txt:174 (± from kongds/Prompt-BERT README.md:12 at commit "
                              "690ba6e)"]
    caption = " ".join(caption_paragraphs(result, "", "x", "t.csv"))
    assert "Published ± not in the paper text: bert-base/PromptBERT: from kongds/Prompt-BERT README.md:12" in caption
    supervised = build_table(load_spec("promptbert_knowl10"), [], {})
    assert {c.row for c in supervised.cells if c.reported.where == "promptbert-paper.txt:228"} == {
        "PromptRoBERTa (supervised) (reported only)"}


def test_caption_names_a_training_precision_other_than_the_authors(tmp_path):
    summaries = {}
    for method, used in (("simcse", "fp32"), ("promptbert", "fp16")):
        summary = tmp_path / "runs" / method / "train.json"
        summary.parent.mkdir(parents=True)
        summary.write_text(json.dumps({"precision": {"configured": "fp16", "used": used, "authors": "fp16",
                                                     "dev_scoring": "fp32"}}))
        summaries[method] = summary
    files = [write_metrics(tmp_path, "bert-base", method, 42, "sts", sts_results([70.0] * 7),
                           inputs=[{"path": str(summaries[method]), "sha256": "x", "role": "training summary"}])
             for method in ("simcse", "promptbert")]
    result = build_table(load_spec("promptbert_knowl8"), files, {})
    assert result.precisions == {"simcse": {"used": ["fp32"], "authors": "fp16"}}  # promptbert ran as its authors
    caption = " ".join(caption_paragraphs(result, "", "x", "t.csv"))
    assert "PRECISION differs from the authors': simcse trained in fp32, the authors in fp16" in caption


def test_seed_order_puts_the_frozen_run_first_and_best_seed_needs_a_seed():
    import dataclasses

    assert lowest_seeds([2, None, 0, 1], None) == [None, 0, 1, 2]
    assert best_seed({3: 1.0, None: 1.0, 0: 1.0}) is None  # a tie goes to the first in seed order
    with pytest.raises(ValueError, match=r"^best_seed needs at least one seed$"):
        best_seed({})
    summary = summarize({0: 1.0, 1: 3.0})
    with pytest.raises(dataclasses.FrozenInstanceError):  # a cell's statistics are computed once, never edited
        summary.mean = 0.0
