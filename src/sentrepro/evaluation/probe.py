"""The SentEval probe: a logistic-regression classifier trained on frozen sentence embeddings.

This re-implements the classifier of SentEval's ``tools/classifier.py`` (``MLP`` with ``nhid=0``) as used by
SimCSE, PromptBERT and ConPVP for the transfer tasks, so that the numbers are comparable without SentEval and
without a hard CUDA requirement. Behaviour kept from SentEval, on purpose:

* The model is one ``nn.Linear(H, C)`` (multinomial logistic regression) trained with mean cross-entropy.
  SentEval sets ``loss_fn.size_average = False`` after construction, which PyTorch ≥ 0.4.1 ignores, so the
  loss it really optimised is the mean; we use the mean.
* L2 is coupled weight decay (``grad += l2 * param`` before the Adam/RMSprop step, what torch's ``weight_decay``
  does; not AdamW). Adam uses lr 1e-3 and RMSprop lr 1e-2 (the torch defaults SentEval relied on; written out
  here so a torch default change cannot move the numbers).
* One "epoch" is ``epoch_size`` passes over the training data, each pass in a fresh random order. After each
  epoch the accuracy on the validation data is measured; the weights with the best accuracy so far (strictly
  better) are kept. The non-improvement counter is **cumulative, never reset** on improvement, and training
  stops at the epoch where it is already ``tenacity`` (i.e. at the (tenacity+1)-th non-improving epoch), or once
  more than ``max_epoch`` passes have been made (SentEval's ``while nepoch <= max_epoch`` loop).
* Randomness: every fit seeds its own ``np.random.RandomState(seed)`` – the same stream SentEval drew from after
  ``np.random.seed(seed)`` – for the 5 % validation hold-out and the per-pass shuffles, and seeds torch before
  building the layer on the CPU (so the initial weights equal SentEval's for the same seed). Global RNG state is
  restored afterwards. Same inputs + same seed give the same result on the CPU.

Speed: SentEval trains the probes of a fold grid one after another; they are independent, so
:func:`fit_probe_jobs` trains them together (:class:`ProbeJob`: one SentEval ``fit`` with its rows and L2 values).
Jobs with the same number of batches per pass step in lockstep, as one stack of
probes (:class:`_MemberStack`); each probe has its own batches (its job's permutation), its own L2 (added to its
gradient by the call torch's optimiser makes for ``weight_decay``, as SentEval sets it), its own Adam state and its
own early stopping, and stopped probes leave the stack (or stay as unscored ghosts while that spares a copy of
their batch, see :class:`_MemberStack`). Each step gathers the live jobs' batches once
(one ``index_select``: a job's probes of every L2 value read the same rows). The linear probe's gradients are
written out with the kernels autograd would run (:func:`_cross_entropy_logit_gradient`); the matrix products run
per L2 value with ``nn.Linear``'s own shapes, everything element-wise once over the stack. The result is
SentEval's arithmetic bit for bit (``torch.equal`` against plain fits, ``tests/test_eval_probe.py``): a padded
last batch adds exact zeros to the weight gradient (``gradᵀ @ x``, the product ``nn.Linear``'s backward forms),
its bias gradient is summed over the probe's real rows only, and a short batch goes through ``addmm`` on its
real rows as ``nn.Linear`` does (:func:`_affine`). The fixed-epoch training of the few-shot suite
(:func:`fit_probe_grid_fixed_epochs`: no validation, no early stopping, so no lockstep bookkeeping to share)
is the second engine, :class:`StackedProbe`: the members of an L2 grid as one stack, each L2 added to its
member's gradient. Moving it onto the lockstep engine would apply L2 through the optimiser's ``weight_decay``
instead, a different rounding, and change the few-shot numbers the tables and BENCHMARKS.md already hold;
``tests/test_eval_probe.py::test_fixed_epoch_training_runs_exactly_that_long_and_learns`` and
``tests/test_eval_suites.py::test_fewshot_encodes_only_the_sampled_rows_and_matches_full_encoding`` run it. Model selection
over the L2 grid on a list of (train, validation) folds is here as well (:func:`search_l2_on_folds`,
:func:`search_l2_on_fold_sets`), because every protocol (transfer, few-shot, WOS) uses it.

The classifier runs on any torch device (``device="cpu"`` or ``"cuda"``); SentEval itself required CUDA.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

SENTEVAL_SEED = 1111
SENTEVAL_L2_GRID = (1e-5, 1e-4, 1e-3, 1e-2)

# The profiler scope of the early-stopping evaluation after each epoch (benchmarks/probe_profile.py reads it).
EVALUATION_SCOPE = "probe.early_stopping_evaluation"

# SentEval's optimizer strings resolved to the torch defaults of the time (adam lr 1e-3, rmsprop lr 1e-2).
OPTIMIZER_LEARNING_RATES = {"adam": 1e-3, "rmsprop": 1e-2}


@dataclass(frozen=True)
class ProbeConfig:
    """Classifier settings of one SentEval mode (``params['classifier']`` plus ``kfold``)."""

    kfold: int
    optimizer: str
    batch_size: int
    tenacity: int
    epoch_size: int
    max_epoch: int = 200
    l2_grid: tuple[float, ...] = SENTEVAL_L2_GRID
    validation_fraction: float = 0.05
    hidden_dim: int = 0
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZER_LEARNING_RATES:
            raise ValueError(
                f"ProbeConfig.optimizer={self.optimizer!r}; expected one of {sorted(OPTIMIZER_LEARNING_RATES)}"
            )
        for name in ("kfold", "batch_size", "epoch_size", "max_epoch"):
            if getattr(self, name) < 1:
                raise ValueError(f"ProbeConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.kfold < 2:
            raise ValueError(f"ProbeConfig.kfold must be >= 2, got {self.kfold}")
        if self.tenacity < 0 or self.hidden_dim < 0:
            raise ValueError("ProbeConfig.tenacity and ProbeConfig.hidden_dim must be >= 0")
        if not self.l2_grid:
            raise ValueError("ProbeConfig.l2_grid must not be empty")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(f"ProbeConfig.validation_fraction must be in (0, 1), got {self.validation_fraction}")

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["l2_grid"] = list(self.l2_grid)
        return payload


# SimCSE evaluation.py: 'test' = SentEval "full config" (paper tables); 'fasttest' = the fast config.
PROBE_MODES: dict[str, ProbeConfig] = {
    "test": ProbeConfig(kfold=10, optimizer="adam", batch_size=64, tenacity=5, epoch_size=4),
    "fasttest": ProbeConfig(kfold=5, optimizer="rmsprop", batch_size=128, tenacity=3, epoch_size=2),
}


def resolve_mode(mode: str | ProbeConfig) -> tuple[str, ProbeConfig]:
    """Return ``(mode name, config)``; a ``ProbeConfig`` passed directly is named ``"custom"``."""
    if isinstance(mode, ProbeConfig):
        return "custom", mode
    if mode not in PROBE_MODES:
        raise ValueError(f"unknown probe mode {mode!r}; known modes: {sorted(PROBE_MODES)}")
    return mode, PROBE_MODES[mode]


# ----------------------------------------------------------------------------------------------------------
# Input checking


def as_features(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float32 (N, H) array; reject other shapes and non-finite values."""
    array = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (N, H), got shape {array.shape}")
    if not np.isfinite(array).all():
        bad_row = int(np.argwhere(~np.isfinite(array))[0, 0])
        raise ValueError(f"{name} contains NaN or inf (first at row {bad_row})")
    return array


