"""The suites with a SentEval-style protocol: transfer, few-shot, clustering and WOS classification.

Each function here is a suite unit (its entry in ``suites.units.yaml`` beside this module), run by
:func:`sentrepro.evaluation.job.run_suite` on a loaded :class:`~sentrepro.evaluation.job.SuiteJob`:
it reads its data, gathers every sentence it needs, embeds them in one deduplicated, length-sorted
pass with the run's own method embedding, scores, and writes the metrics file. The protocols
themselves live in ``transfer``, ``fewshot``, ``clustering`` and ``classification``; the STS suite in
:mod:`sentrepro.evaluation.sts_suite`; the analyses in :mod:`sentrepro.evaluation.analyses`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentrepro.data.tasks import transfer_tasks
from sentrepro.evaluation.job import SuiteJob, mean_reported, source_root, write_metrics
from sentrepro.evaluation.subsets import SubsetLog
from sentrepro.encoder.device import resolve_device

# The seven tasks, their folders in SentEval's data/downstream layout, and their protocols: the transfer unit
# (sentrepro.data.benchmarks.transfer, read through sentrepro.data.tasks)
TRANSFER_TASKS = tuple(transfer_tasks())
CV_TASKS = tuple(task for task, entry in transfer_tasks().items() if entry["protocol"] == "cv")
TRANSFER_DIRS = {task: entry["dir"] for task, entry in transfer_tasks().items()}


# ------------------------------------------------------------------------------------------------
# SentEval transfer data


@dataclass
class Split:
    """One split of a transfer task: sentences (or sentence pairs for MRPC) and integer labels."""

    texts: list
    labels: np.ndarray

    def take(self, rows: np.ndarray) -> "Split":
        return Split([self.texts[i] for i in rows], self.labels[rows])

    @property
    def sentences(self) -> list[str]:
        if self.texts and isinstance(self.texts[0], tuple):
            return [s for pair in self.texts for s in pair]
        return list(self.texts)


def read_transfer_task(root: Path, task: str, *, check_counts: bool) -> tuple[dict[str, Split], list[Path]]:
    """A task's splits (``all`` for MR/CR/SUBJ/MPQA) and the files read, from SentEval's layout under ``root``."""
    from sentrepro.data.benchmarks import transfer as parsers

    if task not in TRANSFER_TASKS:
        raise ValueError(f"unknown transfer task '{task}' (known: {', '.join(TRANSFER_TASKS)})")
    task_dir = Path(root) / TRANSFER_DIRS[task]
    if task in CV_TASKS:
        samples = parsers.read_binary(task_dir, task, check_counts=check_counts)
        files = [task_dir / name for name, _, _ in parsers.BINARY_TASK_FILES[task]]
        return {"all": _labelled(samples)}, files
    if task == "SST2":
        splits = parsers.read_sst2(task_dir, check_counts=check_counts)
        files = [task_dir / name for name in parsers.SST2_FILES.values()]
    elif task == "TREC":
        splits = parsers.read_trec(task_dir, check_counts=check_counts)
        files = [task_dir / name for name in parsers.TREC_FILES.values()]
    else:
        pairs = parsers.read_mrpc(task_dir, check_counts=check_counts)
        files = [task_dir / name for name in parsers.MRPC_FILES.values()]
        return {split: Split([(p.s1, p.s2) for p in items], np.array([p.label for p in items]))
                for split, items in pairs.items()}, files
    return {split: _labelled(samples) for split, samples in splits.items()}, files


def _labelled(samples) -> Split:
    return Split([s.text for s in samples], np.array([s.label for s in samples], dtype=np.int64))


def load_transfer_tasks(root: Path, tasks, subset: SubsetLog, *, check_counts: bool
                        ) -> tuple[dict[str, dict[str, Split]], list[Path]]:
    loaded, files = {}, []
    for task in tasks:
        splits, task_files = read_transfer_task(root, task, check_counts=check_counts)
        loaded[task] = {name: split.take(subset.take(task, name, split.labels)) for name, split in splits.items()}
        files += task_files
    return loaded, files


def senteval_ordered(split: Split) -> Split:
    """The split in the row order SentEval's task class hands its classifier (:func:`~sentrepro.data.benchmarks.transfer.
    senteval_order`): the folds, the 5 % hold-out and the probe's mini-batches all follow from that order."""
    from sentrepro.data.benchmarks.transfer import senteval_order

    return split.take(np.asarray(senteval_order(split.texts, split.labels), dtype=np.int64))


def split_features(split: Split, vectors: np.ndarray) -> np.ndarray:
    """Features of a split from its sentence vectors: the vectors, or MRPC's ``[|u-v|, u*v]`` for pairs."""
    from sentrepro.evaluation.transfer import mrpc_features

    if split.texts and isinstance(split.texts[0], tuple):
        return mrpc_features(vectors[0::2], vectors[1::2])
    return vectors


# ------------------------------------------------------------------------------------------------
# transfer (7 SentEval tasks)


def score_transfer_task(task: str, features: dict[str, np.ndarray], labels: dict[str, np.ndarray], **protocol
                        ) -> dict:
    """One task's score with its SentEval protocol, from its splits' features and labels (in SentEval's order)."""
    from sentrepro.evaluation.transfer import evaluate_cv_task, evaluate_fixed_test_task, evaluate_split_task

    if task in CV_TASKS:
        return evaluate_cv_task(features["all"], labels["all"], **protocol)
    if task == "SST2":
        return evaluate_split_task(features["train"], labels["train"], features["dev"], labels["dev"],
                                   features["test"], labels["test"], **protocol)
    return evaluate_fixed_test_task(features["train"], labels["train"], features["test"], labels["test"], **protocol)


def run_transfer(job: SuiteJob, manifest: Path, out: Path) -> dict:
    """SentEval transfer: nested CV (MR/CR/SUBJ/MPQA), dev-selected (SST-2), CV-on-train + fixed test (TREC, MRPC).

    Every split is put in SentEval's row order (:func:`senteval_ordered`) before it is embedded and scored.
    """
    cfg = job.settings
    subset = SubsetLog(cfg["max_samples"], cfg["subset_seed"])
    tasks, files = load_transfer_tasks(source_root(manifest), cfg["tasks"], subset,
                                       check_counts=job.check_counts)
    tasks = {task: {name: senteval_ordered(split) for name, split in splits.items()} for task, splits in tasks.items()}
    job.add_data_files(files, "transfer data file")
    vectors = job.embed_groups({(t, s): split.sentences for t, splits in tasks.items() for s, split in splits.items()})
    features = {(t, s): split_features(tasks[t][s], vectors[(t, s)]) for t in tasks for s in tasks[t]}
    device = resolve_device(cfg["device"])
    protocol = {"mode": cfg["mode"], "device": device, "seed": cfg["seed"]}
    results = {}
    for task, splits in tasks.items():
        task_features = {name: features[(task, name)] for name in splits}
        result = score_transfer_task(task, task_features, {name: split.labels for name, split in splits.items()},
                                     **protocol)
        results[task] = {**result, "reported": result["acc"]}
    results["avg"] = mean_reported(results, tasks)
    return write_metrics(job, out, results, subset=subset,
                         aggregation="acc x100: mean over outer folds (MR/CR/SUBJ/MPQA), fixed test split otherwise; "
                                     "avg = plain mean over tasks")


# ------------------------------------------------------------------------------------------------
# few-shot transfer (ConPVP Fig. 7)


def fewshot_split(task: str, splits: dict, holdout: dict):
    """(pool, test) of one few-shot task: its train and test files, or for a task with one file (MR, CR, SUBJ,
    MPQA) the first fold of SentEval's outer stratified split as test and the rest as the pool."""
    from sentrepro.evaluation.fewshot import cv_task_holdout

    if task in CV_TASKS:
        pool_rows, test_rows = cv_task_holdout(splits["all"].labels, holdout["folds"], holdout["seed"])
        return splits["all"].take(pool_rows), splits["all"].take(test_rows)
    return splits["train"], splits["test"]


def run_fewshot(job: SuiteJob, manifest: Path, out: Path) -> dict:
    """16 shots per class, one run per seed; only the sampled training rows and the test rows are encoded.

    ``max_samples`` cuts the test rows only: the pool is never encoded beyond the sampled shots.
    """
    from sentrepro.evaluation.fewshot import evaluate_fewshot, sample_per_class

    cfg = job.settings
    subset = SubsetLog(cfg["max_samples"], cfg["subset_seed"])
    tasks, files = load_transfer_tasks(source_root(manifest), cfg["tasks"], SubsetLog(None, 0),
                                       check_counts=job.check_counts)
    job.add_data_files(files, "transfer data file")
    holdout = {"folds": cfg["holdout_folds"], "seed": cfg["holdout_seed"]}
    pools, tests, sampled = {}, {}, {}
    for task, splits in tasks.items():
        pools[task], test = fewshot_split(task, splits, holdout)
        tests[task] = test.take(subset.take(task, "test", test.labels))
        # The runs read only the sampled pool rows (fewshot.fewshot_run uses X_train[sample]); encode just those.
        try:
            draws = [sample_per_class(pools[task].labels, cfg["shots"], seed) for seed in cfg["seeds"]]
        except ValueError as error:
            raise ValueError(f"fewshot task {task}: {error}") from None
        sampled[task] = np.unique(np.concatenate(draws))
    groups = {}
    for task in tasks:
        groups[(task, "pool")] = pools[task].take(sampled[task]).sentences
        groups[(task, "test")] = tests[task].sentences
    vectors = job.embed_groups(groups)
    device = resolve_device(cfg["device"])
    results = {}
    for task in tasks:
        pool_features = split_features(pools[task].take(sampled[task]), vectors[(task, "pool")])
        X_pool = np.zeros((len(pools[task].labels), pool_features.shape[1]), dtype=np.float32)
        X_pool[sampled[task]] = pool_features
        X_test = split_features(tests[task], vectors[(task, "test")])
        result = evaluate_fewshot(X_pool, pools[task].labels, X_test, tests[task].labels, shots=cfg["shots"],
                                  seeds=cfg["seeds"], mode=cfg["mode"], n_epochs=cfg["n_epochs"], device=device)
        if task in CV_TASKS:
            result["holdout"] = holdout
        result["n_encoded_pool"] = int(len(sampled[task]))
        results[task] = {**result, "reported": result["acc_mean"]}
    results["avg"] = mean_reported(results, tasks)
    return write_metrics(job, out, results, subset=subset,
                         aggregation=f"acc x100 per seed; reported = mean over {len(cfg['seeds'])} seeds "
                                     "(acc_std = population std); avg = plain mean over tasks")


# ------------------------------------------------------------------------------------------------
# short-text clustering (ConPVP Table 6)


def run_clustering(job: SuiteJob, manifest: Path, out: Path) -> dict:
    """KMeans (K = number of classes, n_init explicit) per seed; Hungarian accuracy and NMI."""
    from sentrepro.data.benchmarks.clustering import CLUSTERING_SETS, read_clustering
    from sentrepro.evaluation.clustering import evaluate_clustering

    cfg = job.settings
    root = source_root(manifest)
    subset = SubsetLog(cfg["max_samples"], cfg["subset_seed"])
    data = {}
    for name in cfg["sets"]:
        items = read_clustering(root, name, check_counts=job.check_counts)
        job.add_data_files([root / CLUSTERING_SETS[name]], "clustering data file")
        labels = np.array([item.label for item in items], dtype=np.int64)
        rows = subset.take(name, "all", labels)
        data[name] = ([items[i].text for i in rows], labels[rows])
    vectors = job.embed_groups({name: texts for name, (texts, _) in data.items()})
    results = {}
    for name, (_, labels) in data.items():
        result = evaluate_clustering(vectors[name], labels, k=int(len(np.unique(labels))), seeds=cfg["seeds"],
                                     n_init=cfg["n_init"])
        results[name] = {**result, "reported": result["acc_mean"]}
    results["avg"] = mean_reported(results, data)
    results["avg"]["nmi"] = float(np.mean([results[name]["nmi_mean"] for name in data]))
    return write_metrics(job, out, results, subset=subset,
                         aggregation=f"Hungarian acc x100, mean (population std) over {len(cfg['seeds'])} KMeans "
                                     "seeds; avg = plain mean over sets")


# ------------------------------------------------------------------------------------------------
# Web of Science classification (MoCoUTRL Tables 2-3)

WOS_COLUMNS = ("acc", "precision", "recall", "f1")


def truncate_to_tokens(tokenizer, text: str, max_tokens: int | None) -> tuple[str, bool]:
    """``text`` cut to its first ``max_tokens`` tokenizer pieces (detokenised); and whether it was cut."""
    if max_tokens is None:
        return text, False
    pieces = tokenizer.tokenize(text)
    if len(pieces) <= max_tokens:
        return text, False
    return tokenizer.convert_tokens_to_string(pieces[:max_tokens]), True


def run_wos(job: SuiteJob, manifest: Path, out: Path) -> dict:
    """A probe on frozen embeddings of one WOS version; acc and macro (or weighted) P/R/F1 at one label level."""
    from sentrepro.data.benchmarks.wos import WOS_LABEL_FILES, WOS_TEXT_FILE, read_wos, wos_version_dir
    from sentrepro.evaluation.classification import evaluate_wos

    cfg = job.settings
    root = source_root(manifest)
    version = cfg["version"]
    documents = read_wos(root, version, check_counts=job.check_counts)
    version_dir = wos_version_dir(root, version)
    job.add_data_files([version_dir / name for name in (WOS_TEXT_FILE,) + WOS_LABEL_FILES], "WOS data file")
    subset = SubsetLog(cfg["max_samples"], cfg["subset_seed"])
    labels = np.array([doc.label for doc in documents], dtype=np.int64)
    rows = subset.take(version, "all", labels)
    cut = [truncate_to_tokens(job.tokenizer, documents[i].text, cfg["max_tokens"]) for i in rows]
    vectors = job.embed([text for text, _ in cut])
    parents = np.array([documents[i].parent for i in rows], dtype=np.int64)
    details = evaluate_wos(vectors, labels[rows], parents, test_fraction=cfg["test_fraction"],
                           split_seed=cfg["split_seed"], mode=cfg["mode"], hidden_dim=cfg["hidden_dim"],
                           device=resolve_device(cfg["device"]), seed=cfg["seed"])
    level, average = details[cfg["level"]], cfg["average"]
    values = {"acc": level["acc"], "precision": level[f"{average}_precision"],
              "recall": level[f"{average}_recall"], "f1": level[f"{average}_f1"]}
    results = {column: {"reported": values[column]} for column in WOS_COLUMNS}
    extra = {"wos": details, "truncated_documents": int(sum(flag for _, flag in cut))}
    return write_metrics(job, out, results, subset=subset, extra=extra,
                         aggregation=f"{version} {cfg['level']}: accuracy and {average} precision/recall/F1 x100 "
                                     f"on a stratified {cfg['test_fraction']:.0%} test split")
