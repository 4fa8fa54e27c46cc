# SLURM site settings of GPU jobs (profiles/slurm/README.md). The profile sets the partition and account of
# every job from SENTREPRO_SLURM_*; only a rule knows whether its job asks for GPUs, so GPU-capable rules
# (train, evaluate_<suite>) pick the GPU partition and model here. A resource that evaluates to None is
# left out of the sbatch call (the cluster's default applies).
import os


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
