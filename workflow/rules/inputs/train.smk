# Input functions, params and targets of workflow/rules/train.smk, which includes this file first.

import os

from sentrepro.planning.matrix import train_slice
from sentrepro.runs import KEEP_RESUME_STATE

# training.keep_resume_state decides what a finished training job leaves on disk (last/), never its result:
# it reaches the job in the environment (inherited by local jobs; a SLURM job's snakemake sets it again when it
# reads the config), not in params.spec, so changing it reruns no training job.
os.environ[KEEP_RESUME_STATE] = "1" if config["training"]["keep_resume_state"] else "0"


def tokenized_record(backbone: str) -> str:
    tokenizer = config["backbones"][backbone]["tokenizer"]
    return f"{RES}/tokenized/{tokenizer}/{config['corpus']['name']}/tokenized.json"


def training_tokenized_record(backbone: str, method: str) -> str:
    """The tokenized corpus a run trains on: the corpus itself, or its views for methods trained on views."""
    if registry.method(method_kind(method)).training_corpus != "views":
        return tokenized_record(backbone)
    tokenizer = config["backbones"][backbone]["tokenizer"]
    return f"{RES}/tokenized/{tokenizer}/{config['corpus']['name']}{VIEWS_SUFFIX}/tokenized.json"


def train_resource(name, default):
    return lambda w: config["backbones"][w.backbone].get("resources", {}).get(name, default)
