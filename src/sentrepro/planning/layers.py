"""Config layers: which file (and line) of a stack of config files sets a key, and a profile's own overlay.

A config is the base file (``config.yaml``) with overlays merged over it in order: a profile's overlay
(``configfiles:`` in ``profiles/<name>/config.yaml``), then the user's files, then ``--config`` values.
Mappings merge key by key and anything else is replaced, as Snakemake merges them
(docs/configuration.md, "Config layers"). This module keeps each layer's own mapping so that an error about a dotted
key names the layer that set it: ``my.yaml:3: unknown config key 'methods.simcse.params.temprature'``.
Line numbers are read (with PyYAML's composer) only when an error is rendered, so a valid config costs
nothing more to load.

It also holds the one rule about profiles: a profile's ``configfiles`` are replaced by any
``--configfile(s)`` given on the command line (Snakemake's argument handling), which would silently plan
the base config's experiment in place of the profile's. :func:`check_profile_kept` stops that with one line;
``snakemake`` (workflow/rules/common.smk) and ``sentrepro check-config --profile`` both call it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sentrepro.runs import ConfigError
from sentrepro.yaml_files import parse_yaml

PROFILE_FILES = ("config.yaml", "profile.yaml")  # what Snakemake reads in a profile directory (v9)
COMMAND_LINE = "--config"  # the name of the layer of command-line values


def load_yaml(path: str | Path) -> dict:
    """A config file's mapping; ConfigError naming the file (and line of a YAML syntax error)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = parse_yaml(handle) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read this config file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: YAML syntax error: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


@dataclass
class Layer:
    """One config file (or the command line's ``--config`` values) and the mapping it holds."""

    name: str  # the path as given, or COMMAND_LINE
    data: dict
    _lines: dict | None = field(default=None, repr=False)

    def has(self, path: tuple) -> bool:
        node: Any = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    def line(self, path: tuple) -> int | None:
        """The 1-based line of ``path``'s key in the file, or None (no file, or YAML gives none)."""
        if self.name == COMMAND_LINE:
            return None
        if self._lines is None:
            self._lines = _key_lines(self.name)
        return self._lines.get(tuple(path))


class Layers:
    """The layers of one config, lowest first; :meth:`where` names the one that set a key."""

    def __init__(self, layers: list[Layer]):
        self.layers = layers

    @classmethod
    def from_files(cls, paths, command_line: dict | None = None) -> "Layers":
        layers = [Layer(str(path), load_yaml(path)) for path in paths]
        if command_line:
            layers.append(Layer(COMMAND_LINE, dict(command_line)))
        return cls(layers)

    def where(self, path) -> str:
        """``file:line`` of the last layer setting ``path`` (a tuple of keys), else of the last layer setting
        its longest present prefix (a missing key is reported where its parent is); the top layer's name when
        no layer has any of it."""
        path = tuple(path)
        for size in range(len(path), 0, -1):
            prefix = path[:size]
            for layer in reversed(self.layers):
                if layer.has(prefix):
                    line = layer.line(prefix)
                    return layer.name if line is None else f"{layer.name}:{line}"
        return self.layers[-1].name if self.layers else "<config>"

    def locate(self, message: str, path) -> str:
        """``message`` prefixed with :meth:`where` of ``path``."""
        return f"{self.where(path)}: {message}"


