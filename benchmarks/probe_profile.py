"""Where the transfer probe's time goes: one full cross-validated task under the torch profiler, per dimension.

Scores a SentEval task the way the transfer suite does (``score_ours`` of ``senteval_parity.py``: SentEval's row
order, nested 10-fold CV, SimCSE's "test" mode) on all-MiniLM-L6-v2 vectors projected to each of ``--dims``
(``senteval_parity.MiniLMVectors``), twice per dimension: once plain for the wall time, once under
``torch.profiler`` to split that time into

* **matrix products** - the self time of ``baddbmm``/``bmm``/``mm``/``addmm`` (forward logits, weight gradient);
* **data movement** - gathers and copies (``index_select``, advanced indexing, ``copy_``, ``cat``, padding, ...);
* **loss and autograd** - cross-entropy, its backward and the other element-wise ops of a training step;
* **optimiser** - everything inside ``Optimizer.step``/``zero_grad`` (Adam's element-wise updates);
* **early-stopping evaluation** - everything inside the probe's ``probe.early_stopping_evaluation`` scope
  (scoring the validation rows after each epoch);
* **Python per step** - the self time of the scopes that are not operators (``ProfilerStep``, the probe's
  autograd Function): the interpreter and dispatch between operators.

The shares come from the profiled run, which records windows of ``--active`` optimiser steps every
``--active + --wait + 1`` steps (a full task is millions of operator events, more than memory holds) and tallies
each window as it closes; the profiler adds about a microsecond per operator, which lands in the operator rows.
The seconds columns scale the shares to the plain run's wall time. Run with one thread, from the
repository root, against the engine of any checkout that opens the probe's evaluation scope (issue 38 on; an
older one needs that one line added) with ``PYTHONPATH=<checkout>/src`` (the script prints which engine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/probe_profile.py --data ../shared/data/senteval \\
        --task SUBJ --dims 384 768 1024 --cache /tmp/sentrepro-vectors
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from sentrepro.evaluation.probe import EVALUATION_SCOPE

HERE = Path(__file__).resolve().parent
MATRIX_PRODUCTS = {"aten::baddbmm", "aten::bmm", "aten::mm", "aten::addmm", "aten::matmul"}
DATA_MOVEMENT = {"aten::index_select", "aten::index", "aten::copy_", "aten::cat", "aten::constant_pad_nd",
                 "aten::clone", "aten::to", "aten::_to_copy", "aten::contiguous", "aten::repeat", "aten::stack",
                 "aten::index_put_", "aten::_index_put_impl_", "aten::masked_select"}
CATEGORIES = ("matrix products", "data movement", "loss and autograd", "optimiser", "early-stopping evaluation",
              "Python per step")


def parity_module():
    spec = importlib.util.spec_from_file_location("senteval_parity", HERE / "senteval_parity.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["senteval_parity"] = module
    spec.loader.exec_module(module)
    return module


def category(event) -> str:
    """The category of one profiler event's self time (the scopes win over the operator's own name)."""
    node = event
    while node is not None:
        if node.name == EVALUATION_SCOPE:
            return "early-stopping evaluation"
        if node.name.startswith(("Optimizer.step", "Optimizer.zero_grad")):
            return "optimiser"
        node = node.cpu_parent
    if not event.name.startswith("aten::"):  # a scope (ProfilerStep*, an autograd Function): the interpreter
        return "Python per step"
    if event.name in MATRIX_PRODUCTS:
        return "matrix products"
    if event.name in DATA_MOVEMENT:
        return "data movement"
    return "loss and autograd"


def profile(task: str, splits: dict, vectors, parity, active: int, wait: int) -> dict:
    """Plain wall time, then the profiled split of the same scoring, for one vector function.

    The profiler records windows of ``active`` optimiser steps with ``wait`` steps between them (a full task
    records millions of operator events, more than the memory holds); each window is tallied as it closes.
    """
    start = time.perf_counter()
    plain_result = parity.score_ours(task, splits, vectors)
    plain_wall = time.perf_counter() - start
    seconds: Counter = Counter()
    counts: Counter = Counter()

    def tally(window) -> None:
        for event in window.events():
            seconds[category(event)] += event.self_cpu_time_total / 1e6
            counts["steps"] += event.name.startswith("Optimizer.step")
            counts["evaluations"] += event.name == EVALUATION_SCOPE

    schedule = torch.profiler.schedule(wait=wait, warmup=1, active=active)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=tally) as profiler:
        hook = register_optimizer_step_post_hook(lambda *_: profiler.step())
        try:
            profiled_result = parity.score_ours(task, splits, vectors)
        finally:
            hook.remove()
    if profiled_result != plain_result:
        raise RuntimeError(f"the profiled run scored {profiled_result}, the plain one {plain_result}")
    total = sum(seconds[name] for name in CATEGORIES)
    shares = {name: seconds[name] / total for name in CATEGORIES}
    return {"result": plain_result, "wall_s": round(plain_wall, 1), "sampled_s": round(sum(seconds.values()), 1),
            "sampled_steps": counts["steps"], "sampled_evaluations": counts["evaluations"],
            "shares": {name: round(share, 3) for name, share in shares.items()},
            "seconds": {name: round(share * plain_wall, 1) for name, share in shares.items()}}


def engine_revision() -> str:
    import sentrepro

    source = Path(sentrepro.__file__).resolve().parent
    try:
        revision = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{source} (not a git checkout)"
    return f"{source} at {revision}{' + uncommitted changes' if dirty else ''}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="SentEval data folder (MR/, SUBJ/, ...)")
    parser.add_argument("--task", default="SUBJ", choices=("MR", "CR", "SUBJ", "MPQA"))
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768, 1024])
    parser.add_argument("--size", type=int, default=0, help="lines kept of each class file (0: all)")
    parser.add_argument("--cache", type=Path, help="folder caching the MiniLM vectors between runs")
    parser.add_argument("--active", type=int, default=20, help="optimiser steps per recorded window")
    parser.add_argument("--wait", type=int, default=30, help="optimiser steps skipped between windows")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    parity = parity_module()
    print(f"engine: {engine_revision()}; torch {torch.__version__}, threads {torch.get_num_threads()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        parity.truncate_task(args.data, Path(scratch), args.task, args.size, 0)
        splits = parity.load_ours(Path(scratch), args.task)
        model = parity.MiniLMVectors([s for split in splits.values() for s in split.sentences], args.cache)
        for dim in args.dims:
            row = {"task": args.task, "dim": dim, **profile(args.task, splits, lambda sentences, dim=dim: model(sentences, dim),
                                                            parity, args.active, args.wait)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print("\n| dim | wall s | " + " | ".join(CATEGORIES) + " | sampled steps |")
    print("|---:|---:|" + "---:|" * (len(CATEGORIES) + 1))
    for row in rows:
        cells = [f"{row['seconds'][name]:.1f} s ({100 * row['shares'][name]:.0f} %)" for name in CATEGORIES]
        print(f"| {row['dim']} | {row['wall_s']} | " + " | ".join(cells) + f" | {row['sampled_steps']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