def as_labels(y: np.ndarray, n_rows: int, name: str = "y") -> np.ndarray:
    """Return ``y`` as a 1-D int64 array of length ``n_rows``."""
    array = np.asarray(y)
    if array.ndim != 1 or array.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-D with {n_rows} entries (one per embedding row), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integer labels, got dtype {array.dtype}")
    return array.astype(np.int64)


def encode_labels(*label_arrays: np.ndarray) -> tuple[list[np.ndarray], int]:
    """Map the labels of several splits jointly onto 0..C-1 (sorted order); return the arrays and C."""
    classes = np.unique(np.concatenate([np.asarray(a) for a in label_arrays]))
    encoded = [np.searchsorted(classes, np.asarray(a)).astype(np.int64) for a in label_arrays]
    return encoded, int(classes.shape[0])


# ----------------------------------------------------------------------------------------------------------
# The model and its seeded construction


@contextlib.contextmanager
def seeded_torch(seed: int, device: torch.device) -> Iterator[None]:
    """Seed torch's CPU generator (and the CUDA one of ``device``) inside the block; restore them afterwards."""
    cuda_devices = []
    if device.type == "cuda":
        cuda_devices = [device.index if device.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=cuda_devices):
        torch.default_generator.manual_seed(seed)
        for index in cuda_devices:
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
        yield


def build_probe(input_dim: int, n_classes: int, hidden_dim: int, dropout: float) -> nn.Sequential:
    """SentEval's classifier: ``Linear(H, C)``; with ``hidden_dim > 0`` Linear → Dropout → Sigmoid → Linear.

    Built on the CPU with torch's default init; call inside :func:`seeded_torch` for reproducible weights.
    """
    if hidden_dim == 0:
        return nn.Sequential(nn.Linear(input_dim, n_classes))
    return nn.Sequential(
        nn.Linear(input_dim, hidden_dim), nn.Dropout(p=dropout), nn.Sigmoid(), nn.Linear(hidden_dim, n_classes)
    )


class StackedProbe(nn.Module):
    """G copies of one probe, each with its own parameters, evaluated side by side on the same batch.

    SentEval trains the probes of an L2 grid one after another, each re-seeded with the same seed, so they all
    start from the same weights and see the same sequence of batches; only their L2 differs. Training them as
    one stack with the sum of their per-member mean losses is that same computation (the members share no
    parameter, and Adam/RMSprop update every element independently), done in a quarter of the steps.
    Shapes: input (B, H) -> logits (G, B, C); layer i has weights (G, out_i, in_i) and biases (G, out_i).
    """

    def __init__(self, template: nn.Sequential, n_members: int) -> None:
        super().__init__()
        linears = [layer for layer in template if isinstance(layer, nn.Linear)]
        dropouts = [layer.p for layer in template if isinstance(layer, nn.Dropout)]
        self.weights = nn.ParameterList(
            nn.Parameter(layer.weight.detach().unsqueeze(0).repeat(n_members, 1, 1)) for layer in linears
        )
        self.biases = nn.ParameterList(
            nn.Parameter(layer.bias.detach().unsqueeze(0).repeat(n_members, 1)) for layer in linears
        )
        self.dropout = nn.Dropout(p=dropouts[0] if dropouts else 0.0)
        self.n_members = n_members

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = features  # (B, H); broadcast against (G, H, out) in the first matmul
        for depth, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            if depth > 0:
                hidden = _sigmoid_per_member(self.dropout(hidden), None)
            hidden = torch.matmul(hidden, weight.transpose(1, 2)) + bias.unsqueeze(1)  # (G, B, out)
        return hidden

    def member_state(self, member: int) -> list[torch.Tensor]:
        """Detached copies of member ``member``'s weights and biases, layer by layer."""
        state = []
        for weight, bias in zip(self.weights, self.biases):
            state += [weight[member].detach().clone(), bias[member].detach().clone()]
        return state


def probe_from_state(state: list[torch.Tensor], hidden_dim: int, dropout: float) -> nn.Sequential:
    """A plain ``nn.Sequential`` probe holding one member's weights (see :meth:`StackedProbe.member_state`)."""
    n_classes, input_dim = state[-2].shape[0], state[0].shape[1]
    with torch.random.fork_rng(devices=[]):  # the throw-away default init must not advance the global RNG
        model = build_probe(input_dim, n_classes, hidden_dim, dropout).to(state[0].device)
    linears = [layer for layer in model if isinstance(layer, nn.Linear)]
    with torch.no_grad():
        for layer, weight, bias in zip(linears, state[0::2], state[1::2]):
            layer.weight.copy_(weight)
            layer.bias.copy_(bias)
    return model.eval()


def make_optimizer(name: str, params, foreach: bool | None = None) -> torch.optim.Optimizer:
    """SentEval's optimiser (Adam lr 1e-3 or RMSprop lr 1e-2) over ``params``, without weight decay (the callers add
    each probe's L2 to its gradients). ``foreach=True`` runs each update as one call per group instead of one per tensor: on the
    CPU torch loops the same per-tensor kernels in C++, so every element is updated by the same operations."""
    learning_rate = OPTIMIZER_LEARNING_RATES[name]
    if name == "adam":
        return torch.optim.Adam(params, lr=learning_rate, foreach=foreach)
    return torch.optim.RMSprop(params, lr=learning_rate, foreach=foreach)


