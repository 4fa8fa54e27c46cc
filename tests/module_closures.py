"""Which package modules and data files each workflow rule's code uses, computed without sentrepro.code.codedeps.

Tests compare the workflow's code fingerprints against this independent answer: the entry point of a
rule is read from the text of its shell command in workflow/rules/*.smk, the modules it imports from
the standard library's ``modulefinder`` (a bytecode scanner that enters every function), and the data
files a module reads from the string literals of its source.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import inspect
import modulefinder
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "sentrepro"


def rule_entries(rules_dir: Path = REPO / "workflow" / "rules") -> dict[str, str]:
    """Rule -> ``cli:<command>`` (``sentrepro <command>``) or a module (``python -m <module>``)."""
    entries = {}
    for path in sorted(rules_dir.glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        # `rule name:` at the top level, or an anonymous `rule:` inside a loop naming itself with `name:`
        for match in re.finditer(r"^([ \t]*)rule ?(\w*):\n(.*?)(?=^\1\S|\Z)", text, re.S | re.M):
            body = match.group(3)
            shell = body.split("shell:", 1)[-1]
            cli = re.search(r'["\s;](?:[A-Z_]+=\S+ )*sentrepro ([a-z][a-z-]*)', shell)  # after env settings
            module = re.search(r'"python -m (sentrepro[\w.]*)', shell)
            entry = f"cli:{cli.group(1)}" if cli else module.group(1) if module else None
            if entry is None:
                continue
            for name in _rule_names(match.group(2), body):
                entries[name] = entry
    return entries


def _rule_names(name: str, body: str) -> list[str]:
    """The rule's name, or the names a loop's `name: f"evaluate_{_suite}"` takes: one per suite of the
    registry file (read here with yaml, not through sentrepro.planning.registry)."""
    if name:
        return [name]
    template = re.search(r'name:\s*f"([^"]+)"', body).group(1)
    return [template.replace("{_suite}", suite) for suite in sidecar_units("suites")]


def sidecar_units(section: str, package: Path = PACKAGE) -> dict[str, str]:
    """Unit name -> its module, for one section (suites, methods, figures) of every ``<module>.units.yaml``
    sidecar of the package, read with yaml alone (not through sentrepro.code.units)."""
    found = {}
    for sidecar in sorted(package.rglob("*.units.yaml")):
        rel = sidecar.relative_to(package.parent)
        module = ".".join([*rel.parent.parts, sidecar.name.removesuffix(".units.yaml")])
        for name in (yaml.safe_load(sidecar.read_text(encoding="utf-8")) or {}).get(section, {}):
            found[name] = module
    return found


def cli_commands() -> dict:
    """Subcommand -> function, from argparse itself."""
    from sentrepro import cli

    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.get_default("func") for name, sub in action.choices.items()}


def command_script(function) -> str:
    """What ``sentrepro <command>`` runs in cli.py: main, build_parser, the command, and the private
    helpers these name in their source (followed through the helpers' own sources)."""
    from sentrepro import cli

    helpers = {name: f for name, f in vars(cli).items() if inspect.isfunction(f) and name.startswith("_")
               and f.__module__ == cli.__name__}
    parts = [cli.main, cli.build_parser, function]
    sources = [textwrap.dedent(inspect.getsource(f)) for f in parts]
    todo = list(sources)
    while todo:
        text = todo.pop()
        for name, helper in helpers.items():
            if helper not in parts and re.search(rf"\b{name}\b", text):
                parts.append(helper)
                sources.append(textwrap.dedent(inspect.getsource(helper)))
                todo.append(sources[-1])
    return "\n\n".join(sources)


def modulefinder_closure(script: str, tmp_path: Path) -> set[str]:
    """Package modules a script imports, by modulefinder; only a copy of src/ is on its path, so
    third-party packages are not followed. modulefinder cannot enter namespace packages
    (sentrepro/tables has no __init__.py): the copy gets an empty one, left out of the answer."""
    src, added = _finder_copy(tmp_path)
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    path = work / "entry.py"
    path.write_text(script, encoding="utf-8")
    finder = modulefinder.ModuleFinder(path=[str(src)])
    finder.run_script(str(path))
    return {name for name in finder.modules
            if (name == "sentrepro" or name.startswith("sentrepro.")) and name not in added}


_FINDER_COPIES: dict[tuple[Path, str], tuple[Path, frozenset[str]]] = {}


def _finder_copy(tmp_path: Path) -> tuple[Path, frozenset[str]]:
    """The copy of src/ that modulefinder reads (with the ``__init__.py`` files it needs, and their package
    names), made once per test directory and package content (a copy per closure cost most of its time)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(PACKAGE)}\0".encode() + path.read_bytes() + b"\0")
    key = (tmp_path, digest.hexdigest())
    if key not in _FINDER_COPIES:
        src = Path(tempfile.mkdtemp(dir=tmp_path)) / "src"
        shutil.copytree(PACKAGE, src / "sentrepro", ignore=shutil.ignore_patterns("__pycache__"))
        added = set()
        for directory in [src / "sentrepro", *(p for p in (src / "sentrepro").rglob("*") if p.is_dir())]:
            if any(directory.glob("*.py")) and not (directory / "__init__.py").exists():
                (directory / "__init__.py").write_text("")
                added.add(".".join(directory.relative_to(src).parts))
        _FINDER_COPIES[key] = (src, frozenset(added))
    return _FINDER_COPIES[key]


def entry_closure(entry: str, tmp_path: Path) -> set[str]:
    if entry.startswith("cli:"):
        return modulefinder_closure(command_script(cli_commands()[entry[4:]]), tmp_path) | {"sentrepro.cli"}
    return modulefinder_closure(f"import {entry}\n", tmp_path)


def module_file(module: str) -> str:
    """``sentrepro.data.benchmarks.sts`` -> ``data/benchmarks/sts.py`` (or ``.../__init__.py``), relative to the package."""
    parts = module.split(".")[1:]
    path = PACKAGE.joinpath(*parts)
    return (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(PACKAGE).as_posix()


def _string_literals(path: Path) -> tuple[str, ...]:
    """String constants of a module, docstrings excluded."""
    return _literals_of_source(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _literals_of_source(source: str) -> tuple[str, ...]:
    """:func:`_string_literals` of a module's text, parsed once per content (data_readers asks of every
    module for every data file)."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return tuple(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and id(n) not in docstrings)


