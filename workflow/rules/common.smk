# Config -> targets and input functions. Every rule gets only the config slice it depends on, as
# canonical JSON in params.spec, plus params.code = rule_code("cli:<command>"): the fingerprint of the
# code the sentrepro command it runs imports (sentrepro.codedeps; check_rule_code below enforces it).
import os
import sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.exceptions import WorkflowError

from sentrepro import registry
from sentrepro.codedeps import rule_code, shell_entry
from sentrepro.config import validate
from sentrepro.core import (
    ConfigError,
    Run,
    backbone_slice,
    canonical_json,
    corpus_slice,
    runs,
    source_slice,
    train_slice,
)
from sentrepro.evaluation.item_scores import pairs_path
from sentrepro.integrity import refresh_stamp, stamp_path
from sentrepro.evaluation.plan import (
    drawable_figures,
    enabled_suites,
    source_is_synthetic,
    suite_resources,
    suite_runs,
    suite_settings,
    suite_source,
)
from sentrepro.pretrained.names import fetch_spec, snapshot_manifest
from sentrepro.tables.plan import table_inputs
from sentrepro.tables.spec import load_spec as load_table_spec
from sentrepro.verdicts.claims import claim_tables, load_claims

try:
    _validated = validate(config)
except ConfigError as error:
    raise WorkflowError(str(error))
config.clear()
config.update(_validated)

RES = config["resources_dir"]
EXP = f"results/{config['experiment']}"
RUNS = runs(config)
RUN_ID = r"seed\d+|frozen"


wildcard_constraints:
    source=r"[A-Za-z0-9_.-]+",
    backbone=r"[A-Za-z0-9_.-]+",
    method=r"[A-Za-z0-9_.-]+",
    run=RUN_ID,
    tokenizer=r"[A-Za-z0-9_.-]+",
    corpus=r"[A-Za-z0-9_.-]+",


def run_of(w) -> Run:
    seed = None if w.run == "frozen" else int(w.run.removeprefix("seed"))
    return Run(w.backbone, w.method, seed)


def method_kind(method: str) -> str:
    return config["methods"][method]["kind"]


def trains(method: str) -> bool:
    """Whether runs of a config method are trained (seeded) or embed a frozen backbone (the registry's ``trains``)."""
    return registry.method(method_kind(method)).trains


def manifest(source: str) -> str:
    return f"{RES}/data/{source}/MANIFEST.json"


_STAMPS_REFRESHED = set()


def content_stamp(manifest_path: str) -> str:
    """The CONTENT.json stamp next to a data source's or a snapshot's MANIFEST.json (sentrepro.integrity), an
    input of each job that reads those files. Brought up to date with the files once per workflow load
    (a file whose bytes changed rewrites it), so the plan reruns what read the old bytes, and those jobs
    fail naming the file until it is restored or fetched again."""
    if manifest_path not in _STAMPS_REFRESHED:
        _STAMPS_REFRESHED.add(manifest_path)
        changed = refresh_stamp(manifest_path)
        if changed:
            print(f"sentrepro: {changed}; the jobs reading it are planned again", file=sys.stderr)
    return str(stamp_path(manifest_path))


def data_stamp(source: str) -> str:
    return content_stamp(manifest(source))


def model_stamp(backbone: str) -> str:
    return content_stamp(model_manifest(backbone))


def tokenizer_backbone(tokenizer: str) -> str:
    """The backbone a tokenizer cache is built from: the first (by name) that names it."""
    names = sorted(b for b, spec in config["backbones"].items() if spec["tokenizer"] == tokenizer)
    if not names:
        raise WorkflowError(f"no backbone uses tokenizer '{tokenizer}'")
    return names[0]


def tokenizer_model(tokenizer: str) -> str:
    """The model a tokenizer cache is built from."""
    return config["backbones"][tokenizer_backbone(tokenizer)]["model"]


def tokenized_record(backbone: str) -> str:
    tokenizer = config["backbones"][backbone]["tokenizer"]
    return f"{RES}/tokenized/{tokenizer}/{config['corpus']['name']}/tokenized.json"


VIEWS_SUFFIX = "-views"  # MoCoUTRL's views of corpus C are the corpus "C-views" (workflow/rules/views.smk)


def views_spec() -> dict:
    """The config's views section, checked when a run needs it."""
    spec = config.get("views")
    if spec is None:
        raise WorkflowError("a method in the matrix trains on views (MoCoUTRL) but config.yaml has no 'views' section")
    if spec["wordnet_source"] not in config["data"]["sources"]:
        raise WorkflowError(f"views.wordnet_source: unknown source '{spec['wordnet_source']}'")
    return spec


