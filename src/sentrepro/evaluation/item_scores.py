"""Per-item scores kept beside a metrics file, so statistics can be recomputed without re-encoding.

STS: ``<metrics stem>.pairs.npz`` beside ``sts.json`` holds, per task, every test pair's cosine and
its gold score, in the order the task's pairs were read (STS12-16: the year's subsets concatenated
in file order, the "all" setting's pooled order). Arrays are named ``<task>/cosine`` and
``<task>/gold`` (float32, shape (n,)). The metrics JSON names the file and its sha256 under
``item_scores`` and in ``provenance.outputs``; the reader recomputes the hash and refuses a file that
changed. Spearman of (cosine, gold) x100 is each task's reported number (``all`` for STS12-16).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from sentrepro.files import atomic_path
from sentrepro.hashing import sha256_file

SUFFIX = ".pairs.npz"


class ItemScoresError(ValueError):
    """An item-scores file is missing, changed since its metrics file was written, or malformed."""


def pairs_path(metrics_path: str | Path) -> Path:
    """``.../sts.json`` -> ``.../sts.pairs.npz``."""
    metrics_path = Path(metrics_path)
    return metrics_path.with_name(metrics_path.stem + SUFFIX)


def write_pairs(path: str | Path, per_task: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict:
    """Write task -> (cosines (n,), gold (n,)) atomically; return the ``item_scores`` record."""
    arrays = {}
    for task, (cosine, gold) in per_task.items():
        cosine = np.asarray(cosine, dtype=np.float32)
        gold = np.asarray(gold, dtype=np.float32)
        if cosine.shape != gold.shape or cosine.ndim != 1:
            raise ItemScoresError(f"{task}: cosines {cosine.shape} and gold {gold.shape} must be equal 1-d shapes")
        arrays[f"{task}/cosine"] = cosine
        arrays[f"{task}/gold"] = gold
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getvalue())
    return {"file": Path(path).name, "sha256": sha256_file(path), "format": "npz: <task>/cosine, <task>/gold",
            "tasks": {task: int(len(cos)) for task, (cos, _) in per_task.items()}}


def read_pairs(metrics_path: str | Path, payload: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """task -> (cosines (n,), gold (n,)) of the metrics file ``metrics_path`` (its parsed ``payload``).

    Raises ItemScoresError naming the file when the metrics file records no item scores, the file is
    missing, or its sha256 differs from the one recorded.
    """
    record = payload.get("item_scores")
    if not isinstance(record, dict) or "file" not in record:
        raise ItemScoresError(f"{metrics_path}: no 'item_scores' record (written before per-pair scores were kept)")
    path = Path(metrics_path).parent / record["file"]
    if not path.exists():
        raise ItemScoresError(f"{path}: missing (named by {metrics_path})")
    digest = sha256_file(path)
    if digest != record["sha256"]:
        raise ItemScoresError(f"{path}: sha256 {digest} differs from {record['sha256']} recorded in {metrics_path}")
    with np.load(path) as data:
        tasks: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for task in record["tasks"]:
            try:
                tasks[task] = (data[f"{task}/cosine"], data[f"{task}/gold"])
            except KeyError as exc:
                raise ItemScoresError(f"{path}: no arrays for task '{task}'") from exc
    return tasks


def item_scores_file(metrics_path: str | Path, payload: dict) -> Path | None:
    """The item-scores file a metrics file names (None when it names none)."""
    record = payload.get("item_scores")
    if not isinstance(record, dict) or "file" not in record:
        return None
    return Path(metrics_path).parent / record["file"]