def _key_lines(path: str) -> dict[tuple, int]:
    """{key path: line} of every mapping key of a YAML file (merge keys ``<<`` followed to their source)."""
    try:
        with open(path, encoding="utf-8") as handle:
            root = yaml.compose(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return {}
    lines: dict[tuple, int] = {}

    def walk(node, prefix: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.tag == "tag:yaml.org,2002:merge":
                    for source in (value.value if isinstance(value, yaml.SequenceNode) else [value]):
                        walk(source, prefix)
                    continue
                here = prefix + (key.value,)
                lines[here] = key.start_mark.line + 1  # a later key (an override of a merged one) wins
                walk(value, here)

    walk(root, ())
    return lines


# --- profiles -------------------------------------------------------------------------------------


def profile_from_argv(argv: list[str], environ=os.environ) -> str | None:
    """The ``--profile`` of a Snakemake command line (the last one given), else ``$SNAKEMAKE_PROFILE``."""
    found = None
    for index, word in enumerate(argv):
        if word == "--profile" and index + 1 < len(argv):
            found = argv[index + 1]
        elif word.startswith("--profile="):
            found = word.split("=", 1)[1]
    return found or environ.get("SNAKEMAKE_PROFILE") or None


def profile_configfiles(profile: str, base: Path) -> tuple[Path, list[Path]] | None:
    """(the profile's YAML file, the config files it lists) for a profile directory or file given relative
    to ``base`` (the directory the command was started in); None when ``profile`` is no such path (a named
    profile of Snakemake's search path is not read here)."""
    where = (base / profile).resolve()
    candidates = [where] if where.is_file() else [where / name for name in PROFILE_FILES]
    for candidate in candidates:
        if candidate.is_file():
            settings = load_yaml(candidate)
            listed = settings.get("configfiles", settings.get("configfile")) or []
            listed = [listed] if isinstance(listed, str) else list(listed)
            return candidate, [(base / item).resolve() for item in listed]
    return None


def check_profile_kept(profile: str, profile_file: Path, profile_files: list[Path], used: list[Path],
                       base: Path | None = None) -> None:
    """One-line ConfigError when a command line's config files left out the profile's own overlay(s).

    Snakemake replaces a profile's ``configfiles`` by any given on the command line; the plan would then be
    the base config's experiment (the papers' full matrix) with the user's change, not the profile's."""
    used_resolved = {Path(p).resolve() for p in used}
    dropped = [p for p in profile_files if p.resolve() not in used_resolved]
    if not dropped:
        return
    base = base or Path.cwd()
    shown = " ".join(_shown(p, base) for p in profile_files)
    mine = " ".join(_shown(p, base) for p in used if Path(p).resolve() not in set(profile_files)) or "my.yaml"
    raise ConfigError(f"{_shown(profile_file, base)}: configfiles: the profile's overlay {shown} was replaced by the "
                      f"--configfile(s) given; list it first to add your own: --profile {profile} "
                      f"--configfiles {shown} {mine}")


def _shown(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when it lies inside it, else as it is."""
    relative = os.path.relpath(path, base)
    return str(path) if relative.startswith("..") else relative


def command_line_files(profile: str | None, configfiles: list[str] | None, base: Path) -> list[Path]:
    """The config files ``snakemake [--profile P] [--configfiles F...]`` started in ``base`` merges, in order:
    the Snakefile's ``config.yaml`` (beside the workflow's Snakefile), then ``F...`` or, when none are given,
    the profile's own ``configfiles``; ConfigError (one line) when ``F...`` leave out the profile's overlay."""
    from sentrepro.planning.workflow import PlanError, find_snakefile

    try:
        workflow_config = find_snakefile(base).parent / "config.yaml"
    except PlanError as error:
        raise ConfigError(str(error)) from None
    found = profile_configfiles(profile, base) if profile else None
    if profile and found is None:
        raise ConfigError(f"--profile {profile}: no profile directory or file there (looked in {base})")
    given = [(base / f).resolve() for f in configfiles or []]
    if found is not None and given:
        check_profile_kept(profile, found[0], found[1], given, base)
    files = given or (found[1] if found else [])
    return [workflow_config, *[f for f in files if f != workflow_config.resolve()]]


def snakemake_layers(workflow, argv: list[str], environ=os.environ) -> Layers:
    """The layers of a Snakemake run's config, after checking that a ``--profile``'s own overlay was kept.

    Snakemake merges the Snakefile's ``configfile:`` (unless ``--replace-workflow-config``), then the
    command line's ``--configfile(s)``, then ``--config`` values. A relative profile path is read from the
    directory the command was started in: the working directory, or, when ``-d`` moved it, the shell's
    ``$PWD``."""
    settings = workflow.config_settings
    used = [Path(p) for p in settings.configfiles]
    profile = profile_from_argv(argv, environ)
    if profile is not None and used:
        for base in dict.fromkeys([Path.cwd(), Path(environ.get("PWD") or os.getcwd())]):
            found = profile_configfiles(profile, base)
            if found is not None:
                if found[1]:
                    check_profile_kept(profile, found[0], found[1], used, base)
                break
    directive = [] if settings.replace_workflow_config else [
        p for p in workflow.configfiles if Path(p).resolve() not in {u.resolve() for u in used}]
    return Layers.from_files([*directive, *used], dict(settings.config) or None)
