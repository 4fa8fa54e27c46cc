# Input functions, params and targets of workflow/rules/models.smk, which includes this file first.

from sentrepro.pretrained.names import fetch_spec, snapshot_manifest


def model_manifest(backbone: str) -> str:
    """The MANIFEST.json of a backbone's snapshot (its path follows from config alone)."""
    return snapshot_manifest(RES, backbone, config["backbones"][backbone])