def training_tokenized_record(backbone: str, method: str) -> str:
    """The tokenized corpus a run trains on: the corpus itself, or its views for methods trained on views."""
    if registry.method(method_kind(method)).training_corpus != "views":
        return tokenized_record(backbone)
    tokenizer = config["backbones"][backbone]["tokenizer"]
    return f"{RES}/tokenized/{tokenizer}/{config['corpus']['name']}{VIEWS_SUFFIX}/tokenized.json"


def run_dir(run: Run) -> str:
    return f"{EXP}/runs/{run.path}"


def metrics_file(run: Run, suite: str) -> str:
    return f"{EXP}/metrics/{run.path}/{suite}.json"


def spec_json(payload) -> str:
    return canonical_json(payload)


def any_synthetic() -> bool:
    return any(s.get("synthetic") for s in config["data"]["sources"].values())


def table_targets() -> list[str]:
    return [f"{EXP}/tables/{name}.{ext}" for name in config["tables"] for ext in ("md", "csv")]


# --- input functions and params of the rule files -----------------------------------------


def download_record_for(w):
    spec = source_slice(config, w.source)
    return [f"{RES}/downloads/{w.source}/download.json"] if spec["format"] != "directory" else []


# --- data checks and fixtures (workflow/rules/data.smk) --------------------------------------
FIXTURES = f"{RES}/fixtures"


def checked(source: str) -> str:
    """CHECKED.json of a source: every rule that reads evaluation data takes it as an input."""
    if not config["data"]["sources"][source].get("check"):
        raise WorkflowError(f"data.sources.{source} has no 'check' block; evaluation data must be checked")
    return f"{RES}/data/{source}/CHECKED.json"


def checked_targets() -> list[str]:
    """CHECKED.json of every source that declares its data sets: all of them are verified."""
    return [checked(name) for name, spec in sorted(config["data"]["sources"].items()) if spec.get("check")]


def fixture_inputs(w):
    """The fixture directories a source's fixture:// URLs point into (their rule runs first)."""
    from sentrepro.data.prepare import source_files
    from sentrepro.data.sources import fixture_generator

    spec = source_slice(config, w.source)
    if spec["format"] == "directory":
        return []
    generators = {fixture_generator(item.url) for item in source_files(w.source, spec)}
    return sorted(f"{FIXTURES}/{name}" for name in generators if name)


def train_resource(name, default):
    return lambda w: config["backbones"][w.backbone].get("resources", {}).get(name, default)


# --- SLURM site settings of GPU jobs (profiles/slurm/README.md) -------------------------------
# The profile sets the partition and account of every job from SENTREPRO_SLURM_*; only a rule knows
# whether its job asks for GPUs, so GPU-capable rules pick the GPU partition and model here. A
# resource that evaluates to None is left out of the sbatch call (the cluster's default applies).

def _slurm_site(name: str) -> str:
    """SENTREPRO_SLURM_<name>, stripped; empty when unset."""
    return os.environ.get(f"SENTREPRO_SLURM_{name}", "").strip()


def gpu_partition(gpus):
    """The slurm_partition resource for jobs asking for ``gpus(wildcards)`` GPUs. GPU jobs get the
    site's GPU partition when it names one, other jobs the site's partition; None = cluster default."""

    def partition(wildcards):
        if gpus(wildcards) > 0 and _slurm_site("GPU_PARTITION"):
            return _slurm_site("GPU_PARTITION")
        return _slurm_site("PARTITION") or None

    return partition


def gpu_model(gpus):
    """The gpu_model resource (sbatch --gpus=<model>:<n>) for jobs asking for ``gpus(wildcards)``
    GPUs. The site's GPU type, for GPU jobs only: a model alone makes the plugin request a GPU."""
    return lambda wildcards: (_slurm_site("GPU_MODEL") or None) if gpus(wildcards) > 0 else None


def table_context():
    return {
        "experiment": config["experiment"],
        "backbones": {n: {"stands_in_for": b.get("stands_in_for", n)} for n, b in config["backbones"].items()},
        "synthetic": any_synthetic(),
    }


# --- evaluation suites (workflow/rules/evaluate.smk) and figures (figures.smk) ------------------
# Every function below takes the suite (a rule per suite, from the registry) and returns the input
# function or param of that suite's rule.
SUITE_ENTRIES = registry.suites()


def corpus_sentences_file() -> str:
    return f"{RES}/corpus/{config['corpus']['name']}/sentences.txt"


