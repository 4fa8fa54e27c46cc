"""The training loop: deterministic on CPU, resumable after a kill, NaN is a clear error."""

from __future__ import annotations

import pytest
import torch

from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.methods import build_method
from sentrepro.training.corpus import TokenizedCorpus, tokenize_corpus
from sentrepro.training.loop import TrainSettings, TrainingDiverged, batch_indices, train
from sentrepro.encoder.start import seed_everything

PARAMS = {"max_seq_length": 32, "temperature": 0.05, "mlp_only_train": True}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, wiki_sentences, tiny_models):
    root = tmp_path_factory.mktemp("corpus")
    (root / "sentences.txt").write_text("\n".join(wiki_sentences[:64]) + "\n", encoding="utf-8")
    tokenize_corpus(root / "sentences.txt", load_tokenizer(str(tiny_models["bert"])), root / "tok", progress=False)
    return TokenizedCorpus.open(root / "tok")


def _run(tiny_models, corpus, run_dir, *, stop_after=None, lr=1e-4, key=""):
    seed_everything(7)
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("simcse", PARAMS, "bert", tokenizer)
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    settings = TrainSettings(batch_size=8, lr=lr, max_steps=6, eval_steps=3, checkpoint_every=2)
    scores = iter(range(100))
    summary = train(method, model, corpus, run_dir, settings, seed=7, dev_score=lambda m: float(next(scores)),
                    save_meta={}, log=lambda *_: None, stop_after=stop_after, resume_key=key)
    return summary, model


def test_tokenized_corpus_roundtrip(corpus, wiki_sentences, tiny_models):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    assert len(corpus) == 64
    assert corpus[3] == tokenizer(wiki_sentences[3], add_special_tokens=False)["input_ids"]


def test_batches_cover_each_epoch_once():
    settings = TrainSettings(batch_size=4, lr=1e-4, epochs=2)
    first_epoch = [i for s in range(3) for i in batch_indices(s, 10, settings, seed=1)]
    assert sorted(first_epoch) == list(range(10))
    assert list(batch_indices(3, 10, settings, 1)) != list(batch_indices(0, 10, settings, 1))


@pytest.mark.heavy
def test_training_is_deterministic_on_cpu(tmp_path, tiny_models, corpus):
    a, model_a = _run(tiny_models, corpus, tmp_path / "a")
    b, model_b = _run(tiny_models, corpus, tmp_path / "b")
    assert a["loss_curve"] == b["loss_curve"]
    for (name, pa), (_, pb) in zip(model_a.state_dict().items(), model_b.state_dict().items()):
        assert torch.equal(pa, pb), name


@pytest.mark.heavy
def test_resume_after_kill_reaches_same_result(tmp_path, tiny_models, corpus):
    straight, model_straight = _run(tiny_models, corpus, tmp_path / "straight")
    interrupted = _run(tiny_models, corpus, tmp_path / "resumed", stop_after=5)[0]
    assert interrupted == {"interrupted_at": 5}
    assert (tmp_path / "resumed" / "last" / "trainer_state.pt").exists()
    resumed, model_resumed = _run(tiny_models, corpus, tmp_path / "resumed")
    assert resumed["resumed_from"] == 4  # the last checkpoint before the kill
    assert resumed["loss_curve"] == straight["loss_curve"]
    for (name, pa), (_, pb) in zip(model_straight.state_dict().items(), model_resumed.state_dict().items()):
        assert torch.allclose(pa, pb, atol=0, rtol=0), name
    assert (tmp_path / "resumed" / "best" / "model.safetensors").exists()


def test_nan_loss_is_a_clear_error(tmp_path, tiny_models, corpus):
    # lr = nan: step 1 is finite and poisons the weights; step 2 must stop with a message naming it
    with pytest.raises(TrainingDiverged, match="loss is nan at step 2"):
        _run(tiny_models, corpus, tmp_path / "nan", lr=float("nan"))


def test_checkpoint_of_other_settings_is_not_resumed(tmp_path, tiny_models, corpus):
    _run(tiny_models, corpus, tmp_path / "run", stop_after=5, key="lr=1e-4")
    fresh, _ = _run(tiny_models, corpus, tmp_path / "run", key="lr=5e-5")
    assert fresh["resumed_from"] is None
    assert fresh["steps"] == 6


