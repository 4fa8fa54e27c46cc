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

import errno
import json
import math
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from sentrepro.runs import BEST
from sentrepro.encoder.device import autocast_context
from sentrepro.files import atomic_dir, disk_full, free_bytes
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.training.optim import build_optimizer, build_schedule, weight_decay_groups
from sentrepro.training.corpus import TokenizedCorpus

LAST = "last"
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
        """Settings of one run from its method ``params`` and the config's (defaults-filled) ``training`` block.

        A method param left out takes the field's default above (the one place it is written); a method's
        ``checkpoint_every`` overrides ``training.checkpoint_every``.
        """
        from_method = {key: params[key] for key in METHOD_PARAMS if key in params}
        return cls(**from_method, checkpoint_every=params.get("checkpoint_every", training["checkpoint_every"]),
                   pin_memory=training["pin_memory"], compile=training["compile"],
                   eval_at_start=training["eval_at_start"], precision=precision, device=device)


# TrainSettings fields a method's params set (the rest come from the training block, the device and precision)
METHOD_PARAMS = ("batch_size", "lr", "epochs", "max_steps", "eval_steps", "optimizer", "weight_decay",
                 "max_grad_norm", "warmup_steps", "schedule", "shuffle")




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
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    # The reference's HF Trainer exempts biases and LayerNorm weights from weight decay (optim.weight_decay_groups).
    optimizer = build_optimizer(settings.optimizer, weight_decay_groups(named, settings.weight_decay), settings.lr,
                                settings.weight_decay, fused=device.type == "cuda")
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


def _fresh_state(resume_key: str) -> dict:
    """The progress a checkpoint saves (a plain dict: ``last/`` checkpoints of earlier versions still load)."""
    return {"step": 0, "best_score": None, "best_step": None, "history": [], "losses": [], "resume_key": resume_key}


def resume_state(run_dir: Path, model: SentenceModel, opt: Optimization, resume_key: str,
                 log: Callable[[str], None]) -> dict | None:
    """Load ``run_dir/last`` into ``model`` and ``opt`` (RNG states too) and return its saved progress.

    Returns None (start afresh) when there is no checkpoint, or when it was written under another
    ``resume_key`` (other settings or code): then ``last/`` and ``best/`` are deleted, so no stale model survives.
    """
    last_dir = run_dir / LAST
    if not (last_dir / TRAINER_STATE).exists():
        if (run_dir / BEST).exists():  # left by a finished run whose last/ was dropped, or by a killed one
            log(f"no resumable checkpoint in {last_dir}: removing {run_dir / BEST} of an earlier job; starting afresh")
            shutil.rmtree(run_dir / BEST)
        return None
    saved = read_checkpoint(last_dir, log)
    if saved is None:
        return None
    if saved["state"].get("resume_key", "") != resume_key:
        log(f"ignoring {last_dir}: it was written for other settings or code; starting afresh")
        shutil.rmtree(last_dir)
        shutil.rmtree(run_dir / BEST, ignore_errors=True)
        return None
    model.load_state_dict(saved["model"])
    opt.optimizer.load_state_dict(saved["optimizer"])
    opt.scheduler.load_state_dict(saved["scheduler"])
    if opt.scaler is not None and saved.get("scaler"):
        opt.scaler.load_state_dict(saved["scaler"])
    _set_rng_state(saved["rng"])
    if saved.get("grads") is not None:  # gradients carried over by a method without zero_grad
        for p, g in zip(opt.params, saved["grads"]):
            p.grad = None if g is None else g.to(p.device)
    log(f"resumed from step {saved['state']['step']} ({last_dir})")
    return saved["state"]


