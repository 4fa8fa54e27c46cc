# Input functions, params and targets of workflow/rules/data.smk, which includes this file first.

import re

from sentrepro.runs import corpus_slice, source_slice
from sentrepro.data import benchmarks as benchmark_units

FIXTURES = f"{RES}/fixtures"
# The `generator` wildcard: the fixtures the benchmark units declare (sentrepro.data.benchmarks).
FIXTURE_NAMES = "|".join(re.escape(name) for name in benchmark_units.generators())


def source_unit(w) -> str:
    """The module of the benchmark unit declaring the layout of source ``w.source``'s check block."""
    return benchmark_units.layout_module(config["data"]["sources"][w.source]["check"]["layout"])


def fixture_unit(w) -> str:
    """The module of the benchmark unit whose fixture is ``w.generator``."""
    return benchmark_units.fixture_module(w.generator)


def download_record_for(w):
    spec = source_slice(config, w.source)
    return [f"{RES}/downloads/{w.source}/download.json"] if spec["format"] != "directory" else []


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
