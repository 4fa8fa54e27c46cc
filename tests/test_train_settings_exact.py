"""Guards training/loop.py's settings defaults (the HF 4.2.1 TrainingArguments values and the released run.sh
options that docs/methods.md names), the CUDA-only pinning rule, the fresh progress record's keys, and
resume_state's clean-up of a stale best/ when there is no resumable last/."""
from __future__ import annotations

import dataclasses

import torch

from sentrepro.training import loop
from sentrepro.training.loop import TrainSettings, pins_memory, resume_state


def test_defaults_are_the_documented_reference_values():
    s = TrainSettings(batch_size=64, lr=3e-5)
    # docs/methods.md: HF 4.2.1 defaults (weight_decay 0.0, max_grad_norm 1.0, warmup 0), run.sh: 1 epoch,
    # --eval_steps 125; fidelity runs are fp32 on CPU; no step cap unless asked.
    assert s.epochs == 1
    assert s.max_steps is None
    assert s.eval_steps == 125
    assert s.checkpoint_every == 125
    assert s.weight_decay == 0.0
    assert s.max_grad_norm == 1.0
    assert s.warmup_steps == 0
    assert s.precision == "fp32"
    assert s.device == "cpu"
    assert s.sync_every == 50
    assert s.schedule == "linear"
    assert s.shuffle is True
    assert s.pin_memory is True
    assert s.compile is False
    assert s.eval_at_start is True


def test_pinning_only_with_cuda_device_and_setting_on():
    on = TrainSettings(batch_size=2, lr=1e-3, pin_memory=True)
    off = dataclasses.replace(on, pin_memory=False)
    assert pins_memory(on, torch.device("cuda")) is True
    assert pins_memory(on, torch.device("cpu")) is False
    assert pins_memory(off, torch.device("cuda")) is False


def test_fresh_state_keys():
    assert loop._fresh_state("k1") == {"step": 0, "best_score": None, "best_step": None, "history": [],
                                       "losses": [], "resume_key": "k1"}


def test_stale_best_without_last_is_removed_and_logged(tmp_path):
    best = tmp_path / "best"
    best.mkdir()
    (best / "model.bin").write_text("x")
    logs = []
    assert resume_state(tmp_path, None, None, "k", logs.append) is None
    assert not best.exists()
    assert logs == [f"no resumable checkpoint in {tmp_path / 'last'}: removing {best} of an earlier job; "
                    "starting afresh"]


def test_no_checkpoint_no_best_starts_afresh_silently(tmp_path):
    logs = []
    assert resume_state(tmp_path, None, None, "k", logs.append) is None
    assert logs == []
