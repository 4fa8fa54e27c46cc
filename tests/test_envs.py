"""The conda environments carry the same pins as requirements.txt (one source of truth for versions)."""

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
