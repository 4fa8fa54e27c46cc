"""reported.yaml is read entry by entry (sentrepro.code.entry_data, issue 48): an edit of one published number
replans only the jobs that read its entry, a new entry none, and no rule reading it can lack the param that
says which entries it reads."""

from __future__ import annotations

import re

import pytest
import yaml

from sentrepro.code import codedeps
from sentrepro.planning.reported import load_reported
from sentrepro.planning.table_specs import available_specs, load_spec
from tests.module_closures import reported_entry_readers, rule_entries
from tests.workflow_helpers import (REPO, DryRuns, copy_checkout, only_blocks, only_units, planned_jobs, snakemake,
                                    tiny_overlay, write_overlay)

READER = "planning/reported.py"


def test_every_rule_whose_code_imports_reported_py_passes_the_entries_it_reads():
    """Read from the rule files' text (tests/module_closures.py), not from the workflow's own check."""
    from sentrepro.code import entry_data

    texts = {path.name: path.read_text(encoding="utf-8") for path in (REPO / "workflow" / "rules").glob("*.smk")}
    readers = {rule: entry for rule, entry in rule_entries().items() if READER in codedeps.closure_files([entry])}
    assert {"table", "verdicts"} <= set(readers)
    for rule, entry in readers.items():
        body = next(m.group(1) for text in texts.values()
                    if (m := re.search(rf"^rule {rule}:\n(.*?)(?=^\S|\Z)", text, re.S | re.M)))
        assert f'data_entries=entry_data("{entry}",' in body, rule
        assert entry_data.by_entry_files(entry) == ("planning/reported.yaml",)
    for rule, entry in rule_entries().items():  # and no other rule's code reads a file entry by entry
        assert (rule in readers) == bool(entry_data.by_entry_files(entry)), rule


def test_reported_yaml_is_in_no_code_fingerprint_and_declared_by_its_reader():
    from sentrepro.code import entry_data

    assert entry_data.declared_by_entry("sentrepro.planning.reported") == ("planning/reported.yaml",)
    for entry in ("cli:table", "cli:verdicts", "cli:demo-summary"):
        assert "planning/reported.yaml" not in codedeps.closure_files([entry])
        assert READER in codedeps.closure_files([entry])


def test_a_table_reads_exactly_the_entries_its_spec_names():
    """spec_entries (the table rule's param) against the entries building and captioning the table look up."""
    from sentrepro.tables.build import build_table
    from sentrepro.planning.reported import EntryReads, spec_entries
    from sentrepro.tables.render import caption_paragraphs

    for name in available_specs():
        spec, reads = load_spec(name), EntryReads(load_reported())
        caption_paragraphs(build_table(spec, [], {}, reported=reads), "caption", "exp", f"{name}.csv")
        assert sorted(reads.read) == spec_entries(spec), name
    assert spec_entries(load_spec("sts_main")) == ["conpvp_table3", "mocoutrl_table1", "promptbert_knowl8_text"]


def test_the_verdicts_read_exactly_the_entries_of_the_claims_tables():
    from sentrepro.verdicts.build import build_verdicts
    from sentrepro.planning.reported import EntryReads, spec_entries
    from sentrepro.verdicts.claims import claim_tables, load_claims

    claims, reads = load_claims(), EntryReads(load_reported())
    build_verdicts(claims, [], {}, "exp", reported=reads)
    assert sorted(reads.read) == sorted({e for t in claim_tables(claims) for e in spec_entries(load_spec(t))})


def test_entry_fingerprints_follow_content_not_layout():
    from sentrepro.code import entry_data

    names = sorted(load_reported())
    every = entry_data.entry_fingerprints(codedeps.PACKAGE_DIR / "planning" / "reported.yaml", names)
    assert len(set(every.values())) == len(names)
    with pytest.raises(codedeps.CodeDepsError, match="has no entry no_such_entry"):
        entry_data.entry_fingerprints("planning/reported.yaml", ["no_such_entry"])
    with pytest.raises(codedeps.CodeDepsError, match="reads .'planning/reported.yaml'. entry by entry"):
        entry_data.data_entries_param("cli:table", {})


def _planned_tables(result) -> set[str]:
    return set(re.findall(r"wildcards: table=([\w-]+)", result.stdout + result.stderr))


@pytest.mark.slow
def test_an_edit_of_one_published_number_replans_only_its_readers(tmp_path, shared_data, tiny_models, request):
    """A finished frozen-baseline run (every table and the verdicts built); a copy of the checkout edited."""
    workdir = tmp_path / "work"
    overlay = tiny_overlay(shared_data, tiny_models)
    overlay.update({"matrix": only_blocks({"tiny-frozen": {"backbones": ["tiny-bert"], "methods": ["frozen-avg"],
                                                           "seeds": [0]}}),
                    "export": {"enabled": False}})
    overlay["evaluation"].update({"suites": only_units("suites", ["sts"]), "figures": only_units("figures", [])})
    write_overlay(workdir, overlay)
    snakemake(workdir)
    repo = copy_checkout(tmp_path / "checkout")
    reported = repo / "src" / "sentrepro" / "planning" / "reported.yaml"
    original = reported.read_text(encoding="utf-8")
    dry_runs = DryRuns(workdir, repo=repo)
    request.addfinalizer(dry_runs.close)
    assert planned_jobs(dry_runs.plan()) == {}

    # one number of ConPVP Table 3 (bert-base SimCSE, STS12): its two tables and the verdicts
    assert "68.40, 82.41" in original
    reported.write_text(original.replace("68.40, 82.41", "68.41, 82.41", 1), encoding="utf-8")
    done = dry_runs.plan()
    tables, claimed = reported_entry_readers("conpvp_table3", repo / "src" / "sentrepro")
    assert tables == {"conpvp_table3", "sts_main"} and claimed
    assert planned_jobs(done) == {"table": len(tables), "verdicts": 1, "all": 1}, done.stdout[-3000:]
    assert _planned_tables(done) == tables

    # an entry no table reads (a paper's text, kept for the tests): nothing
    edited = re.sub(r"(promptbert_knowl5_text:.*?values: \[)(\d+\.\d+)", lambda m: f"{m.group(1)}{float(m.group(2)) + 1:.2f}",
                    original, count=1, flags=re.S)
    assert edited != original
    reported.write_text(edited, encoding="utf-8")
    assert reported_entry_readers("promptbert_knowl5_text", repo / "src" / "sentrepro") == (set(), False)
    assert planned_jobs(dry_runs.plan()) == {}

    # a new entry, and a comment: nothing
    new = yaml.safe_load(original)["conpvp_table4"]
    reported.write_text("# a comment\n" + original + "\n" + yaml.safe_dump({"probe_table": new}), encoding="utf-8")
    assert planned_jobs(dry_runs.plan()) == {}
    reported.write_text(original, encoding="utf-8")


def test_the_workflow_refuses_a_reader_of_reported_yaml_without_its_entries(tmp_path):
    repo = copy_checkout(tmp_path / "checkout")
    rules = repo / "workflow" / "rules" / "report.smk"
    text = rules.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines(keepends=True) if x.strip().startswith('data_entries=entry_data("cli:table"'))
    rules.write_text(text.replace(line, ""), encoding="utf-8")
    write_overlay(tmp_path / "work", {})
    done = snakemake(tmp_path / "work", "-n", repo=repo, check=False, timeout=300)
    assert done.returncode != 0
    assert "rule table runs 'cli:table', whose code reads planning/reported.yaml entry by entry, but has no " \
           "params.data_entries" in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
