"""The fault harness's own bookkeeping (benchmarks/slurm_faults.py): its digest of a run, the reference a digest
stands in for, the jobs it reads from Snakemake's output, the schedule a seed draws. Unit tier: no cluster."""

from __future__ import annotations

import json

import pytest

from benchmarks import slurm_faults as harness


def _run_folder(root, score=0.5, table="table,row,column,value,std,n,reported,provenance\n"):
    metrics = root / "results" / "rehearsal" / "metrics" / "sts" / "m.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text(json.dumps({"results": {"stsb": score}, "provenance": {"wall_seconds": 3.2}}))
    tables = root / "results" / "rehearsal" / "tables"
    tables.mkdir(parents=True)
    (tables / "t.csv").write_text(table)
    return root


def test_a_digest_stands_in_for_its_folder(tmp_path):
    reference = _run_folder(tmp_path / "reference")
    faulted = _run_folder(tmp_path / "faulted")
    digest = tmp_path / "digest.json"
    written = harness.write_digest(reference, digest, "whole", None)
    assert written["slice"] == "whole" and set(written["files"]) == {
        "results/rehearsal/metrics/sts/m.json", "results/rehearsal/tables/t.csv"}
    assert not list(tmp_path.glob("*.tmp"))
    assert harness.reference_digest(digest) == harness.reference_digest(reference)
    ours = harness.digest_of(harness.results_of(faulted))
    assert ours == harness.reference_digest(digest)


def test_a_digest_tells_a_changed_result_and_ignores_timings(tmp_path):
    reference = harness.digest_of(harness.results_of(_run_folder(tmp_path / "a")))
    other = _run_folder(tmp_path / "b")
    metrics = other / "results" / "rehearsal" / "metrics" / "sts" / "m.json"
    metrics.write_text(json.dumps({"results": {"stsb": 0.5}, "provenance": {"wall_seconds": 99.0}}))
    assert harness.digest_of(harness.results_of(other)) == reference
    metrics.write_text(json.dumps({"results": {"stsb": 0.5000001}, "provenance": {"wall_seconds": 3.2}}))
    changed = harness.digest_of(harness.results_of(other))
    assert [name for name in reference if reference[name] != changed[name]] == [
        "results/rehearsal/metrics/sts/m.json"]


def test_a_table_cells_metrics_pin_is_a_wall_clock_cell(tmp_path):
    row = "t,r,c,0.5,,1,,results/rehearsal/metrics/sts/m.json#sha256=" + "a" * 64 + "\n"
    head = "table,row,column,value,std,n,reported,provenance\n"
    one = harness.digest_of(harness.results_of(_run_folder(tmp_path / "a", table=head + row)))
    two = harness.digest_of(harness.results_of(_run_folder(tmp_path / "b", table=head + row.replace("a" * 64,
                                                                                                      "b" * 64))))
    three = harness.digest_of(harness.results_of(_run_folder(tmp_path / "c", table=head + row.replace("0.5", "0.6",
                                                                                                        1))))
    assert one == two and one != three


@pytest.mark.parametrize("content", ['{"format": 1, "files": {}}', '{"format": 2, "files": {"a": "b"}}',
                                     '{"files": {"a": "b"}}', '[]'])
def test_a_reference_that_is_no_digest_is_refused_by_name(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(SystemExit, match="bad.json"):
        harness.reference_digest(bad)


def test_a_seed_draws_the_same_schedule_every_time():
    one, two = harness.schedule(3, 600), harness.schedule(3, 600)
    assert [(f.kind, f.after_jobs) for f in one] == [(f.kind, f.after_jobs) for f in two]
    assert sorted(f.kind for f in one) == sorted(k for k, n in harness.FAULTS.items() for _ in range(n))
    assert all(0 <= f.after_jobs <= 540 for f in one)
    assert [(f.kind, f.after_jobs) for f in harness.schedule(4, 600)] != [(f.kind, f.after_jobs) for f in one]


def test_the_jobs_an_attempt_started_are_read_once_each_without_failed_logs():
    output = """
rule train:
    jobid: 12
    wildcards: backbone=bert-base, method=simcse, seed=0
    resources: gpu=1

group job evaluate (jobs in lexicogr. order):

    rule evaluate_sts:
        jobid: 30
        wildcards: backbone=bert-base, method=simcse, seed=0

Logfile results/slurm_logs/x.log:
================================================================================
rule tokenize:
    jobid: 99
    wildcards: name=never
================================================================================
"""
    assert harness.ran_jobs(output) == [("train", "backbone=bert-base, method=simcse, seed=0"),
                                        ("evaluate_sts", "backbone=bert-base, method=simcse, seed=0")]


def test_the_files_two_configs_share_are_compared_against_a_digest_too(tmp_path):
    whole = _run_folder(tmp_path / "whole")
    (whole / "results" / "rehearsal" / "metrics" / "sts" / "other.json").write_text(json.dumps({"results": {"x": 1}}))
    digest = tmp_path / "whole.json"
    harness.write_digest(whole, digest, "whole", None)
    part = _run_folder(tmp_path / "part")
    assert harness.compare_common(part, digest) == (1, [])
    assert harness.compare_common(part, whole) == (1, [])
    (part / "results" / "rehearsal" / "metrics" / "sts" / "m.json").write_text(json.dumps({"results": {"stsb": 0.4}}))
    shared, differ = harness.compare_common(part, digest)
    assert shared == 1 and differ == [f"results/rehearsal/metrics/sts/m.json: differs from {digest}"]


PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}


