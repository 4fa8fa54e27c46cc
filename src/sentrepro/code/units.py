"""Extension units: method kinds, evaluation suites and figures, each its code plus its own metadata.

A unit is an attribute of a Python module (a method class, a suite or drawing function) described by an
entry of the module's *sidecar*, ``<module>.units.yaml`` beside ``<module>.py``::

    methods:                      # or suites: / figures:
      simcse:                     # the unit's name (a method kind, a suite, a figure)
        implementation: SimCSE    # the attribute of the module beside the sidecar
        ...                       # what sentrepro.planning.registry checks (CONTRIBUTING.md lists the keys)

Units are *discovered*, never listed: every ``*.units.yaml`` inside the package (built-in units), and the
module each entry point of the group ``sentrepro.code.units`` names in an installed distribution (plug-ins:
``[project.entry-points."sentrepro.code.units"] mymethod = "mypackage.mymethod"``, with
``mypackage/mymethod.units.yaml`` beside it). Discovery reads YAML and syntax trees only: no unit module
is imported (method modules import torch; planning must not), a plug-in's module is located with
``importlib.machinery.PathFinder`` without running its package.

Shared parameter definitions live with the code that reads them, in ``<module>.params.yaml`` files of the
package: ``training/loop.params.yaml`` holds the training loop's keys (group ``trainer``), which every trained
kind accepts.

Fingerprints (``sentrepro.code.codedeps.unit_fingerprints``): a job that runs a unit records the entry ``unit:<section>:<name>``
(``unit:method:simcse``). Its code is the unit's module and that module's imports (for a plug-in: every
file of its top-level package, plus the sentrepro modules it imports) plus the unit's own metadata, with
its parameter schema resolved, as canonical JSON without the keys that only schedule or estimate jobs.
Sidecars are in no module's ``PACKAGE_DATA``: adding a unit changes no existing job's code, and editing
one changes only the jobs that run it.
"""

from __future__ import annotations

import re
import functools
from dataclasses import dataclass, field
from importlib import machinery, metadata
from pathlib import Path

from sentrepro.yaml_files import parse_yaml

PACKAGE = "sentrepro"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/sentrepro
UNIT_SUFFIX = ".units.yaml"
PARAMS_SUFFIX = ".params.yaml"
# Unit metadata files: fingerprinted per unit (entry_fingerprints), not as package data of a module.
UNIT_FILES = (f"**/*{UNIT_SUFFIX}", f"**/*{PARAMS_SUFFIX}")
ENTRY_POINT_GROUP = "sentrepro.code.units"
SECTIONS = {"methods": "method", "suites": "suite", "figures": "figure"}  # sidecar key -> entry word
BUILT_IN = "built-in"
ENTRY_PREFIX = "unit:"
# Keys that only choose, schedule or estimate jobs, never a result: left out of a unit's fingerprint, so
# editing a suite's default resources or a kind's cost assumptions reruns nothing.
SCHEDULING_ONLY = ("resources", "group", "cost", "benchmark")


class UnitError(ValueError):
    """A unit cannot be found or read; the message names the sidecar (or entry point) and the key."""


@dataclass(frozen=True)
class Unit:
    section: str  # methods, suites, figures
    name: str
    metadata: dict = field(compare=False, repr=False)
    module: str  # dotted name of the module implementing it
    module_file: Path
    sidecar: Path
    origin: str  # "built-in" or "<distribution>==<version>"
    package_dir: Path | None = None  # a plug-in's top-level package directory (all its code)

    @property
    def where(self) -> str:
        """``<sidecar>: <section>.<name>``, the prefix of every error about this unit."""
        return f"{self.sidecar}: {self.section}.{self.name}"

    @property
    def implementation(self) -> str:
        """``<module>:<attribute>``, what :func:`sentrepro.planning.registry.load_implementation` imports."""
        return f"{self.module}:{self.metadata['implementation']}"

    @property
    def entry(self) -> str:
        return unit_entry(self.section, self.name)


def unit_entry(section: str, name: str) -> str:
    """The code entry of a unit (``unit:method:simcse``), as job_entries and provenance record it."""
    return f"{ENTRY_PREFIX}{SECTIONS[section]}:{name}"


# --- locating modules without importing them --------------------------------------------------------


def find_module_file(dotted: str) -> Path:
    """The source file of ``dotted`` on ``sys.path``, found level by level without running any package."""
    path = None
    spec = None
    parts = dotted.split(".")
    for end in range(1, len(parts) + 1):
        spec = machinery.PathFinder.find_spec(".".join(parts[:end]), path)
        if spec is None or (end < len(parts) and not spec.submodule_search_locations):
            raise UnitError(f"module {dotted}: not found on sys.path")
        path = spec.submodule_search_locations
    if not spec.origin or not spec.origin.endswith(".py"):
        raise UnitError(f"module {dotted}: not a Python source file ({spec.origin})")
    return Path(spec.origin).resolve()


def _defines(path: Path, name: str) -> bool:
    """Whether a module's source defines ``name`` at its top level (a class, function or assignment),
    read as text: discovery parses no module and imports none."""
    text = path.read_text(encoding="utf-8")
    return re.search(rf"^(?:class|def|async def)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]", text, re.M) is not None


# --- discovery ------------------------------------------------------------------------------------


