"""One optimizer step and the learning-rate schedule of the training loop, on a model with a known gradient.

The training loop's protocol settings (``max_grad_norm``, ``warmup_steps``, the schedule over the run's steps) are
checked where the loop applies them: :func:`sentrepro.training.loop.build_optimization` and
:func:`sentrepro.training.loop.optimizer_step`, with a linear layer standing in for the encoder so that the gradient is
known by hand and nothing is loaded (milliseconds, unit tier).
"""

from __future__ import annotations

import pytest
import torch

from sentrepro.methods.base import Method, SentenceModel
from sentrepro.training.loop import TrainSettings, build_optimization, optimizer_step

CPU = torch.device("cpu")
ITEMS = [[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]]  # one batch of two 3-d inputs


class LinearLoss(Method):
    """loss = scale * sum(W x + b) over the batch: dL/dW[i] = scale * sum(x), dL/db[i] = scale * B for each row i.

    ``after_step`` (called after the update, before the gradients are reset) records the gradient the optimizer
    used, so the test sees it as the update saw it.
    """

    kind = "test-linear-loss"

    def __init__(self, scale: float):
        super().__init__({}, "bert", None)
        self.scale = scale
        self.used_grads: list[dict[str, torch.Tensor]] = []
        self.steps_done: list[int] = []  # what after_step was told: optimizer steps done so far (1-based)

    def collate(self, examples):
        return {"x": torch.tensor(examples, dtype=torch.float32)}

    def loss(self, model, batch):
        return self.scale * model.encoder(batch["x"]).sum()

    def embed(self, model, inputs, purpose):
        return model.encoder(inputs["x"])

    def after_step(self, model, step):
        self.steps_done.append(step)
        self.used_grads.append({name: p.grad.detach().clone() for name, p in model.named_parameters()})


def linear_model() -> SentenceModel:
    torch.manual_seed(0)
    return SentenceModel(torch.nn.Linear(3, 2))


def hand_gradient_norm(scale: float) -> float:
    """|grad| of LinearLoss on ITEMS: W's 2 rows are scale * (1, 3, 3), b's 2 entries scale * 2."""
    return scale * (2 * (1 + 9 + 9) + 2 * 4) ** 0.5


def grad_norm(grads: dict[str, torch.Tensor]) -> float:
    return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))


def settings(**overrides) -> TrainSettings:
    values = {"batch_size": 2, "lr": 1e-3, "max_grad_norm": 1.0, "warmup_steps": 0, "schedule": "linear",
              "optimizer": "hf-adamw-4.2.1", "weight_decay": 0.0}
    return TrainSettings(**{**values, **overrides})


def test_a_huge_gradient_is_clipped_to_max_grad_norm_before_the_update():
    method, model = LinearLoss(scale=1e6), linear_model()
    config = settings(max_grad_norm=1.0)
    opt = build_optimization(method, model, config, steps=5, device=CPU)
    optimizer_step(method, model, method.collate(ITEMS), opt, config, CPU, step=0)
    assert grad_norm(method.used_grads[0]) == pytest.approx(1.0, rel=1e-5)
    # the update used the clipped gradient: Adam's first moment after one step is (1 - beta1) * gradient
    beta1 = opt.optimizer.param_groups[0]["betas"][0]
    first_moment = {i: opt.optimizer.state[p]["exp_avg"] for i, p in enumerate(opt.params)}
    assert grad_norm(first_moment) == pytest.approx((1 - beta1) * 1.0, rel=1e-5)
    # the gradient is reset after the step (the reference trainer zeroes it every step)
    assert all(p.grad is None for p in model.parameters())


def test_without_max_grad_norm_the_gradient_is_the_hand_one():
    method, model = LinearLoss(scale=1e6), linear_model()
    config = settings(max_grad_norm=None)
    opt = build_optimization(method, model, config, steps=5, device=CPU)
    optimizer_step(method, model, method.collate(ITEMS), opt, config, CPU, step=0)
    assert grad_norm(method.used_grads[0]) == pytest.approx(hand_gradient_norm(1e6), rel=1e-6)