def data_readers(data_file: str) -> set[str]:
    """Modules whose string literals name a package data file: its name, or ``<its folder>/`` for a
    file of a folder read by pattern (``specs/*.yaml``)."""
    path = Path(data_file)
    readers = set()
    for module_path in PACKAGE.rglob("*.py"):
        literals = _string_literals(module_path)
        if any(path.name == s or s.endswith(f"/{path.name}") or (len(path.parts) > 1 and s.startswith(f"{path.parts[-2]}/")) for s in literals):
            rel = module_path.relative_to(SRC).with_suffix("")
            parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
            readers.add(".".join(parts))
    return readers


def package_files() -> list[str]:
    """Every module and data file of the package, relative to it."""
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _specs(package: Path) -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((package / "planning" / "specs").glob("*.yaml"))}


def _row_entry(spec: dict, row: dict) -> str | None:
    """The reported.yaml entry a spec row reads: ``"<entry>:<row>"`` or the spec's own ``reported``."""
    reference = row.get("reported")
    if not reference:
        return None
    prefixed = re.match(r"^([A-Za-z0-9_]+):", reference)
    return prefixed.group(1) if prefixed else spec.get("reported")


def reported_entry_readers(entry: str, package: Path = PACKAGE) -> tuple[set[str], bool]:
    """(the table specs whose rows read reported.yaml's ``entry``, whether a claim names one of them: the verdicts
    build every table the claims name), from the YAML files alone (not through sentrepro)."""
    tables = {name for name, spec in _specs(package).items() if any(_row_entry(spec, r) == entry for r in spec["rows"])}
    claims = yaml.safe_load((package / "verdicts" / "claims.yaml").read_text(encoding="utf-8"))["claims"]
    claimed = {c["table"] for c in claims} | {side["table"] for c in claims for side in (c["a"], c["b"])
                                              if isinstance(side, dict) and "table" in side}
    return tables, bool(tables & claimed)


def demo_summary_entry(method: str, backbone: str, package: Path = PACKAGE) -> str | None:
    """The reported.yaml entry whose STS-B number the demo summary shows for ``method`` on (the paper backbone)
    ``backbone``: the first spec row (sts_main first, then by name) of that method and backbone that reads an
    entry with an STSBenchmark column."""
    reported = yaml.safe_load((package / "planning" / "reported.yaml").read_text(encoding="utf-8"))
    specs = _specs(package)
    for name in ["sts_main"] + sorted(n for n in specs if n != "sts_main"):
        for row in specs[name]["rows"]:
            found = _row_entry(specs[name], row)
            if row.get("method") == method and row.get("backbone") == backbone and found \
                    and "STSBenchmark" in reported.get(found, {}).get("columns", []):
                return found
    return None


def edited_entry(original: str, edited: str) -> str:
    """The top-level entry of a reported.yaml text holding the first line an edit changed."""
    line = next(i for i, (a, b) in enumerate(zip(original.splitlines(), edited.splitlines())) if a != b)
    return next(m.group(1) for text in reversed(original.splitlines()[:line + 1])
                if (m := re.match(r"^(\w+):", text)))
