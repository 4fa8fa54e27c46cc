"""`sentrepro registry`: the registry's entries, and the paper tables each feeds (derived from the table specs)."""

from __future__ import annotations

from pathlib import Path

import yaml

from sentrepro.planning import registry
from sentrepro.cli import main
from sentrepro.planning.config import load_config
from sentrepro.planning.overview import tables_by_kind, tables_by_suite, tables_reading
from sentrepro.planning.table_specs import SPECS_DIR

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_tables_each_suite_and_kind_feeds_come_from_the_specs():
    reads = tables_reading()
    by_suite = tables_by_suite(reads)
    assert by_suite["clustering"] == ["conpvp_table6"] and by_suite["wos"] == ["mocoutrl_table2", "mocoutrl_table3"]
    assert by_suite["anisotropy"] == ["promptbert_knowl4"] and by_suite["tsne"] == []
    # the same answer read independently: every spec file naming the suite in a cell (top-level, row or column)
    for suite, tables in by_suite.items():
        for path in sorted(SPECS_DIR.glob("*.yaml")):
            spec = yaml.safe_load(path.read_text())
            named = spec.get("suite") == suite or any(part.get("suite") == suite
                                                      for part in spec["rows"] + spec["columns"])
            if path.stem in tables:
                assert named, (suite, path.stem)
    by_kind = tables_by_kind(reads, load_config(REPO_ROOT / "config.yaml")["methods"])
    assert "mocoutrl_table2" in by_kind["mocoutrl"] and "mocoutrl_table2" not in by_kind["conpvp"]
    assert by_kind["optiprompt"] == ["promptbert_knowl7", "promptbert_knowl8"]


def test_the_command_lists_every_entry(capsys):
    assert main(["registry", str(REPO_ROOT / "config.yaml")]) == 0
    out = capsys.readouterr().out
    for name in [*registry.methods(), *registry.suites(), *registry.figures()]:
        assert f"\n  {name} " in out, name
    assert "sentrepro.methods.mocoutrl; mocoutrl_table1, mocoutrl_table2, mocoutrl_table3" in out
