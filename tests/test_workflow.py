"""The workflow end to end on a tiny config: DAG, rerun-only-what-changed, tables and the audit chain."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentrepro.records.audit import audit_cell
from tests.workflow_helpers import (REPO, DryRuns, copy_checkout, planned_jobs, same_size_behaviour_change, snakemake,
                                    tiny_overlay, write_overlay)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, shared_data, tiny_models):
    """One complete run of the workflow; tests below reuse (copies of) it."""
    workdir = tmp_path_factory.mktemp("wf")
    write_overlay(workdir, {**tiny_overlay(shared_data, tiny_models), "demo_summary": {"enabled": True}})
    snakemake(workdir)
    return workdir


def test_tables_written_with_reported_numbers(finished_run):
    table = finished_run / "results" / "wftest" / "tables" / "sts_main.csv"
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["table", "row", "column", "value", "std", "n", "reported", "provenance"]
    simcse = [r for r in rows if r["row"].startswith("BERT-base SimCSE") and r["column"] == "STS-B"]
    assert len(simcse) == 1 and simcse[0]["value"] and simcse[0]["reported"] == "76.85"
    assert "tiny-bert in place of bert-base" in simcse[0]["row"]
    assert simcse[0]["provenance"].startswith("results/wftest/metrics/tiny-bert/simcse/seed1/sts.json#sha256=")
    assert (finished_run / "results" / "wftest" / "tables" / "sts_main.md").read_text().count("|") > 20


def test_second_run_does_nothing(finished_run):
    assert planned_jobs(snakemake(finished_run, "-n")) == {}


def _edit_overlay(workdir, edit):
    path = workdir / "overlay.yaml"
    overlay = yaml.safe_load(path.read_text())
    edit(overlay)
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))


def test_learning_rate_change_reruns_only_that_training(finished_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    _edit_overlay(workdir, lambda o: o["methods"]["simcse"]["per_backbone"]["tiny-bert"].update(lr=5e-5))
    jobs = planned_jobs(snakemake(workdir, "-n"))
    # the step-0 evaluation reads the method's params too (they may shape the untrained model), and the summary
    assert jobs == {"train": 1, "evaluate_sts": 1, "evaluate_sts_start": 1, "demo_summary": 1,
                    "table": len(tables_reading("simcse")), "verdicts": 1, "all": 1}


def test_faithfulness_defaults_rerun_only_the_trainings_they_change(finished_run, tmp_path):
    """Issue 12's options: what matches a run's resolved slice reruns nothing, what changes it reruns that run."""
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)

    def unaffected(overlay):
        overlay["training"]["precision"] = "fp16"  # SimCSE's authors' precision: its slice is unchanged
        overlay["methods"]["esimcse"] = {"params": {"momentum_init": "copy"}}  # no ESimCSE run in this matrix
        overlay["methods"]["mocoutrl"] = {"params": {"protocol": "released-code"}}

    _edit_overlay(workdir, unaffected)
    assert planned_jobs(snakemake(workdir, "-n")) == {}
    _edit_overlay(workdir, lambda o: o["training"].update(dev_precision="training"))
    jobs = planned_jobs(snakemake(workdir, "-n"))
    # dev scoring is no part of the step-0 evaluation; the summary reads train.json
    assert jobs == {"train": 1, "evaluate_sts": 1, "demo_summary": 1, "table": len(tables_reading("simcse")),
                    "verdicts": 1, "all": 1}


def test_precision_and_corpus_count_are_recorded(finished_run):
    """train.json says the precision configured (the authors'), used (fp32 on CPU) and of dev scoring; the
    corpus record the line rule and both counts; a table reading the run names the precision difference."""
    summary = json.loads((finished_run / "results/wftest/runs/tiny-bert/simcse/seed1/train.json").read_text())
    assert summary["precision"] == {"configured": "fp16", "used": "fp32", "authors": "fp16", "dev_scoring": "fp32"}
    assert summary["provenance"]["config"]["training"]["precision"] == "fp16"
    corpus = json.loads((finished_run / "resources/corpus/wiki-sample/sentences.txt.json").read_text())
    assert corpus["line_split"] == "splitlines" and corpus["sentences"] == 256
    assert corpus["source_lines"] == {"splitlines": 11915, "newline": 11915}  # 11,914 newlines + the cut last line
    caption = (finished_run / "results/wftest/tables/sts_main.md").read_text()
    assert "PRECISION differs from the authors': simcse trained in fp32, the authors in fp16" in caption


def test_unrelated_change_reruns_nothing(finished_run, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)

    def edit(overlay):
        overlay["methods"]["simcse"]["per_backbone"]["bert-large"] = {"lr": 2e-5}  # a backbone not in the matrix
        overlay["backbones"]["tiny-bert"]["resources"] = {"mem_mb": 1234}  # scheduling only

    _edit_overlay(workdir, edit)
    assert planned_jobs(snakemake(workdir, "-n")) == {}


def test_audit_chain_and_tamper_detection(finished_run, tmp_path, monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    table = workdir / "results" / "wftest" / "tables" / "sts_main.csv"
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    text = report.text()
    assert report.ok, text
    for needle in ("metrics: results/wftest/metrics/tiny-bert/simcse/seed1/sts.json", "training summary",
                   "tokenized corpus", "dataset manifest", "download record", "STS-B dev", "best checkpoint"):
        assert needle in text
    # tamper with a raw data file deep in the chain: the audit names it
    tampered = workdir / "resources" / "corpus" / "wiki-sample" / "sentences.txt"
    tampered.write_text(tampered.read_text() + "an extra sentence\n")
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert not report.ok
    assert any("resources/corpus/wiki-sample/sentences.txt" in p for p in report.problems)


def test_step0_score_recorded_and_demo_summary_built(finished_run, tmp_path, monkeypatch):
    """Each run records its untrained dev score; the summary table, its audit chain and the job times exist."""
    results = finished_run / "results" / "wftest"
    summary = json.loads((results / "runs" / "tiny-bert" / "simcse" / "seed1" / "train.json").read_text())
    assert summary["history"][0]["step"] == 0 and summary["best_step"] > 0
    assert summary["start_stsb_dev_spearman"] == summary["history"][0]["stsb_dev_spearman"]
    assert summary["provenance"]["config"]["training"]["eval_at_start"] is True
    log = (results / "logs" / "train" / "tiny-bert" / "simcse" / "seed1.log").read_text()
    assert "[train tiny-bert/simcse/seed1] step 0 (before training): STS-B dev spearman" in log
    assert "[train tiny-bert/simcse/seed1] step 4/4 (100%)" in log
    start = json.loads((results / "metrics" / "tiny-bert" / "simcse" / "seed1" / "sts_start.json").read_text())
    assert start["provenance"]["step"] == "evaluate_sts_start" and "STSBenchmark" in start["results"]
    with open(results / "tables" / "demo_summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["row"] for r in rows} == {"simcse (tiny-bert, seed 1)"}  # trained runs only
    assert {r["column"] for r in rows} >= {"STS-B test before", "STS-B test after", "change", "training steps"}
    assert "| simcse (tiny-bert, seed 1) |" in (results / "tables" / "demo_summary.md").read_text()
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    report = audit_cell(Path("results/wftest/tables/demo_summary.csv"), "simcse", "STS-B test before")
    assert report.ok and "metrics/tiny-bert/simcse/seed1/sts_start.json" in report.text(), report.text()
    times = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "times", "results/wftest", "resources"],
                           capture_output=True, text=True, check=True).stdout
    for step in ("train", "evaluate_sts_start", "demo_summary", "tokenize", "total"):
        assert f"\n{step} " in "\n" + times, times


def test_dry_run_of_full_paper_config_lists_each_download_once(tmp_path):
    overlay = write_overlay(tmp_path, {})
    result = snakemake(tmp_path, "-n", "--quiet", "rules", overlay=overlay)
    jobs = planned_jobs(result)
    # every data source is fetched by one job (tests/test_data_workflow.py checks each is listed once)
    assert jobs["download"] >= len({"wiki1m", "senteval", "clustering", "wos"})
    assert jobs["check_dataset"] == len({"senteval", "clustering", "wos"})
    # one cache per (vocabulary, corpus), shared by every run that needs it: the sentences corpus for
    # bert-base-uncased (BERT base + large) and roberta-base (RoBERTa base + large); MoCoUTRL's views corpus
    # for the three backbones it runs on (deberta-base, bert-base, roberta-base)
    assert jobs["tokenize"] == 5
    assert jobs["train"] > 10 * jobs["tokenize"]
    assert jobs["train"] >= 16


# --- paper tables, the audit of a real cell, the report -------------------------------------------


def tables_reading(method: str, backbone: str = "bert-base", suite: str = "sts") -> list[str]:
    """The tables of config.yaml with a cell read from (backbone, method, suite)."""
    from sentrepro.planning.table_cells import cell_keys
    from sentrepro.planning.table_specs import load_spec

    names = yaml.safe_load((REPO / "config.yaml").read_text())["tables"]
    return [n for n in names if (backbone, method, suite) in cell_keys(load_spec(n))]


def test_every_table_written_in_every_format(finished_run):

    tables = finished_run / "results" / "wftest" / "tables"
    for name in yaml.safe_load((REPO / "config.yaml").read_text())["tables"]:
        for suffix in (".md", ".csv", ".seeds.csv", ".tex", ".html"):
            assert (tables / f"{name}{suffix}").stat().st_size > 0, f"{name}{suffix}"
        with open(tables / f"{name}.csv", newline="") as handle:
            assert next(csv.reader(handle)) == ["table", "row", "column", "value", "std", "n", "reported",
                                                "provenance"]
    markdown = (tables / "conpvp_table3.md").read_text()
    assert "best of N seeds (N = 1" in markdown and "tiny-bert fills the bert-base cells" in markdown
    assert "| BERT-base ConSERT † (reported only) | – (64.64†) |" in markdown
    assert r"\toprule" in (tables / "conpvp_table3.tex").read_text()


def test_audit_of_a_paper_table_cell_prints_the_chain_and_names_a_changed_checkpoint(finished_run, tmp_path,
                                                                                      monkeypatch):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    monkeypatch.chdir(workdir)
    table = workdir / "results" / "wftest" / "tables" / "conpvp_table3.csv"
    empty = audit_cell(table, "BERT-base SimCSE", "Avg.").text()  # the tiny run has STS-B only
    assert "no value: the row's runs lack SICK-R, STS12, STS13" in empty, empty
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    text = report.text()
    assert report.ok, text
    for needle in ("paper: 76.85 transcribed from conpvp-paper.txt:104",
                   "metrics: results/wftest/metrics/tiny-bert/simcse/seed1/sts.json",
                   "training summary: results/wftest/runs/tiny-bert/simcse/seed1/train.json",
                   "selected step ", "dev history", "training log: results/wftest/logs/train/tiny-bert/simcse/seed1.log",
                   "config slice:", "| code ", "torch ", "SLURM job -", "tokenized corpus:", "download record",
                   "best checkpoint file"):
        assert needle in text, needle
    checkpoint = next((workdir / "results" / "wftest" / "runs" / "tiny-bert" / "simcse" / "seed1" / "best")
                      .glob("*.safetensors"))
    checkpoint.write_bytes(checkpoint.read_bytes() + b"\0")
    report = audit_cell(table, "BERT-base SimCSE", "STS-B")
    assert not report.ok
    assert any(str(checkpoint.relative_to(workdir)) in problem for problem in report.problems), report.problems


def test_report_command_builds_a_self_contained_report_with_every_table(finished_run, tmp_path):

    out = tmp_path / "report.html"
    snakemake(finished_run, "--report", str(out))
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or "<html" in html[:2000]
    assert "sentrepro regenerates the experiment tables" in html  # workflow/report/workflow.rst
    for name in yaml.safe_load((REPO / "config.yaml").read_text())["tables"]:
        assert f"{name}.html" in html, name
    assert "ConPVP Table 3: Spearman correlation" in html  # a table caption (workflow/report/tables/*.rst)
    assert "verdicts.html" in html and "Reproduction verdicts of experiment" in html  # workflow/report/verdicts.rst
    assert "demo_summary.html" in html
    for figure in (finished_run / "results" / "wftest" / "figures").glob("*.png"):
        assert figure.name in html, figure.name


# --- code fingerprints: which edits rerun what; a moved project; stale cells in the audit ----------


def _job_graph(dry_runs: DryRuns) -> tuple[dict[str, str], dict[str, set[str]], dict[str, str], dict[str, str], dict,
                                            dict[str, str]]:
    """Job id -> rule, job id -> the jobs consuming its outputs, job id -> its ``method`` wildcard (jobs
    that run one method), job id -> its ``figure`` wildcard, job id -> its ``source``/``generator``
    wildcards (data jobs) and job id -> its ``table`` wildcard, from `snakemake --dag` (DOT; a node's label
    lists its wildcards)."""
    done = dry_runs.plan("--dag", "--forceall")
    assert done.returncode == 0, done.stderr[-3000:]
    dot = done.stdout
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"]*)"', dot, re.M))
    rules = {job: re.match(r"\w+", label).group(0) for job, label in labels.items()}
    methods = {job: m.group(1) for job, label in labels.items() if (m := re.search(r"method: ([^\\\s]+)", label))}
    figures = {job: m.group(1) for job, label in labels.items() if (m := re.search(r"figure: ([^\\\s]+)", label))}
    tables = {job: m.group(1) for job, label in labels.items() if (m := re.search(r"table: ([^\\\s]+)", label))}
    consumers: dict[str, set[str]] = {job: set() for job in rules}
    for source, target in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        consumers[source].add(target)
    # a node's label names only the wildcards its inputs' jobs do not have: a data job's source is its own or
    # the one of the job making its input (check_dataset <- prepare_dataset <- download)
    data = {job: dict(re.findall(r"(source|generator): ([^\\\s]+)", label)) for job, label in labels.items()}
    producers = {job: {p for p, c in consumers.items() if job in c} for job in rules}
    for job in [job for job, rule in rules.items() if rule in ("check_dataset", "prepare_dataset")]:
        todo = list(producers[job])
        while "source" not in data[job] and todo:
            upstream = todo.pop()
            if "source" in data[upstream]:
                data[job]["source"] = data[upstream]["source"]
            else:
                todo.extend(producers[upstream])
    assert rules and any(consumers.values()) and methods, dot
    return rules, consumers, methods, figures, data, tables


def _downstream(start: set[str], jobs: dict[str, str], consumers: dict[str, set[str]]) -> set[str]:
    """The rules of the jobs ``start`` and of every job downstream of one."""
    return set(_downstream_counts(start, jobs, consumers))


def _downstream_counts(start: set[str], jobs: dict[str, str], consumers: dict[str, set[str]]) -> dict[str, int]:
    """Rule -> how many of the jobs ``start`` and of the jobs downstream of one it has (``all`` left out)."""
    found, todo = set(), list(start)
    while todo:
        job = todo.pop()
        if job not in found:
            found.add(job)
            todo.extend(consumers[job])
    counts: dict[str, int] = {}
    for job in found - {j for j, rule in jobs.items() if rule == "all"}:
        counts[jobs[job]] = counts.get(jobs[job], 0) + 1
    return counts


def _kind_modules(package: Path) -> dict[str, str]:
    """Method kind -> the module defining it (``kind = "..."`` in a class of src/sentrepro/methods)."""
    found = {}
    for path in sorted((package / "methods").glob("*.py")):
        for kind in re.findall(r'^    kind = "(\w+)"', path.read_text(encoding="utf-8"), re.M):
            found[kind] = f"sentrepro.methods.{path.stem}"
    return found


def _registry_modules(package: Path, section: str) -> dict[str, str]:
    """Suite (or figure) -> the module of its implementation: the module beside its sidecar (yaml alone)."""
    from tests.module_closures import sidecar_units

    return sidecar_units(section, package)


def _first_unit(path: Path) -> tuple[str, str]:
    """(section, name) of the first unit of a ``*.units.yaml`` sidecar."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    section = next(iter(data))
    return section, next(iter(data[section]))


def _unit_change(path: Path) -> str:
    """An edit of a sidecar (or of training/loop.params.yaml) that changes what its first unit's jobs depend on:
    a new parameter in a kind's schema, a new setting in a suite's, another paper for a figure."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if path.name.endswith(".params.yaml"):
        next(iter(data.values()))["probe_param"] = {"type": "integer"}
    else:
        section, name = _first_unit(path)
        unit = data[section][name]
        if section == "methods":
            unit.setdefault("params", {})["probe_param"] = {"type": "integer"}
        elif section == "suites" and "settings" in unit:
            unit["settings"].setdefault("properties", {})["probe_setting"] = {"type": "integer"}
        elif section == "suites":
            unit["item_scores"] = not unit.get("item_scores", False)
        else:
            unit["paper"] = f"{unit['paper']} probe"
    return yaml.safe_dump(data, sort_keys=False)


def _behaviour_change(path) -> str:
    """An edit that changes what a file does (not a comment): a new statement, or a changed value."""
    text = path.read_text(encoding="utf-8")
    if path.name.endswith((".units.yaml", ".params.yaml")):
        return _unit_change(path)
    if path.suffix == ".py":
        return text + "\n_PROBE = 1\n"
    if '\ntitle: "' in text:  # a table spec (validated while the workflow plans: no unknown keys)
        return text.replace('\ntitle: "', '\ntitle: "PROBE ', 1)
    if path.name == "reported.yaml":  # validated while the workflow plans too (table specs' rows and columns)
        return text.replace("68.40", "68.41", 1)
    if "\n  item_seed: 0" in text:  # claims.yaml (validated too): another bootstrap seed
        return text.replace("\n  item_seed: 0", "\n  item_seed: 1", 1)
    return text + "\n_probe: 1\n"


def test_a_moved_project_plans_nothing_and_each_module_edit_reruns_the_rules_that_import_it(finished_run, tmp_path,
                                                                                             monkeypatch, request):
    from tests.module_closures import (data_readers, demo_summary_entry, edited_entry, entry_closure, module_file,
                                       package_files, reported_entry_readers, rule_entries)

    # the cold `snakemake` runs below compute every fingerprint with no cache at all; the many plans of the
    # edited copies (DryRuns) go through a fingerprint cache of their own, warm after the first
    monkeypatch.setenv("SENTREPRO_FP_CACHE", "off")

    # the checkout and the finished run, both copied elsewhere: nothing to do
    repo = copy_checkout(tmp_path / "moved" / "checkout")
    workdir = tmp_path / "moved" / "work"
    shutil.copytree(finished_run, workdir, symlinks=True)
    assert planned_jobs(snakemake(workdir, "-n", repo=repo)) == {}

    # which job's code uses which file, computed without sentrepro.code.codedeps (see tests/module_closures.py):
    # a rule's entry point, plus, for a job of one method, the module defining the method's kind (the
    # registry imports it on demand, so an edit of one method's module reruns that method's jobs only), and
    # likewise the module of an evaluation job's suite and of a figure job's figure. A unit's sidecar is
    # its own jobs' code alone: editing it reruns those jobs, never all of them (as registry.yaml did)
    # every plan below but the cold `snakemake` runs goes through one plan server (see the loop of edits)
    dry_runs = DryRuns(workdir, repo=repo, env={"SENTREPRO_FP_CACHE": str(tmp_path / "fp-cache")})
    request.addfinalizer(dry_runs.close)
    jobs, consumers, job_methods, job_figures, job_data, job_tables = _job_graph(dry_runs)
    package = repo / "src" / "sentrepro"
    in_run = set(jobs.values()) - {"all"}
    rule_closures = {rule: {module_file(m) for m in entry_closure(entry, tmp_path)}
                     for rule, entry in rule_entries(repo / "workflow" / "rules").items() if rule in in_run}
    assert {"train", "evaluate_sts", "tokenize", "table"} <= set(rule_closures)
    overlay = yaml.safe_load((workdir / "overlay.yaml").read_text())
    base_methods = yaml.safe_load((repo / "config.yaml").read_text())["methods"]

    def kind_of(method: str) -> str:  # the overlay is deep-merged on config.yaml
        return (overlay["methods"].get(method) or {}).get("kind") or base_methods[method]["kind"]

    def unit_module(rule: str, wildcards: dict) -> str:
        from sentrepro.data import benchmarks

        if rule == "fixture":
            return benchmarks.fixture_module(wildcards["generator"])
        source = wildcards["source"]
        check = (overlay["data"]["sources"].get(source) or {}).get("check") or \
            yaml.safe_load((repo / "config.yaml").read_text())["data"]["sources"][source]["check"]
        return benchmarks.layout_module(check["layout"])

    kind_modules = _kind_modules(package)
    suite_modules, figure_modules = _registry_modules(package, "suites"), _registry_modules(package, "figures")
    closures = {}
    for job, rule in jobs.items():
        if rule in rule_closures:
            closures[job] = set(rule_closures[rule])
            extra = []  # the modules the registry imports on demand for this job
            if job in job_methods:
                extra.append(kind_modules[kind_of(job_methods[job])])
            if rule.startswith("evaluate_"):
                extra.append(suite_modules[rule.removeprefix("evaluate_")])
            if job in job_figures:
                extra.append(figure_modules[job_figures[job]])
            if rule in ("check_dataset", "fixture"):  # and the benchmark unit it reads (sentrepro.data.benchmarks)
                extra.append(unit_module(rule, job_data[job]))
            for module in extra:
                closures[job] |= {module_file(m) for m in entry_closure(module, tmp_path)}

    def unit_of(job: str, section: str) -> str | None:
        """The method kind, suite or figure a job runs (None when it runs none of that section)."""
        if section == "methods":
            return kind_of(job_methods[job]) if job in job_methods and jobs[job] in rule_closures else None
        if section == "suites":
            return jobs[job].removeprefix("evaluate_") if jobs[job].startswith("evaluate_") else None
        return job_figures.get(job)

    trained_kinds = {kind for sidecar in package.rglob("*.units.yaml")
                     for kind, unit in (yaml.safe_load(sidecar.read_text()).get("methods") or {}).items()
                     if unit.get("trains")}

    def users(rel: str) -> set[str]:
        # unit metadata: the jobs running the edited unit (a sidecar's first), or every trained kind's
        # (the training loop's keys, which every trained kind accepts); never any other job
        if rel.endswith(".params.yaml"):
            return {job for job in closures if unit_of(job, "methods") in trained_kinds}
        if rel.endswith(".units.yaml"):
            section, name = _first_unit(package / rel)
            names = {name} | {other for sidecar in package.rglob("*.units.yaml")  # suites reading its settings
                              for other, unit in (yaml.safe_load(sidecar.read_text()).get(section) or {}).items()
                              if unit.get("settings_from") == name}
            return {job for job in closures if unit_of(job, section) in names}
        if rel.endswith(".py"):
            return {job for job, files in closures.items() if rel in files}
        if rel == "planning/reported.yaml":  # read entry by entry: the jobs reading the edited entry only
            entry = edited_entry((package / rel).read_text(encoding="utf-8"), _behaviour_change(package / rel))
            tables, claimed = reported_entry_readers(entry, package)
            # the demo summary shows the paper's STS-B number of each trained run's method (train jobs' methods,
            # on the paper backbone the overlay's backbone stands in for)
            demo_entries = {demo_summary_entry(job_methods[job], backbone["stands_in_for"], package)
                            for job in jobs if jobs[job] == "train" for backbone in overlay["backbones"].values()}
            return {job for job in closures if job_tables.get(job) in tables or (jobs[job] == "verdicts" and claimed)
                    or (jobs[job] == "demo_summary" and entry in demo_entries)}
        readers = {module_file(m) for m in data_readers(rel)}
        return {job for job, files in closures.items() if files & readers}

    # One dry run per module; data files of one folder with the same readers (the 14 table specs) cannot
    # differ in which rules read them, so one of each such group is edited. The plans are Snakemake's own
    # command line in children forked from one process that imported Snakemake once (DryRuns), each
    # importing the edited package afresh; a few are also planned by a cold `snakemake -n` (no fingerprint
    # cache) and must agree, so the server cannot answer differently from the command it stands in for.
    groups: dict[tuple, str] = {}
    for rel in package_files():
        unit_metadata = rel.endswith((".units.yaml", ".params.yaml"))  # each sidecar is its units' own
        key = (rel,) if rel.endswith(".py") or unit_metadata else (str(Path(rel).parent),
                                                                   tuple(sorted(data_readers(rel))))
        groups.setdefault(key, rel)
    spot_checks = {"evaluation/job.py", "methods/simcse.py", "methods/simcse.units.yaml"}
    assert spot_checks <= set(groups.values())
    mismatches = {}
    planned_before = dry_runs.count
    assert planned_jobs(dry_runs.plan()) == {}
    for rel in groups.values():
        path = package / rel
        original = path.read_text(encoding="utf-8")
        path.write_text(_behaviour_change(path), encoding="utf-8")
        try:  # rule -> number of its jobs planned (so a file read entry by entry is held to the jobs reading it)
            planned = {rule: n for rule, n in planned_jobs(dry_runs.plan()).items() if rule != "all"}
            if rel in spot_checks:
                assert {r: n for r, n in planned_jobs(snakemake(workdir, "-n", repo=repo)).items() if r != "all"} \
                    == planned, rel
        finally:
            path.write_text(original, encoding="utf-8")
        expected = _downstream_counts(users(rel), jobs, consumers)
        if planned != expected:
            mismatches[rel] = {"planned": planned, "expected": expected}
    assert not mismatches, mismatches
    assert dry_runs.count - planned_before == len(groups) + 1

    # the fingerprint cache cannot go stale: a behaviour edit keeping the file's size and modification
    # time (its fingerprint is in the warm cache) still reruns every job whose code imports the module
    rel = "encoder/device.py"
    path = package / rel
    original, stat = path.read_text(encoding="utf-8"), path.stat()
    edited = same_size_behaviour_change(original)
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    try:
        planned = set(planned_jobs(dry_runs.plan())) - {"all"}
    finally:
        path.write_text(original, encoding="utf-8")
    assert planned == _downstream(users(rel), jobs, consumers) - {"all"}
    assert {"train", "evaluate_sts"} <= planned

    # a comment and docstring edit of a module every training and every evaluation imports reruns nothing
    # (sentrepro.encoder.start: training and evaluation jobs are peers that import nothing of each other)
    shared = package / "encoder/start.py"
    original = shared.read_text(encoding="utf-8")
    reworded = original.replace('"""A run\'s model as', '"""(Reworded.) A run\'s model as', 1)
    assert reworded != original
    shared.write_text(reworded + "\n# a comment\n", encoding="utf-8")
    assert planned_jobs(dry_runs.plan()) == {}

    # a behaviour change of it: the audit of a cell names the stale files and the module
    shared.write_text(original + "\n_PROBE = 1\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    audit = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "audit",
                            "results/wftest/tables/sts_main.csv", "BERT-base SimCSE", "STS-B"],
                           cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    assert audit.returncode == 1, audit.stdout + audit.stderr
    for needle in ("results/wftest/metrics/tiny-bert/simcse/seed1/sts.json (stale: code of cli:evaluate",
                   "results/wftest/runs/tiny-bert/simcse/seed1/train.json (stale: code of cli:train",
                   "encoder/start.py: "):
        assert needle in audit.stdout, audit.stdout[-3000:]
    shared.write_text(original, encoding="utf-8")


