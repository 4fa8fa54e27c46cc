"""The disk side of ``sentrepro cost``: what each kind of job keeps, at the end and at the peak.

Counted from the same plan as the hours (the jobs ``snakemake -n --forceall`` lists, :mod:`sentrepro.planning.cost`)
and from the assumptions under ``disk`` in ``cost_estimates.yaml`` (printed beside the figures):

- ``fetch_model``: one snapshot per backbone, its weights (parameters x 4 bytes, fp32 safetensors) and tokenizer;
- ``train``: ``best/`` per run (the weights plus what the method's kind keeps beside the encoder, ``cost.
  checkpoint_extra`` of the kind's sidecar: e.g. MoCoUTRL's momentum dictionary, a copy of the input
  embeddings); while it runs, its resume state ``last/`` too (weights and AdamW's two moments: 3 x ``best/``),
  dropped once it finishes unless ``training.keep_resume_state``;
- ``export``: the code, MTEB files and records of each folder; its weights are hard links to ``best/`` (or the
  snapshot), so they add nothing where the file system allows links (else one stored copy per run);
- ``tokenize``: the token ids of each corpus (sentences x tokens per sentence x 4 bytes, plus offsets);
  ``prepare_corpus``, ``build_views``: the corpus text and its views, bytes per sentence;
- ``prepare_dataset``: each source's download and prepared copy together, by source name;
- everything else (metrics, tables, figures, logs, benchmark records): a small fixed size per job.

**Peak** = what remains at the end + the resume states of the training jobs running at once (the largest
ones); with ``keep_resume_state`` they all remain at the end anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sentrepro.planning import registry

GB = 1e9


@dataclass
class DiskLine:
    rule: str
    jobs: int
    end_bytes: float          # what the jobs of this rule leave at the end
    where: str                # results or resources
    note: str


@dataclass
class DiskEstimate:
    lines: list[DiskLine] = field(default_factory=list)
    resume_bytes: list[float] = field(default_factory=list)   # each training run's resume state (last/)
    keep_resume_state: bool = False
    concurrent_trainings: int = 1

    def end(self, where: str | None = None) -> float:
        return sum(line.end_bytes for line in self.lines if where in (None, line.where))

    @property
    def peak(self) -> float:
        if self.keep_resume_state:
            return self.end()
        running = sorted(self.resume_bytes, reverse=True)[: self.concurrent_trainings]
        return self.end() + sum(running)


def backbone_parameters(backbone: dict, size: str, disk: dict) -> tuple[float, float]:
    """(parameters, input-embedding parameters) of a config backbone: the first ``disk.parameters`` pattern
    found in its model id, else its size class's default."""
    model = str(backbone["model"]).lower()
    for rule in disk["parameters"]:
        if rule["pattern"] in model:
            return float(rule["parameters"]), float(rule["embeddings"])
    default = disk["parameters_by_size"][size]
    return float(default["parameters"]), float(default["embeddings"])


def checkpoint_bytes(kind: str, parameters: float, embeddings: float, disk: dict) -> float:
    """Bytes of one ``best/``: the encoder's weights, what the kind keeps beside it, the tokenizer files."""
    extra = registry.method(kind).cost.get("checkpoint_extra")
    extra_parameters = {None: 0.0, "input_embeddings": embeddings}[extra]
    return (parameters + extra_parameters) * disk["bytes_per_parameter"] + disk["tokenizer_bytes"]


