"""Where a workflow's time went: the Snakemake benchmark files of its jobs, summed per step.

Every rule writes ``<results or resources>/benchmarks/<step>/...tsv`` (Snakemake's ``benchmark:``
directive: the job's wall seconds ``s`` and the CPU seconds ``cpu_time`` of its process tree). The
step is the folder under ``benchmarks/`` (the rule: ``evaluate_<suite>`` for evaluations), or
the file's name for a rule with a single job (``benchmarks/demo_summary.tsv``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path


class BenchmarkError(ValueError):
    """A benchmark file is not Snakemake's TSV; the message names the file and the column."""


@dataclass
class StepTime:
    step: str
    jobs: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    longest_s: float = 0.0
    longest: str = ""


def read_benchmark(path: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one job; the last line if the job was benchmarked repeatedly."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows:
        raise BenchmarkError(f"{path}: no benchmark line under the header")
    row = rows[-1]
    try:
        return float(row["s"]), float(row.get("cpu_time") or 0.0)
    except KeyError as exc:
        raise BenchmarkError(f"{path}: no column {exc} (columns: {', '.join(row)})") from exc
    except ValueError as exc:
        raise BenchmarkError(f"{path}: {exc}") from exc


def collect(roots: list[Path]) -> list[StepTime]:
    """Per-step totals over ``<root>/benchmarks/**.tsv`` of each root, longest total first."""
    steps: dict[str, StepTime] = {}
    for root in roots:
        base = Path(root) / "benchmarks"
        for path in sorted(base.rglob("*.tsv")):
            rel = path.relative_to(base)
            step = rel.parts[0] if len(rel.parts) > 1 else rel.stem  # a one-job rule: benchmarks/<rule>.tsv
            wall, cpu = read_benchmark(path)
            entry = steps.setdefault(step, StepTime(step))
            entry.jobs += 1
            entry.wall_s += wall
            entry.cpu_s += cpu
            if wall >= entry.longest_s:
                entry.longest_s, entry.longest = wall, str(path.relative_to(base).with_suffix(""))
    return sorted(steps.values(), key=lambda s: -s.wall_s)


def format_times(steps: list[StepTime], roots: list[Path]) -> str:
    if not steps:
        return f"no benchmark files under {', '.join(f'{r}/benchmarks' for r in roots)}\n"
    lines = [f"{'step':<24} {'jobs':>4} {'wall s':>8} {'CPU s':>8}  longest job",
             *(f"{s.step:<24} {s.jobs:>4} {s.wall_s:>8.1f} {s.cpu_s:>8.1f}  {s.longest} ({s.longest_s:.1f} s)"
               for s in steps)]
    wall = sum(s.wall_s for s in steps)
    cpu = sum(s.cpu_s for s in steps)
    lines.append(f"{'total':<24} {sum(s.jobs for s in steps):>4} {wall:>8.1f} {cpu:>8.1f}  "
                 "(sums over jobs; jobs run side by side, so the elapsed time is shorter)")
    return "\n".join(lines) + "\n"