def test_built_tables_compare_like_with_like(finished_run):
    """On the tiny run (STS-B only, a synthetic WOS fixture): no Avg. where a row lacks an averaged column,
    no Δ on a synthetic cell, in every built table."""
    from sentrepro.planning.table_specs import AGGREGATE_KEY, load_spec

    tables = finished_run / "results" / "wftest" / "tables"
    checked_avg = 0
    for name in yaml.safe_load((REPO / "config.yaml").read_text())["tables"]:
        spec = load_spec(name)
        with open(tables / f"{name}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        by_row: dict[str, dict[str, str]] = {}
        for record in rows:
            by_row.setdefault(record["row"], {})[record["column"]] = record["value"]
        aggregates = [c["label"] for c in spec["columns"] if c.get("key", spec.get("key")) == AGGREGATE_KEY]
        others = [c["label"] for c in spec["columns"] if c["label"] not in aggregates and not c.get("stat")
                  and c.get("suite", spec.get("suite")) == spec.get("suite")]
        for label, values in by_row.items():
            for column in aggregates:
                if others and any(not values.get(other) for other in others):
                    assert not values.get(column), (name, label, column, values)
                    checked_avg += 1
        markdown = (tables / f"{name}.md").read_text()
        for line in markdown.splitlines():
            if line.startswith("|") and "SYNTHETIC" in line:
                assert "Δ" not in line, (name, line)
    assert checked_avg > 0  # the tiny run has rows with STS-B only
    sts_main = (tables / "sts_main.md").read_text()
    assert "Avg. is left empty in rows" in sts_main and "STS12" in sts_main


def test_a_method_code_edit_retrains_instead_of_resuming_the_old_checkpoint(finished_run, tmp_path):
    """Snakemake reruns a training job when its method's code changes. The job must then train with the new
    code, not restore the finished state the old code left in ``last/`` (the resume key holds the code
    fingerprint: ``runner.checkpoint_key``)."""
    workdir = tmp_path / "copy"
    shutil.copytree(finished_run, workdir, symlinks=True)
    repo = copy_checkout(tmp_path / "checkout")
    simcse = repo / "src" / "sentrepro" / "methods" / "simcse.py"
    text = simcse.read_text(encoding="utf-8")
    assert "cls = pool_cls(out.last_hidden_state)" in text
    simcse.write_text(text.replace("cls = pool_cls(out.last_hidden_state)", "cls = out.last_hidden_state.mean(1)"),
                      encoding="utf-8")  # evaluation embedding: mean pooling instead of [CLS]
    target = "results/wftest/runs/tiny-bert/simcse/seed1/train.json"
    before = json.loads((workdir / target).read_text())
    snakemake(workdir, target, repo=repo)
    after = json.loads((workdir / target).read_text())
    log = (workdir / "results" / "wftest" / "logs" / "train" / "tiny-bert" / "simcse" / "seed1.log").read_text()
    assert "starting afresh" in log
    assert after["provenance"]["code_fingerprint"] != before["provenance"]["code_fingerprint"]
    # the dev scores are those of the new embedding, from step 0 on
    assert after["history"][0]["stsb_dev_spearman"] != before["history"][0]["stsb_dev_spearman"]
