"""`snakemake --lint` passes on the workflow (style rules of the Snakemake catalogue)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_snakemake_lint_is_clean():
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    result = subprocess.run([snakemake, "--lint"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr
