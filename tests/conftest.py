"""Shared fixtures: where the real benchmark copies live, tiny local models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SENTREPRO_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark files (see ../shared/data/README.md)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real benchmark data not found at {SHARED_DATA}; set SENTREPRO_SHARED_DATA")
    return SHARED_DATA