def _with_device(root, capability, cpu, numerics_env=None, name="m.json"):
    """Give the run's metrics file the device a torch job records."""
    metrics = root / "results" / "rehearsal" / "metrics" / "sts" / name
    data = json.loads(metrics.read_text()) if metrics.exists() else {"results": {"x": 1}, "provenance": {}}
    device = {"device": "cpu", "cpu": cpu, "cpu_capability": capability}
    if numerics_env:
        device["numerics_env"] = numerics_env
    data["provenance"]["device"] = device
    metrics.write_text(json.dumps(data))
    return root


def test_a_digest_records_the_kernels_and_a_reference_with_others_is_refused_in_one_line(tmp_path):
    reference = _with_device(_run_folder(tmp_path / "reference"), "AVX2", "AMD EPYC 7B13")
    digest = tmp_path / "digest.json"
    written = harness.write_digest(reference, digest, "whole", None)
    assert (written["format"], written["kernels"], written["cpus"]) == (2, ["AVX2"], ["AMD EPYC 7B13"])
    faulted = _with_device(_run_folder(tmp_path / "faulted", score=0.7), "AVX512", "Intel(R) Xeon(R) Processor")
    for ref in (digest, reference):
        problems = [p for p in harness.invariant(faulted, ref) if "lock journal" not in p]
        assert len(problems) == 1 and problems[0].startswith(f"{ref}: computed with kernels ['AVX2'] on "
                                                             "['AMD EPYC 7B13'], this run with ['AVX512']"), problems
        assert harness.compare_common(faulted, ref) == (0, problems)


def test_the_same_native_kernels_on_another_cpu_are_refused_and_portable_ones_compared(tmp_path):
    one = _with_device(_run_folder(tmp_path / "one"), "AVX512", "AMD EPYC 9B14")
    two = _with_device(_run_folder(tmp_path / "two", score=0.7), "AVX512", "Intel(R) Xeon(R) Processor")
    assert harness.kernel_mismatch(harness.kernels_of(two), harness.kernels_of(one), one)
    assert not harness.kernel_mismatch(harness.kernels_of(one), harness.kernels_of(one), one)
    _with_device(one, "DEFAULT", "AMD EPYC 9B14", PORTABLE)
    _with_device(two, "DEFAULT", "Intel(R) Xeon(R) Processor", PORTABLE)
    assert not harness.kernel_mismatch(harness.kernels_of(two), harness.kernels_of(one), one)
    problems = [p for p in harness.invariant(two, one) if "lock journal" not in p]
    assert problems == ["results/rehearsal/metrics/sts/m.json: differs from the reference run"]  # compared


def test_a_digest_of_format_1_has_no_kernels_and_is_compared_as_it_is(tmp_path):
    reference = _run_folder(tmp_path / "reference")
    digest = tmp_path / "old.json"
    digest.write_text(json.dumps({"format": 1, "files": harness.digest_of(harness.results_of(reference))}))
    assert harness.reference_kernels(digest) is None
    faulted = _with_device(_run_folder(tmp_path / "faulted"), "AVX512", "Intel(R) Xeon(R) Processor")
    assert [p for p in harness.invariant(faulted, digest) if "lock journal" not in p] == []


def test_a_run_whose_jobs_recorded_other_kernels_than_it_asked_for_is_a_problem(tmp_path):
    run = _with_device(_run_folder(tmp_path / "run"), "AVX512", "Intel(R) Xeon(R) Processor")
    assert harness.wrong_kernels(harness.kernels_of(run), "native") == []
    assert harness.wrong_kernels(harness.kernels_of(run), "portable") == [
        "--numerics portable asked for ['DEFAULT ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE "
        "ONEDNN_MAX_CPU_ISA=SSE41'], the jobs recorded ['AVX512']"]
    _with_device(run, "DEFAULT", "Intel(R) Xeon(R) Processor", PORTABLE)
    assert harness.wrong_kernels(harness.kernels_of(run), "portable") == []
    assert harness.wrong_kernels(harness.kernels_of(run), "native")
    _with_device(run, "AVX512", "Intel(R) Xeon(R) Processor", name="n.json")  # one job without the variables
    assert harness.kernel_mismatch(harness.kernels_of(run), None, None)[0].startswith(
        "this run's jobs computed with 2 kernel families")


def test_the_harness_gives_its_jobs_the_kernels_it_asks_for_and_nothing_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    monkeypatch.setenv("SLURM_FAULTS_NUMERICS", "portable")
    env = harness.workflow_env(tmp_path)
    assert {k: env.get(k) for k in (*PORTABLE, "MKL_ENABLE_INSTRUCTIONS")} == {**PORTABLE,
                                                                                "MKL_ENABLE_INSTRUCTIONS": None}
    monkeypatch.setenv("SLURM_FAULTS_NUMERICS", "native")
    assert not set(harness.workflow_env(tmp_path)) & {*PORTABLE, "MKL_ENABLE_INSTRUCTIONS"}
