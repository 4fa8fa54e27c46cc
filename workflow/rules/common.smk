# What all rule files share -- the validated config, the result roots, the runs of the matrix, the paths
# and content stamps several of them read. The input functions and targets of workflow/rules/<topic>.smk
# are in workflow/rules/inputs/<topic>.smk, which it includes; code.smk holds the code fingerprints
# (params.code), slurm.smk the GPU site settings.
# Every rule gets only the config slice it depends on, as canonical JSON in params.spec.
import hashlib
import os
import sys
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError

from sentrepro.planning import registry
from sentrepro.planning.config import validate
from sentrepro.runs import ConfigError, Run, canonical_json
from sentrepro.records.integrity import refresh_stamp, stamp_path
from sentrepro.planning.layers import snakemake_layers
from sentrepro.records.ledger import STORE_ENV
from sentrepro.planning.matrix import runs
from sentrepro.planning.registry import RegistryError
from sentrepro.yaml_files import check_package_yaml, yaml_error_line

try:  # every config mistake is one line naming its file (and line) and key; a sidecar's names the sidecar
    check_package_yaml()  # a YAML/JSON syntax error in a package file: file:line:col, before the plan meets it
    _layers = snakemake_layers(workflow, sys.argv)
    _validated = validate(config, _layers)
except (ConfigError, RegistryError) as error:
    raise WorkflowError(str(error))
except yaml.YAMLError as error:  # a plug-in's sidecar, or a package file
    raise WorkflowError(yaml_error_line(error)) from None
config.clear()
config.update(_validated)

RES = config["resources_dir"]
EXP = f"results/{config['experiment']}"
# A shared store: resources_dir outside the project (the working directory), used by several checkouts.
# Its jobs record what they write in the store's own ledger (sentrepro.records.ledger reads SENTREPRO_STORE), and
# a job all checkouts run on the same files (fetch_model) logs to a file of this checkout's (store_log).
SHARED_STORE = not Path(RES).resolve().is_relative_to(Path.cwd().resolve())
if SHARED_STORE:
    os.environ[STORE_ENV] = str(Path(RES).resolve())
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


def run_dir(run: Run) -> str:
    return f"{EXP}/runs/{run.path}"


def metrics_file(run: Run, suite: str) -> str:
    return f"{EXP}/metrics/{run.path}/{suite}.json"


def store_log(path: str) -> str:
    """A log under RES; in a shared store, this checkout's own (``<name>.<checkout>-<hash>.log``), since
    Snakemake removes a job's log before running it and another checkout's job may be writing it."""
    if not SHARED_STORE:
        return path
    here = Path.cwd().resolve()
    tag = f"{here.name}-{hashlib.sha256(str(here).encode()).hexdigest()[:8]}"
    return path.removesuffix(".log") + f".{tag}.log"


def spec_json(payload) -> str:
    return canonical_json(payload)


def any_synthetic() -> bool:
    return any(s.get("synthetic") for s in config["data"]["sources"].values())


# --- data sources and backbone snapshots: their files and content stamps ---------------------------
# data.smk and models.smk make them; tokenize, views, train, evaluate and export read them.


def manifest(source: str) -> str:
    return f"{RES}/data/{source}/MANIFEST.json"


_STAMPS_REFRESHED = set()


def content_stamp(manifest_path: str) -> str:
    """The CONTENT.json stamp next to a data source's or a snapshot's MANIFEST.json (sentrepro.records.integrity), an
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