def estimate_disk(config: dict, jobs: list, estimates: dict, sentences: int | None, size_of) -> DiskEstimate:
    """Disk per rule of the planned ``jobs``; ``size_of(backbone)`` is its size class (``cost.size_class``)."""
    disk = estimates["disk"]
    keep = bool(config["training"].get("keep_resume_state", False))
    result = DiskEstimate(keep_resume_state=keep, concurrent_trainings=int(disk["concurrent_trainings"]))
    counts: dict[str, int] = {}
    per_rule: dict[str, float] = {}

    def add(rule: str, size: float) -> None:
        per_rule[rule] = per_rule.get(rule, 0.0) + size

    for job in jobs:
        if job.rule == "all":
            continue
        counts[job.rule] = counts.get(job.rule, 0) + 1
        w = job.wildcards
        if job.rule == "fetch_model":
            backbone = config["backbones"][w["backbone"]]
            parameters, _ = backbone_parameters(backbone, size_of(w["backbone"]), disk)
            add(job.rule, parameters * disk["bytes_per_parameter"] + disk["tokenizer_bytes"])
        elif job.rule == "train":
            backbone = config["backbones"][w["backbone"]]
            parameters, embeddings = backbone_parameters(backbone, size_of(w["backbone"]), disk)
            best = checkpoint_bytes(config["methods"][w["method"]]["kind"], parameters, embeddings, disk)
            resume = best * disk["resume_state_factor"]
            result.resume_bytes.append(resume)
            add(job.rule, best + (resume if keep else 0.0) + disk["small_output_bytes"])
        elif job.rule == "export":
            add(job.rule, disk["export_bytes"])
        elif job.rule == "tokenize":
            add(job.rule, (sentences or 0) * (disk["tokens_per_sentence"] * 4 + 8))
        elif job.rule in ("prepare_corpus", "build_views"):
            add(job.rule, (sentences or 0) * disk["text_bytes_per_sentence"][job.rule])
        elif job.rule == "prepare_dataset":
            source = config["data"]["sources"].get(w.get("source"), {})
            known = disk["source_bytes"]
            add(job.rule, known["synthetic"] if source.get("synthetic") else known.get(w.get("source"), known["default"]))
        else:
            add(job.rule, disk["small_output_bytes"])
    resources = {"fetch_model", "tokenize", "download", "prepare_dataset", "check_dataset", "prepare_corpus",
                 "build_views", "fixture"}
    notes = {
        "fetch_model": "backbone snapshot: parameters x {b} B + tokenizer".format(b=disk["bytes_per_parameter"]),
        "train": "best/ per run" + (" + resume state last/ (keep_resume_state: true)" if keep else
                                    "; last/ (3 x best/) only while the job runs"),
        "export": "code, card, MTEB files; weights are hard links to best/ or the snapshot",
        "tokenize": f"{sentences or 0:,} sentences x ({disk['tokens_per_sentence']} tokens x 4 B + 8 B)",
        "prepare_corpus": "corpus text", "build_views": "corpus views text",
        "prepare_dataset": "download + prepared copy per source (disk.source_bytes)",
    }
    for rule in sorted(notes, key=lambda r: -per_rule.get(r, 0.0)):
        if rule in counts:
            result.lines.append(DiskLine(rule, counts[rule], per_rule[rule],
                                         "resources" if rule in resources else "results", notes[rule]))
    for where in ("results", "resources"):  # every other job: a small output each
        others = [r for r in counts if r not in notes and (r in resources) == (where == "resources")]
        if others:
            result.lines.append(DiskLine(f"other ({len(others)} kinds)", sum(counts[r] for r in others),
                                         sum(per_rule[r] for r in others), where,
                                         "metrics, tables, figures, logs, benchmark records"))
    return result


def format_disk(est: DiskEstimate, estimates_path: str) -> list[str]:
    lines = ["", f"Disk: {est.end() / GB:.2f} GB at the end ({est.end('results') / GB:.2f} GB under results/, "
                 f"{est.end('resources') / GB:.2f} GB under resources/), peak {est.peak / GB:.2f} GB while the matrix runs",
             f"  {'job kind':<20}{'jobs':>6}{'GB at end':>11}  {'where':<11}what each keeps"]
    for line in est.lines:
        lines.append(f"  {line.rule:<20}{line.jobs:>6}{line.end_bytes / GB:>11.3f}  {line.where:<11}{line.note}")
    largest = max(est.resume_bytes, default=0.0)
    lines.append(f"  Assumptions ({estimates_path}, `disk`): fp32 weights; a running training job also holds its "
                 f"resume state (3 x best/, up to {largest / GB:.2f} GB each), "
                 + ("kept after it finishes (training.keep_resume_state: true)" if est.keep_resume_state else
                    f"dropped when it finishes; the peak counts {est.concurrent_trainings} training jobs at once "
                    "(disk.concurrent_trainings)")
                 + "; exports link their weights (same file system as results/).")
    return lines
