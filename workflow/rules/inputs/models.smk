# Input functions, params and targets of workflow/rules/models.smk, which includes this file first.

from sentrepro.pretrained import tiny_names as tiny
from sentrepro.pretrained.names import fetch_spec, snapshot_manifest


def model_manifest(backbone: str) -> str:
    """The MANIFEST.json of a backbone's snapshot (its path follows from config alone)."""
    return snapshot_manifest(RES, backbone, config["backbones"][backbone])


TINY_MODELS = f"{RES}/{tiny.TINY_DIR}"


def tiny_model_input(w):
    """The tiny model a tiny:// backbone's fetch reads (rule tiny_model builds it); nothing for other models."""
    model = config["backbones"][w.backbone]["model"]
    return [str(tiny.build_dir(RES, model))] if tiny.is_tiny(model) else []
