"""The generated pages of the documentation site are what their generators write today.

``docs/reference/configuration.md`` comes from the config schema and the units' sidecars,
``docs/reference/outputs.md`` from the workflow's rules, ``docs/img/rulegraph.dot`` (drawn as the README's
picture) from ``snakemake --rulegraph`` (``docs/gen/``). A schema key, a sidecar parameter, a rule or an output
added, removed or described anew changes the page, and these tests fail until ``python docs/gen/generate.py``
(or ``docs/gen/rulegraph.py``) is run and the result committed. Beside the comparison, each page is checked
against the code by a walk of its own (every property name of the schema, every rule and output file), so a
generator that silently dropped something would fail too.
"""

from __future__ import annotations

import copy
import html
import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "docs" / "gen"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_gen_{name}", GEN / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


config_reference = _load("config_reference")
outputs_reference = _load("outputs_reference")
commands_reference = _load("commands_reference")
benchmarks_reference = _load("benchmarks_reference")
rulegraph = _load("rulegraph")
CONFIG_PAGE = ROOT / "docs" / "reference" / "configuration.md"
OUTPUTS_PAGE = ROOT / "docs" / "reference" / "outputs.md"
COMMANDS_PAGE = ROOT / "docs" / "reference" / "commands.md"
BENCHMARKS_PAGE = ROOT / "docs" / "reference" / "benchmarks.md"


def _property_names(node, found: set[str]) -> set[str]:
    """Every name under a ``properties`` mapping anywhere in a JSON schema (``$defs`` included)."""
    if isinstance(node, dict):
        for name, child in (node.get("properties") or {}).items():
            found.add(name)
            _property_names(child, found)
        for key, child in node.items():
            if key != "properties":
                _property_names(child, found)
    elif isinstance(node, list):
        for child in node:
            _property_names(child, found)
    return found


def _plain(page: str) -> str:
    """The page's table cells as text: ``<code>data.<wbr>sources</code>`` -> ``data.sources``."""
    return html.unescape(page.replace("<wbr>", "").replace("<code>", "").replace("</code>", ""))


def _documented_names(page: str) -> set[str]:
    """The last part of every key in the page's tables (``data.sources.<name>.url`` -> ``url``)."""
    keys = re.findall(r"^\| ([^ |]+) \|", _plain(page), flags=re.MULTILINE)
    return {re.split(r"\.|\[\]", key.rstrip("[]"))[-1] for key in keys}


def test_the_configuration_reference_is_generated_from_the_schema():
    assert CONFIG_PAGE.read_text(encoding="utf-8") == config_reference.render(), \
        "stale: run `python docs/gen/generate.py` and commit docs/reference/configuration.md"


def test_every_schema_and_sidecar_key_is_on_the_configuration_page():
    from sentrepro.planning import registry
    from sentrepro.planning.config import schema

    names = _property_names(schema(), set())
    for kind in registry.methods():
        names |= _property_names(registry.parameter_schema(kind), set())
    names.discard("<name>")
    missing = sorted(names - _documented_names(CONFIG_PAGE.read_text(encoding="utf-8")))
    assert names and not missing, missing


def test_a_new_or_redescribed_schema_key_changes_the_page(monkeypatch):
    from sentrepro.planning import config

    committed = CONFIG_PAGE.read_text(encoding="utf-8")
    changed = copy.deepcopy(config.schema())
    changed["properties"]["training"]["properties"]["warp_drive"] = {
        "type": "boolean", "default": False, "description": "a key the page has not seen"}
    changed["properties"]["training"]["properties"]["attention"]["description"] = "described anew"
    monkeypatch.setattr(config, "schema", lambda: copy.deepcopy(changed))
    page = config_reference.render()
    assert page != committed
    assert "| training.warp_drive | boolean | `false` |  | a key the page has not seen |" in _plain(page)
    assert "described anew" in page and "warp_drive" not in _documented_names(committed)


def test_the_outputs_reference_is_generated_from_the_rules():
    assert OUTPUTS_PAGE.read_text(encoding="utf-8") == outputs_reference.render(), \
        "stale: run `python docs/gen/generate.py` and commit docs/reference/outputs.md"


def test_every_rule_says_what_its_files_hold_and_every_file_is_listed():
    rules, config = outputs_reference.load_rules()
    page = _plain(OUTPUTS_PAGE.read_text(encoding="utf-8"))
    undescribed = [rule.name for rule in rules if rule.name != "all" and not (rule.docstring or "").strip()]
    assert not undescribed, f"rules without a docstring (what their outputs hold): {undescribed}"
    written = [str(item) for rule in rules for item in [*rule.output, *rule.log, *([rule.benchmark] or [])] if item]
    assert len(written) > 60
    # each file's last part (its name pattern, constraints dropped) is on the page, under its rule
    for rule in rules:
        if rule.name == "all":
            continue
        assert f"## {rule.name}\n" in page, rule.name
        for item in [*rule.output, *rule.log] + ([rule.benchmark] if rule.benchmark else []):
            tail = re.sub(r"\{(\w+)(,[^/]*)?\}", r"<\1>", str(item).rsplit("/", 1)[-1])
            assert re.search(rf"\| [^ |]*/{re.escape(tail)} \| \[`{rule.name}`\]", page), (rule.name, tail)


