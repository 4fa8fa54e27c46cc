"""The benchmark task lists (``tasks.yaml``): which tasks each suite can score and where they sit.

Light (yaml only): the registry reads it to fill the config schema's task enums, and the suites read
their task lists from it, so a task is named in one place.
"""

from __future__ import annotations

import functools
from pathlib import Path

from sentrepro.fsutil import parse_yaml

# Package data this module reads (sentrepro.codedeps adds it to the code of every rule importing us).
PACKAGE_DATA = ("tasks.yaml",)
TASKS_PATH = Path(__file__).resolve().parent / PACKAGE_DATA[0]
TRANSFER_PROTOCOLS = ("cv", "dev", "fixed_test")


@functools.lru_cache(maxsize=None)
def _tasks() -> dict:
    with open(TASKS_PATH, encoding="utf-8") as handle:
        data = parse_yaml(handle)
    for task, entry in data["transfer"].items():
        if entry.get("protocol") not in TRANSFER_PROTOCOLS:
            raise ValueError(f"{TASKS_PATH.name}: transfer.{task}.protocol must be one of {', '.join(TRANSFER_PROTOCOLS)}")
    return data


def task_names(group: str) -> list[str]:
    """The task (set, version) names of ``group``: sts, transfer, clustering or wos, in file order."""
    try:
        entries = _tasks()[group]
    except KeyError:
        raise ValueError(f"{TASKS_PATH.name}: no task group '{group}' (known: {', '.join(_tasks())})") from None
    return list(entries)


def sts_tasks() -> dict[str, dict]:
    """STS task -> how it is read (``year`` for STS12-16; ``dir_key``, ``default_dir``, ``file`` otherwise)."""
    return dict(_tasks()["sts"])


def transfer_tasks() -> dict[str, dict]:
    """Transfer task -> ``{"dir", "protocol"}``."""
    return dict(_tasks()["transfer"])


def clustering_sets() -> dict[str, str]:
    """Clustering set -> its path in the short-text-clustering data/ folder."""
    return dict(_tasks()["clustering"])