# ----------------------------------------------------------------------------------------------------------
# A trained probe


@dataclass
class TrainedProbe:
    """A fitted probe plus what its training run saw.

    ``l2`` is its weight decay, ``best_val_accuracy`` a fraction in [0, 1] (``None`` for fixed-epoch training),
    ``best_epoch`` the 1-based epoch whose weights were kept, ``epochs_run`` how many epochs were trained.
    """

    model: nn.Module
    device: torch.device
    batch_size: int
    l2: float
    best_val_accuracy: float | None
    best_epoch: int
    epochs_run: int

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Class index (argmax of the logits) for every row of ``X``; int64 array of shape (N,)."""
        features = torch.from_numpy(as_features(X)).to(self.device)
        self.model.eval()
        with torch.no_grad():
            chunks = [
                self.model(features[start : start + self.batch_size]).argmax(dim=-1)
                for start in range(0, len(features), self.batch_size)
            ]
        return torch.cat(chunks).cpu().numpy()

    def accuracy(self, X: np.ndarray, y: np.ndarray) -> float:
        """Fraction of rows of ``X`` whose predicted class equals ``y``."""
        labels = as_labels(y, len(X))
        return float(np.mean(self.predict(X) == labels))


# ----------------------------------------------------------------------------------------------------------
# Training


def _train_passes(
    stack: StackedProbe,
    optimizer: torch.optim.Optimizer,
    decay: torch.Tensor,
    features: torch.Tensor,
    labels: torch.Tensor,
    n_passes: int,
    batch_size: int,
    rng: np.random.RandomState,
) -> None:
    """``n_passes`` shuffled mini-batch passes (one SentEval "epoch") of cross-entropy + coupled L2.

    ``decay`` (G,) holds each member's L2; ``grad += l2 * param`` is what torch's ``weight_decay`` does.
    """
    stack.train()
    n_members = stack.n_members
    for _ in range(n_passes):
        order = torch.from_numpy(rng.permutation(len(features))).to(features.device)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            logits = stack(features.index_select(0, batch))  # (G, B, C)
            targets = labels.index_select(0, batch).repeat(n_members)  # (G*B,), member-major like the logits
            per_member = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets, reduction="none")
            loss = per_member.view(n_members, -1).mean(dim=1).sum()
            optimizer.zero_grad()
            loss.backward()
            with torch.no_grad():
                for parameter in stack.parameters():
                    parameter.grad.add_(parameter * decay.view(-1, *([1] * (parameter.dim() - 1))))
            optimizer.step()


def _holdout_split(n_rows: int, fraction: float, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """SentEval's ``validation_split``: a random permutation, the first ``int(fraction * N)`` rows validate."""
    permutation = rng.permutation(n_rows)
    n_validation = int(fraction * n_rows)
    if n_validation == 0:
        raise ValueError(
            f"validation_fraction={fraction} of {n_rows} training rows holds out no row; "
            "pass explicit validation data or a larger training set"
        )
    return permutation[n_validation:], permutation[:n_validation]


@dataclass(frozen=True)
class ProbeJob:
    """One SentEval ``fit`` call, for every L2 value of ``l2_values``: train on rows ``train_rows`` of ``X``;
    early-stop on rows ``validation_rows`` (``None``: SentEval's ``validation_split``, a random
    ``validation_fraction`` of the training rows drawn from the fit's own seeded stream)."""

    train_rows: np.ndarray
    validation_rows: np.ndarray | None
    l2_values: tuple[float, ...]


