"""Which package code a workflow rule runs, and a fingerprint of it that ignores comments and docstrings.

A rule's ``params.code`` is :func:`rule_code` of the entry points it runs, and every JSON a job writes
records :func:`code_record` of its entry (``provenance.code_fingerprint``), so that

* editing a module reruns exactly the rules whose code imports it, and nothing else;
* ``sentrepro audit`` and the table builder can name the outputs made by code that has changed since.

**Entry points.** ``"cli:<command>"`` is a subcommand of ``sentrepro`` (src/sentrepro/cli.py): the CLI
module itself plus every import inside the function its dispatch table (``set_defaults(func=...)`` after
``add_parser("<command>")``) runs, and inside the cli.py helpers that function calls. Following cli.py's
imports as a whole would put every module behind every rule, since it imports each command's code lazily.
A dotted module name (``"sentrepro.data.views"``) is a module run with ``python -m``. A unit entry
``"unit:<method|suite|figure>:<name>"`` is an extension unit a job runs (:mod:`sentrepro.code.units`): its
module's closure (a plug-in's: its package's files) plus the unit's own metadata, hashed per unit, so
that no unit's metadata is in another unit's jobs' code.

**Closure.** From the entry modules, ``import``/``from ... import`` statements (absolute and relative,
at any depth, including inside functions) are followed within ``sentrepro``; importing ``a.b.c``
also runs ``a/__init__.py`` and ``a/b/__init__.py``, so they belong to the closure too. Static and per
module: an import inside a function counts whether or not that function runs, which may rerun more
than strictly needed but never less.

**Package data.** A module that reads files shipped inside the package declares them next to the
reading code, as a module-level ``PACKAGE_DATA = ("reported.yaml", "specs/*.yaml")`` (paths and globs
relative to the module's directory) that the reader itself uses. Declared files join the closure of
every rule that imports their module. ``tests/test_codedeps.py`` checks that every non-Python file in
the package is declared by some module, so a new data file cannot be left out. A declaration was
chosen over scanning for ``open(...)``/``Path(__file__)`` patterns, which is fragile and silent when
it misses. A file of independent entries that each job reads a few of (``reported.yaml``) is declared
``PACKAGE_DATA_BY_ENTRY`` instead and is in no closure: its readers' rules pass the entries their jobs
read as ``params.data_entries`` (:mod:`sentrepro.code.entry_data`).

**Normalised fingerprints.** A module's fingerprint hashes ``ast.dump`` of its syntax tree with
docstrings removed (comments are not in the tree); a YAML/JSON file's, its parsed content as canonical
JSON; other files, their bytes. A comment or docstring edit therefore changes nothing. The rule
fingerprint hashes the sorted (path, module fingerprint) pairs. Everything is computed once per process
(one workflow load, one job).

**The cache.** Parsing (syntax trees, YAML) and normalising are most of what planning costs, and files
rarely change between two plans, so what is derived from a file's content (its fingerprint; a module's
imports and ``PACKAGE_DATA`` patterns; cli.py's dispatch table and each command's imports) is also kept on
disk, content-addressed: the key is the SHA-256 of the file's raw bytes together with the kind of
derivation and the normaliser itself (this module's source and the Python version). A changed file, or a
changed way of deriving, always has another key, so a stale entry can never be found; nothing is keyed by
modification time. An entry is written atomically and records its own key and a checksum of key and value;
one that does not read back as such (truncated, garbled, copied from another key) is ignored and
rewritten. The directory is ``$SENTREPRO_FP_CACHE``, else ``$XDG_CACHE_HOME/sentrepro/fingerprints``
(``~/.cache/...``); ``SENTREPRO_FP_CACHE=off`` turns it off. The cache only saves time: a read-only or
missing directory changes no result.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Iterable

from sentrepro.content_cache import CONTENT_CACHE_ENV, cached_line

PACKAGE = "sentrepro"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/sentrepro
CLI_PREFIX = "cli:"
UNIT_PREFIX = "unit:"
DECLARATION = "PACKAGE_DATA"
DIGITS = 16


class CodeDepsError(ValueError):
    """An entry point, import or data declaration cannot be resolved; the message names it."""


# --- the package's modules -------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def package_modules() -> dict[str, str]:
    """Dotted module name -> path relative to the package directory, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR)
        parts = [PACKAGE, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = rel.as_posix()
    return modules


def module_name(rel: str) -> str:
    """The dotted name of a module given by its path relative to the package (``data/sts.py``)."""
    for name, path in package_modules().items():
        if path == rel:
            return name
    raise CodeDepsError(f"no module src/{PACKAGE}/{rel}")


@functools.lru_cache(maxsize=None)
def _tree(rel: str) -> ast.Module:
    return _parse(rel, (PACKAGE_DIR / rel).read_bytes())


def _parse(rel: str, raw: bytes) -> ast.Module:
    try:
        return ast.parse(raw.decode("utf-8"), filename=str(PACKAGE_DIR / rel))
    except SyntaxError as exc:
        raise CodeDepsError(f"src/{PACKAGE}/{rel}:{exc.lineno}: cannot parse: {exc.msg}") from exc


def _resolve_from(node: ast.ImportFrom, importer: str) -> str:
    """The absolute module a ``from ... import`` names (relative levels resolved against ``importer``)."""
    if not node.level:
        return node.module or ""
    is_package = package_modules()[importer].endswith("__init__.py")
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level - 1 > len(base):
        raise CodeDepsError(f"{importer}: relative import beyond the top-level package (line {node.lineno})")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_names(nodes: Iterable[ast.AST], importer: str) -> set[str]:
    """Dotted names imported anywhere under ``nodes``: modules, and ``module.name`` for from-imports."""
    names: set[str] = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _resolve_from(node, importer)
                names.add(module)
                names.update(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _package_modules_of(names: Iterable[str]) -> set[str]:
    """The package modules that importing ``names`` runs: each name and its parent packages, if ours."""
    modules = package_modules()
    found = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != PACKAGE:
            continue
        for end in range(1, len(parts) + 1):
            candidate = ".".join(parts[:end])
            if candidate in modules:
                found.add(candidate)
    return found


@functools.lru_cache(maxsize=None)
def direct_imports(module: str) -> frozenset[str]:
    """Package modules ``module`` imports (anywhere in its body), with their parent packages."""
    return frozenset(_package_modules_of(_summary(module)["imports"]) - {module})


def _summary(module: str) -> dict:
    """What the closure needs of a module's syntax tree, its imported names and its ``PACKAGE_DATA``
    patterns, through the content-addressed cache (keyed by the module's path and bytes)."""
    rel = package_modules()[module]
    raw = (PACKAGE_DIR / rel).read_bytes()

    def compute() -> str:
        tree = _parse(rel, raw)
        return json.dumps({"imports": sorted(_imported_names([tree], module)), "data": _data_patterns(rel, tree)})

    return json.loads(_cached(f"summary:{rel}", rel, raw, compute, _is_json))


# --- the CLI's dispatch table ----------------------------------------------------------------

CLI_MODULE = f"{PACKAGE}.cli"


@functools.lru_cache(maxsize=1)
def cli_dispatch() -> dict[str, str]:
    """Subcommand -> name of the cli.py function it runs (:func:`_cli_dispatch`, through the cache)."""
    rel = package_modules()[CLI_MODULE]
    raw = (PACKAGE_DIR / rel).read_bytes()
    return json.loads(_cached("dispatch", rel, raw, lambda: json.dumps(_cli_dispatch(_parse(rel, raw))), _is_json))


def _cli_dispatch(tree: ast.Module) -> dict[str, str]:
    """Subcommand -> name of the cli.py function it runs, read from ``build_parser``'s syntax tree.

    Every ``<var> = <subparsers>.add_parser("<command>", ...)`` is paired with the next
    ``<var>.set_defaults(func=<function>)``.
    """
    dispatch: dict[str, str] = {}
    pending: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for statement in node.body:
            value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
            if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
                continue
            if value.func.attr == "add_parser" and isinstance(statement, ast.Assign) and value.args \
                    and isinstance(value.args[0], ast.Constant) and isinstance(statement.targets[0], ast.Name):
                pending[statement.targets[0].id] = value.args[0].value
            elif value.func.attr == "set_defaults" and isinstance(value.func.value, ast.Name):
                for keyword in value.keywords:
                    if keyword.arg == "func" and isinstance(keyword.value, ast.Name):
                        command = pending.pop(value.func.value.id, None)
                        if command is None:
                            raise CodeDepsError(f"cli.py:{statement.lineno}: set_defaults(func=...) with no "
                                                "add_parser before it")
                        dispatch[command] = keyword.value.id
    if not dispatch:
        raise CodeDepsError("cli.py: no subcommand found (add_parser / set_defaults(func=...))")
    return dispatch


def _cli_functions(start: str, tree: ast.Module) -> list[ast.FunctionDef]:
    """The cli.py function ``start`` and every top-level cli.py function it calls, transitively (calls only:
    ``build_parser`` names every command's function in ``set_defaults`` without calling it)."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    if start not in functions:
        raise CodeDepsError(f"cli.py: the dispatch table names {start}(), which is not defined")
    seen, todo = [], [start]
    while todo:
        name = todo.pop()
        if name in (f.name for f in seen):
            continue
        seen.append(functions[name])
        todo.extend(node.func.id for node in ast.walk(functions[name]) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name) and node.func.id in functions and node.func.id != name)
    return seen


def cli_entry_modules(command: str) -> frozenset[str]:
    """The package modules a ``sentrepro <command>`` imports directly: cli.py's own top-level imports and
    those inside ``main`` (argument parsing, run by every command), the dispatched function, and the
    cli.py helpers they call."""
    dispatch = cli_dispatch()
    if command not in dispatch:
        raise CodeDepsError(f"sentrepro has no subcommand '{command}' (known: {', '.join(sorted(dispatch))})")
    rel = package_modules()[CLI_MODULE]
    raw = (PACKAGE_DIR / rel).read_bytes()

    def compute() -> str:
        tree = _parse(rel, raw)
        top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        functions = _cli_functions("main", tree) + _cli_functions(dispatch[command], tree)
        return json.dumps(sorted(_imported_names(top_level + functions, CLI_MODULE)))

    names = json.loads(_cached(f"command:{command}", rel, raw, compute, _is_json))
    return frozenset(_package_modules_of(names) | {CLI_MODULE})


# --- closures ---------------------------------------------------------------------------------


def entry_modules(entry: str) -> frozenset[str]:
    """The modules an entry point starts from (see the module docstring for the two forms)."""
    if entry.startswith(CLI_PREFIX):
        return cli_entry_modules(entry[len(CLI_PREFIX):])
    if entry in package_modules():
        return frozenset(_package_modules_of([entry]))
    raise CodeDepsError(f"unknown entry point '{entry}': expected 'cli:<command>' or a module of {PACKAGE}")


@functools.lru_cache(maxsize=None)
def module_closure(entries: tuple[str, ...]) -> frozenset[str]:
    """Every package module the entry points import, followed through imports. cli.py is part of the
    code of every command, but only the imports of the command's own function are followed; no other
    package module imports cli.py (tests/test_codedeps.py checks it)."""
    seen: set[str] = set()
    todo = [module for entry in entries for module in entry_modules(entry)]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            if module != CLI_MODULE:  # cli.py's imports are followed per command (cli_entry_modules)
                todo.extend(direct_imports(module) - seen)
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def declared_data(module: str) -> tuple[str, ...]:
    """Package data files ``module`` declares it reads (``PACKAGE_DATA``), relative to the package."""
    rel = package_modules()[module]
    patterns = _summary(module)["data"]
    base = (PACKAGE_DIR / rel).parent
    files: list[str] = []
    for pattern in patterns:
        matched = sorted(p for p in base.glob(pattern) if p.is_file())
        if not matched:
            raise CodeDepsError(f"src/{PACKAGE}/{rel}: {DECLARATION} entry '{pattern}' matches no file")
        files.extend(p.resolve().relative_to(PACKAGE_DIR).as_posix() for p in matched)  # '../x' allowed
    return tuple(files)


def _data_patterns(rel: str, tree: ast.Module) -> list[str]:
    """The paths and globs a module's ``PACKAGE_DATA`` declares (checked to be a literal tuple of str)."""
    patterns: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == DECLARATION
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as exc:
                raise CodeDepsError(f"src/{PACKAGE}/{rel}:{node.lineno}: {DECLARATION} must be a literal "
                                    "tuple of paths") from exc
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise CodeDepsError(f"src/{PACKAGE}/{rel}:{node.lineno}: {DECLARATION} must be a tuple of str")
            patterns.extend(value)
    return patterns


def _unit_entries(entries: Iterable[str]) -> tuple[list[str], list[str]]:
    """(code entries, unit entries) of ``entries``."""
    entries = sorted(set(entries))
    return [e for e in entries if not e.startswith(UNIT_PREFIX)], [e for e in entries if e.startswith(UNIT_PREFIX)]


def closure_files(entries: Iterable[str]) -> list[str]:
    """Paths (relative to the package) of the modules and data files the entry points' code consists of
    (for a built-in unit entry, its module's; a unit's metadata and a plug-in's files: :func:`code_record`)."""
    code, unit_entries = _unit_entries(entries)
    if unit_entries:
        from sentrepro.code import units

        for entry in unit_entries:
            try:
                unit = units.from_entry(entry)
            except units.UnitError as exc:
                raise CodeDepsError(str(exc)) from None
            if unit.origin == units.BUILT_IN:
                code.append(unit.module)
    modules = module_closure(tuple(sorted(set(code))))
    files = {package_modules()[m] for m in modules}
    for module in modules:
        files.update(declared_data(module))
    return sorted(files)


# --- fingerprints -----------------------------------------------------------------------------


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def normalised_source(rel: str, raw: bytes | None = None) -> bytes:
    """What a file's fingerprint hashes: a module's syntax tree without docstrings, a YAML or JSON
    file's content as canonical JSON, any other
    file's bytes. ``raw``: the file's bytes, when already read (they are what is normalised)."""
    path = PACKAGE_DIR / rel
    if raw is None:
        raw = path.read_bytes()
    if rel.endswith(".py"):
        tree = _strip_docstrings(ast.parse(raw.decode("utf-8"), filename=str(path)))
        return ast.dump(tree, include_attributes=False).encode()
    if path.suffix in (".yaml", ".yml", ".json"):
        from sentrepro.yaml_files import parse_yaml

        content = parse_yaml(raw.decode("utf-8"), name=str(path))
        return json.dumps(content, sort_keys=True, separators=(",", ":"), default=str).encode()
    return raw


CACHE_ENV = CONTENT_CACHE_ENV
_FINGERPRINT = re.compile(rf"[0-9a-f]{{{DIGITS}}}")


@functools.lru_cache(maxsize=1)
def _normaliser_id() -> bytes:
    """What the normalised form depends on besides a file's bytes: this module's source (which holds the
    normaliser) and the Python version (``ast.dump`` differs between versions)."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(f"\0{sys.version_info[0]}.{sys.version_info[1]}".encode())
    return digest.digest()


def cache_key(rel: str, raw: bytes, kind: str = "fingerprint") -> str:
    """The content address of what is derived from a file: the kind of derivation (a fingerprint; a
    module's imports, which depend on its dotted name too), the file's raw bytes, its suffix (which decides
    how it is normalised) and the normaliser. Never a modification time."""
    digest = hashlib.sha256(_normaliser_id())
    digest.update(f"\0{kind}\0{Path(rel).suffix}\0".encode())
    digest.update(raw)
    return digest.hexdigest()


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _cached(kind: str, rel: str, raw: bytes, compute, valid) -> str:
    """``compute()`` (a one-line string) for this content of ``rel``, through the content-addressed cache."""
    return cached_line(cache_key(rel, raw, kind), compute, valid)


@functools.lru_cache(maxsize=None)
def file_fingerprint(rel: str) -> str:
    """The fingerprint of a package file's normalised content, through the content-addressed cache (the
    file is read once: the bytes hashed for the key are the bytes normalised)."""
    raw = (PACKAGE_DIR / rel).read_bytes()
    return _cached("fingerprint", rel, raw, lambda: hashlib.sha256(normalised_source(rel, raw)).hexdigest()[:DIGITS],
                   _FINGERPRINT.fullmatch)


def combine(modules: dict[str, str]) -> str:
    """One fingerprint for a set of (path, file fingerprint) pairs."""
    digest = hashlib.sha256()
    for rel, value in sorted(modules.items()):
        digest.update(f"{rel}\0{value}\n".encode())
    return digest.hexdigest()[:DIGITS]


@functools.lru_cache(maxsize=None)
def _record(entries: tuple[str, ...]) -> str:
    code, unit_entries = _unit_entries(entries)
    modules = {rel: file_fingerprint(rel) for rel in closure_files(code)}
    origins = {}
    if unit_entries:
        from sentrepro.code import units

        for entry in unit_entries:
            try:
                modules.update(unit_fingerprints(entry))
                origins[entry] = units.from_entry(entry).origin
            except units.UnitError as exc:
                raise CodeDepsError(str(exc)) from None
    record = {"entries": list(entries), "fingerprint": combine(modules), "modules": modules}
    if origins:
        record["units"] = origins  # built-in, or the plug-in's <distribution>==<version>
    return json.dumps(record)


def _plugin_module_file(base: Path, name: str) -> Path | None:
    """The file of module ``name`` inside a plug-in's top-level package ``base`` (None: not one of its)."""
    path = base.parent.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file() and (candidate == base or base in candidate.parents):
            return candidate
    return None


def _plugin_files(unit) -> dict[str, str]:
    """A plug-in unit's code: its module and every module of its own top-level package that it imports,
    followed through their imports (parent ``__init__`` files included), plus the closure of the sentrepro
    modules they import, each by its normalised fingerprint. Another unit of the same plug-in is not part
    of it unless imported, so editing one plug-in unit reruns its own jobs only."""
    base = unit.package_dir
    top = unit.module.split(".")[0]
    label = unit.origin.split("==")[0]
    fingerprints, ours, seen = {}, set(), set()
    todo = [unit.module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for end in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__.py and a/b/__init__.py
            path = _plugin_module_file(base, ".".join(parts[:end])) if base.is_dir() else \
                (base if ".".join(parts[:end]) == top else None)
            if path is None or path in seen:
                continue
            seen.add(path)
            fingerprints[f"plugin:{label}/{path.relative_to(base.parent).as_posix()}"] = file_fingerprint(str(path))
            package = ".".join(parts[:end]) if path.name == "__init__.py" else ".".join(parts[:end - 1])
            for node in ast.walk(ast.parse(path.read_bytes().decode("utf-8"), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                    if node.level:
                        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                        module = ".".join(anchor + ([module] if module else []))
                    names = [module] + [f"{module}.{alias.name}" for alias in node.names]
                else:
                    continue
                for imported in names:
                    if imported.split(".")[0] == top:
                        todo.append(imported)
                    elif imported.split(".")[0] == PACKAGE:
                        ours.add(imported)
    for rel in closure_files(_package_modules_of(ours)):
        fingerprints[rel] = file_fingerprint(rel)
    return fingerprints


def unit_fingerprints(entry: str) -> dict[str, str]:
    """(path label -> fingerprint) of what a unit entry adds to a job's code: ``unit:<section>:<name>`` ->
    the fingerprint of its metadata as its jobs depend on it (``units.resolved_metadata``: canonical JSON
    without the keys that only schedule or estimate jobs), and its module's closure (built-in) or its
    package's files (plug-in). No other unit's sidecar is read into it."""
    from sentrepro.code import units

    unit = units.from_entry(entry)
    content = {k: v for k, v in units.resolved_metadata(unit).items() if k not in units.SCHEDULING_ONLY}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    fingerprints = {entry: hashlib.sha256(canonical.encode()).hexdigest()[:DIGITS]}
    if unit.origin == units.BUILT_IN:
        fingerprints.update({rel: file_fingerprint(rel) for rel in closure_files([unit.module])})
    else:
        fingerprints.update(_plugin_files(unit))
    return fingerprints


def code_record(entries: Iterable[str]) -> dict:
    """``{"entries", "fingerprint", "modules": {path: fingerprint}[, "units": {entry: origin}]}`` of the
    code the entry points run; what every JSON output records as ``provenance.code_fingerprint`` (a unit's
    origin: ``built-in`` or the plug-in's ``<distribution>==<version>``)."""
    return json.loads(_record(tuple(sorted(set(entries)))))


def rule_code(entries: str | Iterable[str]) -> str:
    """The fingerprint of the code a rule runs, for its ``params.code``: ``rule_code("cli:train")``,
    ``rule_code(["sentrepro.data.views"])``. Cached, so calling it per job is cheap."""
    return _fingerprint_of(_record(tuple(sorted({entries} if isinstance(entries, str) else set(entries)))))


@functools.lru_cache(maxsize=None)
def _fingerprint_of(record: str) -> str:
    """The fingerprint in a :func:`_record` (keyed by the record itself, so never stale)."""
    return json.loads(record)["fingerprint"]


def compare(recorded: dict) -> list[str]:
    """How a recorded ``code_fingerprint`` differs from today's code of the same entries: one line per
    module changed, added or removed (empty when the fingerprint still matches)."""
    try:
        current = code_record(recorded["entries"])
    except CodeDepsError as exc:
        return [f"entry points {recorded.get('entries')} no longer resolve: {exc}"]
    if current["fingerprint"] == recorded.get("fingerprint"):
        return []
    before, now = recorded.get("modules", {}), current["modules"]
    lines = [f"{rel}: {before[rel]} -> {now[rel]}" for rel in sorted(before.keys() & now.keys())
             if before[rel] != now[rel]]
    lines += [f"{rel}: added to the code ({now[rel]})" for rel in sorted(now.keys() - before.keys())]
    lines += [f"{rel}: no longer part of the code" for rel in sorted(before.keys() - now.keys())]
    return lines or ["fingerprint differs (no per-module record to compare)"]


def stale_description(recorded: dict | None) -> str | None:
    """None when a recorded ``code_fingerprint`` is today's code (or nothing was recorded); else one
    line naming the entry points, the recorded and current fingerprints and the modules that differ."""
    if not recorded:
        return None
    differences = compare(recorded)
    if not differences:
        return None
    try:
        current = code_record(recorded["entries"])["fingerprint"]
    except CodeDepsError:
        current = "?"
    return (f"code of {', '.join(recorded['entries'])} changed since: recorded {recorded.get('fingerprint')}, "
            f"now {current}; " + "; ".join(differences))


# --- the entry point of a rule's shell command ------------------------------------------------

_SHELL_CLI = re.compile(r"(?:^|[\s;&|(])sentrepro\s+([a-z][a-z-]*)")
_SHELL_MODULE = re.compile(r"(?:^|[\s;&|(])python3?\s+-m\s+(sentrepro(?:\.\w+)*)")


def shell_entry(command: str) -> str | None:
    """The entry point a rule's shell command runs: ``"cli:<command>"`` for ``sentrepro <command>``, the
    module for ``python -m sentrepro...``; None when it runs no package code; an error when several."""
    found = {f"{CLI_PREFIX}{m}" for m in _SHELL_CLI.findall(command)} | set(_SHELL_MODULE.findall(command))
    if len(found) > 1:
        raise CodeDepsError(f"a shell command runs several entry points ({', '.join(sorted(found))}): {command}")
    return found.pop() if found else None


# --- the entry point of the running process ---------------------------------------------------

_running: list[str] = []


def set_running_entry(entries: Iterable[str]) -> None:
    """Called by the CLI (and ``python -m`` entry points) before a command runs: the code that every
    provenance block this process writes is recorded as."""
    _running[:] = sorted(set(entries))


def running_record() -> dict | None:
    """:func:`code_record` of the running entry point; None when the code was called directly (tests)."""
    return code_record(_running) if _running else None
