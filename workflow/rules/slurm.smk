# SLURM site settings of GPU jobs (profiles/slurm/README.md). The profile sets the partition and account of
# every job from SENTREPRO_SLURM_*; only a rule knows whether its job asks for GPUs, so GPU-capable rules
# (train, evaluate_<suite>) pick the GPU partition and model here. A resource that evaluates to None is
# left out of the sbatch call (the cluster's default applies).
import os


def _slurm_site(name: str) -> str:
    """SENTREPRO_SLURM_<name>, stripped; empty when unset."""
    return os.environ.get(f"SENTREPRO_SLURM_{name}", "").strip()


def partition_for(gpus):
    """The slurm_partition resource of a job asking for ``gpus`` GPUs: the site's GPU partition for GPU jobs
    when it names one, else the site's partition; None = the cluster's default."""
    if gpus > 0 and _slurm_site("GPU_PARTITION"):
        return _slurm_site("GPU_PARTITION")
    return _slurm_site("PARTITION") or None


def gpu_model_for(gpus):
    """The gpu_model resource (sbatch --gpus=<model>:<n>) of a job asking for ``gpus`` GPUs: the site's GPU
    type, for GPU jobs only (a model alone makes the plugin request a GPU); None otherwise."""
    return (_slurm_site("GPU_MODEL") or None) if gpus > 0 else None


def gpu_partition(gpus):
    """:func:`partition_for` of a job whose GPU count is ``gpus(wildcards)`` (a resource function)."""
    return lambda wildcards: partition_for(gpus(wildcards))


def gpu_model(gpus):
    """:func:`gpu_model_for` of a job whose GPU count is ``gpus(wildcards)`` (a resource function)."""
    return lambda wildcards: gpu_model_for(gpus(wildcards))
