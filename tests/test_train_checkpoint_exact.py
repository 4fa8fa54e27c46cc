"""The training loop's checkpoint bookkeeping pinned exactly (training/loop.py): what an unreadable checkpoint
leaves (its place aside, numbered, and the recovery record), when a failed save is a full disk, what a resume
takes from a checkpoint (its key, the loss scaler), what the resumable checkpoint holds, when pending losses
are synced, and when a finished run's resume state may be dropped. Unit tier: tiny models, a few steps."""

from __future__ import annotations

import errno
import json

import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.encoder.start import seed_everything
from sentrepro.files import DiskFullError
from sentrepro.methods import build_method
from sentrepro.methods.base import METHOD_META
from sentrepro.runs import BEST
from sentrepro.training import loop
from sentrepro.training.loop import (
    LAST,
    TRAINER_STATE,
    TrainSettings,
    TrainingDiverged,
    build_optimization,
    checkpoint_recoveries,
    drop_resume_state,
    read_checkpoint,
    resume_state,
    save_checkpoint,
    tensor_bytes,
    train,
)

from tests.test_train import PARAMS, corpus  # noqa: F401 - the loop's tests' SimCSE settings and 64-sentence corpus


def _parts(tiny_models):
    seed_everything(7)
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("simcse", PARAMS, "bert", tokenizer)
    return method, method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))


def _train(tiny_models, corpus, run_dir, *, stop_after=None, key="", progress=None, **settings):
    method, model = _parts(tiny_models)
    settings = TrainSettings(**{"batch_size": 8, "lr": 1e-4, "max_steps": 6, "eval_steps": 3, "checkpoint_every": 2,
                                **settings})
    scores = iter(range(100))
    return train(method, model, corpus, run_dir, settings, seed=7, dev_score=lambda m: float(next(scores)),
                 save_meta={"note": "meta"}, log=lambda *_: None, stop_after=stop_after, resume_key=key,
                 progress=progress)


# --- an unreadable checkpoint -------------------------------------------------------------------------------


def _write_last(run, payload):
    (run / LAST).mkdir(parents=True)
    torch.save(payload, run / LAST / TRAINER_STATE)


def test_a_checkpoint_lacking_keys_is_moved_aside_with_its_reason_recorded(tmp_path):
    run = tmp_path / "run"
    _write_last(run, {"model": {}, "optimizer": {}, "scheduler": {}})
    said = []
    assert read_checkpoint(run / LAST, said.append) is None
    path, aside = run / LAST / TRAINER_STATE, run / "unreadable" / "last-1"
    assert checkpoint_recoveries(run) == [{"checkpoint": str(path), "reason": "ValueError: it lacks rng, state",
                                           "moved_to": str(aside), "action": "restarted from step 0"}]
    assert said == [f"checkpoint {path} cannot be read (ValueError: it lacks rng, state); moved aside to {aside}; "
                    "training starts again from step 0"]


def test_a_checkpoint_that_is_no_mapping_lacks_every_key(tmp_path):
    run = tmp_path / "run"
    _write_last(run, [1, 2])
    assert read_checkpoint(run / LAST, lambda _: None) is None
    assert checkpoint_recoveries(run)[0]["reason"] == "ValueError: it lacks model, optimizer, scheduler, rng, state"


@pytest.mark.parametrize("error, reason", [(EOFError(), "EOFError"),
                                           (RuntimeError("unexpected tag XX\nat 0x10"), "RuntimeError: unexpected tag XX")])