# The learning rate after k optimizer steps of a 10-step run with base lr 1e-3, by hand.
# linear (HF get_linear_schedule_with_warmup): warm-up k/2 for k < 2, then decay (10 - k)/8, reaching 0 at step 10.
LINEAR_WARMUP_2 = [0.0, 5e-4, 1e-3, 8.75e-4, 7.5e-4, 6.25e-4, 5e-4, 3.75e-4, 2.5e-4, 1.25e-4, 0.0]
# no warm-up: (10 - k)/10
LINEAR = [1e-3, 9e-4, 8e-4, 7e-4, 6e-4, 5e-4, 4e-4, 3e-4, 2e-4, 1e-4, 0.0]
# constant with the same warm-up: k/2, then the base lr throughout
CONSTANT_WARMUP_2 = [0.0, 5e-4] + [1e-3] * 9


@pytest.mark.parametrize("schedule, warmup, expected", [("linear", 2, LINEAR_WARMUP_2), ("linear", 0, LINEAR),
                                                        ("constant", 2, CONSTANT_WARMUP_2)])
def test_the_learning_rate_after_each_step_of_a_built_optimizer_is_the_hand_value(schedule, warmup, expected):
    method, model = LinearLoss(scale=1.0), linear_model()
    config = settings(schedule=schedule, warmup_steps=warmup)
    opt = build_optimization(method, model, config, steps=10, device=CPU)
    seen = [[group["lr"] for group in opt.optimizer.param_groups]]
    for step in range(10):
        optimizer_step(method, model, method.collate(ITEMS), opt, config, CPU, step=step)
        seen.append([group["lr"] for group in opt.optimizer.param_groups])
    assert len(opt.optimizer.param_groups) == 2  # decayed weights and exempt biases: one schedule for both
    assert method.steps_done == list(range(1, 11))  # after_step (momentum updates, queues) counts steps from 1
    for k, (lrs, hand) in enumerate(zip(seen, expected)):
        assert lrs == pytest.approx([hand, hand], abs=1e-15), f"lr after {k} steps"


def test_hf_adamw_defaults_are_the_reference_trainers_values():
    """build_optimizer passes only lr and weight decay: betas and eps are HFAdamW's defaults, which must be the values
    SimCSE's trainer (transformers 4.2.1 TrainingArguments) passes: betas (0.9, 0.999), eps 1e-8; no decay unless
    asked."""
    from sentrepro.training.optim import HFAdamW

    defaults = HFAdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-3).defaults
    assert (defaults["betas"], defaults["eps"], defaults["weight_decay"]) == ((0.9, 0.999), 1e-8, 0.0)


def test_hf_adamw_eps_counts_where_the_gradient_is_tiny():
    """With a gradient of 1e-9, sqrt(v) is ~3e-11, so eps (1e-8, added outside the bias correction) sets the step:
    p -= lr * sqrt(1 - b2)/(1 - b1) * m / (sqrt(v) + eps) on step 1, by hand."""
    from sentrepro.training.optim import build_optimizer

    p = torch.nn.Parameter(torch.tensor([0.0], dtype=torch.float64))
    opt = build_optimizer("hf-adamw-4.2.1", [p], lr=1.0, weight_decay=0.0)
    p.grad = torch.tensor([1e-9], dtype=torch.float64)
    opt.step()
    m, v = 0.1 * 1e-9, 0.001 * 1e-18
    expected = -1.0 * (0.001**0.5 / 0.1) * m / (v**0.5 + 1e-8)
    assert p.item() == pytest.approx(expected, rel=1e-9)


