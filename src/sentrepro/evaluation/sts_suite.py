"""The STS suite: STS12-16 ("all"), STS-B test and SICK-R test, encoded once, scored as SentEval.

Every distinct sentence of every selected task is encoded in one length-sorted pass, so sentences
shared across pairs or tasks are encoded once. Per task the metrics file keeps ``all``, ``mean``,
``wmean`` and the per-subset values; the reported number is ``all`` x100 for STS12-16 and the test
Spearman x100 for STS-B and SICK-R. ``avg`` is the plain mean over the tasks present. Given an
``items`` dict, each task's per-pair cosines and gold scores are kept too (pooled in subset order for
STS12-16, the order the "all" Spearman is computed on), for the paired bootstrap of the verdicts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentrepro.planning import registry
from sentrepro.data.benchmarks.sts import read_sick, read_sts_benchmark, read_sts_year
from sentrepro.data.tasks import sts_tasks
from sentrepro.evaluation.item_scores import pairs_path, write_pairs
from sentrepro.evaluation.job import SuiteJob, source_root, write_metrics
from sentrepro.evaluation.sts import aggregate_subsets, cosine_rows, correlations
from sentrepro.records.provenance import file_record

# The STS tasks and where each sits in its source: the sts unit (data/benchmarks/sts.py). STS12-16 are scored per year over
# their subsets ("all"); the others from one test file, read by the reader its entry names.
STS_TASKS = sts_tasks()
YEARS = {task: entry["year"] for task, entry in STS_TASKS.items() if "year" in entry}
READERS = {"stsb": read_sts_benchmark, "sick": read_sick}


def load_sts_tasks(root: Path, cfg: dict, *, check_counts: bool = True) -> tuple[dict[str, dict[str, list]], list[Path]]:
    """task -> subset -> pairs, for the configured tasks; and the files read. ``check_counts``: hold each file
    to its documented count (real data; a synthetic fixture has its own counts)."""
    tasks: dict[str, dict[str, list]] = {}
    used: list[Path] = []
    for task in cfg["tasks"]:
        if task not in STS_TASKS:
            raise ValueError(f"evaluation.sts.tasks: unknown task '{task}' (known: {', '.join(STS_TASKS)})")
        entry = STS_TASKS[task]
        directory = root / cfg.get(entry["dir_key"], entry["default_dir"])
        if task in YEARS:
            tasks[task] = read_sts_year(directory, YEARS[task], variant=cfg["variant"], check_counts=check_counts)
            used.extend(sorted((directory / f"{task}-en-test").glob("STS*.txt")))
        else:
            path = directory / entry["file"]
            tasks[task] = {"test": READERS[entry["reader"]](path, check_counts=check_counts)}
            used.append(path)
    return tasks, used


def score_tasks(tasks: dict[str, dict[str, list]], embed, items: dict | None = None) -> dict:
    """Score loaded tasks with ``embed(list[str]) -> (N, H)`` called once over all sentences.

    ``items``, when given, receives task -> (cosines (n,), gold (n,)) of every scored pair.
    """
    sentences: list[str] = []
    for subsets in tasks.values():
        for pairs in subsets.values():
            sentences.extend(p.s1 for p in pairs)
            sentences.extend(p.s2 for p in pairs)
    vectors = embed(sentences)
    cursor = 0
    results: dict[str, dict] = {}
    for task, subsets in tasks.items():
        per_subset = {}
        for name, pairs in subsets.items():
            n = len(pairs)
            left, right = vectors[cursor:cursor + n], vectors[cursor + n:cursor + 2 * n]
            cursor += 2 * n
            per_subset[name] = (cosine_rows(left, right), np.array([p.score for p in pairs]))
        if items is not None:
            items[task] = (np.concatenate([pred for pred, _ in per_subset.values()]),
                           np.concatenate([gold for _, gold in per_subset.values()]))
        if task in YEARS:
            agg = aggregate_subsets(per_subset)
            results[task] = {**agg, "reported": 100 * agg["all"]}
        else:
            pred, gold = per_subset["test"]
            corr = correlations(pred, gold)
            results[task] = {**corr, "reported": 100 * corr["spearman"]}
    results["avg"] = {"reported": float(np.mean([results[t]["reported"] for t in tasks]))}
    return results


def run_sts(job: SuiteJob, manifest: Path, out: Path) -> dict:
    """The STS suite (and, for a ``model: start`` suite, the same on the untrained model): score the
    configured tasks, keep every pair's cosine and gold score beside the metrics file, write it."""
    tasks, used = load_sts_tasks(source_root(manifest), job.settings, check_counts=job.check_counts)
    job.add_data_files(used, "STS data file")
    items: dict = {}
    results = score_tasks(tasks, job.embed, items)
    item_scores = write_pairs(pairs_path(out), items)
    job.prov.extra["outputs"] = [file_record(pairs_path(out), "per-pair cosines and gold scores (item_scores)")]
    state = {"state": "step 0 (untrained, as the training job builds it)"} if registry.suite(job.suite).model == "start" \
        else {}
    return write_metrics(job, out, results, aggregation="all",
                         extra={"variant": job.settings["variant"], "item_scores": item_scores, **state})