def fit_probe_jobs(
    X: np.ndarray,
    y: np.ndarray,
    jobs: Sequence[ProbeJob],
    *,
    n_classes: int,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> list[list[TrainedProbe]]:
    """Train every probe of every job (SentEval's early-stopping loop); ``result[j][i]`` is job j's i-th L2 value.

    Each probe gets exactly what a separate SentEval fit with ``seed`` would get: the same initial weights (torch
    seeded with ``seed`` before the layer is built), its job's own ``RandomState(seed)`` for the hold-out and the
    per-pass permutations, its own L2 as the optimiser's ``weight_decay``, its own Adam state and its own early
    stopping. The probes are merely computed together: jobs with the same number of batches per pass step in
    lockstep (:func:`_fit_lockstep`), which makes a fold grid (k folds x the L2 grid) one training loop.
    Labels must lie in 0..n_classes-1.
    """
    if config.hidden_dim > 0 and config.dropout > 0 and sum(len(job.l2_values) for job in jobs) > 1:
        # Dropout masks would be drawn for the whole stack at once; fit separately to keep each probe's stream.
        return [
            [fit_probe_jobs(X, y, [ProbeJob(job.train_rows, job.validation_rows, (l2,))], n_classes=n_classes,
                            config=config, seed=seed, device=device)[0][0] for l2 in job.l2_values]
            for job in jobs
        ]
    device = torch.device(device)
    X = as_features(X)
    y = _checked_labels(y, len(X), n_classes)
    prepared = [_prepare_job(job, config, seed, len(X)) for job in jobs]
    features, labels = _to_device(X, y, device)
    results: list[list[TrainedProbe]] = [[] for _ in jobs]
    with seeded_torch(seed, device):
        template = build_probe(X.shape[1], n_classes, config.hidden_dim, config.dropout)
        lockstep: dict[int, list[int]] = {}
        for index, job in enumerate(prepared):
            lockstep.setdefault(-(-len(job.train_rows) // config.batch_size), []).append(index)
        for indices in lockstep.values():
            for index, probes in zip(indices, _fit_lockstep([prepared[i] for i in indices], template, features,
                                                            labels, config, device)):
                results[index] = probes
    return results


@dataclass
class _PreparedJob:
    train_rows: np.ndarray
    validation_rows: np.ndarray
    l2_values: tuple[float, ...]
    rng: np.random.RandomState


def _prepare_job(job: ProbeJob, config: ProbeConfig, seed: int, n_rows: int) -> _PreparedJob:
    """The job's own seeded stream, its hold-out drawn first when it has no validation rows (SentEval's order)."""
    rng = np.random.RandomState(seed)
    train_rows = np.asarray(job.train_rows, dtype=np.int64)
    if len(train_rows) == 0 or train_rows.min() < 0 or train_rows.max() >= n_rows:
        raise ValueError(f"ProbeJob.train_rows must be non-empty row indices into the {n_rows} rows of X")
    if not job.l2_values:
        raise ValueError("ProbeJob.l2_values must not be empty")
    if job.validation_rows is None:
        kept, held_out = _holdout_split(len(train_rows), config.validation_fraction, rng)
        return _PreparedJob(train_rows[kept], train_rows[held_out], tuple(job.l2_values), rng)
    validation_rows = np.asarray(job.validation_rows, dtype=np.int64)
    if len(validation_rows) == 0:
        raise ValueError("ProbeJob.validation_rows must not be empty")
    return _PreparedJob(train_rows, validation_rows, tuple(job.l2_values), rng)


def _gather(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``table[rows]`` for a (J, B) matrix of row indices -> (J, B, ...): one ``index_select`` (a row copy, four
    to five times faster on the CPU than advanced indexing's element-wise kernel; the same values)."""
    return table.index_select(0, rows.reshape(-1)).view(*rows.shape, *table.shape[1:])


def _padded_rows(row_sets: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Row-index lists of unequal length as a (J, N_max) matrix padded with row 0, and its 0/1 float mask."""
    width = max(len(rows) for rows in row_sets)
    matrix = np.zeros((len(row_sets), width), dtype=np.int64)
    mask = np.zeros((len(row_sets), width), dtype=np.float32)
    for index, rows in enumerate(row_sets):
        matrix[index, : len(rows)] = rows
        mask[index, : len(rows)] = 1.0
    return matrix, mask


def _affine(features: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, lengths: tuple[int, ...] | None
            ) -> torch.Tensor:
    """``bias + x @ Wᵀ`` for P members at once, (P, B, in) -> (P, B, out), with ``nn.Linear``'s bits.

    Rows past a member's ``length`` are padding (``lengths=None``: every row is real). ``baddbmm`` gives a member
    whose batch fills the width ``addmm``'s values on that batch row for row (measured). A member with a shorter
    batch (a pass's last one) is computed by ``addmm`` on its real rows alone, as ``nn.Linear`` computes it: MKL
    picks its kernel by the number of rows, so a row's value inside a wider product may round differently (on one
    CPU only for one row, on another for every batch under 16 rows).
    """
    out = torch.baddbmm(bias.unsqueeze(1), features, weight.transpose(1, 2))
    width = features.shape[1]
    for position, length in enumerate(lengths or ()):
        if length < width:
            out[position, :length] = torch.addmm(bias[position], features[position, :length], weight[position].t())
    return out


def _bias_gradient(grad: torch.Tensor, lengths: tuple[int, ...] | None) -> torch.Tensor:
    """(P, B, out) -> (P, out): each member's sum over its own real rows (``lengths=None``: all B), as
    ``nn.Linear``'s backward sums its batch (a sum over the zero-padded width rounds differently for some lengths)."""
    width = grad.shape[1]
    if lengths is None or all(length == width for length in lengths):
        return grad.sum(dim=1)
    grad_bias = grad.new_empty(grad.shape[0], grad.shape[2])
    for length in set(lengths):
        members = torch.tensor([p for p, n in enumerate(lengths) if n == length], device=grad.device)
        grad_bias[members] = grad.index_select(0, members)[:, :length].sum(dim=1)
    return grad_bias


class _StackedAffine(torch.autograd.Function):
    """:func:`_affine` under autograd (the MLP probe): its backward gives the weight gradient as ``addmm``'s
    backward does (:func:`_weight_gradient`; padded rows add exact zeros) and the bias gradient by
    :func:`_bias_gradient`."""

    @staticmethod
    def forward(ctx, features, weight, bias, lengths):
        ctx.save_for_backward(features, weight)
        ctx.lengths = lengths
        return _affine(features, weight, bias, lengths)

    @staticmethod
    def backward(ctx, grad):
        features, weight = ctx.saved_tensors
        grad_features = grad.bmm(weight) if ctx.needs_input_grad[0] else None
        return grad_features, _weight_gradient(features, grad), _bias_gradient(grad, ctx.lengths), None


def _cross_entropy_logit_gradient(logits: torch.Tensor, labels: torch.Tensor, row_weights: torch.Tensor
                                  ) -> torch.Tensor:
    """Gradient of each member's mean cross-entropy over its real rows with respect to its logits, without autograd.

    Shapes: logits (M, B, C), labels (M, B), row_weights (M, B) with 1 for a real row and 0 for padding ->
    (M, B, C). Every line is the kernel autograd runs backward through
    ``F.cross_entropy(logits, labels, reduction="none")`` weighted by ``row_weights / row_weights.sum`` (the mean
    SentEval's loss takes): ``1 / n`` as ``DivBackward`` forms it, then ``nll_loss_backward`` and
    ``_log_softmax_backward_data`` themselves. So the bits are autograd's, without building and walking a graph.
    """
    n_members, width, n_classes = logits.shape
    log_probs = torch.log_softmax(logits.reshape(-1, n_classes), dim=1)  # (M*B, C), what cross_entropy computes
    counts = row_weights.sum(dim=1)  # (M,)
    row_grad = (torch.ones_like(counts).div(counts).unsqueeze(1) * row_weights).reshape(-1)  # (M*B,)
    nll_grad = torch.ops.aten.nll_loss_backward(row_grad, log_probs, labels.reshape(-1), None, 0, -100,
                                                torch.zeros((), device=log_probs.device))  # 0: reduction "none"
    grad = torch.ops.aten._log_softmax_backward_data(nll_grad, log_probs, 1, log_probs.dtype)  # (M*B, C)
    return grad.view(n_members, width, n_classes)


def _weight_gradient(features: torch.Tensor, grad: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Per member ``gradᵀ @ features``: (P, B, in), (P, B, out) -> (P, out, in), the call ``nn.Linear`` makes
    (written into ``out`` when given: a slice of the stack's gradient).

    ``nn.Linear`` computes ``addmm(bias, x, weight.t())``; autograd's ``mm_mat2_backward`` sees that
    ``weight.t()`` is column-major and forms its gradient as ``(gradᵀ @ x)ᵀ``, so ``weight.grad`` is
    ``gradᵀ @ x``: this product, one ``mm`` per member. (The other orientation, ``(xᵀ @ grad)ᵀ``, sums the same
    products in another order for six classes, measured on MKL, and is five times slower for two.)
    """
    return torch.bmm(grad.transpose(1, 2), features, out=out)


def _sigmoid_per_member(hidden: torch.Tensor, lengths: tuple[int, ...] | None) -> torch.Tensor:
    """The sigmoid of each member's real rows computed on those rows alone, (M, B, H) -> (M, B, H), as
    ``nn.Sigmoid`` computes it on that member's batch (``lengths=None``: every row is real; padding rows pass
    unchanged, they carry weight 0 in the loss). ATen's vectorised sigmoid takes a tensor's last elements past a
    multiple of the vector width by a scalar path that rounds differently on AVX-512 (measured on (3, 11, 8) against
    its member (1, 11, 8)), so one sigmoid over the stack gives a member other bits than its fit alone."""
    if lengths is None:
        return torch.stack([torch.sigmoid(member) for member in hidden])
    rows = [torch.cat([torch.sigmoid(member[:n]), member[n:]]) for member, n in zip(hidden, lengths)]
    return torch.stack(rows)  # (M, B, H)


def _dropout_real_rows(hidden: torch.Tensor, p: float, training: bool, lengths: tuple[int, ...] | None) -> torch.Tensor:
    """Dropout on each row's real rows of its batch only, (M, B, H) -> (M, B, H): SentEval draws a mask for the rows
    a batch has, so a short last batch draws fewer numbers; masks drawn over the padding too would shift every later
    mask of the torch stream and part a probe from its SentEval fit (a one-probe stack, as dropout needs, is then
    SentEval's stream exactly). Padding rows pass unchanged: they carry weight 0 in the loss."""
    if not training or p == 0 or lengths is None:
        return F.dropout(hidden, p=p, training=training)
    rows = [torch.cat([F.dropout(member[:n], p=p, training=True), member[n:]]) for member, n in zip(hidden, lengths)]
    return torch.stack(rows)  # (M, B, H)


class _MemberStack:
    """Every probe of a lockstep group as one stack: per layer one weight tensor (M, out, in) and one bias tensor
    (M, out), the rows ordered by L2 value so that each L2 value's rows are one contiguous slice.

    One optimiser over the stacked tensors, with ``weight_decay`` 0: each slice's L2 is added to its gradient by the
    ``add(param, alpha=l2)`` call torch's Adam/RMSprop make for a group's ``weight_decay`` (SentEval sets the L2 that
    way), so every element sees the same operations as in a separate fit. A probe's parameters, Adam moments and
    step count are its own row of these tensors. The element-wise work of a step (cross-entropy and its gradient,
    bias gradient, optimiser) runs once over the whole stack; only the matrix products run per slice, because
    each must have ``nn.Linear``'s shapes to have its bits.

    A slice that holds a row for every live job, in job order, reads the step's gathered batch as it is; any
    other slice needs its own copy of its jobs' rows, which costs about as much as training a row. So a probe that
    stops stays in its slice as a *ghost* (trained on, never scored again: its kept weights are already copied
    out) while its job still trains other probes and at least half of the slice's rows are live; otherwise the
    stopped rows are cut out. Rows are independent, so a ghost changes no live probe's numbers.
    """

    def __init__(self, members: list[tuple[int, int]], l2_values: list[float], alive: list[bool],
                 layers: list[tuple[torch.Tensor, torch.Tensor]], optimizer: str) -> None:
        self.members, self.l2_values, self.alive = members, l2_values, alive  # per row: (job, L2 slot), L2, scored?
        self.weights = [nn.Parameter(weight) for weight, _ in layers]  # (M, out, in)
        self.biases = [nn.Parameter(bias) for _, bias in layers]  # (M, out)
        self.slices: list[tuple[float, int, int]] = []  # (L2, start, stop): the rows with that L2
        for index, l2 in enumerate(l2_values):
            if self.slices and self.slices[-1][0] == l2:
                self.slices[-1] = (l2, self.slices[-1][1], index + 1)
            else:
                self.slices.append((l2, index, index + 1))
        self.optimizer_name = optimizer
        self.optimizer = make_optimizer(optimizer, self.parameters(), foreach=True)
        self.linear = len(layers) == 1
        self.live_jobs = sorted({job for (job, _), live in zip(members, alive) if live})
        self.locate()

    def parameters(self) -> list[nn.Parameter]:
        return [tensor for pair in zip(self.weights, self.biases) for tensor in pair]

    def locate(self) -> None:
        """Find the rows' jobs among :attr:`live_jobs` (the jobs of the gathered batches, in order); a stack's live
        jobs are fixed for its life, so this runs once, when it is built."""
        position = {job: index for index, job in enumerate(self.live_jobs)}
        self.positions = [position[job] for job, _ in self.members]
        device = self.weights[0].device
        self.member_rows = torch.tensor(self.positions, dtype=torch.long, device=device)  # (M,)
        everyone = list(range(len(self.live_jobs)))
        self.slice_rows = [None if self.positions[start:stop] == everyone
                           else torch.tensor(self.positions[start:stop], dtype=torch.long, device=device)
                           for _, start, stop in self.slices]

    def _inputs(self, batch: torch.Tensor) -> list[torch.Tensor]:
        """Each slice's rows of a batch stacked over the live jobs: (L, B, H) -> [(P, B, H)], a view when the slice
        holds every live job in order."""
        return [batch if rows is None else batch.index_select(0, rows) for rows in self.slice_rows]

    def _forward(self, inputs: list[torch.Tensor], lengths: tuple[int, ...] | None, dropout: float, training: bool,
                 layers: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> torch.Tensor:
        """Logits (M, B, C) of every row on its job's batch: SentEval's Linear [-> Dropout -> Sigmoid -> Linear] per
        slice; ``lengths[m]`` is row m's number of real rows of the batch (``None``: all of them)."""
        layers = layers or [(w.detach(), b.detach()) for w, b in zip(self.weights, self.biases)]
        affine = _StackedAffine.apply if training and not self.linear else _affine
        chunks = []
        for (_, start, stop), hidden in zip(self.slices, inputs):
            for depth, (weight, bias) in enumerate(layers):
                if depth > 0:
                    own = lengths and lengths[start:stop]
                    hidden = _sigmoid_per_member(_dropout_real_rows(hidden, dropout, training, own), own)
                hidden = affine(hidden, weight[start:stop], bias[start:stop], lengths and lengths[start:stop])
            chunks.append(hidden)
        return chunks[0] if len(chunks) == 1 else torch.cat(chunks)

    def train_step(self, batch: torch.Tensor, batch_labels: torch.Tensor, batch_mask: torch.Tensor,
                   lengths: tuple[int, ...] | None, dropout: float) -> None:
        """One optimiser step of every row on its job's batch ((L, B, H) rows, (L, B) labels, (L, B) 0/1 mask of the
        real rows): the gradient of its mean cross-entropy over its real rows, its L2, its Adam/RMSprop update."""
        inputs = self._inputs(batch)
        labels = batch_labels.index_select(0, self.member_rows)  # (M, B)
        row_weights = batch_mask.index_select(0, self.member_rows)  # (M, B)
        if self.linear:
            grads = self._linear_gradients(inputs, labels, row_weights, lengths)
        else:
            grads = self._autograd_gradients(inputs, labels, row_weights, lengths, dropout)
        with torch.no_grad():
            for l2, start, stop in self.slices:
                if l2 != 0:  # what the optimiser does for a group's weight_decay, slice by slice
                    for grad, param in zip(grads, self.parameters()):
                        grad[start:stop].add_(param[start:stop], alpha=l2)
        for param, grad in zip(self.parameters(), grads):
            param.grad = grad
        self.optimizer.step()

    def _linear_gradients(self, inputs, labels, row_weights, lengths) -> list[torch.Tensor]:
        """The linear probe's gradients without autograd: :func:`_cross_entropy_logit_gradient`, then
        ``nn.Linear``'s backward per slice (:func:`_weight_gradient`) and over the stack (:func:`_bias_gradient`)."""
        logits = self._forward(inputs, lengths, 0.0, True)  # (M, B, C)
        grad_logits = _cross_entropy_logit_gradient(logits, labels, row_weights)  # (M, B, C)
        weight = self.weights[0]
        grad_weight = weight.new_empty(weight.shape)  # (M, C, H)
        for (_, start, stop), features in zip(self.slices, inputs):
            _weight_gradient(features, grad_logits[start:stop], out=grad_weight[start:stop])
        return [grad_weight, _bias_gradient(grad_logits, lengths)]

    def _autograd_gradients(self, inputs, labels, row_weights, lengths, dropout) -> list[torch.Tensor]:
        """The MLP probe's gradients by autograd, on leaf copies of the stacked tensors."""
        leaves = [param.detach().clone().requires_grad_() for param in self.parameters()]
        logits = self._forward(inputs, lengths, dropout, True, list(zip(leaves[0::2], leaves[1::2])))
        per_row = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
        # each row's mean over its own batch rows: padding gets weight 0, the rest 1/length (as SentEval)
        loss = ((per_row.view(row_weights.shape) * row_weights).sum(dim=1) / row_weights.sum(dim=1)).sum()
        return list(torch.autograd.grad(loss, leaves))

    @torch.no_grad()
    def predict(self, batch: torch.Tensor, lengths: tuple[int, ...] | None, dropout: float) -> torch.Tensor:
        """Predicted class of every row for its job's rows of ``batch`` (L, B, H) -> (M, B)."""
        return self._forward(self._inputs(batch), lengths, dropout, False).argmax(dim=-1)

    def member_state(self, index: int) -> list[torch.Tensor]:
        """Detached copies of row ``index``'s weights and biases, layer by layer."""
        state = []
        for weight, bias in zip(self.weights, self.biases):
            state += [weight[index].detach().clone(), bias[index].detach().clone()]
        return state

    def without(self, stopped: set) -> "_MemberStack | None":
        """The stack after the ``stopped`` probes stop: each slice keeps them as ghosts while it stays whole (a row
        for every live job, at least half of them live), else drops every stopped row; the jobs with no live probe
        left drop out. Every kept row's parameters and optimiser state are carried over unchanged; ``None`` when no
        probe is left."""
        alive = [live and member not in stopped for member, live in zip(self.members, self.alive)]
        live_jobs = {job for (job, _), live in zip(self.members, alive) if live}
        if not live_jobs:
            return None
        keep = []
        for _, start, stop in self.slices:
            rows = [index for index in range(start, stop) if self.members[index][0] in live_jobs]
            n_live = sum(alive[index] for index in rows)
            whole = [self.members[index][0] for index in rows] == sorted(live_jobs)  # a slice's rows are in job order
            keep += rows if whole and 2 * n_live >= len(rows) else [index for index in rows if alive[index]]
        index = torch.tensor(keep, dtype=torch.long, device=self.weights[0].device)
        layers = [(w.detach().index_select(0, index), b.detach().index_select(0, index))
                  for w, b in zip(self.weights, self.biases)]
        kept = _MemberStack([self.members[i] for i in keep], [self.l2_values[i] for i in keep],
                            [alive[i] for i in keep], layers, self.optimizer_name)
        for old, new in zip(self.parameters(), kept.parameters()):
            state = self.optimizer.state.get(old, {})
            if state:
                kept.optimizer.state[new] = {key: value.index_select(0, index)
                                             if torch.is_tensor(value) and value.dim() > 0 else value
                                             for key, value in state.items()}
        return kept


def _fit_lockstep(
    jobs: list[_PreparedJob],
    template: nn.Sequential,
    features: torch.Tensor,
    labels: torch.Tensor,
    config: ProbeConfig,
    device: torch.device,
) -> list[list[TrainedProbe]]:
    """Train the probes of jobs with the same number of batches per pass side by side (see :func:`fit_probe_jobs`).

    Per optimiser step every live job takes its own next batch (its last batch of a pass may be shorter: the rows
    past its end are masked out of its mean loss, so they add exact zeros to its gradients). A member's
    parameters, Adam moments and step count are its own rows of the stack's tensors (:class:`_MemberStack`);
    members that have stopped are cut out of the stack with their optimiser state, or kept as unscored ghosts while
    that spares a copy of their job's batch (:meth:`_MemberStack.without`); jobs with no live member stop drawing
    permutations.
    """
    batch_size = config.batch_size
    n_batches = -(-len(jobs[0].train_rows) // batch_size)
    linears = [layer for layer in template if isinstance(layer, nn.Linear)]
    members = [(job, slot) for job, prepared in enumerate(jobs) for slot in range(len(prepared.l2_values))]
    by_l2: dict[float, list[tuple[int, int]]] = {}
    for job, slot in members:
        by_l2.setdefault(float(jobs[job].l2_values[slot]), []).append((job, slot))
    members = [member for group in by_l2.values() for member in group]  # ordered by L2 value, then job
    count = len(members)
    stack: _MemberStack | None = _MemberStack(
        members, [float(jobs[job].l2_values[slot]) for job, slot in members], [True] * count,
        [(layer.weight.detach().to(device).unsqueeze(0).repeat(count, 1, 1),
          layer.bias.detach().to(device).unsqueeze(0).repeat(count, 1)) for layer in linears],
        config.optimizer)

    validation_rows, validation_mask = _padded_rows([job.validation_rows for job in jobs])
    pad = -validation_rows.shape[1] % batch_size  # score in full-width chunks of batch_size rows, padded
    validation_rows, validation_mask = np.pad(validation_rows, ((0, 0), (0, pad))), np.pad(validation_mask,
                                                                                          ((0, 0), (0, pad)))
    validation_rows_t = torch.from_numpy(validation_rows).to(device)
    validation_mask_t = torch.from_numpy(validation_mask).to(device)
    validation_counts = [len(job.validation_rows) for job in jobs]

    n_slots = {(job, slot) for job, slot in members}
    best_accuracy = {member: -1.0 for member in n_slots}
    best_epoch = {member: 0 for member in n_slots}
    best_state: dict[tuple[int, int], list[torch.Tensor]] = {}
    non_improving = {member: 0 for member in n_slots}
    epochs_run = {member: 0 for member in n_slots}
    passes_done, epoch = 0, 0
    while stack is not None and passes_done <= config.max_epoch:
        live_jobs = stack.live_jobs
        for _ in range(config.epoch_size):
            orders = [jobs[job].train_rows[jobs[job].rng.permutation(len(jobs[job].train_rows))] for job in live_jobs]
            n_train = [len(rows) for rows in orders]
            full_batches = min(n_train) // batch_size  # the steps on which every live job has a full batch
            order, mask = _padded_rows(orders)
            pad = n_batches * batch_size - order.shape[1]
            order = torch.from_numpy(np.pad(order, ((0, 0), (0, pad)))).to(device)  # (L, n_batches * B)
            mask = torch.from_numpy(np.pad(mask, ((0, 0), (0, pad)))).to(device)
            for start in range(0, n_batches * batch_size, batch_size):
                batch_rows = order[:, start : start + batch_size]  # (L, B): each live job's next batch
                batch, batch_labels = _gather(features, batch_rows), _gather(labels, batch_rows)  # (L, B, H), (L, B)
                lengths = None if start < full_batches * batch_size else tuple(
                    min(batch_size, n_train[position] - start) for position in stack.positions)
                stack.train_step(batch, batch_labels, mask[:, start : start + batch_size], lengths, config.dropout)
        passes_done += config.epoch_size
        epoch += 1
        stopped = set()
        with torch.no_grad(), torch.profiler.record_function(EVALUATION_SCOPE):
            live = torch.tensor(live_jobs, dtype=torch.long, device=device)
            rows = validation_rows_t.index_select(0, live)  # (L, V): each live job's validation rows, padded
            chunks = []
            for start in range(0, rows.shape[1], batch_size):
                batch = _gather(features, rows[:, start : start + batch_size])  # (L, B, H)
                lengths = tuple(min(batch_size, validation_counts[job] - start) for job, _ in stack.members)
                chunks.append(stack.predict(batch, lengths, config.dropout))  # (M, B)
            truth = _gather(labels, rows).index_select(0, stack.member_rows)  # (M, V)
            real = validation_mask_t.index_select(0, live).index_select(0, stack.member_rows)  # (M, V)
            correct = ((torch.cat(chunks, dim=1) == truth).float() * real).sum(dim=1).round().long().tolist()
            for index, member in enumerate(stack.members):
                if not stack.alive[index]:  # a ghost: stopped, its kept weights already copied out
                    continue
                accuracy = correct[index] / validation_counts[member[0]]
                epochs_run[member] = epoch
                if accuracy > best_accuracy[member]:
                    best_accuracy[member], best_epoch[member] = accuracy, epoch
                    best_state[member] = stack.member_state(index)
                elif non_improving[member] >= config.tenacity:
                    stopped.add(member)
                else:
                    non_improving[member] += 1
        if stopped:
            stack = stack.without(stopped)
    return [
        [TrainedProbe(probe_from_state(best_state[(job, slot)], config.hidden_dim, config.dropout), device,
                      batch_size, float(prepared.l2_values[slot]), best_accuracy[(job, slot)],
                      best_epoch[(job, slot)], epochs_run[(job, slot)])
         for slot in range(len(prepared.l2_values))]
        for job, prepared in enumerate(jobs)
    ]


def fit_probe_grid(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    l2_grid: Sequence[float],
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
    validation: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[TrainedProbe]:
    """Train one probe per L2 value with SentEval's early-stopping loop; one :class:`TrainedProbe` per L2.

    ``validation=(X_val, y_val)`` drives early stopping; without it a random ``config.validation_fraction`` of
    ``X`` is held out for that (SentEval's ``validation_split=0.05``). One job of :func:`fit_probe_jobs`.
    """
    X = as_features(X)
    train_rows = np.arange(len(X))
    validation_rows = None
    if validation is not None:
        X_val = as_features(validation[0], "X_val")
        if X_val.shape[1] != X.shape[1]:
            raise ValueError(f"X_val has {X_val.shape[1]} columns, X has {X.shape[1]}")
        y_val = _checked_labels(validation[1], len(X_val), n_classes, "y_val")
        y = np.concatenate([_checked_labels(y, len(X), n_classes), y_val])
        X = np.concatenate([X, X_val])
        validation_rows = np.arange(len(train_rows), len(X))
    job = ProbeJob(train_rows, validation_rows, tuple(l2_grid))
    return fit_probe_jobs(X, y, [job], n_classes=n_classes, config=config, seed=seed, device=device)[0]


def fit_probe(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    l2: float,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
    validation: tuple[np.ndarray, np.ndarray] | None = None,
) -> TrainedProbe:
    """Train one probe with SentEval's early-stopping loop (see :func:`fit_probe_grid`)."""
    return fit_probe_grid(
        X, y, n_classes=n_classes, l2_grid=[l2], config=config, seed=seed, device=device, validation=validation
    )[0]


def fit_probe_grid_fixed_epochs(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    l2_grid: Sequence[float],
    config: ProbeConfig,
    n_epochs: int,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> list[TrainedProbe]:
    """Train one probe per L2 on all of ``X`` for exactly ``n_epochs`` epochs (``epoch_size`` passes each).

    No validation and no early stopping: for settings without data to spare for it (few-shot).
    Initial weights and batch order are those of :func:`fit_probe_grid` with the same seed.
    """
    if n_epochs < 1:
        raise ValueError(f"n_epochs must be >= 1, got {n_epochs}")
    if config.hidden_dim > 0 and config.dropout > 0 and len(l2_grid) > 1:
        return [
            fit_probe_grid_fixed_epochs(X, y, n_classes=n_classes, l2_grid=[l2], config=config, n_epochs=n_epochs,
                                        seed=seed, device=device)[0]
            for l2 in l2_grid
        ]
    device = torch.device(device)
    rng = np.random.RandomState(seed)
    X = as_features(X)
    y = _checked_labels(y, len(X), n_classes)
    features, labels = _to_device(X, y, device)
    with seeded_torch(seed, device):
        stack = _new_stack(X.shape[1], n_classes, config, len(l2_grid), device)
        optimizer = make_optimizer(config.optimizer, stack.parameters())
        decay = torch.tensor(list(l2_grid), dtype=torch.float32, device=device)
        for _ in range(n_epochs):
            _train_passes(stack, optimizer, decay, features, labels, config.epoch_size, config.batch_size, rng)
    return [
        TrainedProbe(
            probe_from_state(stack.member_state(m), config.hidden_dim, config.dropout), device, config.batch_size,
            float(l2), None, n_epochs, n_epochs,
        )
        for m, l2 in enumerate(l2_grid)
    ]


def fit_probe_fixed_epochs(
    X: np.ndarray,
    y: np.ndarray,
    *,
    n_classes: int,
    l2: float,
    config: ProbeConfig,
    n_epochs: int,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> TrainedProbe:
    """Train one probe for exactly ``n_epochs`` epochs, no validation (see :func:`fit_probe_grid_fixed_epochs`)."""
    return fit_probe_grid_fixed_epochs(
        X, y, n_classes=n_classes, l2_grid=[l2], config=config, n_epochs=n_epochs, seed=seed, device=device
    )[0]


def max_epochs(config: ProbeConfig) -> int:
    """Epochs SentEval's loop runs when early stopping never fires: ``while passes <= max_epoch`` -> max//size + 1."""
    return config.max_epoch // config.epoch_size + 1


def _new_stack(
    input_dim: int, n_classes: int, config: ProbeConfig, n_members: int, device: torch.device
) -> StackedProbe:
    """Build the seeded probe on the CPU (SentEval's init), replicate it ``n_members`` times, move it to ``device``."""
    template = build_probe(input_dim, n_classes, config.hidden_dim, config.dropout)
    return StackedProbe(template, n_members).to(device)


def _checked_labels(y: np.ndarray, n_rows: int, n_classes: int, name: str = "y") -> np.ndarray:
    labels = as_labels(y, n_rows, name)
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"{name} must lie in 0..{n_classes - 1}, found {labels.min()}..{labels.max()}")
    return labels


def _to_device(X: np.ndarray, y: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.from_numpy(X).to(device), torch.from_numpy(y).to(device)


# ----------------------------------------------------------------------------------------------------------
# L2 selection over folds


@dataclass
class L2Search:
    """Result of scoring every L2 value on the same folds.

    ``scores[i]`` is the mean validation accuracy ×100 of ``l2_grid[i]``, rounded to 2 dp as SentEval does
    before its argmax (the first maximum wins, i.e. the smallest L2 among ties).
    ``best_epochs[i]`` lists, per fold, the epoch whose weights the early stopping kept.
    """

    l2_grid: tuple[float, ...]
    scores: list[float]
    best_epochs: list[list[int]]

    @property
    def best_index(self) -> int:
        return int(np.argmax(self.scores))

    @property
    def best_l2(self) -> float:
        return self.l2_grid[self.best_index]

    @property
    def best_score(self) -> float:
        return self.scores[self.best_index]

    def to_dict(self) -> dict:
        return {
            "l2_grid": list(self.l2_grid),
            "scores": list(self.scores),
            "best_l2": self.best_l2,
            "best_score": self.best_score,
        }


def search_l2_on_folds(
    X: np.ndarray,
    y: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    n_classes: int,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> L2Search:
    """For each L2 in ``config.l2_grid``: train on each fold's train rows, early-stop and score on its held-out rows."""
    return search_l2_on_fold_sets(X, y, [folds], n_classes=n_classes, config=config, seed=seed, device=device)[0]


def search_l2_on_fold_sets(
    X: np.ndarray,
    y: np.ndarray,
    fold_sets: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
    *,
    n_classes: int,
    config: ProbeConfig,
    seed: int = SENTEVAL_SEED,
    device: str | torch.device = "cpu",
) -> list[L2Search]:
    """:func:`search_l2_on_folds` for several independent sets of folds (rows of ``X``), one :class:`L2Search`
    each; every probe of every set (sets x folds x L2 grid) is trained in one :func:`fit_probe_jobs` call."""
    jobs = [ProbeJob(train_rows, validation_rows, tuple(config.l2_grid))
            for folds in fold_sets for train_rows, validation_rows in folds]
    fitted = iter(fit_probe_jobs(X, y, jobs, n_classes=n_classes, config=config, seed=seed, device=device))
    searches = []
    for folds in fold_sets:
        per_fold = [next(fitted) for _ in folds]
        scores, best_epochs = [], []
        for index in range(len(config.l2_grid)):
            fold_probes = [probes[index] for probes in per_fold]
            scores.append(round(100 * float(np.mean([probe.best_val_accuracy for probe in fold_probes])), 2))
            best_epochs.append([probe.best_epoch for probe in fold_probes])
        searches.append(L2Search(tuple(config.l2_grid), scores, best_epochs))
    return searches