def suite_targets() -> list[str]:
    """Every (run, suite) metrics file of evaluation.suites, each suite narrowed by its `runs` filter."""
    return [metrics_file(run, suite) for suite in enabled_suites(config) for run in suite_runs(config, suite)]


def figure_targets() -> list[str]:
    return [f"{EXP}/figures/{name}.{ext}" for name in drawable_figures(config) for ext in ("png", "pdf")]


def suite_trained_run(suite):
    """The run's training summary, for suites scoring a trained run's best checkpoint."""

    def inputs(w):
        if SUITE_ENTRIES[suite].model == "start" or not trains(w.method):
            return []
        return [f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"]

    return inputs


def suite_model_manifest(suite):
    """The backbone's snapshot, where the suite loads the backbone itself: a frozen run, or step 0."""

    def inputs(w):
        if SUITE_ENTRIES[suite].model == "start" or not trains(w.method):
            return [model_manifest(w.backbone)]
        return []

    return inputs


def suite_stamps(suite):
    """The content stamps of what the suite's job reads: its data source's, and the snapshot's where it loads one."""

    def inputs(w):
        source = suite_source(config, suite)
        stamps = [data_stamp(source)] if source else []
        return stamps + [content_stamp(m) for m in suite_model_manifest(suite)(w)]

    return inputs


def suite_data(suite):
    def inputs(w):
        source = suite_source(config, suite)
        return manifest(source) if source else corpus_sentences_file()

    return inputs


def suite_checked(suite):
    """CHECKED.json of the source a suite reads (none for the training corpus)."""

    def inputs(w):
        source = suite_source(config, suite)
        return [checked(source)] if source else []

    return inputs


def suite_spec(suite):
    """The suite job's slice: the run (backbone, method, seed), the data it reads, the suite's settings."""

    def spec(w):
        run = run_of(w)
        source = suite_source(config, suite)
        return spec_json({
            "run": {"backbone": run.backbone, "method": run.method, "seed": run.seed},
            "backbone": backbone_slice(config, run.backbone),
            "method": {"kind": method_kind(run.method), "params": train_slice(config, run)["method"]["params"]},
            "seed": run.seed,
            "attention": config["training"]["attention"],
            "suite": suite,
            "source": source or config["corpus"]["source"],
            "synthetic": source_is_synthetic(config, source or config["corpus"]["source"]),
            "settings": suite_settings(config, suite),
        })

    return spec


def suite_resource(suite, name):
    return lambda w: suite_resources(config, suite)[name]


def figure_metrics(w):
    return [metrics_file(run, registry.figure(w.figure).suite)
            for run in suite_runs(config, registry.figure(w.figure).suite)]


def figure_context():
    return {
        "experiment": config["experiment"],
        "stands_in": {n: primary_stand_in(n, b) for n, b in config["backbones"].items()},
    }


def figure_paper(w):
    return registry.figure(w.figure).paper


# --- paper tables and the report (workflow/rules/report.smk; sentrepro.tables) ------------
REPORT_DIR = Path(workflow.basedir) / "workflow" / "report"


def suite_runs_if_enabled(suite):
    """Runs that get ``suite`` when it is enabled (evaluation.suites), else none."""
    if suite not in enabled_suites(config):
        return []
    return suite_runs(config, suite)


def table_metrics(w):
    """The metrics files one table reads (its spec's cells x the runs the evaluation plan produces)."""
    spec = load_table_spec(w.table, config["methods"])  # every suite, method and column it names exists
    pairs = table_inputs(spec, RUNS, config["backbones"], suite_runs_if_enabled)
    return [metrics_file(run, suite) for run, suite in pairs]


def table_description(w):
    return str(REPORT_DIR / "tables" / f"{w.table}.rst")


def table_description_text(w):
    """The caption text itself is the table rule's param (and reaches the job on its command line): no
    path of this checkout is an input or param, so a moved or copied project plans nothing."""
    return Path(table_description(w)).read_text(encoding="utf-8")


def table_paper(w):
    return load_table_spec(w.table)["paper"]


def primary_stand_in(name, backbone):
    """The paper backbone a demo backbone is labelled as in figures (the first of a list)."""
    value = backbone.get("stands_in_for", name)
    return value if isinstance(value, str) else value[0]


# --- the demo summary (workflow/rules/report.smk: demo_summary) ---------------------------------
def summary_runs() -> list[Run]:
    """Every trained run of the matrix, in matrix order."""
    return [run for run in RUNS if trains(run.method)]


def summary_run(run: Run) -> dict:
    from sentrepro.demo_summary import summary_suite  # its suites, checked (imported only when enabled)

    return {"backbone": run.backbone, "method": run.method, "seed": run.seed,
            "train": f"{run_dir(run)}/train.json", "before": metrics_file(run, summary_suite("before")),
            "after": metrics_file(run, summary_suite("after"))}


def demo_summary_spec() -> dict:
    stands = {n: b.get("stands_in_for", n) for n, b in config["backbones"].items()}
    return {"experiment": config["experiment"], "runs": [summary_run(r) for r in summary_runs()],
            "stands_in": {n: [v] if isinstance(v, str) else list(v) for n, v in stands.items()}}


def demo_summary_targets() -> list[str]:
    if not config["demo_summary"]["enabled"]:
        return []
    return [f"{EXP}/tables/demo_summary.{ext}" for ext in ("md", "csv")]


# --- pretrained backbones (workflow/rules/models.smk; sentrepro.pretrained) -------------------


def model_manifest(backbone: str) -> str:
    """The MANIFEST.json of a backbone's snapshot (its path follows from config alone)."""
    return snapshot_manifest(RES, backbone, config["backbones"][backbone])


# --- reproduction verdicts (workflow/rules/verdicts.smk; sentrepro.verdicts) ------------------


def verdict_targets():
    return [f"{EXP}/verdicts.{ext}" for ext in ("md", "csv", "html")]


def verdict_tables():
    return claim_tables(load_claims())


def verdict_metrics(w):
    """Every metrics file the claims' tables read (each once), as the table rule requests them."""
    files = set()
    for name in verdict_tables():
        files.update(table_metrics(SimpleNamespace(table=name)))
    return sorted(files)


def verdict_pair_scores(w):
    """The per-pair scores beside every STS metrics file the verdicts read (written by evaluate_sts)."""
    return [str(pairs_path(f)) for f in verdict_metrics(w) if Path(f).name == "sts.json"]


# --- the code a rule runs (sentrepro.codedeps) ---------------------------------------------------


def job_code(entry: str, suite: str | None = None):
    """params.code where each job runs one method (wildcard ``method``), and for evaluation one suite: the
    command's code plus the units the job runs (the method kind's, the suite's: module and metadata). So an
    edit of one method's or suite's unit reruns its jobs only, and a new unit none (registry.job_entries)."""

    def code(w):
        return rule_code(registry.job_entries(entry, method_kind(w.method), suite))

    code.entry = entry
    return code


def figure_code(entry: str):
    """params.code of the figure rule: the command's code plus the figure's unit (its module and metadata)."""

    def code(w):
        return rule_code([entry, registry.unit_entry("figures", w.figure)])

    code.entry = entry
    return code


def check_rule_code():
    """Every rule that runs sentrepro code has params.code = rule_code(<the entry its shell command
    runs>) -- or job_code/figure_code(<entry>) when the registry adds a module per job -- so the command
    is the one source of which code a rule depends on; a rule whose code param names anything else (a
    hand-kept list) stops the workflow here."""
    for defined in workflow.rules:
        entry = shell_entry(defined.shellcmd or "")
        if entry is None:
            continue
        code = dict(defined.params.items()).get("code")
        if callable(code):
            if getattr(code, "entry", None) != entry:
                raise WorkflowError(f"rule {defined.name} runs '{entry}' but its params.code is a function for "
                                    f"{getattr(code, 'entry', None)!r}")
        elif code != rule_code(entry):
            raise WorkflowError(f"rule {defined.name} runs '{entry}' but its params.code is not "
                                f"rule_code({entry!r}) (sentrepro.codedeps); set code=rule_code({entry!r})")


# --- exported runs (workflow/rules/export.smk; sentrepro.export) ---------------------------------


def export_targets():
    """The record of every exported folder: each run scored on STS, when export.enabled."""
    if not config["export"]["enabled"]:
        return []
    return [f"{EXP}/exports/{r.backbone}/{r.method}/{r.run_id}/sentrepro_export.json"
            for r in suite_runs(config, "sts")]


def export_inputs(w):
    """What an export reads: the run's STS metrics, the table CSVs and verdicts its card quotes, the run (or the
    backbone snapshot) and, for whitening, the STS data its kernel is refitted on."""
    inputs = {"sts": metrics_file(run_of(w), "sts"),
              "tables": [t for t in table_targets() if t.endswith(".csv")],
              "verdicts": [t for t in verdict_targets() if t.endswith(".csv")]}
    if trains(w.method):
        inputs["run"] = f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"
    else:
        inputs["model"] = model_manifest(w.backbone)
    if method_kind(w.method) == "whitening":  # refits its kernel on the STS suite's sentences
        inputs["sts_data"] = manifest(suite_source(config, "sts"))
    return inputs