def test_hf_adamw_step_returns_what_its_closure_returns():
    from sentrepro.training.optim import HFAdamW

    p = torch.nn.Parameter(torch.ones(1))
    opt = HFAdamW([p], lr=1e-3)

    def closure():
        opt.zero_grad()
        loss = (p * 3).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 3.0
    assert p.item() < 1.0
    assert opt.step() is None  # no closure, no loss (torch's convention)


def test_hf_adamw_updates_every_parameter_with_a_gradient_past_one_without():
    from sentrepro.training.optim import HFAdamW

    frozen, first, second = (torch.nn.Parameter(torch.ones(1)) for _ in range(3))
    opt = HFAdamW([first, frozen, second], lr=0.1)
    first.grad, second.grad = torch.ones(1), torch.ones(1)
    opt.step()
    assert frozen.item() == 1.0 and first.item() < 1.0 and second.item() < 1.0


def test_weight_decay_groups_exempt_biases_and_layernorm_weights_by_name():
    """transformers 4.2.1's Trainer: no decay for any parameter whose name contains "bias" or "LayerNorm.weight"."""
    from sentrepro.training.optim import weight_decay_groups

    names = ["embeddings.word_embeddings.weight", "encoder.layer.0.attention.output.LayerNorm.weight",
             "encoder.layer.0.attention.output.LayerNorm.bias", "encoder.layer.0.output.dense.weight",
             "encoder.layer.0.output.dense.bias", "pooler.LayerNormish.weight"]
    named = [(name, torch.nn.Parameter(torch.zeros(1))) for name in names]
    groups = weight_decay_groups(named, 0.01)
    by_id = {id(p): name for name, p in named}
    assert [[by_id[id(p)] for p in group["params"]] for group in groups] == [
        [names[0], names[3], names[5]], [names[1], names[2], names[4]]]
    assert [group["weight_decay"] for group in groups] == [0.01, 0.0]
    assert len(weight_decay_groups(named[:1], 0.01)) == 1  # an empty group is left out


def test_total_steps_is_batches_per_epoch_times_epochs_capped_by_max_steps():
    from sentrepro.training.loop import total_steps

    assert total_steps(10, settings(batch_size=4, epochs=2)) == 6  # ceil(10 / 4) = 3 per epoch (drop_last=False)
    assert total_steps(12, settings(batch_size=4, epochs=1)) == 3
    assert total_steps(10, settings(batch_size=4, epochs=2, max_steps=5)) == 5
    assert total_steps(10, settings(batch_size=4, epochs=2, max_steps=50)) == 6


def test_the_data_order_of_a_seed_and_epoch_is_the_recorded_one():
    """The order of every epoch is pinned: the permutations below are what runs of this version trained on. Another
    formula for the (seed, epoch) generator would still be "a random order", but it would silently change every
    trained number and the order a resumed run continues in (test_train.py checks resumption within one version)."""
    from sentrepro.training.loop import batch_indices, epoch_order

    assert epoch_order(10, 42, 0).tolist() == [0, 6, 4, 3, 5, 9, 1, 2, 7, 8]
    assert epoch_order(10, 42, 1).tolist() == [9, 3, 6, 7, 8, 2, 4, 1, 0, 5]
    assert epoch_order(10, 7, 2).tolist() == [1, 6, 4, 2, 7, 8, 3, 5, 0, 9]
    config = settings(batch_size=4, epochs=2)
    assert [batch_indices(step, 10, config, 42).tolist() for step in range(4)] == [
        [0, 6, 4, 3], [5, 9, 1, 2], [7, 8], [9, 3, 6, 7]]
    assert batch_indices(1, 10, settings(batch_size=4, shuffle=False), 42).tolist() == [4, 5, 6, 7]


@pytest.mark.parametrize("device, precision, fused, scaled", [("cpu", "fp32", False, False),
                                                              ("cpu", "fp16", False, False),
                                                              ("cuda", "bf16", True, False),
                                                              ("cuda", "fp16", True, True)])
