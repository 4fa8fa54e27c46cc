# Input functions, params and targets of workflow/rules/evaluate.smk, which includes this file first.

from sentrepro.runs import backbone_slice
from sentrepro.planning.matrix import train_slice
from sentrepro.planning.evaluations import (
    enabled_suites,
    source_is_synthetic,
    suite_resources,
    suite_runs,
    suite_settings,
    suite_source,
)

# Every suite_* function below takes the suite (a rule per suite, from the registry) and returns the input
# function or param of that suite's rule.
SUITE_ENTRIES = registry.suites()


def suite_targets() -> list[str]:
    """Every (run, suite) metrics file of evaluation.suites, each suite narrowed by its `runs` filter."""
    return [metrics_file(run, suite) for suite in enabled_suites(config) for run in suite_runs(config, suite)]


def corpus_sentences_file() -> str:
    return f"{RES}/corpus/{config['corpus']['name']}/sentences.txt"


def suite_trained_run(suite):
    """The run's training summary, for suites scoring a trained run's best checkpoint."""

    def inputs(w):
        if SUITE_ENTRIES[suite].model == "start" or not trains(w.method):
            return []
        return [f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"]

    return inputs


def suite_model_manifest(suite):
    """The backbone's snapshot, where the suite loads the backbone itself: a frozen run, or step 0."""

    def inputs(w):
        if SUITE_ENTRIES[suite].model == "start" or not trains(w.method):
            return [model_manifest(w.backbone)]
        return []

    return inputs


def suite_stamps(suite):
    """The content stamps of what the suite's job reads: its data source's, and the snapshot's where it loads one."""

    def inputs(w):
        source = suite_source(config, suite)
        stamps = [data_stamp(source)] if source else []
        return stamps + [content_stamp(m) for m in suite_model_manifest(suite)(w)]

    return inputs


def suite_data(suite):
    def inputs(w):
        source = suite_source(config, suite)
        return manifest(source) if source else corpus_sentences_file()

    return inputs


def suite_checked(suite):
    """CHECKED.json of the source a suite reads (none for the training corpus)."""

    def inputs(w):
        source = suite_source(config, suite)
        return [checked(source)] if source else []

    return inputs


def suite_spec(suite):
    """The suite job's slice: the run (backbone, method, seed), the data it reads, the suite's settings."""

    def spec(w):
        run = run_of(w)
        source = suite_source(config, suite)
        return spec_json({
            "run": {"backbone": run.backbone, "method": run.method, "seed": run.seed},
            "backbone": backbone_slice(config, run.backbone),
            "method": {"kind": method_kind(run.method), "params": train_slice(config, run)["method"]["params"]},
            "seed": run.seed,
            "attention": config["training"]["attention"],
            "suite": suite,
            "source": source or config["corpus"]["source"],
            "synthetic": source_is_synthetic(config, source or config["corpus"]["source"]),
            "settings": suite_settings(config, suite),
        })

    return spec


def suite_resource_values(suite):
    """The resources of every job of ``suite`` (the registry's, overridden by evaluation.<suite>.resources),
    with the SLURM partition and GPU model its GPU count asks for (workflow/rules/slurm.smk)."""
    values = suite_resources(config, suite)  # the keys config.schema.yaml's `resources` allows
    return {**values, "slurm_partition": partition_for(values["gpu"]), "gpu_model": gpu_model_for(values["gpu"])}
