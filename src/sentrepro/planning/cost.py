"""``sentrepro cost``: how many jobs a config runs and roughly how many GPU-hours, before running it.

Counts come from the workflow's own plan: the jobs ``snakemake -n --forceall`` lists for the config
(:mod:`sentrepro.planning.workflow`), with their wildcards, so they are the jobs ``snakemake`` would run
on a fresh checkout (``tests/test_cost.py`` compares them with the dry run's Job stats). Hours come
from the per-rule assumptions in ``cost_estimates.yaml`` (documented there): steps per run from the
corpus size and batch size, seconds per step from the backbone's size class and the method's encoder
passes, and a fixed time per evaluation job by suite and size class, all on one reference GPU. Disk, per
job kind, at the end and at the peak, is :mod:`sentrepro.planning.disk_cost` on the same plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sentrepro.planning import registry
from sentrepro.runs import method_params
from sentrepro.planning.disk_cost import estimate_disk, format_disk
from sentrepro.yaml_files import parse_yaml
from sentrepro.planning.matrix import runs

# Package data this module reads (sentrepro.code.codedeps adds it to the code of every rule importing us).
PACKAGE_DATA = ("cost_estimates.yaml",)
ESTIMATES_PATH = Path(__file__).resolve().parent / PACKAGE_DATA[0]


class CostError(ValueError):
    """The estimate cannot be made (e.g. unknown corpus size); the message says which key to set."""


def load_estimates(path: Path = ESTIMATES_PATH) -> dict:
    with open(path, encoding="utf-8") as handle:
        return parse_yaml(handle)


def size_class(name: str, backbone: dict, estimates: dict) -> str:
    """Size class of a config backbone: first ``size_patterns`` match in its name or model id (a demo
    stand-in is costed as itself, not as the paper backbone it replaces)."""
    text = f"{name} {backbone['model']}".lower()
    for rule in estimates["size_patterns"]:
        if rule["pattern"] in text:
            return rule["size"]
    return estimates["default_size"]


def corpus_sentences(config: dict, estimates: dict) -> int | None:
    """Sentences of the training corpus: the prepared corpus record, else the known size, capped by
    ``corpus.max_sentences``; None when unknown."""
    corpus = config["corpus"]
    record = Path(config.get("resources_dir", "resources")) / "corpus" / corpus["name"] / "sentences.txt.json"
    known = None
    if record.exists():
        known = int(yaml.safe_load(record.read_text(encoding="utf-8"))["sentences"])
    elif corpus["name"] in estimates["corpus_sentences"]:
        known = int(estimates["corpus_sentences"][corpus["name"]])
    cap = corpus.get("max_sentences")
    if known is None:
        return cap
    return min(known, cap) if cap else known


def training_steps(params: dict, sentences: int | None, where: str) -> int:
    """``max_steps``, else ceil(sentences / batch_size) x epochs (the training loop's own rule)."""
    if params.get("max_steps"):
        return int(params["max_steps"])
    if sentences is None:
        raise CostError(f"{where}: no max_steps and the corpus size is unknown; set corpus.max_sentences, add the "
                        f"corpus to corpus_sentences in {ESTIMATES_PATH.name}, or prepare the corpus first")
    return math.ceil(sentences / int(params["batch_size"])) * int(params.get("epochs", 1))


@dataclass
class TrainingLine:
    backbone: str
    method: str
    kind: str
    size: str
    seeds: int
    steps: int
    seconds_per_step: float
    dev_evaluations: int
    seconds_per_run: float
    gpu: bool

    @property
    def hours(self) -> float:
        return self.seeds * self.seconds_per_run / 3600


@dataclass
class EvaluationLine:
    suite: str
    jobs_by_size: dict
    seconds: float
    gpu: bool

    @property
    def jobs(self) -> int:
        return sum(self.jobs_by_size.values())

    @property
    def hours(self) -> float:
        return self.seconds / 3600


@dataclass
class CostEstimate:
    experiment: str
    reference_gpu: str
    training: list[TrainingLine] = field(default_factory=list)
    evaluation: list[EvaluationLine] = field(default_factory=list)
    other_jobs: dict = field(default_factory=dict)
    unfilled: dict = field(default_factory=dict)   # table -> (paper backbone, method, suite) no run fills
    disk: object = None                            # sentrepro.planning.disk_cost.DiskEstimate

    @property
    def training_jobs(self) -> int:
        return sum(line.seeds for line in self.training)

    @property
    def evaluation_jobs(self) -> int:
        return sum(line.jobs for line in self.evaluation)

    @property
    def training_hours(self) -> float:
        return sum(line.hours for line in self.training)

    @property
    def evaluation_hours(self) -> float:
        return sum(line.hours for line in self.evaluation)

    @property
    def total_hours(self) -> float:
        return self.training_hours + self.evaluation_hours


def _training_line(config: dict, backbone: str, method: str, seeds: int, sentences: int | None,
                   estimates: dict) -> TrainingLine:
    kind = config["methods"][method]["kind"]
    params = method_params(config, method, backbone)
    size = size_class(backbone, config["backbones"][backbone], estimates)
    steps = training_steps(params, sentences, f"methods.{method} on {backbone}")
    cost = registry.method(kind).cost  # per-kind assumptions live with the kind's registry entry
    passes = cost.get("encoder_passes", estimates["default_encoder_passes"])
    factor = cost.get("sequence_factor", estimates["default_sequence_factor"])
    per_step = int(params["batch_size"]) * passes * factor * estimates["seconds_per_sequence_pass"][size]
    dev = steps // int(params.get("eval_steps") or steps) if steps else 0
    dev = max(dev, 1)
    seconds = steps * per_step + dev * estimates["seconds_per_dev_evaluation"][size]
    gpu = bool(config["backbones"][backbone].get("resources", {}).get("gpu", 0))
    return TrainingLine(backbone, method, kind, size, seeds, steps, per_step, dev, seconds, gpu)


def evaluation_rules() -> dict[str, str]:
    """Rule name -> suite of the evaluation rules (one per registry suite, workflow/rules/evaluate.smk)."""
    return {f"evaluate_{name}": name for name in registry.suites()}


def estimate(config: dict, estimates: dict | None = None, jobs: list | None = None) -> CostEstimate:
    """Job counts and hours for a validated config; ``jobs`` is its plan (default: the dry run of
    :func:`sentrepro.planning.workflow.plan_config`, in the current directory)."""
    from sentrepro.planning.evaluations import suite_resources
    from sentrepro.planning.workflow import plan_config

    estimates = estimates or load_estimates()
    jobs = plan_config(config) if jobs is None else jobs
    sentences = corpus_sentences(config, estimates)
    result = CostEstimate(experiment=config["experiment"], reference_gpu=estimates["reference_gpu"])
    groups: dict[tuple[str, str], int] = {}
    evaluations: dict[str, dict[str, int]] = {}
    other: dict[str, int] = {}
    evaluation_rule = evaluation_rules()
    for job in jobs:
        if job.rule == "train":
            key = (job.wildcards["backbone"], job.wildcards["method"])
            groups[key] = groups.get(key, 0) + 1
        elif job.rule in evaluation_rule:
            suite = evaluation_rule[job.rule]
            backbone = job.wildcards["backbone"]
            size = size_class(backbone, config["backbones"][backbone], estimates)
            per_size = evaluations.setdefault(suite, {})
            per_size[size] = per_size.get(size, 0) + 1
        elif job.rule != "all":
            other[job.rule] = other.get(job.rule, 0) + 1
    for (backbone, method), seeds in sorted(groups.items()):
        result.training.append(_training_line(config, backbone, method, seeds, sentences, estimates))
    for suite, per_size in sorted(evaluations.items(), key=lambda item: (item[0] != "sts", item[0])):
        table = registry.suite(suite).cost
        seconds = sum(count * table[size] for size, count in per_size.items())
        gpu = bool(suite_resources(config, suite).get("gpu", 0))
        result.evaluation.append(EvaluationLine(suite, per_size, seconds, gpu))
    result.unfilled = unfilled_table_cells(config, runs(config))
    result.other_jobs = dict(sorted(other.items()))
    result.disk = estimate_disk(config, jobs, estimates, sentences,
                                lambda b: size_class(b, config["backbones"][b], estimates))
    return result


def unfilled_table_cells(config: dict, all_runs) -> dict[str, list[tuple[str, str, str]]]:
    """Per table of ``tables``: the (paper backbone, method, suite) cells no planned run fills."""
    from sentrepro.planning.evaluations import enabled_suites, suite_runs
    from sentrepro.planning.table_cells import unfilled_cells
    from sentrepro.planning.table_specs import load_spec

    suites = set(enabled_suites(config))

    def planned(suite):
        return suite_runs(config, suite) if suite in suites else []

    found = {}
    for name in config.get("tables", []):
        missing = unfilled_cells(load_spec(name), all_runs, config["backbones"], planned)
        if missing:
            found[name] = missing
    return found


def format_estimate(est: CostEstimate, config_names: list[str]) -> str:
    lines = [f"Cost estimate for experiment '{est.experiment}' ({' + '.join(config_names)})",
             f"Reference GPU: {est.reference_gpu}.",
             f"Assumptions: {ESTIMATES_PATH} (per-rule estimates; edit them to your own timings).", "",
             f"Training: {est.training_jobs} jobs, {est.training_hours:.1f} GPU-hours"]
    header = (f"  {'backbone':<15}{'method':<26}{'size':<6}{'runs':>5}{'steps/run':>10}{'s/step':>8}"
              f"{'dev evals':>10}{'h/run':>8}{'GPU-h':>8}")
    lines.append(header)
    for t in est.training:
        lines.append(f"  {t.backbone:<15}{t.method:<26}{t.size:<6}{t.seeds:>5}{t.steps:>10}{t.seconds_per_step:>8.3f}"
                     f"{t.dev_evaluations:>10}{t.seconds_per_run / 3600:>8.2f}{t.hours:>8.2f}"
                     + ("" if t.gpu else "  (no GPU requested in config)"))
    lines += ["", f"Evaluation: {est.evaluation_jobs} jobs, {est.evaluation_hours:.1f} GPU-hours "
                  f"(estimated on the reference GPU; jobs marked CPU request none)"]
    lines.append(f"  {'suite':<16}{'jobs':>6}  {'by size':<28}{'hours':>8}")
    for e in est.evaluation:
        by_size = ", ".join(f"{size} {n}" for size, n in sorted(e.jobs_by_size.items()))
        lines.append(f"  {e.suite:<16}{e.jobs:>6}  {by_size:<28}{e.hours:>8.2f}" + ("" if e.gpu else "  CPU"))
    if est.unfilled:
        lines += ["", "Table cells this config leaves empty (published number only; add the runs or suites):"]
        for table, cells in est.unfilled.items():
            lines.append(f"  {table}: " + "; ".join(f"{m} on {b} ({s})" for b, m, s in cells))
    lines += ["", "Other jobs (CPU, minutes each): "
              + ", ".join(f"{name} {count}" for name, count in est.other_jobs.items()), "",
              f"Total: {est.training_jobs + est.evaluation_jobs} training + evaluation jobs, "
              f"{est.total_hours:.1f} GPU-hours (~{est.total_hours / 24:.1f} GPU-days on one reference GPU)."]
    if est.disk is not None:
        lines += format_disk(est.disk, ESTIMATES_PATH.name)
    return "\n".join(lines) + "\n"
