"""The norms suite the extension tests add: a recipe suite (test_registry_extension) and a plug-in suite
(test_units, test_plugins) run the same code under two names, so its text is written once here."""

# The module's body after its docstring: the mean L2 norm of a run's STS-B sentence vectors.
NORMS_SUITE_BODY = '''
from pathlib import Path

import numpy as np

from sentrepro.data.benchmarks.sts import read_sts_benchmark
from sentrepro.evaluation.job import SuiteJob, source_root, write_metrics


def run_norms(job: SuiteJob, manifest: Path, out: Path) -> dict:
    split = job.settings["split"]
    path = source_root(manifest) / job.settings["sts"]["stsb_dir"] / f"sts-{split}.csv"
    pairs = read_sts_benchmark(path, split=split, check_counts=job.check_counts)
    job.add_data_files([path], f"STS-B {split}")
    vectors = job.embed([s for pair in pairs for s in (pair.s1, pair.s2)])  # (2n, H)
    norms = np.linalg.norm(vectors, axis=1)
    return write_metrics(job, out, {"mean_norm": {"reported": float(norms.mean()), "n": int(len(norms))}},
                         aggregation=f"mean L2 norm of the STS-B {split} sentence vectors")
'''


def norms_suite_module(docstring: str) -> str:
    """The suite's module text with its own one-line docstring."""
    return f'"""{docstring}"""\n' + NORMS_SUITE_BODY


def norms_suite_units(name: str) -> str:
    """The ``suites:`` section of the suite's sidecar, the suite called ``name``."""
    return NORMS_SUITE_UNITS.replace("  norms:", f"  {name}:", 1)


NORMS_SUITE_UNITS = """suites:
  norms:
    implementation: run_norms
    data: sts
    model: checkpoint
    resources: {mem_mb: 2000, runtime: 10, cpus_per_task: 1, gpu: 0}
    cost: {small: 5, base: 10, large: 20}
    settings:
      description: mean L2 norm of STS-B sentence vectors
      properties:
        split: {enum: [dev, test], default: test}
        device: {$ref: "#/$defs/suite_device"}
"""
