# Config -> targets and input functions. Every rule gets only the config slice it depends on, as
# canonical JSON in params.spec, plus a fingerprint of the source modules it runs.
import json
from pathlib import Path

from snakemake.exceptions import WorkflowError

from sentrepro.config import (
    ConfigError,
    Run,
    backbone_slice,
    canonical_json,
    code_fingerprint,
    runs,
    source_slice,
    sts_slice,
    train_slice,
    validate,
)
from sentrepro.methods import method_modules

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


def manifest(source: str) -> str:
    return f"{RES}/data/{source}/MANIFEST.json"


def tokenizer_model(tokenizer: str) -> str:
    """The model a tokenizer cache is built from: the first backbone (by name) that names it."""
    names = sorted(b for b, spec in config["backbones"].items() if spec["tokenizer"] == tokenizer)
    if not names:
        raise WorkflowError(f"no backbone uses tokenizer '{tokenizer}'")
    return config["backbones"][names[0]]["model"]


def tokenized_record(backbone: str) -> str:
    tokenizer = config["backbones"][backbone]["tokenizer"]
    return f"{RES}/tokenized/{tokenizer}/{config['corpus']['name']}/tokenized.json"


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


def train_resource(name, default):
    return lambda w: config["backbones"][w.backbone].get("resources", {}).get(name, default)


def eval_spec(w, suite_slice):
    run = run_of(w)
    return spec_json({
        "run": {"backbone": run.backbone, "method": run.method, "seed": run.seed},
        "backbone": backbone_slice(config, run.backbone),
        "method": {"kind": method_kind(run.method),
                   "params": train_slice(config, run)["method"]["params"]},
        "seed": run.seed,
        "attention": config["training"]["attention"],
        "sts": suite_slice,
    })


def trained_run(w):
    if method_kind(w.method) == "frozen":
        return []
    return [f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"]


def table_context():
    return {
        "experiment": config["experiment"],
        "backbones": {n: {"stands_in_for": b.get("stands_in_for", n)} for n, b in config["backbones"].items()},
        "synthetic": any_synthetic(),
    }
