"""Provenance records: where a result came from, and checking that it still holds.

Every JSON the workflow writes (dataset manifest, tokenized corpus, training summary, metrics file)
carries a ``provenance`` block: its inputs with sha256, the resolved config slice, seed, code
version (git commit + dirty flag + package version), library versions, device, precision, wall
time, host, SLURM job id, the job's CUDA_VISIBLE_DEVICES and HF_HUB_OFFLINE. Inputs that are themselves
provenance-carrying JSON files are followed by ``audit`` down to the raw downloads.

``code_fingerprint`` is the fingerprint of the code the job ran, per module
(:func:`sentrepro.code.codedeps.code_record` of the command's entry point), so that ``audit`` and the table
builder can say which outputs were made by code that has changed since. Input paths are recorded
relative to the project (the working directory); a file inside an installed package (a backbone shipped
on PyPI) as ``pkg://<package>/<path>`` with the distribution's name and version, never by the absolute
path of one machine's virtual environment.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.util
import os
import platform
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from sentrepro import __version__
from sentrepro.code.codedeps import running_record
from sentrepro.hashing import sha256_file

# The records an exported model folder carries beside its files (written by sentrepro.export; read by the audit).
EXPORT_RECORD = "sentrepro_export.json"  # the weights export's: every file's sha256 and the provenance
CARD_RECORD = "sentrepro_card.json"  # the model card's

LIBRARIES = ("torch", "transformers", "tokenizers", "numpy", "scipy", "scikit-learn", "snakemake")


@functools.lru_cache(maxsize=1)
def code_version() -> dict:
    """Git commit and dirty flag of the checkout the package runs from, plus the package version."""
    repo = Path(__file__).resolve().parents[3]
    info: dict[str, Any] = {"package": __version__, "commit": None, "dirty": None}
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        if commit.returncode == 0:
            info["commit"] = commit.stdout.strip()
            status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10)
            info["dirty"] = bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


@functools.lru_cache(maxsize=1)
def library_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# Variables that choose which CPU kernels torch, MKL and oneDNN run, and so a float result's last bits.
NUMERICS_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


@functools.lru_cache(maxsize=1)
def cpu_model() -> str | None:
    """The CPU's model name (/proc/cpuinfo's first ``model name``; ``platform.processor()`` elsewhere), None
    when neither names one."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def device_info(device: str | None = None) -> dict:
    """The device a job ran on, and, when the job used torch, its thread count, the CPU with the kernel family
    torch picked on it (``cpu_capability``: AVX2, AVX512, DEFAULT) and the variables that chose kernels, and
    the GPU's name. The same code gives other float bits on another CPU family (issue 45's seed-1 run), so a
    result records the CPU it was computed on. A job that never imported torch (downloads, data checks, tables)
    computed nothing with it: importing it here only to read these would cost every such command about two
    seconds of start-up."""
    info: dict[str, Any] = {"device": device or "cpu"}
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        info["cpu"] = cpu_model()
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        chosen = {name: os.environ[name] for name in NUMERICS_VARIABLES if name in os.environ}
        if chosen:
            info["numerics_env"] = chosen
        if device and device.startswith("cuda") and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    return info


SITE_DIRS = ("site-packages", "dist-packages")


def installed_package_file(path: Path) -> dict | None:
    """``{"path": "pkg://<package>/<file>", "package": <distribution>, "version": ...}`` for a file inside
    an installed package (site-packages), else None."""
    parts = path.resolve().parts
    site = max((i for i, part in enumerate(parts) if part in SITE_DIRS), default=None)
    if site is None or site + 2 > len(parts) - 1:
        return None
    top, rest = parts[site + 1], parts[site + 2:]
    distributions = metadata.packages_distributions().get(top, [])
    record: dict[str, Any] = {"path": f"pkg://{top}/{'/'.join(rest)}"}
    if distributions:
        record["package"] = distributions[0]
        record["version"] = metadata.version(distributions[0])
    return record


def project_path(path: str | os.PathLike) -> dict:
    """How a path is recorded: relative to the project (working directory) when inside it, a package
    file by package and version, anything else (a model directory elsewhere) as given."""
    path = Path(path)
    if path.is_absolute():
        installed = installed_package_file(path)
        if installed is not None:
            return installed
        try:
            return {"path": str(path.resolve().relative_to(Path.cwd().resolve()))}
        except ValueError:
            return {"path": str(path)}
    return {"path": str(path)}


def local_path(recorded: str) -> Path:
    """The file a recorded path names on this machine (``pkg://`` resolved in the installed package)."""
    if recorded.startswith("pkg://"):
        package, _, rest = recorded.removeprefix("pkg://").partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return Path(recorded)  # not installed here: reported missing by whoever checks it
        return Path(list(spec.submodule_search_locations)[0]) / rest
    return Path(recorded)


def file_record(path: str | os.PathLike, role: str) -> dict:
    """An input entry: role, path (see :func:`project_path`), sha256, size."""
    path = Path(path)
    return {"role": role, **project_path(path), "sha256": sha256_file(path), "bytes": path.stat().st_size}


@dataclass
class Provenance:
    """Collects a step's provenance while it runs; ``finish()`` returns the JSON block."""

    step: str
    config: dict
    seed: int | None = None
    device: str = "cpu"
    precision: str = "fp32"
    inputs: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    _start: float = field(default_factory=time.time)

    def add_input(self, path: str | os.PathLike, role: str) -> dict:
        record = file_record(path, role)
        self.inputs.append(record)
        return record

    def finish(self) -> dict:
        end = time.time()
        return {
            "step": self.step,
            "inputs": self.inputs,
            "config": self.config,
            "seed": self.seed,
            "code": code_version(),
            "code_fingerprint": running_record(),
            "libraries": library_versions(),
            "device": device_info(self.device),
            "precision": self.precision,
            "started": _dt.datetime.fromtimestamp(self._start, _dt.timezone.utc).isoformat(),
            "wall_seconds": round(end - self._start, 3),
            "host": socket.gethostname(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            # The GPUs SLURM (or the user) gave the job; None when none were assigned.
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            # "1" in workflow jobs that load models: they read only fetched snapshots (rule fetch_model)
            "hf_hub_offline": os.environ.get("HF_HUB_OFFLINE"),
            **self.extra,
        }
