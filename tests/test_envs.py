"""The conda environments carry the same pins as requirements.txt (one source of truth for versions), and
neither they nor requirements.txt carry what only the tests or the loading of an export use."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)==([^\s#]+)", line)
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def test_env_pins_match_requirements():
    requirements = _pins((REPO / "requirements.txt").read_text().splitlines())
    envs = sorted((REPO / "envs").glob("*.yaml"))
    assert envs
    for env in envs:
        spec = yaml.safe_load(env.read_text())
        pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d)
        for name, version in _pins(pip).items():
            assert requirements.get(name) == version, f"{env.name}: {name}=={version} vs requirements.txt"


def test_every_rule_declares_a_conda_env():
    total = 0
    for rules in (REPO / "workflow" / "rules").glob("*.smk"):
        text = rules.read_text()
        rules_defined = len(re.findall(r"^\s*rule(?: \w+)?:", text, re.M))  # `rule name:`, or `rule:` in a loop
        assert rules_defined == text.count("conda:"), f"{rules.name}: a rule without conda:"
        total += rules_defined
    assert total >= 12


def _envs_pins() -> dict[str, dict[str, str]]:
    pins = {}
    for env in sorted((REPO / "envs").glob("*.yaml")):
        spec = yaml.safe_load(env.read_text())
        pins[env.name] = _pins(next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d))
    return pins


def test_runtime_installs_carry_no_test_or_export_only_package():
    """A cluster environment (envs/*.yaml) and requirements.txt hold none of requirements-test.txt's or
    requirements-export.txt's packages (mteb alone pulls ~440 MB), and the three files pin disjoint sets."""
    runtime = _pins((REPO / "requirements.txt").read_text().splitlines())
    export = _pins((REPO / "requirements-export.txt").read_text().splitlines())
    test = _pins((REPO / "requirements-test.txt").read_text().splitlines())
    assert "mteb" in test and "pytest" in test and "sentence-transformers" in export
    extra = set(export) | set(test)
    assert not (set(export) & set(test)) and not (set(runtime) & extra)
    for env, pins in _envs_pins().items():
        assert not (set(pins) & extra), f"envs/{env} carries {sorted(set(pins) & extra)}"


def test_the_extras_are_the_pinned_files():
    """pyproject's extras are read from the files the Makefile installs, never listed a second time."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = project["tool"]["setuptools"]["dynamic"]["optional-dependencies"]
    assert extras == {"export": {"file": ["requirements-export.txt"]},
                      "test": {"file": ["requirements-export.txt", "requirements-test.txt"]}}
    makefile = (REPO / "Makefile").read_text()
    assert "-r requirements-export.txt -r requirements-test.txt" in makefile