def test_the_reason_is_the_error_s_type_and_first_line(tmp_path, monkeypatch, error, reason):
    """An error without a message is named by its type alone; only the ': ' left by an empty message is cut."""
    run = tmp_path / "run"
    _write_last(run, {})

    def fails(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(loop.torch, "load", fails)
    assert read_checkpoint(run / LAST, lambda _: None) is None
    assert checkpoint_recoveries(run)[0]["reason"] == reason


def test_each_unreadable_checkpoint_gets_the_next_number(tmp_path):
    run = tmp_path / "run"
    for _ in range(3):
        _write_last(run, {"model": {}})
        assert read_checkpoint(run / LAST, lambda _: None) is None
    assert sorted(p.name for p in (run / "unreadable").iterdir()) == ["last-1", "last-2", "last-3", "recoveries.jsonl"]
    assert [r["moved_to"] for r in checkpoint_recoveries(run)] == [str(run / "unreadable" / f"last-{n}")
                                                                    for n in (1, 2, 3)]


# --- a failed save ------------------------------------------------------------------------------------------


def test_tensor_bytes_counts_every_tensor_and_nothing_else():
    payload = {"a": torch.zeros(3), "b": 5, "c": [torch.zeros(2, dtype=torch.float64), "x", (torch.zeros(4,
                                                                                                     dtype=torch.int8),)]}
    assert tensor_bytes(payload) == 3 * 4 + 2 * 8 + 4
    assert tensor_bytes("text") == 0 and tensor_bytes(None) == 0


@pytest.mark.parametrize("margin, full", [((1 << 20) - 1, True), (1 << 20, False), (2 << 20, False)])
def test_a_failed_save_is_a_full_disk_when_less_than_its_tensors_and_a_mib_are_free(tmp_path, monkeypatch, margin,
                                                                                    full):
    payload = {"w": torch.zeros(1000)}                               # 4,000 bytes

    def fails(*_args, **_kwargs):
        raise RuntimeError("PytorchStreamWriter failed writing file")

    monkeypatch.setattr(loop.torch, "save", fails)
    monkeypatch.setattr(loop, "free_bytes", lambda _path: 4000 + margin)
    expected = DiskFullError if full else RuntimeError
    with pytest.raises(expected) as caught:
        save_checkpoint(payload, tmp_path / "t.pt.tmp", tmp_path / "t.pt")
    assert full == isinstance(caught.value, DiskFullError)
    if not full:
        assert "saving checkpoint" in str(caught.value) and "t.pt" in str(caught.value)


def test_a_save_failing_with_enospc_is_a_full_disk_whatever_the_free_space(tmp_path, monkeypatch):
    def fails(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(loop.torch, "save", fails)
    monkeypatch.setattr(loop, "free_bytes", lambda _path: 1 << 40)
    with pytest.raises(DiskFullError):
        save_checkpoint({"w": torch.zeros(10)}, tmp_path / "t.pt.tmp", tmp_path / "t.pt")


# --- what a resume reads --------------------------------------------------------------------------------------


def test_a_checkpoint_of_the_same_key_is_resumed(tmp_path, tiny_models, corpus):
    _train(tiny_models, corpus, tmp_path / "run", stop_after=5, key="lr=1e-4")
    assert _train(tiny_models, corpus, tmp_path / "run", key="lr=1e-4")["resumed_from"] == 4


def test_a_checkpoint_without_a_key_is_one_of_the_empty_key(tmp_path, tiny_models, corpus):
    """Checkpoints of code before resume keys existed hold none: they resume under the empty key."""
    run = tmp_path / "run"
    _train(tiny_models, corpus, run, stop_after=5)
    saved = torch.load(run / LAST / TRAINER_STATE, weights_only=False)
    del saved["state"]["resume_key"]
    torch.save(saved, run / LAST / TRAINER_STATE)
    assert _train(tiny_models, corpus, run)["resumed_from"] == 4


def test_a_checkpoint_of_another_key_is_dropped_even_without_a_best_model(tmp_path, tiny_models, corpus):
    run = tmp_path / "run"
    _train(tiny_models, corpus, run, stop_after=2, key="a")             # a checkpoint at step 2, no dev yet
    assert (run / LAST).is_dir() and not (run / BEST).exists()
    method, model = _parts(tiny_models)
    opt = build_optimization(method, model, TrainSettings(batch_size=8, lr=1e-4, max_steps=6), 6, torch.device("cpu"))
    said = []
    assert resume_state(run, model, opt, "b", said.append) is None
    assert not (run / LAST).exists() and "other settings or code" in said[0]


def _checkpoint_and_optimization(tmp_path, tiny_models, corpus, saved_scale, scaler):
    run = tmp_path / "run"
    _train(tiny_models, corpus, run, stop_after=5)
    saved = torch.load(run / LAST / TRAINER_STATE, weights_only=False)
    saved["scaler"] = None if saved_scale is None else torch.amp.GradScaler("cpu", init_scale=saved_scale).state_dict()
    torch.save(saved, run / LAST / TRAINER_STATE)
    method, model = _parts(tiny_models)
    opt = build_optimization(method, model, TrainSettings(batch_size=8, lr=1e-4, max_steps=6), 6, torch.device("cpu"))
    opt.scaler = scaler
    return run, model, opt


def test_a_resume_restores_the_loss_scaler(tmp_path, tiny_models, corpus):
    run, model, opt = _checkpoint_and_optimization(tmp_path, tiny_models, corpus, 1024.0,
                                                   torch.amp.GradScaler("cpu"))
    assert resume_state(run, model, opt, "", lambda _: None)["step"] == 4
    assert opt.scaler.get_scale() == 1024.0


def test_a_scaled_checkpoint_resumes_in_a_run_without_a_scaler(tmp_path, tiny_models, corpus):
    """fp16 on a GPU, then fp32 (or the CPU): the saved scaler state has nothing to go to and is left."""
    run, model, opt = _checkpoint_and_optimization(tmp_path, tiny_models, corpus, 1024.0, None)
    assert resume_state(run, model, opt, "", lambda _: None)["step"] == 4


def test_the_resumable_checkpoint_holds_the_scaler_slot(tmp_path, tiny_models, corpus):
    _train(tiny_models, corpus, tmp_path / "run", stop_after=5)
    saved = torch.load(tmp_path / "run" / LAST / TRAINER_STATE, weights_only=False)
    assert set(saved) == {"model", "optimizer", "scheduler", "scaler", "rng", "state", "grads"}
    assert saved["scaler"] is None                                       # CPU fp32: no loss scaling


def test_the_best_model_records_its_step_and_dev_score(tmp_path, tiny_models, corpus):
    _train(tiny_models, corpus, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / BEST / METHOD_META).read_text())
    assert meta["note"] == "meta" and meta["step"] == 6 and meta["stsb_dev_spearman"] == 2.0  # 0 before training, 1 at step 3


# --- when losses are synced -----------------------------------------------------------------------------------


def test_the_last_step_s_loss_is_synced_whatever_sync_every_is(tmp_path, tiny_models, corpus):
    """5 steps, dev at 3, checkpoints at 2 and 4: step 5 is neither, and its loss still reaches the summary."""
    every = _train(tiny_models, corpus, tmp_path / "a", max_steps=5, sync_every=1)
    rarely = _train(tiny_models, corpus, tmp_path / "b", max_steps=5, sync_every=50)
    assert rarely["loss_last"] == every["loss_last"] and rarely["loss_curve"] == every["loss_curve"]
    assert len(every["loss_curve"]) == 5


def test_a_diverged_loss_stops_training_at_the_sync_that_sees_it(tmp_path, tiny_models, corpus):
    """lr = nan: step 2's loss is nan. With sync_every 2 (and no dev or checkpoint before step 100) the losses
    of steps 1-2 are synced after step 2, so training stops there, not a step later."""
    seen = []
    with pytest.raises(TrainingDiverged, match="loss is nan at step 2"):
        _train(tiny_models, corpus, tmp_path / "nan", lr=float("nan"), max_steps=8, eval_steps=100,
               checkpoint_every=100, sync_every=2, progress=lambda step, total: seen.append(step))
    assert seen == [1, 2]


# --- dropping a finished run's resume state -------------------------------------------------------------------


def test_the_resume_state_is_kept_when_best_holds_a_file_the_summary_does_not_record(tmp_path):
    from sentrepro.hashing import sha256_file

    run = tmp_path / "run"
    (run / LAST).mkdir(parents=True)
    (run / LAST / TRAINER_STATE).write_bytes(b"state")
    (run / BEST).mkdir()
    (run / BEST / "model.safetensors").write_bytes(b"weights")
    (run / BEST / "stray.bin").write_bytes(b"?")
    recorded = {str(run / BEST / "model.safetensors"): sha256_file(run / BEST / "model.safetensors")}
    with pytest.raises(RuntimeError, match="stray.bin"):
        drop_resume_state(run, recorded, lambda _: None)
    assert (run / LAST / TRAINER_STATE).exists()