def test_the_command_reference_is_generated_from_the_parser():
    assert COMMANDS_PAGE.read_text(encoding="utf-8") == commands_reference.render(), \
        "stale: run `python docs/gen/generate.py` and commit docs/reference/commands.md"


def test_every_subcommand_and_option_is_on_the_command_page(monkeypatch):
    import argparse

    from sentrepro.cli import build_parser

    monkeypatch.setenv("COLUMNS", "37")  # a narrow terminal changes nothing on the page
    assert commands_reference.render() == COMMANDS_PAGE.read_text(encoding="utf-8")
    page = COMMANDS_PAGE.read_text(encoding="utf-8")
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(subparsers.choices) > 15
    for name, sub in subparsers.choices.items():
        section = page.split(f"## `sentrepro {name}`\n", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            for option in action.option_strings:
                assert option in ("-h", "--help") or f"`{option}`" in section, (name, option)


def test_the_benchmark_reference_is_generated_from_the_units():
    assert BENCHMARKS_PAGE.read_text(encoding="utf-8") == benchmarks_reference.render(), \
        "stale: run `python docs/gen/generate.py` and commit docs/reference/benchmarks.md"


def _table_rows(section: str, header: str) -> list[str]:
    """The rows of the table in ``section`` whose header line starts with ``header``."""
    block = section.split(f"\n{header}", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()[2:]


def test_every_unit_layout_task_and_counted_data_set_is_on_the_benchmark_page():
    """The page's own walk of the registry: a generator that dropped a unit, a layout, a task or a count would
    still match a page written by itself, so each is looked for in its unit's section."""
    from sentrepro.data import benchmarks

    page = BENCHMARKS_PAGE.read_text(encoding="utf-8")
    variants = page.split("## STS text variants\n", 1)[1].split("\n## ", 1)[0]
    for name, text in benchmarks.TEXT_VARIANTS.items():
        assert f"| `{name}` | {text} |" in variants
    units = benchmarks.benchmarks()
    assert len(units) >= 5 and page.count("\n## `") == len(units)
    for name, unit in units.items():
        section = page.split(f"\n## `{name}`\n", 1)[1].split("\n## ", 1)[0]
        assert unit.description in section
        assert ("`sentrepro fixture " + name + "`" in section) == (unit.fixture is not None)
        for group, tasks in unit.tasks.items():
            assert f"| `{group}` | " + ", ".join(f"`{t}`" for t in tasks) + " |" in section
        for layout_name, layout in unit.layouts.items():
            row = next(r for r in _table_rows(section, "| layout |") if r.startswith(f"| `{layout_name}` | "))
            assert benchmarks_reference._cell(layout.description) in row
            assert ("no STS text" in row) == (not layout.holds_sts)
            if layout.holds_sts:
                assert (f"`{layout.default_variant}`" in row) if layout.default_variant else ("required" in row)
        for (dataset, part), n in unit.counts.items():
            row = next(r for r in _table_rows(section, "| data set |") if r.startswith(f"| `{dataset}` | "))
            assert f"{part}: {n:,}" in row
        for dataset, k in unit.classes.items():
            row = next(r for r in _table_rows(section, "| data set |") if r.startswith(f"| `{dataset}` | "))
            assert row.endswith(f" | {k} |") or f" | {k} ({unit.parent_classes.get(dataset)} parent classes) |" in row


def test_the_rule_graph_is_the_workflows():
    assert rulegraph.DOT.read_text(encoding="utf-8") == rulegraph.rulegraph(), \
        "stale: run `python docs/gen/rulegraph.py` (needs Graphviz) and commit docs/img/rulegraph.dot and docs/img/rulegraph.svg"


def test_the_rule_graph_picture_is_its_dot_file_drawn():
    if shutil.which("dot") is None or shutil.which("tred") is None:
        pytest.skip("Graphviz is not installed (`make docs-deps` installs it as root)")
    svg = rulegraph.SVG.read_text(encoding="utf-8")
    assert svg == rulegraph.render_svg(rulegraph.DOT.read_text(encoding="utf-8")), \
        "stale: run `python docs/gen/rulegraph.py` and commit docs/img/rulegraph.svg"
    labels = re.findall(r'label = "(\w+)"', rulegraph.DOT.read_text(encoding="utf-8"))
    assert len(labels) > 20 and all(f">{label}<" in svg for label in labels)


def test_the_canonical_form_ignores_snakemakes_numbering():
    one = 'digraph g {\n\tx;\n\t0[label = "b", c];\n\t1[label = "a", c];\n\t0 -> 1\n}\n'
    two = 'digraph g {\n\tx;\n\t7[label = "a", c];\n\t3[label = "b", c];\n\t3 -> 7\n}\n'
    assert rulegraph.canonical(one) == rulegraph.canonical(two)
    assert rulegraph.canonical(one) != rulegraph.canonical(one.replace("0 -> 1", "1 -> 0"))
