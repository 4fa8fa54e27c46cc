"""Optimizer and learning-rate schedule with the reference implementations' semantics.

The papers trained with transformers 4.2.1's own ``AdamW``: ``eps`` is added to sqrt(v) *outside*
the bias correction and the bias correction is folded into the step size (4.2.1
optimization.py:347-355). ``torch.optim.AdamW`` places eps differently, a source of small drift, so
both are offered (config ``optimizer: hf-adamw-4.2.1 | torch-adamw``). Schedule: linear decay to 0
with optional warmup (HF ``get_linear_schedule_with_warmup``), or constant (config ``schedule``).
"""

from __future__ import annotations

import math

import torch
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


class HFAdamW(Optimizer):
    """AdamW as in transformers 4.2.1 (decoupled weight decay applied after the Adam update).

    Per step t, for parameter p with gradient g:
        m = b1*m + (1-b1)*g ;  v = b2*v + (1-b2)*g^2
        p -= lr * sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)
        p -= lr * wd * p
    """

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:  # it recomputes the loss and its gradients: not under this step's no_grad
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                t = state["step"]
                step_size = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p.addcdiv_(exp_avg, denom, value=-step_size)
                if group["weight_decay"] > 0:
                    p.add_(p, alpha=-group["lr"] * group["weight_decay"])
        return loss


# transformers 4.2.1 ``Trainer.create_optimizer``: a parameter whose name contains one of these is not decayed.
NO_DECAY_NAME_PARTS = ("bias", "LayerNorm.weight")


def weight_decay_groups(named_parameters, weight_decay: float) -> list[dict]:
    """The reference trainer's two parameter groups: ``weight_decay`` for every parameter, 0.0 for biases and
    LayerNorm weights (matched by substring of the ``named_parameters`` name, as transformers 4.2.1 does).

    Order within a group is ``named_parameters`` order; an empty group is left out (a model without biases).
    """
    decayed, exempt = [], []
    for name, parameter in named_parameters:
        (exempt if any(part in name for part in NO_DECAY_NAME_PARTS) else decayed).append(parameter)
    groups = [{"params": decayed, "weight_decay": weight_decay}, {"params": exempt, "weight_decay": 0.0}]
    return [group for group in groups if group["params"]]


def build_optimizer(name: str, parameters, lr: float, weight_decay: float, fused: bool = False) -> Optimizer:
    if name == "hf-adamw-4.2.1":
        return HFAdamW(parameters, lr=lr, weight_decay=weight_decay)
    if name == "torch-adamw":
        kwargs = {"fused": True} if fused else {}
        return torch.optim.AdamW(parameters, lr=lr, weight_decay=weight_decay, eps=1e-8, **kwargs)
    raise ValueError(f"unknown optimizer '{name}'")


def linear_schedule_factor(step: int, total_steps: int, warmup_steps: int = 0) -> float:
    """Multiplier of the base lr after ``step`` optimizer steps (HF linear schedule)."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def linear_schedule(optimizer: Optimizer, total_steps: int, warmup_steps: int = 0) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: linear_schedule_factor(step, total_steps, warmup_steps))


def constant_schedule_factor(step: int, warmup_steps: int = 0) -> float:
    """Multiplier of the base lr after ``step`` steps: linear warmup, then the base lr throughout."""
    return step / warmup_steps if step < warmup_steps else 1.0


SCHEDULES = ("linear", "constant")


def build_schedule(name: str, optimizer: Optimizer, total_steps: int, warmup_steps: int = 0) -> LambdaLR:
    """``linear`` (decay to 0, the HF default) or ``constant`` (MoCoUTRL's release, see methods/mocoutrl.py)."""
    if name == "linear":
        return linear_schedule(optimizer, total_steps, warmup_steps)
    if name == "constant":
        return LambdaLR(optimizer, lambda step: constant_schedule_factor(step, warmup_steps))
    raise ValueError(f"unknown schedule '{name}' (known: {', '.join(SCHEDULES)})")
