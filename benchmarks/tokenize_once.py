"""Tokenize once per tokenizer vs tokenizing the corpus in every training run: the cost removed.

Measured here (medians of several repeats):

* our one-off tokenization (``sentrepro.training.corpus.tokenize_corpus``: ids without special tokens,
  memory-mapped ``ids.npy`` / ``offsets.npy``), as sentences/s and extrapolated to the 1M sentences
  of wiki1m;
* SimCSE's per-run preprocessing, as its ``train.py`` ``prepare_features`` does it (every sentence
  tokenized twice, ``[x, x]``, truncated to 32 tokens), the same fast tokenizer;
* our per-run cost instead: opening the memory-mapped cache and reading every sentence's ids once
  (what one epoch's batches read).

Then the paper matrix of config.yaml: trained runs per tokenizer and training corpus, tokenizations
the workflow does (one per tokenizer and corpus) against one per run (a reference run on a fresh
machine or job-local cache), and the hours that removes. With a shared, warm ``datasets`` cache the
reference re-uses a mapping when its fingerprint (function, tokenizer, arguments) matches
(methods.md §1), i.e. roughly once per (repository, tokenizer) — that count is printed too.
MoCoUTRL's release tokenizes inside its training loop: every batch, every epoch (5).

It asserts nothing. The tokenizer is MiniLM's, which is bert-base-uncased's WordPiece vocabulary;
RoBERTa's byte-level BPE is not available offline and is taken to cost the same. Usage:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tokenize_once.py [--repeats 3] [--corpus FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness import REPO, machine, machine_line, median, minilm_dir, spread, wiki_sentences

WIKI1M = 1_000_000
SIMCSE_MAX_LENGTH = 32
MOCOUTRL_EPOCHS = 5


def timed(function, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return seconds


def matrix_counts(config_path: Path) -> dict:
    """Trained runs of the paper matrix per (tokenizer, training corpus), and per (kind, tokenizer)."""
    from sentrepro.planning.config import load_config
    from sentrepro.planning.matrix import runs
    from sentrepro.planning import registry

    config = load_config(config_path)
    per_cache: Counter = Counter()
    per_kind: Counter = Counter()
    for run in runs(config):
        if run.seed is None:
            continue  # frozen baselines: no training corpus
        kind = config["methods"][run.method]["kind"]
        tokenizer = config["backbones"][run.backbone]["tokenizer"]
        per_cache[(tokenizer, registry.method(kind).training_corpus)] += 1
        per_kind[(kind, tokenizer)] += 1
    return {"per_cache": per_cache, "per_kind": per_kind}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="sentences, one a line (default: the shared wiki1m sample)")
    parser.add_argument("--config", type=Path, default=REPO / "config.yaml")
    args = parser.parse_args()

    from sentrepro.encoder.load import load_tokenizer
    from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus

    print(machine_line(machine()))
    tokenizer = load_tokenizer(str(minilm_dir()))
    sentences = wiki_sentences(args.corpus)
    n = len(sentences)
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "sentences.txt"
        text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        ours = timed(lambda: tokenize_corpus(text, tokenizer, Path(tmp) / "tok", progress=False), args.repeats)
        simcse = timed(lambda: tokenizer(sentences + sentences, max_length=SIMCSE_MAX_LENGTH, truncation=True),
                       args.repeats)

        def read_epoch():
            corpus = TokenizedCorpus.open(Path(tmp) / "tok")
            for i in range(len(corpus)):
                corpus[i]

        opened = timed(lambda: TokenizedCorpus.open(Path(tmp) / "tok"), args.repeats)
        reads = timed(read_epoch, args.repeats)

    per_million = {name: median(values) * WIKI1M / n for name, values in
                   (("ours", ours), ("simcse", simcse), ("reads", reads))}
    print(f"\n{n} sentences, MiniLM / bert-base-uncased WordPiece, 1 thread, {args.repeats} repeats")
    print(f"tokenize once (ours):          {spread([n / s for s in ours])} sent/s -> "
          f"{per_million['ours']:.0f} s per 1M sentences, once per tokenizer")
    print(f"SimCSE per-run preprocessing:  {spread([n / s for s in simcse])} sent/s (each sentence twice) -> "
          f"{per_million['simcse']:.0f} s per 1M sentences, every run")
    print(f"per run with the cache:        open {spread([1000 * s for s in opened], ' ms')}; reading every "
          f"sentence's ids once {per_million['reads']:.1f} s per 1M (spread over the run's steps; the reference "
          f"reads its Arrow table likewise)")

    counts = matrix_counts(args.config)
    trained = sum(counts["per_cache"].values())
    print(f"\npaper matrix ({args.config.name}): {trained} trained runs")
    for (tokenizer_name, corpus), runs_count in sorted(counts["per_cache"].items()):
        print(f"  tokenizer {tokenizer_name:<18} corpus {corpus:<9} {runs_count:3d} runs -> tokenized once")
    sentence_runs = sum(v for (t, c), v in counts["per_cache"].items() if c == "sentences")
    caches = len(counts["per_cache"])
    kinds = sorted({(k, t) for (k, t) in counts["per_kind"] if k != "mocoutrl"})
    removed = (sentence_runs - sum(1 for (_, c) in counts["per_cache"] if c == "sentences")) * per_million["ours"]
    print(f"tokenizations: ours {caches} (one per tokenizer and corpus); reference, job-local cache: one per run "
          f"({trained}); reference, warm shared datasets cache: about one per (method, tokenizer) "
          f"({len(kinds)} for the wiki1m methods) plus MoCoUTRL's in-loop tokenization")
    print(f"wiki1m tokenization removed vs one per run: {sentence_runs} runs - "
          f"{sum(1 for (_, c) in counts['per_cache'] if c == 'sentences')} caches = "
          f"{removed / 3600:.2f} CPU-hours at our rate (SimCSE's double tokenization: "
          f"{sentence_runs * per_million['simcse'] / 3600:.2f} CPU-hours over those runs)")
    mocoutrl_runs = sum(v for (t, c), v in counts["per_cache"].items() if c == "views")
    per_run_views = MOCOUTRL_EPOCHS * 3 * per_million["ours"] / WIKI1M  # seconds per triple over the run
    print(f"MoCoUTRL: {mocoutrl_runs} runs; its release tokenizes 3 texts per triple in every step of {MOCOUTRL_EPOCHS} "
          f"epochs: {per_run_views * 1e3:.2f} ms per triple per run, i.e. {per_run_views * 1e5:.0f} s per run per "
          f"100k triples inside the training loop (plus padding to 200); tokenized once here")
    print("the reference tokenizes inside the training job: on a GPU node those seconds hold the GPU idle")


if __name__ == "__main__":
    main()
