"""A syntax error in a YAML (or JSON) file of the package or the user is one line ``file:line:col: ...`` from
``sentrepro`` and from ``snakemake`` (issue 48), never ``<unicode string>`` and never a traceback."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.workflow_helpers import REPO, copy_checkout

CLAIMS = REPO / "src" / "sentrepro" / "verdicts" / "claims.yaml"


def broken_claims(target: Path) -> Path:
    """claims.yaml with an unclosed flow sequence at line 55 (as the issue's probe)."""
    lines = CLAIMS.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[54].strip().startswith("a: "), lines[54]
    lines[54] = lines[54].replace("a: ", "a: [", 1)
    target.write_text("".join(lines), encoding="utf-8")
    return target


def test_a_parse_error_names_the_file_it_came_from(tmp_path):
    from sentrepro.yaml_files import parse_yaml, yaml_error_line

    path = broken_claims(tmp_path / "claims.yaml")
    with open(path, encoding="utf-8") as handle, pytest.raises(yaml.YAMLError) as caught:
        parse_yaml(handle)
    line = yaml_error_line(caught.value)
    assert line.startswith(f"{path}:56:") and "YAML syntax error: did not find expected" in line, line
    assert "<unicode string>" not in line and "\n" not in line
    with pytest.raises(yaml.YAMLError) as caught:
        parse_yaml(path.read_text(encoding="utf-8"), name="given.yaml")
    assert yaml_error_line(caught.value).startswith("given.yaml:56:")


def test_every_package_yaml_is_checked_and_a_broken_one_named(tmp_path):
    from sentrepro.yaml_files import check_package_yaml, yaml_error_line

    assert check_package_yaml() >= 30  # the sidecars, specs, claims, reported numbers, the schema
    root = tmp_path / "pkg"
    shutil.copytree(CLAIMS.parent, root)
    broken_claims(root / "claims.yaml")
    with pytest.raises(yaml.YAMLError) as caught:
        check_package_yaml(root)
    assert yaml_error_line(caught.value).startswith(f"{root / 'claims.yaml'}:56:")


def test_sentrepro_verdicts_names_the_claims_file_line_and_column(tmp_path):
    path = broken_claims(tmp_path / "claims.yaml")
    done = subprocess.run([sys.executable, "-m", "sentrepro.cli", "verdicts", "--spec", "{}", "--out-prefix",
                           str(tmp_path / "v" / "verdicts"), "--claims", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == f"sentrepro verdicts: {path}:56:6: YAML syntax error: did not find expected ',' or ']'"


def test_snakemake_dry_run_names_a_broken_package_yaml_in_one_line_without_a_traceback(tmp_path):
    repo = copy_checkout(tmp_path / "repo")
    claims = broken_claims(repo / "src" / "sentrepro" / "verdicts" / "claims.yaml")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(repo / "src"),
           "OMP_NUM_THREADS": "1", "HOME": str(tmp_path), "SENTREPRO_FP_CACHE": str(tmp_path / "fp")}
    done = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "-s", str(repo / "Snakefile"),
                           "-d", str(tmp_path / "work"), "--configfile", str(repo / "config.yaml")],
                          capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert re.search(rf"^{re.escape(str(claims))}:56:6: YAML syntax error: did not find expected ',' or ']'",
                     out, re.M), out
    assert "<unicode string>" not in out and "yaml/_yaml.pyx" not in out and "codedeps.py" not in out, out


def test_a_broken_json_file_is_one_line_file_line_column(tmp_path):
    from sentrepro.cli import _user_error
    from sentrepro.files import read_json

    path = tmp_path / "MANIFEST.json"
    path.write_text('{"files": {\n  "a.txt" "0"}}\n', encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as caught:
        read_json(path)
    assert str(caught.value) == f"{path}:2:11: JSON syntax error: Expecting ':' delimiter"
    assert _user_error(caught.value) == (f"{path}:2:11: JSON syntax error: Expecting ':' delimiter", 2)
