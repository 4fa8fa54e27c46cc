"""Config layers (issue 32): overlays that add, a profile's overlay that cannot be dropped silently, method
params with ``default:`` and ``required:``, and the four user mistakes, each one line naming its file and key,
exit 2, through both ``snakemake -n`` and ``sentrepro check-config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentrepro.planning.config import load_config
from sentrepro.planning.matrix import runs
from tests.workflow_helpers import REPO, copy_checkout

PROFILE = "profiles/demo"
DEMO_OVERLAY = REPO / PROFILE / "overlay.yaml"

# A new method kind as the user wrote it: SimCSE's loss with mean pooling, module + sidecar.
MODULE = '''"""SimCSE's loss, mean pooling (a test kind)."""
from sentrepro.methods.simcse import SimCSE


class MeanCSE(SimCSE):
    kind = "meancse"
'''
SIDECAR = """methods:
  meancse:
    implementation: MeanCSE
    trains: true
    {corpus_key}: sentences
    authors_precision: fp16
    params:
      temperature: {{type: number, exclusiveMinimum: 0, required: true}}
      max_seq_length: {{type: integer, minimum: 4, default: 32}}
      mlp_only_train: {{type: boolean, default: true}}
    cost: {{encoder_passes: 2, sequence_factor: 1.0}}
"""


def _env(repo: Path) -> dict:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    if repo != REPO:
        env["PYTHONPATH"] = str(repo / "src")
    return env


def check_config(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """``sentrepro check-config ARGS`` run in ``repo`` with ``repo``'s package."""
    return subprocess.run([sys.executable, "-m", "sentrepro.cli", "check-config", *args], cwd=repo, env=_env(repo),
                          capture_output=True, text=True, timeout=300)


def dry_run(repo: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """``snakemake -n ARGS`` started in ``repo`` (where the profile's relative paths point), planning in
    ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text((repo / "config.yaml").read_text())  # the Snakefile's configfile:
    env = {**_env(repo), "PWD": str(repo)}
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(workdir),
                           "-n", "--cores", "1", *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)


def one_line(result: subprocess.CompletedProcess, *needles: str) -> str:
    """The one output line holding every needle (the error a user reads), checked to be the only one."""
    text = result.stdout + result.stderr
    lines = [line for line in text.splitlines() if all(n in line for n in needles)]
    assert len(lines) == 1, f"expected one line with {needles}, got {lines}:\n{text[-3000:]}"
    return lines[0]


def assert_check_config_one_line(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr  # one line, nothing else
    one_line(result, *needles)


def assert_snakemake_one_line(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0 and "Job stats" not in result.stdout, result.stdout[-2000:]
    one_line(result, *needles)


@pytest.fixture(scope="module")
def with_meancse(tmp_path_factory):
    """A copy of the checkout with the meancse kind (module + sidecar)."""
    repo = copy_checkout(tmp_path_factory.mktemp("layers") / "checkout")
    (repo / "profiles").mkdir()
    (repo / PROFILE).mkdir()
    for name in ("config.yaml", "overlay.yaml"):
        (repo / PROFILE / name).write_text((REPO / PROFILE / name).read_text())
    methods = repo / "src" / "sentrepro" / "methods"
    (methods / "meancse.py").write_text(MODULE)
    (methods / "meancse.units.yaml").write_text(SIDECAR.format(corpus_key="training_corpus"))
    return repo


# --- overlays add ---------------------------------------------------------------------------------


def test_an_overlay_adds_a_block_a_suite_and_removes_a_block(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("matrix:\n  extra: {backbones: [minilm], methods: [frozen-last2avg], seeds: [0]}\n"
                    "  demo-frozen: null\n"
                    "evaluation:\n  suites: {wos: false}\n")
    demo = load_config(REPO / "config.yaml", DEMO_OVERLAY)
    mixed = load_config(REPO / "config.yaml", DEMO_OVERLAY, mine)
    added = set(runs(mixed)) - set(runs(demo))
    removed = set(runs(demo)) - set(runs(mixed))
    assert {(r.method, r.seed) for r in added} == {("frozen-last2avg", None)}
    assert {r.method for r in removed} == {"frozen-cls", "frozen-avg", "frozen-first-last"}
    assert "wos" in demo["evaluation"]["suites"] and "wos" not in mixed["evaluation"]["suites"]
    assert mixed["evaluation"]["suites"] == [s for s in demo["evaluation"]["suites"] if s != "wos"]


# --- the four mistakes ------------------------------------------------------------------------------


def test_profile_overlay_dropped_is_one_line_naming_the_profile(tmp_path):
    mine = tmp_path / "my.yaml"
    mine.write_text("methods:\n  simcse:\n    params: {temperature: 0.05}\n")  # valid on its own
    needles = ("profiles/demo/config.yaml", "configfiles", "profiles/demo/overlay.yaml")
    assert_check_config_one_line(check_config(REPO, "--profile", PROFILE, "--configfile", str(mine)), *needles)
    assert_snakemake_one_line(dry_run(REPO, tmp_path / "work", "--profile", PROFILE, "--configfile", str(mine)),
                              *needles)
    # the documented form keeps the demo and adds the change
    kept = check_config(REPO, "--profile", PROFILE, "--configfiles", "profiles/demo/overlay.yaml", str(mine))
    assert kept.returncode == 0 and "experiment 'demo'" in kept.stdout, kept.stderr


def test_unknown_parameter_in_a_user_overlay_names_file_line_and_key(tmp_path):
    mine = tmp_path / "my.yaml"
    mine.write_text("methods:\n  simcse:\n    params:\n      temprature: 0.05\n")
    needles = (f"{mine}:4:", "methods.simcse.params.temprature")
    files = ("--configfiles", "profiles/demo/overlay.yaml", str(mine))
    assert_check_config_one_line(check_config(REPO, "--profile", PROFILE, *files), *needles)
    assert_snakemake_one_line(dry_run(REPO, tmp_path / "work", "--profile", PROFILE, *files), *needles)


def test_sidecar_typo_names_the_sidecar_and_key(with_meancse, tmp_path):
    sidecar = with_meancse / "src" / "sentrepro" / "methods" / "meancse.units.yaml"
    sidecar.write_text(SIDECAR.format(corpus_key="training_corpos"))
    try:
        needles = (str(sidecar), "methods.meancse", "training_corpos")
        assert_check_config_one_line(check_config(with_meancse, "--profile", PROFILE), *needles)
        assert_snakemake_one_line(dry_run(with_meancse, tmp_path / "work", "--profile", PROFILE), *needles)
    finally:
        sidecar.write_text(SIDECAR.format(corpus_key="training_corpus"))


def test_missing_required_parameter_names_the_overlay_and_key(with_meancse, tmp_path):
    mine = tmp_path / "my.yaml"
    mine.write_text("methods:\n  meancse:\n    kind: meancse\n    params: {batch_size: 8, lr: 5.0e-5, max_steps: 4}\n"
                    "matrix:\n  mine: {backbones: [minilm], methods: [meancse], seeds: [42]}\n")
    needles = (f"{mine}:4:", "methods.meancse.params.temperature", "meancse.units.yaml")
    files = ("--configfiles", "profiles/demo/overlay.yaml", str(mine))
    assert_check_config_one_line(check_config(with_meancse, "--profile", PROFILE, *files), *needles)
    assert_snakemake_one_line(dry_run(with_meancse, tmp_path / "work", "--profile", PROFILE, *files), *needles)


def test_the_training_loop_requires_lr_and_batch_size(tmp_path):
    mine = tmp_path / "my.yaml"
    mine.write_text("methods:\n  bare:\n    kind: simcse\n    params: {temperature: 0.05, max_seq_length: 32}\n"
                    "matrix:\n  mine: {backbones: [minilm], methods: [bare], seeds: [42]}\n")
    result = check_config(REPO, "config.yaml", "profiles/demo/overlay.yaml", str(mine))
    assert result.returncode == 2
    assert {line.split(": ", 1)[1].split(":")[0] for line in result.stderr.splitlines()} == {
        "methods.bare.params.batch_size", "methods.bare.params.lr"}
    assert all(line.startswith(f"{mine}:4:") and "TrainSettings" in line for line in result.stderr.splitlines())


# --- default: in a method sidecar ---------------------------------------------------------------------


def test_a_sidecar_default_fills_the_key_and_is_in_the_jobs_spec(with_meancse, tmp_path):
    mine = tmp_path / "my.yaml"
    mine.write_text("methods:\n  meancse:\n    kind: meancse\n    params: {temperature: 0.05, batch_size: 8, lr: 5.0e-5}\n"
                    "matrix:\n  mine: {backbones: [minilm], methods: [meancse], seeds: [42]}\n")
    checked = check_config(with_meancse, "--profile", PROFILE, "--configfiles", "profiles/demo/overlay.yaml", str(mine))
    assert checked.returncode == 0, checked.stderr
    planned = dry_run(with_meancse, tmp_path / "work", "--profile", PROFILE, "--configfiles",
                      "profiles/demo/overlay.yaml", str(mine), "-p", "results/demo/runs/minilm/meancse/seed42/train.json")
    assert planned.returncode == 0, planned.stderr[-3000:]
    spec = json.loads(planned.stdout.split("sentrepro train --spec '", 1)[1].split("'", 1)[0])
    assert spec["method"]["params"]["max_seq_length"] == 32 and spec["method"]["params"]["mlp_only_train"] is True
