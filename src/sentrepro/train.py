"""One training loop for every method.

Follows the reference trainer's semantics (HF 4.2.1 Trainer as used by SimCSE and its forks): random
order over the corpus each epoch, ``drop_last=False``, AdamW, linear decay, gradient clipping, an
STS-B dev evaluation every ``eval_steps`` keeping the best model (saved with ``save_pretrained``).

Resumable: a ``last/`` checkpoint (model, optimizer, scheduler, RNG states, step, best score,
history) is written atomically every ``checkpoint_every`` steps and at each evaluation; a restarted
job continues from it and, on CPU, reaches the same result as an uninterrupted run. The data order
is a pure function of (seed, epoch), so nothing about the sampler needs saving.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from sentrepro.encoding import autocast_context
from sentrepro.fsutil import atomic_dir
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.optim import build_optimizer, build_schedule
from sentrepro.tokenize import TokenizedCorpus

LAST = "last"
BEST = "best"
TRAINER_STATE = "trainer_state.pt"


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite."""


@dataclass
class TrainSettings:
    batch_size: int
    lr: float
    epochs: int = 1
    max_steps: int | None = None
    eval_steps: int = 125
    checkpoint_every: int = 125
    optimizer: str = "hf-adamw-4.2.1"
    weight_decay: float = 0.0
    max_grad_norm: float | None = 1.0
    warmup_steps: int = 0
    precision: str = "fp32"
    device: str = "cpu"
    sync_every: int = 50  # steps between host transfers of the loss (NaN check, log)
    schedule: str = "linear"
    shuffle: bool = True
    pin_memory: bool = True  # page-locked host batches (CUDA only): a truly asynchronous host-to-device copy
    compile: bool = False  # torch.compile of the encoder (in place: state_dict keys and checkpoints unchanged)
    eval_at_start: bool = True  # score the untrained model on dev (step 0) before the first update

    @classmethod
    def from_params(cls, params: dict, training: dict, device: str, precision: str) -> "TrainSettings":
        return cls(batch_size=params["batch_size"], lr=params["lr"], epochs=params.get("epochs", 1),
                   max_steps=params.get("max_steps"), eval_steps=params.get("eval_steps", 125),
                   checkpoint_every=params.get("checkpoint_every", training.get("checkpoint_every", 125)),
                   optimizer=params.get("optimizer", "hf-adamw-4.2.1"),
                   weight_decay=params.get("weight_decay", 0.0), max_grad_norm=params.get("max_grad_norm", 1.0),
                   warmup_steps=params.get("warmup_steps", 0), precision=precision, device=device,
                   schedule=params.get("schedule", "linear"), shuffle=params.get("shuffle", True),
                   pin_memory=training.get("pin_memory", True), compile=training.get("compile", False),
                   eval_at_start=training.get("eval_at_start", True))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The sentence order of one epoch: a permutation drawn from (seed, epoch) alone."""
    generator = torch.Generator().manual_seed(seed * 1000 + epoch)
    return torch.randperm(n, generator=generator).numpy()


def total_steps(n: int, settings: TrainSettings) -> int:
    per_epoch = math.ceil(n / settings.batch_size)
    steps = per_epoch * settings.epochs
    return min(steps, settings.max_steps) if settings.max_steps else steps


def batch_indices(step: int, n: int, settings: TrainSettings, seed: int) -> np.ndarray:
    """Corpus indices of optimizer step ``step`` (0-based); corpus order when ``shuffle`` is off."""
    per_epoch = math.ceil(n / settings.batch_size)
    epoch, within = divmod(step, per_epoch)
    order = epoch_order(n, seed, epoch) if settings.shuffle else np.arange(n)
    return order[within * settings.batch_size:(within + 1) * settings.batch_size]


def _rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _make_scaler(device: torch.device, precision: str):
    if device.type == "cuda" and precision == "fp16":
        return torch.amp.GradScaler("cuda")
    return None


def pins_memory(settings: TrainSettings, device: torch.device) -> bool:
    """Pinned host batches only help (and only exist) with a CUDA device."""
    return settings.pin_memory and device.type == "cuda"


def device_batch(method: Method, items: list, device: torch.device, pin_memory: bool) -> dict[str, torch.Tensor]:
    """Collate training items on the host and start their copy to ``device``.

    From pageable memory a CUDA copy first waits for the device to finish its queued work (a hidden
    host-device sync every step); from pinned memory ``non_blocking`` makes it asynchronous, so the
    host can build the next batch while the device computes this one.
    """
    batch = method.collate(items)
    if pin_memory:
        batch = {k: v.pin_memory() for k, v in batch.items()}
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


@dataclass
class Optimization:
    """What one optimizer step needs besides the model and the batch."""

    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None


def build_optimization(method: Method, model: SentenceModel, settings: TrainSettings, steps: int,
                       device: torch.device) -> Optimization:
    """Optimizer (fused on CUDA where the kind offers it), schedule over ``steps``, fp16 loss scaler."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = build_optimizer(settings.optimizer, params, settings.lr, settings.weight_decay,
                                fused=device.type == "cuda")
    scheduler = build_schedule(settings.schedule, optimizer, steps, settings.warmup_steps)
    scaler = _make_scaler(device, settings.precision)
    if scaler is not None and not method.reset_grads:
        raise ValueError(f"{method.kind} keeps gradients across steps (no zero_grad), which fp16 loss scaling would "
                         "unscale again at every step: set training.precision to bf16 or fp32")
    return Optimization(params, optimizer, scheduler, scaler)


