"""The code fingerprints exactly: module names of packages and modules, relative imports resolved against a module
or a package, what a star import adds, a fingerprint's length, and how a recorded fingerprint that no longer
matches is described (each module changed, added, removed; one line for the whole). The stale description is what
a table caption and `sentrepro audit` print."""

from __future__ import annotations

import ast
import copy

import pytest

from sentrepro.code import codedeps
from sentrepro.code.codedeps import CodeDepsError, code_record, compare, stale_description


def test_module_names_of_packages_and_modules():
    modules = codedeps.package_modules()
    assert modules["sentrepro"] == "__init__.py"
    assert modules["sentrepro.code"] == "code/__init__.py"
    assert modules["sentrepro.code.codedeps"] == "code/codedeps.py"
    assert "sentrepro.code.__init__" not in modules and "sentrepro.__init__" not in modules
    assert codedeps.module_name("code/codedeps.py") == "sentrepro.code.codedeps"
    with pytest.raises(CodeDepsError, match="no module src/sentrepro/code/nothing.py"):
        codedeps.module_name("code/nothing.py")


def _from(source: str) -> ast.ImportFrom:
    return ast.parse(source).body[0]


def test_relative_imports_resolve_against_the_module_or_the_package():
    resolve = codedeps._resolve_from
    assert resolve(_from("from os import path"), "sentrepro.code.codedeps") == "os"
    assert resolve(_from("from . import units"), "sentrepro.code.codedeps") == "sentrepro.code"
    assert resolve(_from("from .units import x"), "sentrepro.code.codedeps") == "sentrepro.code.units"
    assert resolve(_from("from ..files import x"), "sentrepro.code.codedeps") == "sentrepro.files"
    assert resolve(_from("from . import codedeps"), "sentrepro.code") == "sentrepro.code"       # a package: itself
    assert resolve(_from("from .. import files"), "sentrepro.code") == "sentrepro"
    assert resolve(_from("from ... import x"), "sentrepro.code.codedeps") == ""                  # the top of it
    with pytest.raises(CodeDepsError, match=r"sentrepro\.code\.codedeps: relative import beyond the top-level "
                                            r"package \(line 1\)"):
        resolve(_from("from .... import x"), "sentrepro.code.codedeps")


def test_imported_names_are_modules_and_their_names_but_not_a_star():
    tree = ast.parse("import json, sentrepro.files\nfrom sentrepro.hashing import sha256_file\n"
                     "from sentrepro.records.ledger import *\n")
    assert codedeps._imported_names([tree], "sentrepro.code.codedeps") == {
        "json", "sentrepro.files", "sentrepro.hashing", "sentrepro.hashing.sha256_file", "sentrepro.records.ledger"}
    assert codedeps._package_modules_of({"json", "sentrepro.records.ledger.record_outputs"}) == {
        "sentrepro", "sentrepro.records", "sentrepro.records.ledger"}


def test_a_fingerprint_is_sixteen_hex_digits():
    record = code_record(["cli:evaluate"])
    assert len(record["fingerprint"]) == 16 and codedeps._FINGERPRINT.fullmatch(record["fingerprint"])
    assert all(codedeps._FINGERPRINT.fullmatch(v) for v in record["modules"].values())


def test_a_recorded_fingerprint_that_no_longer_matches_names_each_module_that_differs():
    today = code_record(["cli:evaluate"])
    assert compare(today) == [] and stale_description(today) is None and stale_description(None) is None
    old = copy.deepcopy(today)
    old["fingerprint"] = "0" * 16
    changed, removed = sorted(old["modules"])[:2]
    old["modules"][changed] = "1" * 16
    del old["modules"][removed]
    old["modules"]["gone/module.py"] = "2" * 16
    assert compare(old) == [f"{changed}: {'1' * 16} -> {today['modules'][changed]}",
                            f"{removed}: added to the code ({today['modules'][removed]})",
                            "gone/module.py: no longer part of the code"]
    assert stale_description(old) == (
        f"code of cli:evaluate changed since: recorded {'0' * 16}, now {today['fingerprint']}; "
        f"{changed}: {'1' * 16} -> {today['modules'][changed]}; {removed}: added to the code "
        f"({today['modules'][removed]}); gone/module.py: no longer part of the code")
    bare = {"entries": ["cli:evaluate", "cli:train"], "fingerprint": "0" * 16}
    now = code_record(bare["entries"])["modules"]
    assert compare(bare) == [f"{rel}: added to the code ({now[rel]})" for rel in sorted(now)]  # nothing recorded
    assert stale_description(bare).startswith("code of cli:evaluate, cli:train changed since: recorded ")


def test_a_record_without_modules_says_so_in_one_line():
    today = code_record(["cli:evaluate"])
    same_modules = {"entries": ["cli:evaluate"], "fingerprint": "0" * 16, "modules": dict(today["modules"])}
    assert compare(same_modules) == ["fingerprint differs (no per-module record to compare)"]


def test_an_entry_point_that_no_longer_resolves_is_named():
    found = compare({"entries": ["cli:no-such-command"], "fingerprint": "0" * 16, "modules": {}})
    assert len(found) == 1 and found[0].startswith("entry points ['cli:no-such-command'] no longer resolve: ")
    assert stale_description({"entries": ["cli:no-such-command"], "fingerprint": "0" * 16}).startswith(
        "code of cli:no-such-command changed since: recorded 0000000000000000, now ?; entry points")
