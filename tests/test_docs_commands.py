"""Every command the README and the manual show exists, and the ones marked runnable run.

The commands are read from the Markdown (``tests/docs_commands.py``): a renamed subcommand, option, make target
or Makefile variable fails the first test, naming the file and line that still shows the old one. The blocks
marked ``<!-- runnable -->`` run, as a reader would type them, in a copy of the checkout holding a finished tiny
run of the workflow (experiment ``demo``, so that the paths the documentation shows are the run's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import docs_commands as docs
from tests.workflow_helpers import REPO, copy_checkout, snakemake, tiny_overlay, write_overlay


def _all_commands(root: Path = REPO) -> list:
    return [command for path in docs.documentation_files(root) for command in docs.commands(path)]


def test_every_documented_command_subcommand_flag_and_target_exists():
    found = _all_commands()
    assert {c.words[0] for c in found} == set(docs.COMMANDS)
    assert any(c.concrete for c in found) and any(c.runnable for c in found)
    assert any(c.where.startswith("README.md") for c in found)
    assert docs.problems(found) == []


def test_a_renamed_flag_subcommand_or_target_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "usage.md"
    page.write_text("```bash\nsentrepro check-config --profile profiles/demo\nsnakemake -n --profile slurm\n"
                    "make test-fast\n```\n\nInline: `sentrepro audit <csv> <row> <column>`, `make mutation "
                    "MUTATION_ARGS=x`.\n", encoding="utf-8")
    assert docs.problems(docs.commands(page)) == []
    page.write_text("```bash\nsentrepro check-config --profiles profiles/demo\nsnakemake -n --profiel slurm\n"
                    "make test-quick\n```\n\nInline: `sentrepro trace <csv> <row> <column>`, `sentrepro audit "
                    "--verbose`, `make mutation MUTATE=x`.\n", encoding="utf-8")
    said = "\n".join(docs.problems(docs.commands(page)))
    for expected in ("usage.md:2", "--profiles", "usage.md:3", "--profiel", "no make target 'test-quick'",
                     "no subcommand 'trace'", "['--verbose']", "'MUTATE'"):
        assert expected in said, (expected, said)


def test_messages_and_placeholders_are_not_commands(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("`sentrepro evaluate: --spec is not valid JSON` and `sentrepro <command> --help`;\n"
                    "```python\nmake = 1\n```\n```yaml\nsnakemake: x\n```\n", encoding="utf-8")
    assert docs.commands(page) == []


@pytest.fixture(scope="module")
def finished_tiny_checkout(tmp_path_factory, shared_data, tiny_models):
    """A copy of the checkout (workflow, package, profiles) in which a tiny run named ``demo`` has finished."""
    workdir = copy_checkout(tmp_path_factory.mktemp("docs") / "repo")
    shutil.copytree(REPO / "profiles", workdir / "profiles")
    write_overlay(workdir, tiny_overlay(shared_data, tiny_models, experiment="demo"))
    snakemake(workdir, repo=workdir)
    return workdir


@pytest.mark.slow
def test_the_runnable_blocks_run_on_a_finished_tiny_run(finished_tiny_checkout):
    runnable = [c for c in _all_commands() if c.runnable]
    assert len(runnable) >= 3
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(finished_tiny_checkout / "src"), "OMP_NUM_THREADS": "1"}
    for line in dict.fromkeys(c.line for c in runnable):
        done = subprocess.run(["bash", "-c", line], cwd=finished_tiny_checkout, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
