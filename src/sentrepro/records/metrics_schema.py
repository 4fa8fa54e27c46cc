"""The schema a metrics file is read against: the result keys its suite wrote, each holding a number.

A suite's results depend on its settings (the demo's STS suite scores STS-B alone, the paper's seven
tasks), so a table cell of a task the suite was not asked for is legitimately empty. A key the suite
*did* write and that is now missing, or holds a string, is a damaged file: read quietly, it became a
blank cell (and a shifted average) with exit 0. So the schema of one file is derived from what its
suite computed, written by the evaluation job itself (:func:`declared_keys` into ``result_keys``) plus,
for suites configured with a task list, every task of that list as the file's provenance records it.
Readers (the table builder, hence the verdicts) call :func:`check_metrics` on every file they read; a
violation is one :class:`MetricsSchemaError` line naming the file, the key and what is wrong.
"""

from __future__ import annotations

from pathlib import Path

RESULT_KEYS = "result_keys"  # the key of a metrics file listing the result keys its suite wrote


class MetricsSchemaError(ValueError):
    """A metrics file lacks a result key its suite wrote, or holds something else than a number there."""


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def reported(entry):
    """The number a table shows of one result entry: the entry itself, or its ``reported`` field."""
    return entry.get("reported") if isinstance(entry, dict) else entry


def declared_keys(results: dict) -> list[str]:
    """The result keys a table can read (their entry is a number or has a numeric ``reported``): what an
    evaluation job records as its file's ``result_keys``."""
    return sorted(key for key, entry in results.items() if _number(reported(entry)))


def required_keys(payload: dict) -> list[str]:
    """The result keys a metrics file must hold: those its job declared, and each task of a task list its
    recorded settings name (``provenance.config.settings.tasks``)."""
    keys = set(payload.get(RESULT_KEYS) or [])
    settings = ((payload.get("provenance") or {}).get("config") or {}).get("settings") or {}
    tasks = settings.get("tasks") if isinstance(settings, dict) else None
    if isinstance(tasks, list):
        keys.update(task for task in tasks if isinstance(task, str))
    return sorted(keys)


def check_metrics(payload: dict, path: Path) -> None:
    """Raise :class:`MetricsSchemaError` naming ``path`` and the first required key that is missing or not a number."""
    results = payload["results"]
    suite = payload.get("suite", "?")
    fix = f"rerun its evaluation (snakemake --forcerun {path})"
    for key in required_keys(payload):
        if key not in results:
            raise MetricsSchemaError(f"{path}: results.{key} is missing, which its {suite} job wrote (result_keys "
                                     f"or settings.tasks); the file changed after its job: {fix}")
        value = reported(results[key])
        if not _number(value):
            where = f"results.{key}.reported" if isinstance(results[key], dict) else f"results.{key}"
            shown = "missing" if value is None else f"{value!r} ({type(value).__name__})"
            raise MetricsSchemaError(f"{path}: {where} is {shown}, not a number; the file changed after its "
                                     f"{suite} job: {fix}")
