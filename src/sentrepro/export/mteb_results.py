"""A run's STS scores as MTEB result files (one JSON per task, MTEB's ``TaskResult`` schema).

MTEB scores an STS task by the Spearman correlation of the cosine similarities with the gold scores
(``main_score: cosine_spearman``, as a fraction), on the task's ``test`` split, ``hf_subset: default``.
The STS suite's numbers are the same statistic on the same pairs for STS12-16 (SentEval's "all": one
Spearman over the year's pooled subsets) and STS-B test, so those are written; SICK-R is not: MTEB's
SICK-R ``test`` split is the whole SICK corpus (9,927 pairs, mteb's descriptive statistics), while the suite
scores the 4,927 pairs of ``SICK_test_annotated.txt``, a different number. No other suite of this project
has an MTEB task on the same data (SentEval transfer, the ConPVP clustering sets, WOS).

``MTEB_STS`` maps the suite's task names to MTEB's, with the dataset and revision the pinned ``mteb``
package's ``TaskMetadata`` gives (tests/test_export.py checks them against mteb itself).
"""

from __future__ import annotations

MTEB_STS = {
    "STS12": {"task": "STS12", "dataset": "mteb/sts12-sts", "revision": "a0d554a64d88156834ff5ae9920b964011b16384"},
    "STS13": {"task": "STS13", "dataset": "mteb/sts13-sts", "revision": "7e90230a92c190f1bf69ae9002b8cea547a64cca"},
    "STS14": {"task": "STS14", "dataset": "mteb/sts14-sts", "revision": "6031580fec1f6af667f0bd2da0a551cf4f0b2375"},
    "STS15": {"task": "STS15", "dataset": "mteb/sts15-sts", "revision": "ae752c7c21bf194d8b67fd573edf7ae58183cbe3"},
    "STS16": {"task": "STS16", "dataset": "mteb/sts16-sts", "revision": "4d8694f8f0e0100860b497b999b3dbed754a0513"},
    "STSBenchmark": {"task": "STSBenchmark", "dataset": "mteb/stsbenchmark-sts",
                     "revision": "b0fddb56ed78048fa8b90373c8a3cfc37b684831"},
}
NOT_IN_MTEB = {"SICKRelatedness": "MTEB's SICK-R test split holds all 9,927 SICK pairs; this suite scores the "
                                  "4,927-pair test file"}
SPLIT = "test"
MTEB_DIR = "mteb"  # the folder of an export holding the result files
SUBSET = "default"
LANGUAGES = ["eng-Latn"]


def task_spearman(result: dict) -> float:
    """The Spearman (fraction) of one task entry of an STS metrics file: ``all`` for STS12-16, else ``spearman``."""
    return float(result["all"] if "all" in result else result["spearman"])


def task_scores(result: dict) -> dict:
    """MTEB's scores dict of one task: main score and cosine Spearman (plus Pearson where the suite has it)."""
    spearman = task_spearman(result)
    scores = {"main_score": spearman, "cosine_spearman": spearman, "spearman": spearman,
              "hf_subset": SUBSET, "languages": list(LANGUAGES)}
    if "pearson" in result:
        scores.update(cosine_pearson=float(result["pearson"]), pearson=float(result["pearson"]))
    return scores


def mteb_results(sts_metrics: dict, *, mteb_version: str | None, evaluation_time: float | None) -> dict[str, dict]:
    """MTEB task name -> its result JSON payload, for every task of an STS metrics file that MTEB has."""
    files = {}
    for task, result in sts_metrics["results"].items():
        if task not in MTEB_STS:
            continue
        entry = MTEB_STS[task]
        files[entry["task"]] = {
            "dataset_revision": entry["revision"],
            "task_name": entry["task"],
            "mteb_version": mteb_version,
            "scores": {SPLIT: [task_scores(result)]},
            "evaluation_time": evaluation_time,
            "kg_co2_emissions": None,
        }
    return files
