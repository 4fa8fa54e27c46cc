"""A training job's progress as a person reads it: one short line now and then, not a bar.

The train rule sends these lines (stderr) both to the job's log and to the terminal, so a demo shows
which run is training and how far it is between Snakemake's job lines.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class StepProgress:
    """``progress(step, total)`` after each optimizer step; prints at most every ``every_s`` seconds
    (and at the last step): ``[train <run>] step 12/30 (40%), 31 s, about 47 s left``."""

    def __init__(self, label: str, every_s: float = 15.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.every_s = every_s
        self.stream = stream
        self.clock = clock
        self.started: float | None = None
        self.first_step: int | None = None
        self.last_print: float | None = None

    def line(self, message: str) -> None:
        print(f"[train {self.label}] {message}", file=self.stream or sys.stderr, flush=True)

    def __call__(self, step: int, total: int) -> None:
        now = self.clock()
        if self.started is None:  # the first step of this job (it may resume mid-run)
            self.started, self.first_step, self.last_print = now, step - 1, now
        if step < total and now - self.last_print < self.every_s:
            return
        self.last_print = now
        elapsed = now - self.started
        done = step - self.first_step
        left = elapsed / done * (total - step) if done else 0.0
        tail = f", about {left:.0f} s left" if step < total else ""
        self.line(f"step {step}/{total} ({100 * step / total:.0f}%), {elapsed:.0f} s{tail}")