def drop_resume_state(run_dir: Path, best_files: dict[str, str], log: Callable[[str], None]) -> list[dict]:
    """Remove ``run_dir/last`` of a finished run once its selected checkpoint is verified; return what was dropped.

    Nothing a result or an audit reads is in ``last/`` (weights plus the optimizer's moments: about three times
    ``best/``); the run's tables, exports and audit read ``best/`` and ``train.json``. ``best_files`` maps each
    file of ``best/`` to the sha256 the training summary records; every file is hashed again first, and a
    mismatch keeps ``last/`` and raises (so a damaged best checkpoint can still be rebuilt by resuming).
    Returns ``[{path, sha256, bytes}]`` of the removed files, for the ledger (recorded as dropped, not missing).
    """
    from sentrepro.hashing import sha256_file

    last_dir = Path(run_dir) / LAST
    best_dir = Path(run_dir) / BEST
    on_disk = sorted(p.name for p in best_dir.iterdir() if p.is_file()) if best_dir.is_dir() else []
    expected = sorted(Path(p).name for p in best_files)
    if not on_disk or on_disk != expected:
        raise RuntimeError(f"{best_dir}: holds {on_disk}, the training summary records {expected}; {last_dir} kept")
    for path, digest in best_files.items():
        actual = sha256_file(best_dir / Path(path).name)
        if actual != digest:
            raise RuntimeError(f"{best_dir / Path(path).name}: sha256 {actual}, the training summary records {digest}; "
                               f"{last_dir} kept")
    if not last_dir.is_dir():
        return []
    dropped = [{"path": str(p), "sha256": sha256_file(p), "bytes": p.stat().st_size}
               for p in sorted(last_dir.rglob("*")) if p.is_file()]
    shutil.rmtree(last_dir)
    log(f"dropped the resume state {last_dir} ({sum(d['bytes'] for d in dropped) / 2**20:.0f} MiB): the run finished "
        f"and {best_dir} is verified (training.keep_resume_state: true keeps it)")
    return dropped