def _read_sidecar(sidecar: Path, module: str, origin: str, package_dir: Path | None) -> list[Unit]:
    module_file = sidecar.with_name(sidecar.name[: -len(UNIT_SUFFIX)] + ".py")
    if not module_file.is_file():
        raise UnitError(f"{sidecar}: describes units of {module_file.name}, which does not exist beside it")
    with open(sidecar, encoding="utf-8") as handle:
        data = parse_yaml(handle)
    if not isinstance(data, dict) or not data:
        raise UnitError(f"{sidecar}: the top level must map {', '.join(SECTIONS)} to units")
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise UnitError(f"{sidecar}: unknown section(s) {', '.join(unknown)} (allowed: {', '.join(SECTIONS)})")
    units = []
    for section, entries in data.items():
        if not isinstance(entries, dict):
            raise UnitError(f"{sidecar}: {section}: must map names to units")
        for name, entry in entries.items():
            where = f"{sidecar}: {section}.{name}"
            if not isinstance(entry, dict) or not isinstance(entry.get("implementation"), str):
                raise UnitError(f"{where}: needs 'implementation' (an attribute of {module_file.name})")
            if not _defines(module_file, entry["implementation"]):
                raise UnitError(f"{where}.implementation: {module_file.name} defines no '{entry['implementation']}'")
            units.append(Unit(section, str(name), dict(entry), module, module_file, sidecar, origin, package_dir))
    return units


def _builtin_units() -> list[Unit]:
    units = []
    for sidecar in sorted(PACKAGE_DIR.rglob(f"*{UNIT_SUFFIX}")):
        rel = sidecar.relative_to(PACKAGE_DIR)
        module = ".".join([PACKAGE, *rel.parent.parts, rel.name[: -len(UNIT_SUFFIX)]])
        units.extend(_read_sidecar(sidecar, module, BUILT_IN, None))
    return units


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The installed distributions' entry points of the group ``sentrepro.code.units``, in a stable order."""
    found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(found, key=lambda ep: (ep.dist.name if ep.dist else "", ep.name, ep.value))


def _plugin_units() -> list[Unit]:
    units = []
    for point in plugin_entry_points():
        dist = point.dist
        origin = f"{dist.name}=={dist.version}" if dist else "unknown distribution"
        where = f"entry point {point.name} = {point.value} ({origin}, group {ENTRY_POINT_GROUP})"
        module = point.value.split(":", 1)[0].strip()
        if module == PACKAGE or module.startswith(f"{PACKAGE}."):
            raise UnitError(f"{where}: a plug-in lives in its own package, not in {PACKAGE}")
        try:
            module_file = find_module_file(module)
        except UnitError as exc:
            raise UnitError(f"{where}: {exc}") from None
        sidecar = module_file.with_name(module_file.stem + UNIT_SUFFIX)
        if not sidecar.is_file():
            raise UnitError(f"{where}: no {sidecar.name} beside {module_file}")
        top = find_module_file(module.split(".")[0])
        package_dir = top.parent if top.name == "__init__.py" else top
        units.extend(_read_sidecar(sidecar, module, origin, package_dir))
    return units


@functools.lru_cache(maxsize=1)
def discover() -> dict[str, dict[str, Unit]]:
    """section -> name -> unit: the built-in units (sidecars in package order), then the plug-ins'. A name
    defined twice is an error naming both sidecars."""
    found: dict[str, dict[str, Unit]] = {section: {} for section in SECTIONS}
    for unit in _builtin_units() + _plugin_units():
        previous = found[unit.section].get(unit.name)
        if previous is not None:
            raise UnitError(f"{unit.where}: already defined by {previous.sidecar} ({previous.origin})")
        found[unit.section][unit.name] = unit
    return found


def unit(section: str, name: str) -> Unit:
    units = discover()[section]
    if name not in units:
        raise UnitError(f"unknown {SECTIONS[section]} '{name}' (known: {', '.join(units)})")
    return units[name]


def from_entry(entry: str) -> Unit:
    """The unit of a code entry ``unit:<method|suite|figure>:<name>``."""
    word, _, name = entry[len(ENTRY_PREFIX):].partition(":")
    sections = {v: k for k, v in SECTIONS.items()}
    if not entry.startswith(ENTRY_PREFIX) or word not in sections or not name:
        raise UnitError(f"'{entry}' is not a unit entry (unit:<{'|'.join(sections)}>:<name>)")
    return unit(sections[word], name)


# --- shared parameter definitions -------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def shared_parameters() -> dict[str, dict]:
    """group -> {key: JSON schema}, from every ``*.params.yaml`` of the package (``trainer``: training/loop.py's)."""
    groups: dict[str, dict] = {}
    for path in sorted(PACKAGE_DIR.rglob(f"*{PARAMS_SUFFIX}")):
        with open(path, encoding="utf-8") as handle:
            data = parse_yaml(handle)
        if not isinstance(data, dict):
            raise UnitError(f"{path}: the top level must map group names to parameter schemas")
        for group, keys in data.items():
            if group in groups:
                raise UnitError(f"{path}: parameter group '{group}' is defined twice")
            if not isinstance(keys, dict):
                raise UnitError(f"{path}: {group}: must map parameter names to JSON schemas")
            groups[group] = keys
    return groups


# --- fingerprints -----------------------------------------------------------------------------------


def resolved_metadata(unit_: Unit) -> dict:
    """A unit's metadata as its jobs depend on it: the implementation as ``module:attribute``, a method's
    full parameter schema (the ``trainer`` group for a trained kind, then its own keys), a suite's settings
    schema (another suite's with ``settings_from``)."""
    record = {**unit_.metadata, "section": unit_.section, "name": unit_.name,
              "implementation": unit_.implementation}
    if unit_.section == "methods":
        shared = shared_parameters().get("trainer", {}) if unit_.metadata.get("trains") else {}
        record["params"] = {**shared, **(unit_.metadata.get("params") or {})}
    elif unit_.section == "suites" and unit_.metadata.get("settings_from"):
        source = discover()["suites"].get(unit_.metadata["settings_from"])
        record["settings"] = source.metadata.get("settings") if source else None
    return record
