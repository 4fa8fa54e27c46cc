"""The benchmark task lists: which tasks each suite can score and where they sit, derived from the units.

Each benchmark unit (sentrepro.data.benchmarks) declares its task groups next to its parser; this module
is the view the rest of the package reads: the registry fills the config schema's task enums from
:func:`task_names` (a unit's settings schema: ``{enum_of: <group>}``), and the suites read their task lists here, so
a task is named in one place.
"""

from __future__ import annotations

from sentrepro.data.benchmarks import task_groups


def _group(group: str):
    groups = task_groups()
    if group not in groups:
        raise ValueError(f"no task group '{group}' in the benchmark units (sentrepro.data.benchmarks; "
                         f"known: {', '.join(groups)})")
    return groups[group]


def task_names(group: str) -> list[str]:
    """The task (set, version) names of ``group``: sts, transfer, clustering or wos, in declaration order."""
    return list(_group(group))


def sts_tasks() -> dict[str, dict]:
    """STS task -> how it is read (``year`` for STS12-16; ``dir_key``, ``default_dir``, ``file`` otherwise)."""
    return dict(_group("sts"))


def transfer_tasks() -> dict[str, dict]:
    """Transfer task -> ``{"dir", "protocol"}``."""
    return dict(_group("transfer"))
