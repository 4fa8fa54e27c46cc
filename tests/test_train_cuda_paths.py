"""The training loop's CUDA-only bookkeeping on a machine without CUDA (training/loop.py): what a checkpoint keeps
of the CUDA generators and gives back on resume, the fp16 loss scaler's device, the pinned copy of a batch.
torch.cuda is stood in for where the code asks it, so the loop's own decisions are checked; the real devices
are exercised by benchmarks/gpu_rehearsal.py on a GPU machine."""

from __future__ import annotations

import warnings

import pytest
import torch

from sentrepro.training import loop


class FakeCuda:
    """What the loop asks of torch.cuda: availability, and every generator's state."""

    def __init__(self, available: bool):
        self.available = available
        self.states = [torch.tensor([1, 2, 3], dtype=torch.uint8)]
        self.set_to = []

    def is_available(self):
        return self.available

    def get_rng_state_all(self):
        return self.states

    def set_rng_state_all(self, states):
        self.set_to.append(states)


@pytest.fixture
def cuda(monkeypatch):
    def install(available):
        fake = FakeCuda(available)
        for name in ("is_available", "get_rng_state_all", "set_rng_state_all"):
            monkeypatch.setattr(loop.torch.cuda, name, getattr(fake, name))
        return fake
    return install


def test_a_checkpoint_keeps_every_cuda_generator_s_state(cuda):
    fake = cuda(True)
    assert loop._rng_state()["cuda"] is fake.states


def test_a_checkpoint_of_a_cpu_run_keeps_no_cuda_state(cuda):
    cuda(False)
    assert loop._rng_state()["cuda"] is None


def test_a_resume_on_a_gpu_sets_the_cuda_generators_it_saved(cuda):
    fake = cuda(True)
    state = loop._rng_state()
    loop._set_rng_state(state)
    assert fake.set_to == [fake.states]


def test_a_cpu_checkpoint_resumed_on_a_gpu_leaves_the_cuda_generators_alone(cuda):
    cuda(False)
    state = loop._rng_state()                         # written without CUDA: "cuda" is None
    fake = cuda(True)
    loop._set_rng_state(state)
    assert fake.set_to == []


def test_a_gpu_checkpoint_resumed_without_cuda_sets_no_cuda_generator(cuda):
    fake = cuda(True)
    state = loop._rng_state()
    fake.available = False
    loop._set_rng_state(state)
    assert fake.set_to == []


def test_only_fp16_on_cuda_gets_a_loss_scaler_and_it_is_cuda_s():
    with warnings.catch_warnings():                   # without CUDA torch makes the scaler and disables it, warning
        warnings.simplefilter("ignore")
        scaler = loop._make_scaler(torch.device("cuda"), "fp16")
    assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == "cuda"
    assert loop._make_scaler(torch.device("cuda"), "bf16") is None
    assert loop._make_scaler(torch.device("cpu"), "fp16") is None


def test_a_pinned_batch_is_copied_from_pinned_memory(monkeypatch):
    pinned = []

    def pin_memory(self):
        pinned.append(self)
        return self.clone()

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)

    class Collates:
        def collate(self, items):
            return {"input_ids": torch.tensor(items), "attention_mask": torch.ones(len(items), 2)}

    batch = loop.device_batch(Collates(), [[1, 2], [3, 4]], torch.device("cpu"), pin_memory=True)
    assert len(pinned) == 2
    assert torch.equal(batch["input_ids"], torch.tensor([[1, 2], [3, 4]]))
    assert torch.equal(batch["attention_mask"], torch.ones(2, 2))
    assert loop.device_batch(Collates(), [[5, 6]], torch.device("cpu"), pin_memory=False)["input_ids"].tolist() == [
        [5, 6]] and len(pinned) == 2
