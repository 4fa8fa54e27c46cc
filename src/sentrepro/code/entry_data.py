"""Package data read entry by entry: the files that are in no code fingerprint, and the rule param instead.

A package data file that is a mapping of independent entries, of which each reading job reads a few
(``planning/reported.yaml``: one entry per published table), is declared by the module reading it as
``PACKAGE_DATA_BY_ENTRY = ("reported.yaml",)`` (paths relative to the module, like ``PACKAGE_DATA``), not
as ``PACKAGE_DATA``. :mod:`sentrepro.code.codedeps` does not add such a file to any closure, so it is in
no job's code fingerprint. Instead, every rule whose code reaches its reader passes
``params.data_entries``: ``{file: {entry: fingerprint}}`` of exactly the entries its job reads, derived
per job from what the job reads (a table's spec, the claims' tables), never listed
(``workflow/rules/code.smk``: ``entry_data``). The workflow refuses a rule whose code reaches such a file
without that param (``check_rule_code``), so no reader can be added that silently never reruns. An edit
of one entry reruns the jobs that read it; a new entry reruns nothing that exists.

This module is read by the workflow while it plans (and by the tests), never by a job: it is in no job's
code, so changing it reruns nothing.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path
from typing import Iterable, Mapping

from sentrepro.code import codedeps

DECLARATION = "PACKAGE_DATA_BY_ENTRY"


@functools.lru_cache(maxsize=None)
def declared_by_entry(module: str) -> tuple[str, ...]:
    """Package data files (relative to the package) ``module`` declares it reads entry by entry."""
    rel = codedeps.package_modules()[module]
    path = codedeps.PACKAGE_DIR / rel
    raw = path.read_bytes()
    if DECLARATION.encode() not in raw:  # most modules: no parse
        return ()
    files: list[str] = []
    for node in ast.parse(raw.decode("utf-8"), filename=str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == DECLARATION for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as exc:
                raise codedeps.CodeDepsError(f"src/{codedeps.PACKAGE}/{rel}:{node.lineno}: {DECLARATION} must be "
                                             "a literal tuple of paths") from exc
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise codedeps.CodeDepsError(f"src/{codedeps.PACKAGE}/{rel}:{node.lineno}: {DECLARATION} must be "
                                             "a tuple of str")
            for name in value:
                file = (path.parent / name).resolve()
                if not file.is_file():
                    raise codedeps.CodeDepsError(f"src/{codedeps.PACKAGE}/{rel}: {DECLARATION} entry '{name}' is "
                                                 "no file")
                files.append(file.relative_to(codedeps.PACKAGE_DIR).as_posix())
    return tuple(files)


def by_entry_files(entries: str | Iterable[str]) -> tuple[str, ...]:
    """The files read entry by entry that the code of ``entries`` (entry points, as for ``rule_code``)
    reaches: what its rule's ``params.data_entries`` must cover."""
    entries = (entries,) if isinstance(entries, str) else tuple(entries)
    code = tuple(sorted(e for e in set(entries) if not e.startswith(codedeps.UNIT_PREFIX)))
    found = {rel for module in codedeps.module_closure(code) for rel in declared_by_entry(module)}
    return tuple(sorted(found))


def package_rel(file: str | Path) -> str:
    """A package data file as a path relative to the package (an absolute path, or already relative)."""
    path = Path(file)
    return path.resolve().relative_to(codedeps.PACKAGE_DIR).as_posix() if path.is_absolute() else path.as_posix()


@functools.lru_cache(maxsize=None)
def _entry_fingerprints(rel: str) -> dict[str, str]:
    from sentrepro.yaml_files import parse_yaml

    path = codedeps.PACKAGE_DIR / rel
    content = parse_yaml(path.read_text(encoding="utf-8"), name=str(path))
    if not isinstance(content, dict):
        raise codedeps.CodeDepsError(f"{path}: a file read entry by entry must be a mapping of entries")
    return {name: hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode())
            .hexdigest()[:codedeps.DIGITS] for name, value in content.items()}


def entry_fingerprints(file: str | Path, names: Iterable[str]) -> dict[str, str]:
    """``{entry: fingerprint of its content}`` of the named entries of a file read entry by entry (its
    content as parsed, canonical JSON: a comment or a re-indentation changes nothing)."""
    rel = package_rel(file)
    every = _entry_fingerprints(rel)
    missing = sorted(set(names) - set(every))
    if missing:
        raise codedeps.CodeDepsError(f"src/{codedeps.PACKAGE}/{rel} has no entry {', '.join(missing)}")
    return {name: every[name] for name in sorted(set(names))}


def data_entries_param(entry: str, reads: Mapping[str | Path, Iterable[str]]) -> str:
    """A rule's ``params.data_entries``: canonical JSON ``{file: {entry: fingerprint}}`` of the entries a
    job of the rule running ``entry`` reads (``reads``: file -> entry names). ``reads`` must name exactly
    the files read entry by entry that the rule's code reaches, so a reader is never left out."""
    files = {package_rel(file): names for file, names in reads.items()}
    expected = set(by_entry_files(entry))
    if set(files) != expected:
        raise codedeps.CodeDepsError(f"the data entries of a rule running {entry} name {sorted(files)}, but its code "
                                     f"reads {sorted(expected)} entry by entry")
    return json.dumps({rel: entry_fingerprints(rel, names) for rel, names in sorted(files.items())},
                      sort_keys=True, separators=(",", ":"))
