"""Before/after figures of the training-side optimisations, each pair measured side by side in one run.

* ``attention`` — eager attention (transformers 4.2.1's arithmetic) vs PyTorch SDPA, per method, on
  MiniLM: training throughput and the step's peak memory.
* ``sync`` — the reference's per-step ``loss.item()`` vs our batched loss transfer (every 50 steps):
  on a CPU there is no device to wait for, so this pair shows the noise floor; the effect is on GPUs
  (gpu_check.py).
* ``denoise`` — PromptBERT's template denoising: the reference computes δ over a fixed 50 rows every
  training step and 128 rows at every in-training dev evaluation; ours computes rows 0..max ℓ of the
  batch. Training throughput on the tiny model at the paper's batch (256) and on MiniLM, the exact
  encoder work per step, and the dev encoding of STS-B dev (length-sorted batches, so most batches
  need far fewer than 128 rows).
* pinned memory and ``torch.compile`` act on CUDA only: they are measured by gpu_check.py.

Pairs alternate within each round (A B, then B A) so a change of machine load hits both sides; each
figure is the median over every timed window of every round. It asserts nothing. Usage, from the
repository root:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/optimisations.py [--sections attention sync denoise]
        [--rounds 2] [--threads 1] [--methods ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness import (
    SHARED_DATA,
    TRAINABLE,
    machine,
    machine_line,
    median,
    quiet_transformers,
    run_worker,
    spread,
    with_fixed_delta_rows,
)
from train_throughput import prepare, worker_spec

SECTIONS = ("attention", "sync", "denoise")
REFERENCE_TRAIN_ROWS, REFERENCE_DEV_ROWS = 50, 128
STSB_DEV = "senteval/STS/STSBenchmark/sts-dev.csv"


def pooled(results: list[dict], key: str) -> list[float]:
    return [value for result in results for value in result[key]]


def side_by_side(specs: dict[str, dict], rounds: int) -> dict[str, list[dict]]:
    """Run the two specs alternately (A B, B A, ...): name -> the results of every round."""
    names = list(specs)
    out: dict[str, list[dict]] = {name: [] for name in names}
    for round_index in range(rounds):
        for name in (names if round_index % 2 == 0 else names[::-1]):
            out[name].append(run_worker(specs[name]))
    return out


def throughput_pair(label: str, before: str, after: str, runs: dict[str, list[dict]]) -> None:
    b, a = pooled(runs[before], "sentences_per_s"), pooled(runs[after], "sentences_per_s")
    ratio = median(a) / median(b)
    print(f"{label:<18} {before}: {spread(b)} sent/s | {after}: {spread(a)} sent/s | {after}/{before} = {ratio:.2f}x")


def memory_pair(label: str, before: str, after: str, runs: dict[str, list[dict]]) -> None:
    key = "step_peak_rss_increase_mib"
    if all(key in r for r in runs[before] + runs[after]):
        b = median([r[key] for r in runs[before]])
        a = median([r[key] for r in runs[after]])
        print(f"{'':<18} step peak RSS increase: {before} {b:.0f} MiB, {after} {a:.0f} MiB ({a / b:.2f}x)")


# --- sections --------------------------------------------------------------------------------------


def attention(prepared: dict, args) -> None:
    print(f"\n== attention: eager vs sdpa, MiniLM, batch {args.batch_size or 16}; {args.rounds} rounds")
    for name in args.methods:
        specs = {kernel: worker_spec(prepared, "minilm", name, args, attention=kernel) for kernel in ("eager", "sdpa")}
        runs = side_by_side(specs, args.rounds)
        throughput_pair(name, "eager", "sdpa", runs)
        memory_pair(name, "eager", "sdpa", runs)


def sync(prepared: dict, args) -> None:
    print(f"\n== loss transfer: every step (reference) vs every 50 steps (ours), tiny model, simcse; "
          f"{args.rounds} rounds")
    specs = {f"every-{n}": worker_spec(prepared, "tiny", "simcse", args, sync_every=n, windows=5, steps=10)
             for n in (1, 50)}
    runs = side_by_side(specs, args.rounds)
    throughput_pair("simcse (tiny)", "every-1", "every-50", runs)


def denoise(prepared: dict, args) -> None:
    print(f"\n== PromptBERT δ rows: reference fixed {REFERENCE_TRAIN_ROWS} vs ours (0..max ℓ of the batch); "
          f"{args.rounds} rounds")
    for model, batch in (("tiny", 256), ("minilm", 32)):
        specs = {"reference": worker_spec(prepared, model, "promptbert", args, batch_size=batch,
                                          delta_rows=REFERENCE_TRAIN_ROWS),
                 "ours": worker_spec(prepared, model, "promptbert", args, batch_size=batch)}
        runs = side_by_side(specs, args.rounds)
        throughput_pair(f"{model} (batch {batch})", "reference", "ours", runs)
        work = {k: median([r["tokens_per_step"] for r in v]) for k, v in runs.items()}
        print(f"{'':<18} encoder tokens per step: reference {work['reference']:.0f}, ours {work['ours']:.0f} "
              f"({work['ours'] / work['reference']:.3f}x)")
    dev_denoise(prepared, args)


def dev_denoise(prepared: dict, args) -> None:
    """STS-B dev encoding with the dev δ at 128 rows (reference) vs the rows each length-sorted batch needs."""
    import torch

    from sentrepro.encoder.load import load_encoder, load_tokenizer
    from sentrepro.data.benchmarks.sts import read_sts_benchmark
    from sentrepro.encoder.encode import encode_sentences
    from sentrepro.methods import build_method
    from harness import config_recipe

    path = SHARED_DATA / STSB_DEV
    if not path.is_file():
        print(f"dev δ: skipped ({path} not found; set SENTREPRO_SHARED_DATA)")
        return
    torch.set_num_threads(args.threads)
    pairs = read_sts_benchmark(path)
    model_dir = str(prepared["models"]["minilm"])
    recipe = config_recipe("promptbert")
    method = build_method("promptbert", recipe["params"], "bert", load_tokenizer(model_dir))
    model = method.build_model(load_encoder(model_dir, "bert"))
    unique = sorted({s for p in pairs for s in (p.s1, p.s2)}, key=lambda s: (method.eval_length(s), s))
    batch = 128
    lengths = [len(ids) for ids in method.tokenizer(unique, add_special_tokens=False)["input_ids"]]
    ours_rows = sum(max(lengths[i:i + batch]) + 1 for i in range(0, len(unique), batch))
    reference_rows = REFERENCE_DEV_ROWS * -(-len(unique) // batch)
    template = len(method.views[0].alone)
    print(f"dev δ over all of STS-B dev ({len(unique)} distinct sentences, {-(-len(unique) // batch)} batches of "
          f"{batch}): δ rows reference {reference_rows}, ours {ours_rows} ({ours_rows / reference_rows:.3f}x); "
          f"encoder tokens (sentence passes + δ passes of {template} tokens): reference "
          f"{sum(lengths) + len(unique) * template + reference_rows * template}, ours "
          f"{sum(lengths) + len(unique) * template + ours_rows * template}")
    subset = unique[::args.dev_stride]  # keeps the length distribution; batches span more lengths (conservative)
    timings: dict[str, list[float]] = {"reference": [], "ours": []}
    for round_index in range(args.rounds + 1):
        for variant in (("reference", "ours") if round_index % 2 == 0 else ("ours", "reference")):
            run = build_method("promptbert", recipe["params"], "bert", method.tokenizer)
            if variant == "reference":
                with_fixed_delta_rows(run, REFERENCE_DEV_ROWS)
            start = time.perf_counter()
            encode_sentences(run, model, subset, purpose="dev", batch_size=batch)
            if round_index:  # round 0 warms up
                timings[variant].append(time.perf_counter() - start)
    rate = {k: [len(subset) / s for s in v] for k, v in timings.items()}
    print(f"dev encoding, every {args.dev_stride}th distinct sentence ({len(subset)}), MiniLM: reference "
          f"{spread(rate['reference'])} sent/s | ours {spread(rate['ours'])} sent/s | ours/reference = "
          f"{median(rate['ours']) / median(rate['reference']):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--methods", nargs="+", choices=TRAINABLE, default=list(TRAINABLE),
                        help="methods of the attention section")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per pair")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--windows", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dev-stride", type=int, default=4, help="dev δ timing: every k-th distinct dev sentence")
    parser.add_argument("--corpus", type=Path)
    args = parser.parse_args()
    quiet_transformers()
    print(machine_line(machine()))
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(Path(tmp), args.corpus)
        for section in args.sections:
            {"attention": attention, "sync": sync, "denoise": denoise}[section](prepared, args)
    print("\npinned memory, torch.compile: CUDA-only, measured by benchmarks/gpu_check.py")


if __name__ == "__main__":
    main()