def _run_scored(tiny_models, corpus, run_dir, scores, **settings):
    seed_everything(7)
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("simcse", PARAMS, "bert", tokenizer)
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    settings = TrainSettings(batch_size=8, lr=1e-4, max_steps=6, eval_steps=3, checkpoint_every=2, **settings)
    scores = iter(scores)
    seen = []
    summary = train(method, model, corpus, run_dir, settings, seed=7, dev_score=lambda m: float(next(scores)),
                    save_meta={}, log=lambda *_: None, progress=lambda step, total: seen.append((step, total)))
    return summary, seen


def test_step0_dev_score_is_recorded_and_never_selected(tmp_path, tiny_models, corpus):
    # the untrained model scores best on dev here; the selected checkpoint is still a trained one
    summary, seen = _run_scored(tiny_models, corpus, tmp_path / "run", [90.0, 40.0, 50.0])
    assert summary["history"] == [{"step": 0, "stsb_dev_spearman": 90.0}, {"step": 3, "stsb_dev_spearman": 40.0},
                                  {"step": 6, "stsb_dev_spearman": 50.0}]
    assert summary["start_stsb_dev_spearman"] == 90.0
    assert summary["best_step"] == 6 and summary["best_stsb_dev_spearman"] == 50.0
    assert seen == [(step, 6) for step in range(1, 7)]  # one progress call per optimizer step


def test_step0_dev_score_can_be_turned_off(tmp_path, tiny_models, corpus):
    summary, _ = _run_scored(tiny_models, corpus, tmp_path / "run", [40.0, 50.0], eval_at_start=False)
    assert [h["step"] for h in summary["history"]] == [3, 6]
    assert summary["start_stsb_dev_spearman"] is None


def test_settings_from_params_take_training_values_and_one_default_per_method_param():
    """The training block comes filled from the schema (its values are used as given); a method param left
    out takes the dataclass field's default; a method's checkpoint_every overrides the training block's."""
    from dataclasses import fields

    from sentrepro.planning import registry
    from sentrepro.training.loop import METHOD_PARAMS

    training = {"checkpoint_every": 7, "pin_memory": False, "compile": True, "eval_at_start": False}
    settings = TrainSettings.from_params({"batch_size": 4, "lr": 0.5}, training, "cpu", "bf16")
    defaults = {f.name: f.default for f in fields(TrainSettings)}
    assert settings == TrainSettings(**{**defaults, "batch_size": 4, "lr": 0.5, "checkpoint_every": 7,
                                        "pin_memory": False, "compile": True, "eval_at_start": False,
                                        "precision": "bf16"})
    given = {"batch_size": 4, "lr": 0.5, "epochs": 3, "max_steps": 9, "eval_steps": 2, "optimizer": "torch-adamw",
             "weight_decay": 0.1, "max_grad_norm": None, "warmup_steps": 5, "schedule": "constant",
             "shuffle": False, "checkpoint_every": 3}
    settings = TrainSettings.from_params(given, training, "cpu", "fp32")
    assert {k: getattr(settings, k) for k in given} == given
    assert set(METHOD_PARAMS) <= set(registry.parameter_group("trainer")) and set(METHOD_PARAMS) <= set(defaults)


def test_weight_decay_groups_exempt_biases_and_layernorm_weights_as_the_reference_trainer(tiny_models):
    """HF Trainer 4.2.1 decays every parameter but biases and LayerNorm weights; the groups are checked against
    ones built by hand from the module types, and one optimizer step with zero gradients shows the effect."""
    from torch import nn

    from sentrepro.training.loop import build_optimization

    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("simcse", PARAMS, "bert", tokenizer)
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    settings = TrainSettings(batch_size=8, lr=1e-2, max_steps=2, weight_decay=0.01)
    opt = build_optimization(method, model, settings, 2, torch.device("cpu"))

    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    exempt = {id(p) for module in model.modules() for name, p in module.named_parameters(recurse=False)
              if name == "bias" or isinstance(module, nn.LayerNorm)} & trainable
    by_decay = {group["weight_decay"]: {id(p) for p in group["params"]} for group in opt.optimizer.param_groups}
    assert any(isinstance(m, nn.LayerNorm) for m in model.modules()) and exempt
    assert by_decay == {0.01: trainable - exempt, 0.0: exempt}

    before = {id(p): p.detach().clone() for p in model.parameters() if p.requires_grad}
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    opt.optimizer.step()  # zero gradients: only the decoupled decay moves a parameter
    for p in model.parameters():
        if p.requires_grad:
            expected = before[id(p)] if id(p) in exempt else before[id(p)] * (1 - 1e-2 * 0.01)
            torch.testing.assert_close(p.detach(), expected, rtol=0, atol=1e-7)