def optimizer_step(method: Method, model: SentenceModel, batch: dict[str, torch.Tensor], opt: Optimization,
                   settings: TrainSettings, device: torch.device, step: int) -> torch.Tensor:
    """One training step (0-based ``step``): loss under autocast, backward, clip, update, method hook.

    Returns the detached loss, left on the device: reading it is the caller's (batched) business.
    """
    with autocast_context(device, settings.precision):
        loss = method.loss(model, batch)
    if opt.scaler is not None:
        opt.scaler.scale(loss).backward()
        opt.scaler.unscale_(opt.optimizer)
    else:
        loss.backward()
    if settings.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(opt.params, settings.max_grad_norm)
    if opt.scaler is not None:
        opt.scaler.step(opt.optimizer)
        opt.scaler.update()
    else:
        opt.optimizer.step()
    opt.scheduler.step()
    method.after_step(model, step + 1)
    if method.reset_grads:
        opt.optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def train(method: Method, model: SentenceModel, corpus: TokenizedCorpus, run_dir: Path, settings: TrainSettings,
          seed: int, dev_score: Callable[[SentenceModel], float], *, save_meta: dict,
          log: Callable[[str], None] = print, stop_after: int | None = None, resume_key: str = "",
          progress: Callable[[int, int], None] | None = None) -> dict:
    """Train ``model`` with ``method`` on ``corpus``; keep the best dev model in ``run_dir/best``.

    ``dev_score(model)`` returns the STS-B dev Spearman (x100) of the model as the method embeds it.
    ``stop_after`` ends the job after that many steps as if it were killed (tests of resumption).
    ``progress(step, total)`` is called after each optimizer step (a readable progress line).
    ``resume_key`` identifies the run's settings: a ``last/`` checkpoint written under another key
    (e.g. before the learning rate was changed in config) is discarded instead of resumed.
    Returns the training summary (steps, best step and score, history).
    """
    run_dir = Path(run_dir)
    device = torch.device(settings.device)
    model.to(device)
    if settings.compile:
        model.encoder.compile()
    pin_memory = pins_memory(settings, device)
    n = len(corpus)
    steps = total_steps(n, settings)
    opt = build_optimization(method, model, settings, steps, device)
    params, optimizer, scheduler, scaler = opt.params, opt.optimizer, opt.scheduler, opt.scaler

    state = {"step": 0, "best_score": None, "best_step": None, "history": [], "losses": [],
             "resume_key": resume_key}
    last_dir = run_dir / LAST
    resumed_from = None
    saved = None
    if (last_dir / TRAINER_STATE).exists():
        saved = torch.load(last_dir / TRAINER_STATE, map_location="cpu", weights_only=False)
        if saved["state"].get("resume_key", "") != resume_key:
            log(f"ignoring {last_dir}: it was written for other settings; starting afresh")
            shutil.rmtree(last_dir)
            shutil.rmtree(run_dir / BEST, ignore_errors=True)
            saved = None
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        if scaler is not None and saved.get("scaler"):
            scaler.load_state_dict(saved["scaler"])
        _set_rng_state(saved["rng"])
        if saved.get("grads") is not None:  # gradients carried over by a method without zero_grad
            for p, g in zip(params, saved["grads"]):
                p.grad = None if g is None else g.to(p.device)
        state = saved["state"]
        resumed_from = state["step"]
        log(f"resumed from step {resumed_from} ({last_dir})")

    def save_last() -> None:
        with atomic_dir(last_dir) as tmp:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict() if scaler else None,
                        "rng": _rng_state(), "state": state,
                        "grads": None if method.reset_grads else [p.grad for p in params]}, tmp / TRAINER_STATE)

    def evaluate_and_keep_best(step: int) -> None:
        score = dev_score(model)
        state["history"].append({"step": step, "stsb_dev_spearman": score})
        improved = state["best_score"] is None or score > state["best_score"]
        if improved:
            state["best_score"], state["best_step"] = score, step
            model.save(run_dir / BEST, method.tokenizer, {**save_meta, "step": step, "stsb_dev_spearman": score})
        log(f"step {step}: STS-B dev spearman {score:.2f}{' (best)' if improved else ''}")

    def record_start_score() -> None:
        """Dev score of the untrained model as the method embeds it: the "before" of the run.

        Recorded in the history as step 0 but never a candidate for the best checkpoint, so the
        selected model is the one the reference trainer (no step-0 evaluation) would keep.
        """
        score = dev_score(model)
        state["history"].append({"step": 0, "stsb_dev_spearman": score})
        log(f"step 0 (before training): STS-B dev spearman {score:.2f}")

    pending: list[torch.Tensor] = []  # step losses still on the device (no host sync per step)

    def flush_losses() -> None:
        """Move pending losses to the host in one transfer; stop at the first non-finite one."""
        if not pending:
            return
        values = torch.stack(pending).float().cpu().tolist()
        first = state["step"] - len(values) + 1
        pending.clear()
        for offset, value in enumerate(values):
            if not math.isfinite(value):
                raise TrainingDiverged(f"loss is {value} at step {first + offset} of {run_dir}; lower the learning "
                                       f"rate or use precision fp32/bf16")
        state["losses"].extend(values)

    if settings.eval_at_start and state["step"] == 0 and not state["history"]:
        record_start_score()
    method.set_train_mode(model)  # train mode for most methods; eval mode where the release trained so
    started = time.time()
    for step in range(state["step"], steps):
        if stop_after is not None and step >= stop_after:
            return {"interrupted_at": step}
        indices = batch_indices(step, n, settings, seed)
        batch = device_batch(method, [corpus[int(i)] for i in indices], device, pin_memory)
        pending.append(optimizer_step(method, model, batch, opt, settings, device, step))
        state["step"] = step + 1
        if progress is not None:
            progress(state["step"], steps)
        at_eval = state["step"] % settings.eval_steps == 0
        at_checkpoint = state["step"] % settings.checkpoint_every == 0
        if at_eval or at_checkpoint or state["step"] == steps or len(pending) >= settings.sync_every:
            flush_losses()
        if at_eval:
            evaluate_and_keep_best(state["step"])
            save_last()
        elif at_checkpoint:
            save_last()

    if state["best_step"] is None:
        # fewer steps than eval_steps: evaluate the final model so there is a best checkpoint
        evaluate_and_keep_best(state["step"])
    save_last()
    return {
        "steps": state["step"],
        "total_steps": steps,
        "best_step": state["best_step"],
        "best_stsb_dev_spearman": state["best_score"],
        "history": state["history"],
        "start_stsb_dev_spearman": next((h["stsb_dev_spearman"] for h in state["history"] if h["step"] == 0), None),
        "loss_first": state["losses"][0] if state["losses"] else None,
        "loss_last": state["losses"][-1] if state["losses"] else None,
        "loss_curve": _loss_curve(state["losses"]),
        "resumed_from": resumed_from,
        "train_seconds_this_job": round(time.time() - started, 3),
        "sentences": n,
        "pinned_memory": pin_memory,
        "compiled": settings.compile,
    }


def _loss_curve(losses: list[float], points: int = 50) -> list[float]:
    """Mean loss over ``points`` equal windows (a compact curve for the log)."""
    if not losses:
        return []
    chunks = np.array_split(np.asarray(losses), min(points, len(losses)))
    return [round(float(c.mean()), 5) for c in chunks]


def write_log_line(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