def test_the_fused_optimizer_and_the_loss_scaler_are_cuda_only_and_fp16_only(monkeypatch, device, precision, fused,
                                                                             scaled):
    """Built for a device (no GPU needed: nothing is allocated on it): the fused optimizer kernel on CUDA only, the
    fp16 loss scaler for CUDA fp16 only."""
    import warnings

    from sentrepro.training import loop as train

    asked, build = {}, train.build_optimizer

    def spy(name, parameters, lr, weight_decay, fused=False):
        asked["fused"] = fused
        return build(name, parameters, lr, weight_decay)

    monkeypatch.setattr(train, "build_optimizer", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GradScaler("cuda") on a machine without CUDA warns and disables itself
        opt = build_optimization(LinearLoss(1.0), linear_model(), settings(precision=precision), steps=5,
                                 device=torch.device(device))
    assert asked["fused"] is fused
    assert (opt.scaler is not None) is scaled


def test_fp16_loss_scaling_of_a_method_that_keeps_its_gradients_is_an_error_naming_the_kind_and_the_fix():
    import warnings

    method = LinearLoss(1.0)
    method.reset_grads = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"^test-linear-loss keeps gradients across steps \(no zero_grad\), .* "
                                             r"would unscale again at every step: set training.precision to bf16 or "
                                             r"fp32$"):
            build_optimization(method, linear_model(), settings(precision="fp16"), steps=5, device=torch.device("cuda"))
        build_optimization(method, linear_model(), settings(precision="bf16"), steps=5, device=torch.device("cuda"))
    build_optimization(LinearLoss(1.0), linear_model(), settings(precision="fp16"), steps=5, device=torch.device("cpu"))


def test_build_optimizer_builds_each_named_optimizer_with_the_reference_eps():
    from sentrepro.training.optim import HFAdamW, build_optimizer

    params = [torch.nn.Parameter(torch.zeros(2))]
    assert type(build_optimizer("hf-adamw-4.2.1", params, lr=1e-3, weight_decay=0.0)) is HFAdamW
    plain = build_optimizer("torch-adamw", params, lr=2e-3, weight_decay=0.01)
    assert type(plain) is torch.optim.AdamW
    assert (plain.defaults["lr"], plain.defaults["weight_decay"], plain.defaults["eps"]) == (2e-3, 0.01, 1e-8)
    assert not plain.defaults["fused"]  # fused only when asked (build_optimization asks on CUDA)
    assert build_optimizer("torch-adamw", params, lr=2e-3, weight_decay=0.01, fused=True).defaults["fused"] is True
    with pytest.raises(ValueError, match=r"^unknown optimizer 'sgd'$"):
        build_optimizer("sgd", params, lr=1e-3, weight_decay=0.0)


def test_schedule_factors_at_their_edges():
    """Hand values where the guards of the schedule formulas matter: one decay step after warm-up, no warm-up."""
    from sentrepro.training.optim import build_schedule, constant_schedule_factor, linear_schedule, linear_schedule_factor

    # 3 steps, 2 of warm-up: 0, 1/2, then the single decay step from 1 to 0
    assert [linear_schedule_factor(k, 3, 2) for k in range(4)] == [0.0, 0.5, 1.0, 0.0]
    assert constant_schedule_factor(0) == 1.0 and constant_schedule_factor(0, 0) == 1.0
    assert [constant_schedule_factor(k, 2) for k in range(4)] == [0.0, 0.5, 1.0, 1.0]
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    assert linear_schedule(optimizer, 10).get_last_lr() == [0.5]  # no warm-up unless asked
    assert build_schedule("linear", optimizer, 10).get_last_lr() == [0.5]
    assert build_schedule("constant", optimizer, 10).get_last_lr() == [0.5]
    with pytest.raises(ValueError, match=r"^unknown schedule 'cosine' \(known: linear, constant\)$"):
        build_schedule("cosine", optimizer, 10)
