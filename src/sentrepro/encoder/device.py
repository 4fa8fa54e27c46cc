"""Where and in what precision a job computes: the device, the precision, CPU threads, autocast.

Shared by the training job and the evaluation jobs (peers that import nothing of each other).
"""

from __future__ import annotations

import contextlib
import os

import torch


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is an error."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was asked for, but torch sees no GPU (use device: auto or cpu)")
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {requested!r}")
    return requested


def resolve_precision(requested: str, device: str) -> str:
    """The precision a job computes in: ``auto`` = bf16 on GPUs that support it, else fp16 (with loss
    scaling); on CPU always fp32 (autocast is applied on CUDA only, ``autocast_context`` below)."""
    if device == "cpu":
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested


def configure_threads(threads: int | None) -> int:
    """Set torch's CPU threads from config, else from SLURM's allocation, else leave torch's default."""
    if threads is None:
        slurm = os.environ.get("SLURM_CPUS_PER_TASK")
        threads = int(slurm) if slurm else None
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def autocast_context(device: torch.device, precision: str):
    """bf16/fp16 autocast on CUDA when asked; a no-op otherwise (CPU runs fp32)."""
    if device.type == "cuda" and precision in ("bf16", "fp16"):
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast("cuda", dtype=dtype)
    return contextlib.nullcontext()
