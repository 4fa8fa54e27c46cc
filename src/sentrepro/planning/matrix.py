"""The runs of the matrix and the training slice: the parts of the configuration that need the registry.

Which runs a matrix block makes depends on whether each method's kind trains (seeded runs) or embeds a
frozen backbone (one run), and the precision a training job computes in may be the one the method's
authors trained in; both are registry facts. So these sit in the plan layer (docs/architecture.md), above
:mod:`sentrepro.runs`, which imports nothing of the package.
"""

from __future__ import annotations

from sentrepro.planning import registry
from sentrepro.runs import Run, backbone_slice, corpus_slice, method_params


def runs(config: dict) -> list[Run]:
    """Every run of the matrix, deduplicated and sorted."""
    found: set[Run] = set()
    for block in config["matrix"]:
        for backbone in block["backbones"]:
            for method in block["methods"]:
                if not registry.method(config["methods"][method]["kind"]).trains:
                    found.add(Run(backbone, method, None))
                else:
                    for seed in block["seeds"]:
                        found.add(Run(backbone, method, seed))
    return sorted(found, key=lambda r: (r.backbone, r.method, -1 if r.seed is None else r.seed))



def training_precision(config: dict, method: str) -> str:
    """``training.precision`` for one method: ``authors`` resolves to what the method's authors trained in
    (the registry's ``authors_precision``: fp16 AMP, or fp32 for MoCoUTRL); other values apply as given."""
    requested = config["training"]["precision"]
    if requested != "authors":
        return requested
    entry = registry.method(config["methods"][method]["kind"])
    return entry.authors_precision if entry.trains else requested  # frozen runs never train



def train_slice(config: dict, run: Run) -> dict:
    """Everything a training job's result depends on (and nothing else).

    The precision is resolved per method (``training_precision``), so the slice names the precision
    itself: switching ``training.precision`` between ``authors`` and a value equal to some methods'
    authors' precision reruns only the others.
    """
    # threads: never changes results; keep_resume_state: what a finished job leaves on disk (its own channel)
    training = {k: v for k, v in config["training"].items() if k not in ("threads", "keep_resume_state")}
    training["precision"] = training_precision(config, run.method)
    params = method_params(config, run.method, run.backbone)
    steps = (config.get("rehearsal") or {}).get("steps")
    if steps and registry.method(config["methods"][run.method]["kind"]).trains:  # frozen runs have no budget
        params, training = rehearsal_budget(params, training, steps)
    return {
        "backbone": backbone_slice(config, run.backbone),
        "method": {"name": run.method, "kind": config["methods"][run.method]["kind"], "params": params},
        "seed": run.seed,
        "training": training,
        "corpus": corpus_slice(config),
    }


def rehearsal_budget(params: dict, training: dict, steps: int) -> tuple[dict, dict]:
    """A trained run's params and training block under ``rehearsal.steps`` (profiles/rehearsal): ``steps``
    optimizer steps, one dev evaluation and one checkpoint at the last, no step-0 evaluation. Every other
    hyper-parameter (batch size, lr, sequence length, templates, temperatures, queues, precision) stays the
    method's own, so a rehearsal runs each job's code path as the paper run will."""
    return ({**params, "max_steps": steps, "eval_steps": steps, "checkpoint_every": steps},
            {**training, "eval_at_start": False})
