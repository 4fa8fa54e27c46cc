"""Combining one cell's per-seed numbers: best-of-N (ranked by another metric) and mean ± std.

Pure functions on ``{seed: value}`` mappings. Seeds are ints, or ``None`` for the single evaluation of
a frozen (non-fine-tuned) model. The std is the population std (ddof=0) as numpy's default, the
convention of the papers' released scripts; it is ``None`` for a single seed.

best-of-N, as ConPVP Table 3 ("we run 4 times ... and report the best Avg."): the seed with the
highest *selection* metric (the row's Avg.) is chosen once per row, and every column of the row
shows that seed's value, so a row is one real run, never a mix of per-column maxima. Ties go to the
smallest seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sentrepro.planning.table_cells import Seed, seed_order

def best_seed(selection: dict[Seed, float]) -> Seed:
    """The seed whose selection metric is highest; ties go to the smallest seed."""
    if not selection:
        raise ValueError("best_seed needs at least one seed")
    return min(selection, key=lambda s: (-selection[s], seed_order(s)))


@dataclass(frozen=True)
class SeedSummary:
    """Statistics of one cell over seeds. ``best`` is the value of ``best_seed`` (None without selection)."""

    n: int
    mean: float
    std: float | None
    min: float
    max: float
    best: float | None
    best_seed: Seed

    @property
    def range(self) -> float:
        return self.max - self.min

    def stat(self, name: str) -> float | None:
        """One statistic by name: mean, std, max, min, range, best."""
        if name not in ("mean", "std", "max", "min", "range", "best"):
            raise ValueError(f"unknown seed statistic '{name}'")
        return getattr(self, name)


def summarize(values: dict[Seed, float], selection: dict[Seed, float] | None = None) -> SeedSummary | None:
    """Summarize ``{seed: value}``; ``selection`` ({seed: metric}) picks the best seed.

    Only seeds present in ``values`` count; the best seed is chosen among seeds that have both a
    value and a selection metric. Returns None when there is no value.
    """
    if not values:
        return None
    seeds = sorted(values, key=seed_order)
    array = np.array([values[s] for s in seeds], dtype=np.float64)  # (n_seeds,)
    chosen: Seed = None
    best = None
    if selection is not None:
        ranked = {s: selection[s] for s in seeds if s in selection}
        if ranked:
            chosen = best_seed(ranked)
            best = float(values[chosen])
    return SeedSummary(
        n=len(seeds),
        mean=float(array.mean()),
        std=float(array.std()) if len(seeds) > 1 else None,
        min=float(array.min()),
        max=float(array.max()),
        best=best,
        best_seed=chosen,
    )
