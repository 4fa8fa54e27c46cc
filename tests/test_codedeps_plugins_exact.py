"""A plug-in unit's code fingerprint, exactly, in the fast tier: which files of a plug-in package it is made of
(followed through absolute imports, relative imports of one and two levels from a module and from a package,
parent ``__init__`` files, never a module nothing imports), a single-module plug-in, the canonical form of a
unit's metadata, and the content cache's key and validity check. ``tests/test_plugins.py`` runs a real plug-in
through the workflow (slow tier); these pin the same functions on a tree written here."""

from __future__ import annotations

import hashlib
import types
from pathlib import Path

import pytest

from sentrepro.code import codedeps, units

# A plug-in package: what each module imports decides which files are its code.
PACKAGE = {
    "__init__.py": "import json\n",
    "shared.py": "VALUE = 2\n",
    "unused.py": "UNUSED = 1  # imported by nothing: not part of the unit's code\n",
    "methods/__init__.py": "from .. import shared\n",                                  # two levels, from a package
    "methods/loss.py": "from . import helpers\nfrom sentrepro.hashing import sha256_file\n",  # one level, a module
    "methods/helpers.py": "from toyplug.deep.leaf import VALUE\nfrom sentrepro.content_cache import cached_line\n",
    "deep/__init__.py": "",
    "deep/leaf.py": "VALUE = 3\n",
}
LABEL = "toy-plugin"


def _write(site: Path) -> Path:
    for rel, text in PACKAGE.items():
        path = site / "toyplug" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return site / "toyplug"


def _unit(package_dir: Path, module: str):
    return types.SimpleNamespace(package_dir=package_dir, module=module, origin=f"{LABEL}==0.1")


def _ours(*modules: str) -> dict[str, str]:
    return {rel: codedeps.file_fingerprint(rel) for rel in codedeps.closure_files(modules)}


def test_a_plugin_package_s_code_is_the_modules_its_unit_imports_and_their_parents(tmp_path):
    base = _write(tmp_path / "site")
    found = codedeps._plugin_files(_unit(base, "toyplug.methods.loss"))
    plugin = {key: value for key, value in found.items() if key.startswith("plugin:")}
    expected = ["__init__.py", "deep/__init__.py", "deep/leaf.py", "methods/__init__.py", "methods/helpers.py",
                "methods/loss.py", "shared.py"]
    assert sorted(plugin) == [f"plugin:{LABEL}/toyplug/{rel}" for rel in expected]
    for rel in expected:
        assert plugin[f"plugin:{LABEL}/toyplug/{rel}"] == codedeps.file_fingerprint(str(base / rel))
    # the sentrepro modules the plug-in's files import, with their own closure, each by its fingerprint
    assert {key: value for key, value in found.items() if not key.startswith("plugin:")} == \
        _ours("sentrepro.hashing", "sentrepro.content_cache")
    assert "hashing.py" in found and "content_cache.py" in found


def test_another_unit_of_the_same_plugin_has_only_its_own_imports(tmp_path):
    base = _write(tmp_path / "site")
    found = codedeps._plugin_files(_unit(base, "toyplug.deep.leaf"))
    assert found == {f"plugin:{LABEL}/toyplug/__init__.py": codedeps.file_fingerprint(str(base / "__init__.py")),
                     f"plugin:{LABEL}/toyplug/deep/__init__.py": codedeps.file_fingerprint(str(base / "deep/__init__.py")),
                     f"plugin:{LABEL}/toyplug/deep/leaf.py": codedeps.file_fingerprint(str(base / "deep/leaf.py"))}


def test_a_single_module_plugin_is_its_one_file_and_the_sentrepro_code_it_imports(tmp_path):
    module = tmp_path / "site" / "toyone.py"
    module.parent.mkdir()
    module.write_text("import toyone\nfrom toyone import helper\nfrom sentrepro.hashing import sha256_file\n"
                      "def helper():\n    return 1\n", encoding="utf-8")
    found = codedeps._plugin_files(_unit(module, "toyone"))
    assert found == {f"plugin:{LABEL}/toyone.py": codedeps.file_fingerprint(str(module)), **_ours("sentrepro.hashing")}


def test_a_unit_s_metadata_enters_its_fingerprint_as_canonical_json(tmp_path, monkeypatch):
    """Key order and spacing of a sidecar change nothing; the form is pinned, since a changed form would make
    every recorded fingerprint differ and rerun every finished job."""
    base = _write(tmp_path / "site")
    unit = _unit(base, "toyplug.deep.leaf")
    monkeypatch.setattr(units, "from_entry", lambda entry: unit)
    scheduling = sorted(units.SCHEDULING_ONLY)[0]
    monkeypatch.setattr(units, "resolved_metadata", lambda u: {"b": 1, scheduling: "ignored", "a": [1, "x"]})
    first = codedeps.unit_fingerprints("unit:methods:toy")
    monkeypatch.setattr(units, "resolved_metadata", lambda u: {"a": [1, "x"], "b": 1})
    assert codedeps.unit_fingerprints("unit:methods:toy") == first
    assert first["unit:methods:toy"] == hashlib.sha256(b'{"a":[1,"x"],"b":1}').hexdigest()[:16]
    assert set(first) - {"unit:methods:toy"} == set(codedeps._plugin_files(unit))


@pytest.fixture
def python_version(monkeypatch):
    """Set the Python version the normaliser's id sees; its cache cleared around the test."""
    def set_version(*version):
        monkeypatch.setattr(codedeps, "sys", types.SimpleNamespace(version_info=version))
        codedeps._normaliser_id.cache_clear()
        return codedeps.cache_key("x.py", b"pass\n")
    yield set_version
    monkeypatch.undo()
    codedeps._normaliser_id.cache_clear()


def test_the_cache_key_separates_python_minor_versions_only(python_version):
    """``ast.dump`` can differ between minor versions, so their cached forms must not be shared; micro versions
    share them."""
    key = python_version(3, 11, 7)
    assert python_version(3, 11, 9) == key
    assert len({key, python_version(3, 12, 7), python_version(4, 11, 7), python_version(3, 7, 11)}) == 4
    source = Path(codedeps.__file__).read_bytes()
    normaliser = hashlib.sha256(source + b"\x003.11").digest()
    assert key == hashlib.sha256(normaliser + b"\x00fingerprint\x00.py\x00" + b"pass\n").hexdigest()


def test_a_cached_line_is_valid_only_when_it_is_json():
    assert codedeps._is_json('{"a": [1, 2]}') is True and codedeps._is_json("[]") is True
    assert codedeps._is_json('{"a": [1, 2]') is False and codedeps._is_json("not json") is False
