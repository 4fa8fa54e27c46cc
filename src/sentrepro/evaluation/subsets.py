"""Explicit, recorded subsetting of evaluation data (``max_samples`` in a suite's config).

Subsetting exists for fast tests and the CPU demo; it is never silent: every suite that applies it
writes ``subset`` into its metrics file with the cap, the seed and the rows used out of the rows read.
The draw is stratified by label when every class has at least two rows (so class ratios survive), and
a plain seeded draw otherwise. Kept rows stay in file order.
"""

from __future__ import annotations

import numpy as np


def subset_rows(labels: np.ndarray, max_samples: int | None, seed: int) -> np.ndarray:
    """Sorted row indices of at most ``max_samples`` rows of ``labels`` (all rows when ``None`` or enough)."""
    labels = np.asarray(labels)
    n_rows = len(labels)
    if max_samples is None or n_rows <= max_samples:
        return np.arange(n_rows)
    if max_samples < 1:
        raise ValueError(f"max_samples must be >= 1 or null, got {max_samples}")
    _, counts = np.unique(labels, return_counts=True)
    rows = np.arange(n_rows)
    if counts.min() >= 2 and max_samples >= len(counts):
        # imported here: every evaluation job imports this module, and sklearn.model_selection costs ~1 s of
        # start-up that only a subsetting job needs (BENCHMARKS.md, "The rehearsal": the per-job fixed cost)
        from sklearn.model_selection import train_test_split

        kept, _ = train_test_split(rows, train_size=max_samples, stratify=labels, random_state=seed)
    else:
        kept = np.random.default_rng(seed).choice(n_rows, size=max_samples, replace=False)
    return np.sort(kept)


class SubsetLog:
    """Collects what was cut, split by split, for the metrics file."""

    def __init__(self, max_samples: int | None, seed: int) -> None:
        self.max_samples = max_samples
        self.seed = seed
        self.sizes: dict[str, dict[str, list[int]]] = {}

    def take(self, task: str, split: str, labels: np.ndarray) -> np.ndarray:
        """Rows of ``task``/``split`` to keep; records ``[kept, read]``."""
        rows = subset_rows(labels, self.max_samples, self.seed)
        self.sizes.setdefault(task, {})[split] = [int(len(rows)), int(len(labels))]
        return rows

    @property
    def applied(self) -> bool:
        return any(kept < read for splits in self.sizes.values() for kept, read in splits.values())

    def record(self) -> dict:
        """JSON-ready: ``{"max_samples", "seed", "applied", "sizes": {task: {split: [kept, read]}}}``."""
        return {"max_samples": self.max_samples, "seed": self.seed, "applied": self.applied, "sizes": self.sizes}