def tensor_bytes(obj) -> int:
    """Bytes of every tensor inside ``obj`` (nested dicts, lists, tuples): what a checkpoint save writes, at least."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def save_checkpoint(payload: dict, tmp_path: Path, final_path: Path) -> None:
    """``torch.save`` into ``tmp_path``; a failed write is reported for ``final_path`` in the user's words.

    torch reports a full disk as a bare ``basic_ios::clear: iostream error`` or ``PytorchStreamWriter failed
    writing file``; when the file system has less room than the checkpoint's tensors this becomes a
    :class:`~sentrepro.files.DiskFullError` naming the checkpoint and the space needed.
    """
    try:
        torch.save(payload, tmp_path)
    except (RuntimeError, OSError) as exc:
        needed = tensor_bytes(payload)
        if getattr(exc, "errno", None) == errno.ENOSPC or free_bytes(tmp_path.parent) < needed + (1 << 20):
            raise disk_full(final_path, needed) from exc
        raise RuntimeError(f"saving checkpoint {final_path} failed: {exc}") from exc


UNREADABLE = "unreadable"
CHECKPOINT_KEYS = ("model", "optimizer", "scheduler", "rng", "state")


def read_checkpoint(last_dir: Path, log: Callable[[str], None]) -> dict | None:
    """The saved ``last/`` checkpoint, or None when it cannot be read (truncated, corrupt, incomplete).

    An unreadable checkpoint is named in the log and moved aside to ``<run>/unreadable/last-<n>/`` (never
    deleted: it may be evidence of a disk or file-system fault); the caller then starts afresh. Only one
    ``last/`` exists (each save replaces it atomically), so there is no earlier one to fall back to.
    The move is recorded in the run directory (:func:`checkpoint_recoveries`) for ``train.json``.
    """
    path = last_dir / TRAINER_STATE
    try:
        saved = torch.load(path, map_location="cpu", weights_only=False)
        missing = [key for key in CHECKPOINT_KEYS if not isinstance(saved, dict) or key not in saved]
        if missing:
            raise ValueError(f"it lacks {', '.join(missing)}")
        return saved
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError, EOFError, UnpicklingError, ...
        aside_root = last_dir.parent / UNREADABLE
        aside_root.mkdir(parents=True, exist_ok=True)
        number = 1 + sum(1 for p in aside_root.iterdir() if p.name.startswith(f"{LAST}-"))
        aside = aside_root / f"{LAST}-{number}"
        os.replace(last_dir, aside)
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        record = {"checkpoint": str(path), "reason": reason, "moved_to": str(aside), "action": "restarted from step 0"}
        with open(aside_root / RECOVERIES, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        log(f"checkpoint {path} cannot be read ({reason}); moved aside to {aside}; training starts again "
            "from step 0")
        return None


RECOVERIES = "recoveries.jsonl"


def checkpoint_recoveries(run_dir: Path) -> list[dict]:
    """Every unreadable checkpoint this run moved aside (oldest first), for the training summary."""
    path = Path(run_dir) / UNREADABLE / RECOVERIES
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class _Job:
    """One training job's mutable side: its progress ``state`` (what ``last/`` saves), the losses still on the
    device, and the dev evaluation that keeps the best model in ``run_dir/best``."""

    method: Method
    model: SentenceModel
    opt: Optimization
    run_dir: Path
    dev_score: Callable[[SentenceModel], float]
    save_meta: dict
    log: Callable[[str], None]
    state: dict
    pending: list[torch.Tensor] = field(default_factory=list)  # step losses still on the device (no sync per step)

    def save_last(self) -> None:
        """Write the resumable checkpoint ``last/`` atomically."""
        opt = self.opt
        payload = {"model": self.model.state_dict(), "optimizer": opt.optimizer.state_dict(),
                   "scheduler": opt.scheduler.state_dict(),
                   "scaler": opt.scaler.state_dict() if opt.scaler else None,
                   "rng": _rng_state(), "state": self.state,
                   "grads": None if self.method.reset_grads else [p.grad for p in opt.params]}
        with atomic_dir(self.run_dir / LAST) as tmp:
            save_checkpoint(payload, tmp / TRAINER_STATE, self.run_dir / LAST / TRAINER_STATE)

    def evaluate_and_keep_best(self, step: int) -> None:
        """Score the model on dev at ``step``; save it to ``best/`` when it beats every earlier score."""
        score = self.dev_score(self.model)
        self.state["history"].append({"step": step, "stsb_dev_spearman": score})
        improved = self.state["best_score"] is None or score > self.state["best_score"]
        if improved:
            self.state["best_score"], self.state["best_step"] = score, step
            self.model.save(self.run_dir / BEST, self.method.tokenizer,
                            {**self.save_meta, "step": step, "stsb_dev_spearman": score})
        self.log(f"step {step}: STS-B dev spearman {score:.2f}{' (best)' if improved else ''}")

    def record_start_score(self) -> None:
        """Dev score of the untrained model as the method embeds it: the "before" of the run.

        Recorded in the history as step 0 but never a candidate for the best checkpoint, so the
        selected model is the one the reference trainer (no step-0 evaluation) would keep.
        """
        score = self.dev_score(self.model)
        self.state["history"].append({"step": 0, "stsb_dev_spearman": score})
        self.log(f"step 0 (before training): STS-B dev spearman {score:.2f}")

    def flush_losses(self) -> None:
        """Move pending losses to the host in one transfer; stop at the first non-finite one."""
        if not self.pending:
            return
        values = torch.stack(self.pending).float().cpu().tolist()
        first = self.state["step"] - len(values) + 1
        self.pending.clear()
        for offset, value in enumerate(values):
            if not math.isfinite(value):
                raise TrainingDiverged(f"loss is {value} at step {first + offset} of {self.run_dir}; lower the "
                                       f"learning rate or use precision fp32/bf16")
        self.state["losses"].extend(values)

    def after_step(self, settings: TrainSettings, steps: int) -> None:
        """Once ``state["step"]`` steps are done: sync losses, evaluate and checkpoint where they are due."""
        done = self.state["step"]
        at_eval = done % settings.eval_steps == 0
        at_checkpoint = done % settings.checkpoint_every == 0
        if at_eval or at_checkpoint or done == steps or len(self.pending) >= settings.sync_every:
            self.flush_losses()
        if at_eval:
            self.evaluate_and_keep_best(done)
        if at_eval or at_checkpoint:
            self.save_last()

    def finish(self) -> None:
        """The last checkpoint; with fewer steps than ``eval_steps``, evaluate the final model first so there
        is a best checkpoint."""
        if self.state["best_step"] is None:
            self.evaluate_and_keep_best(self.state["step"])
        self.save_last()


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
    saved = resume_state(run_dir, model, opt, resume_key, log)
    resumed_from = None if saved is None else saved["step"]
    job = _Job(method, model, opt, run_dir, dev_score, save_meta, log, saved or _fresh_state(resume_key))
    if settings.eval_at_start and job.state["step"] == 0 and not job.state["history"]:
        job.record_start_score()
    method.set_train_mode(model)  # train mode for most methods; eval mode where the release trained so
    started = time.time()
    for step in range(job.state["step"], steps):
        if stop_after is not None and step >= stop_after:
            return {"interrupted_at": step}
        indices = batch_indices(step, n, settings, seed)
        batch = device_batch(method, [corpus[int(i)] for i in indices], device, pin_memory)
        job.pending.append(optimizer_step(method, model, batch, opt, settings, device, step))
        job.state["step"] = step + 1
        if progress is not None:
            progress(step + 1, steps)
        job.after_step(settings, steps)
    job.finish()
    state = job.state
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
        "unreadable_checkpoints": checkpoint_recoveries(run_dir),
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
