"""The package stands alone: installed (not editable) into an empty virtual environment, it validates a
config and lists its registry from a directory outside the checkout.

The wheel is built from this checkout with the project environment's setuptools (no network) and installed
with ``pip --no-deps`` into a fresh ``python -m venv --without-pip`` environment. The only other things the
environment gets are the light libraries ``sentrepro check-config`` and ``sentrepro registry`` import
(PyYAML and jsonschema, with their own requirements): their installed files, linked into a folder named by a
``.pth`` file, so torch and the rest of the project environment stay out. Every command runs with a clean
environment (no PYTHONPATH) in a temporary directory, so nothing of the checkout can be read through the
working directory or a path guess.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# What config validation and the registry import (no torch: tests/test_plan_imports.py); requests and tqdm come
# with the data checks config validation runs (sentrepro.data.check imports the download code), numpy with
# the table specs the registry listing reads (sentrepro.tables.aggregate).
LIGHT = ("PyYAML", "jsonschema", "requests", "tqdm", "numpy")


def requirement_closure(names) -> list[str]:
    """The installed distributions ``names`` need, followed through their unconditional requirements (or
    ones whose marker holds here); extras are left out."""
    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen[key] = name
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(seen.values())


def top_level_paths(distribution: str) -> set[Path]:
    """The top-level files and folders a distribution installed (its modules and its .dist-info)."""
    dist = metadata.distribution(distribution)
    root = Path(dist.locate_file(""))
    return {root / Path(f).parts[0] for f in dist.files or [] if not Path(f).parts[0].startswith("..")}


def tracked_files() -> list[str]:
    return subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout.split()


def wheel(tmp: Path) -> Path:
    """The wheel of a copy of the checkout's files (what git tracks or would): a build in the checkout
    itself would reuse a stale build/ folder and hide a file the package-data globs miss."""
    source, out = tmp / "source", tmp / "wheel"
    for name in tracked_files():
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((REPO / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(out), str(source)], check=True, capture_output=True, text=True,
                   timeout=600)
    (found,) = out.glob("sentrepro-*.whl")
    return found


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory) -> Path:
    return wheel(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, built_wheel) -> Path:
    """A fresh venv with the wheel (not editable) and the light libraries only; returns its bin folder."""
    tmp = tmp_path_factory.mktemp("standalone")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(built_wheel)], check=True, capture_output=True, text=True, timeout=600)
    light = tmp / "light"
    light.mkdir()
    for distribution in requirement_closure(LIGHT):
        for path in top_level_paths(distribution):
            if path.exists() and not (light / path.name).exists():
                (light / path.name).symlink_to(path)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, env=clean_env(tmp)).stdout.strip()
    (Path(site) / "sentrepro-test-light.pth").write_text(f"{light}\n", encoding="utf-8")
    return venv / "bin"


def clean_env(home: Path) -> dict:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "SENTREPRO_FP_CACHE": "off", "LANG": "C.UTF-8"}


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], cwd=cwd, env=clean_env(cwd), capture_output=True,
                          text=True, timeout=600)


def test_the_wheel_ships_every_file_the_package_holds(built_wheel):
    """pyproject's package-data globs leave nothing out: every file under src/sentrepro (modules and data)
    is in the wheel, so a new kind of data file cannot be forgotten."""
    expected = {str(Path(p).relative_to("src")) for p in tracked_files() if p.startswith("src/sentrepro/")}
    assert any(not p.endswith(".py") for p in expected)  # the schema, the registry, the specs...
    assert "sentrepro/planning/config.schema.yaml" in expected
    with zipfile.ZipFile(built_wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("sentrepro/")}
    assert sorted(expected - shipped) == []


def test_check_config_and_registry_work_installed_outside_the_checkout(installed, tmp_path):
    where = run(installed, "python", "-c", "import sentrepro; print(sentrepro.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout  # the installed copy
    assert not Path(where.stdout.strip()).is_relative_to(REPO)
    heavy = run(installed, "python", "-c", "import torch", cwd=tmp_path)
    assert heavy.returncode != 0  # the environment is empty but for the light libraries

    config = tmp_path / "config.yaml"
    config.write_bytes((REPO / "config.yaml").read_bytes())  # a user's copy, outside the checkout
    checked = run(installed, "sentrepro", "check-config", "config.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert re.fullmatch(r"config OK: experiment 'paper', \d+ runs\n", checked.stdout)

    listed = run(installed, "sentrepro", "registry", "config.yaml", cwd=tmp_path)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "simcse" in listed.stdout and "sts" in listed.stdout

    config.write_text(config.read_text(encoding="utf-8").replace("experiment: paper", "experiment: [paper]", 1),
                      encoding="utf-8")
    broken = run(installed, "sentrepro", "check-config", "config.yaml", cwd=tmp_path)
    assert broken.returncode == 2 and "experiment" in broken.stderr  # the schema is read, and applied
