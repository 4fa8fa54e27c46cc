"""Planning and validating a config import nothing heavy: no rule body runs while Snakemake plans, so the
numeric and learning libraries (scipy, pandas, torch, transformers, scikit-learn, matplotlib) are imported
by the functions that use them, in the jobs, never at module level of what the Snakefile or
``sentrepro check-config`` / ``sentrepro registry`` import. Each check runs in a fresh interpreter and reads
its ``sys.modules`` at exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflow_helpers import REPO

HEAVY = ("torch", "scipy", "pandas", "transformers", "sklearn", "matplotlib")

# Runs ``main(argv)`` of a module, then (at exit, also after SystemExit) writes the top-level names of every
# module imported to the file named by the first argument.
PROBE = """
import atexit, importlib, json, sys
out, module, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted({m.split(".")[0] for m in sys.modules}))))
main = importlib.import_module(module).main
if module == "snakemake.cli":
    sys.argv = ["snakemake", *argv]
    main()
else:
    sys.exit(main(argv))
"""


def imported_top_level(tmp_path: Path, module: str, *argv: str) -> set[str]:
    """The top-level modules a fresh interpreter has imported after ``<module>.main(argv)``."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-c", PROBE, str(out), module, *argv], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return set(json.loads(out.read_text()))


def test_the_probe_sees_a_heavy_import(tmp_path, monkeypatch):
    """The probe itself can fail: a command that imports scipy is seen to."""
    (tmp_path / "heavy.py").write_text("import scipy.stats\n\ndef main(argv):\n    return 0\n")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    assert "scipy" in imported_top_level(tmp_path, "heavy")


@pytest.mark.parametrize("argv", [("check-config", "config.yaml", "profiles/demo/overlay.yaml"), ("registry",)],
                         ids=["check-config", "registry"])
def test_config_commands_import_nothing_heavy(tmp_path, argv):
    modules = imported_top_level(tmp_path, "sentrepro.cli", *argv)
    assert {"sentrepro", "yaml", "jsonschema"} <= modules  # the command ran
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def plan_modules(tmp_path: Path, snakefile: Path, *configfiles: Path) -> set[str]:
    """The top-level modules ``snakemake -n --quiet rules`` imports planning ``snakefile``."""
    configs = ["--configfiles", *map(str, configfiles)] if configfiles else []
    return imported_top_level(tmp_path, "snakemake.cli", "-n", "--quiet", "rules", "-s", str(snakefile),
                              "-d", str(tmp_path / "work"), *configs)


@pytest.mark.slow
def test_a_dry_run_of_the_paper_config_imports_nothing_heavy(tmp_path):
    """Snakemake itself imports pandas at start-up (its SLURM executor plugin's efficiency report), for any
    workflow: what a plan of ours imports is compared with a one-rule workflow's plan, and nothing heavy
    may be added; torch, scipy, transformers, scikit-learn and matplotlib may not appear at all."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("{}\n")
    modules = plan_modules(tmp_path, REPO / "Snakefile", REPO / "config.yaml", overlay)
    assert {"sentrepro", "snakemake", "jsonschema"} <= modules  # the Snakefile was loaded
    trivial = tmp_path / "trivial" / "Snakefile"
    trivial.parent.mkdir()
    trivial.write_text("rule all:\n    input: []\n")
    baseline = plan_modules(tmp_path / "trivial", trivial)
    assert "sentrepro" not in baseline
    assert not (modules - baseline) & set(HEAVY), sorted((modules - baseline) & set(HEAVY))
    assert not modules & (set(HEAVY) - {"pandas"}), sorted(modules & set(HEAVY))
