"""Training throughput and peak memory of a training step, per method, on a tiny model and on MiniLM.

For every trainable method of config.yaml (its bert-base recipe: templates, temperatures, sequence
lengths; a common batch size so the methods compare at equal batch), each backbone runs in its own
subprocess: a few warm-up steps, then several timed windows of training steps through the training
loop's own step function. Figures are medians over the windows:

* sentences/s — training items per second (a MoCoUTRL item is one (original, synonym, antonym) triple);
* tokens/s — non-pad tokens fed to the encoder per second, every pass counted (both views, PromptBERT's
  template-only δ pass, ConPVP's denoising pass, ESimCSE's momentum encoder); see harness.py;
* peak memory of a training step — on CPU the growth of the process's resident set over the steps
  (kernel peak-RSS mark reset before the first step) and the process's whole-life ``ru_maxrss``;
  on a GPU ``torch.cuda.max_memory_allocated``.

It prints figures and asserts nothing. Usage, from the repository root:
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/train_throughput.py [--models tiny minilm]
        [--methods simcse promptbert ...] [--batch-size N] [--windows N] [--steps N] [--threads 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness import (
    TRAINABLE,
    config_recipe,
    machine,
    machine_line,
    median,
    minilm_dir,
    quiet_transformers,
    run_worker,
    tiny_bert,
    tokenized_corpus,
    view_texts,
    wiki_sentences,
    without_mlm_head,
)

# per backbone: batch size, warm-up steps, timed windows, steps per window (CPU-sized)
DEFAULTS = {"tiny": (64, 2, 5, 4), "minilm": (16, 1, 3, 2)}
TINY_MAX_LENGTH = 128  # the tiny model has 160 positions: MoCoUTRL's 200-token rows are cut to 128 there


def prepare(workdir: Path, corpus: Path | None) -> dict:
    """Backbones and the two tokenized corpora (sentences; MoCoUTRL views), tokenized once for every worker."""
    from sentrepro.encoder.load import load_tokenizer

    models = {"tiny": tiny_bert(workdir / "tiny-bert"), "minilm": minilm_dir()}
    tokenizer = load_tokenizer(str(models["minilm"]))  # tiny BERT shares MiniLM's uncased vocabulary
    sentences = wiki_sentences(corpus)
    return {"models": models,
            "corpora": {"sentences": tokenized_corpus(sentences, tokenizer, workdir / "sentences"),
                        "views": tokenized_corpus(view_texts(sentences), tokenizer, workdir / "views")}}


def worker_spec(prepared: dict, model: str, name: str, args, **overrides) -> dict:
    from sentrepro.planning import registry

    recipe = without_mlm_head(config_recipe(name))
    if model == "tiny" and recipe["params"].get("max_seq_length", 0) > TINY_MAX_LENGTH:  # MoCoUTRL's 200
        recipe["params"] = {**recipe["params"], "max_seq_length": TINY_MAX_LENGTH}
    batch, warmup, windows, steps = DEFAULTS[model]
    spec = {"model": str(prepared["models"][model]), "family": "bert", "name": name, "kind": recipe["kind"],
            "params": recipe["params"], "attention": "eager",
            "corpus": str(prepared["corpora"][registry.method(recipe["kind"]).training_corpus]),
            "batch_size": args.batch_size or batch, "warmup": args.warmup if args.warmup is not None else warmup,
            "windows": args.windows or windows, "steps": args.steps or steps, "threads": args.threads,
            "device": args.device}
    spec.update(overrides)
    return spec


def report_line(result: dict) -> str:
    memory = (f"step +{result['step_peak_rss_increase_mib']:.0f} MiB RSS (process peak {result['process_peak_rss_mib']:.0f})"
              if "step_peak_rss_increase_mib" in result else f"process peak {result['process_peak_rss_mib']:.0f} MiB RSS")
    if "gpu_peak_allocated_mib" in result:
        memory = f"GPU peak {result['gpu_peak_allocated_mib']:.0f} MiB allocated; " + memory
    return (f"{result['name']:<18} {median(result['sentences_per_s']):9.1f} sent/s {median(result['tokens_per_s']):10.0f} tok/s"
            f"  | {result['tokens_per_step']:7.0f} tok/step, {result['encoder_passes_per_step']:.0f} passes, "
            f"padding {100 * result['padding_fraction']:4.1f}%  | {memory}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=sorted(DEFAULTS), default=["tiny", "minilm"])
    parser.add_argument("--methods", nargs="+", choices=TRAINABLE, default=list(TRAINABLE))
    parser.add_argument("--batch-size", type=int, help="override the per-backbone default (tiny 64, minilm 16)")
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--windows", type=int, help="timed windows (the median is taken over them)")
    parser.add_argument("--steps", type=int, help="training steps per timed window")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--corpus", type=Path, help="training sentences, one a line (default: the shared wiki1m sample)")
    parser.add_argument("--json", type=Path, help="also write every raw result here")
    args = parser.parse_args()

    quiet_transformers()
    print(machine_line(machine()))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(Path(tmp), args.corpus)
        for model in args.models:
            batch, warmup, windows, steps = DEFAULTS[model]
            print(f"\n== {model}: batch {args.batch_size or batch}, {args.windows or windows} windows x "
                  f"{args.steps or steps} steps after {args.warmup if args.warmup is not None else warmup} warm-up; "
                  f"medians over windows; {args.threads} thread(s), {args.device}")
            for name in args.methods:
                result = run_worker(worker_spec(prepared, model, name, args))
                result["model"] = model
                results.append(result)
                print(report_line(result), flush=True)
    if args.json:
        from sentrepro.files import atomic_write_json

        atomic_write_json(args.json, {"machine": machine(), "results": results})


if __name__ == "__main__":
    main()