def test_a_checkpoint_of_other_code_is_not_this_jobs_progress():
    """The key a ``last/`` checkpoint is resumed under holds the job's code fingerprint as well as its settings:
    Snakemake reruns a training job when its method's code changes, and the job must then train afresh."""
    from sentrepro.training.job import checkpoint_key

    spec = {"seed": 1, "method": {"kind": "simcse"}}
    key = checkpoint_key(spec, {"fingerprint": "aaaa", "modules": {"x.py": "1"}})
    assert key == checkpoint_key(dict(reversed(spec.items())), {"fingerprint": "aaaa", "modules": {}})
    assert key != checkpoint_key(spec, {"fingerprint": "bbbb", "modules": {"x.py": "1"}})
    assert key != checkpoint_key({**spec, "seed": 2}, {"fingerprint": "aaaa"})
    assert key != checkpoint_key(spec, None)  # called directly (no CLI entry running): settings only


@pytest.mark.heavy
def test_the_training_summary_records_the_run(tmp_path, tiny_models, corpus):
    """train.json's summary of a 6-step run with dev scores 0, 1, 2 at steps 0, 3, 6: every key and its value."""
    import time

    began = time.time()
    summary, _ = _run(tiny_models, corpus, tmp_path / "run")
    wall = time.time() - began
    assert set(summary) == {"steps", "total_steps", "best_step", "best_stsb_dev_spearman", "history",
                            "start_stsb_dev_spearman", "loss_first", "loss_last", "loss_curve", "resumed_from",
                            "unreadable_checkpoints", "train_seconds_this_job", "sentences", "pinned_memory",
                            "compiled"}
    assert (summary["steps"], summary["total_steps"]) == (6, 6)
    assert [h["step"] for h in summary["history"]] == [0, 3, 6]
    assert [h["stsb_dev_spearman"] for h in summary["history"]] == [0.0, 1.0, 2.0]
    assert (summary["best_step"], summary["best_stsb_dev_spearman"], summary["start_stsb_dev_spearman"]) == (6, 2.0,
                                                                                                          0.0)
    curve = summary["loss_curve"]  # 6 losses, fewer than the curve's 50 points: one point per step
    assert len(curve) == 6
    assert summary["loss_first"] == pytest.approx(curve[0], abs=1e-5) and summary["loss_first"] != curve[-1]
    assert summary["loss_last"] == pytest.approx(curve[-1], abs=1e-5)
    assert summary["resumed_from"] is None and summary["unreadable_checkpoints"] == []
    assert 0 < summary["train_seconds_this_job"] <= wall
    assert (summary["sentences"], summary["pinned_memory"], summary["compiled"]) == (64, False, False)


def test_the_loss_curve_is_the_mean_of_equal_windows_rounded_to_five_digits():
    from sentrepro.training.loop import _loss_curve

    assert _loss_curve([]) == []
    assert _loss_curve([0.1234567, 0.2]) == [0.12346, 0.2]
    assert _loss_curve([float(i) for i in range(100)]) == [i + 0.5 for i in range(0, 100, 2)]  # 50 windows of 2
    assert len(_loss_curve([1.0] * 51)) == 50


@pytest.mark.heavy
def test_a_tied_dev_score_keeps_the_earlier_checkpoint(tmp_path, tiny_models, corpus):
    """The released trainer (HF Trainer, greater_is_better) keeps a new best only when the score is strictly
    greater: with the same dev score at steps 3 and 6 the selected step stays 3 (step 0's score, before training,
    is recorded but is no candidate)."""
    seed_everything(7)
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    method = build_method("simcse", PARAMS, "bert", tokenizer)
    model = method.build_model(load_encoder(str(tiny_models["bert"]), "bert"))
    settings = TrainSettings(batch_size=8, lr=1e-4, max_steps=6, eval_steps=3, checkpoint_every=2)
    summary = train(method, model, corpus, tmp_path / "run", settings, seed=7, dev_score=lambda m: 50.0,
                    save_meta={}, log=lambda *_: None)
    assert [h["step"] for h in summary["history"]] == [0, 3, 6]
    assert (summary["best_step"], summary["best_stsb_dev_spearman"]) == (3, 50.0)
