"""Which evaluation suites and figures the workflow runs, for which runs, on which data: config -> plan.

Light on purpose (no torch): the Snakefile imports it while it builds the DAG. The suites and figures
themselves, and what each reads, come from the registry (the suites' units: ``evaluation/*.units.yaml`` sidecars, and plug-ins).

* ``evaluation.suites`` lists the suites to run (``sts`` alone by default). Each suite writes one
  metrics file per run, ``results/<exp>/metrics/<backbone>/<method>/<run>/<suite>.json``.
* ``evaluation.<suite>.runs`` (optional) narrows a suite to some backbones and/or methods, e.g.
  clustering only for the BERT rows of ConPVP Table 6; absent means every run of the matrix. A suite
  scoring the model a training job starts from (``model: start``) gets the trained runs only.
* ``evaluation.figures`` lists the figures to draw; each is drawn from the metrics files of its suite,
  over every run that has it (a figure whose suite selects no run is skipped, so an overlay with other
  backbones, like the tests', still plans).

A suite's settings reach its job as one JSON slice (:func:`suite_settings`), so changing, say, the
clustering seeds reruns the clustering jobs and nothing else.
"""

from __future__ import annotations

from sentrepro.planning import registry
from sentrepro.runs import ConfigError, Run
from sentrepro.planning.matrix import runs
from sentrepro.planning.registry import SCHEDULING_KEYS


def evaluation_config(config: dict) -> dict:
    return config.get("evaluation", {})


def enabled_suites(config: dict) -> list[str]:
    """``evaluation.suites`` (default: just ``sts``), checked against the registry's suites."""
    names = list(evaluation_config(config).get("suites", ["sts"]))
    for name in names:
        if name not in registry.suites():
            raise ConfigError(f"evaluation.suites: unknown suite '{name}' (known: {', '.join(registry.suites())})")
    return names


def suite_block(config: dict, suite: str) -> dict:
    """The config block a suite reads (``evaluation.<suite>``, or the block it shares); missing is an error."""
    name = registry.suite(suite).config_block
    block = evaluation_config(config).get(name)
    if block is None:
        raise ConfigError(f"evaluation.{name}: missing (suite '{suite}' reads it)")
    return block


def selects(block: dict, run: Run) -> bool:
    """True when ``run`` passes the block's ``runs`` filter (backbones and/or methods; absent = all)."""
    selection = block.get("runs") or {}
    backbones, methods = selection.get("backbones"), selection.get("methods")
    return (backbones is None or run.backbone in backbones) and (methods is None or run.method in methods)


def suite_runs(config: dict, suite: str) -> list[Run]:
    """The runs of the matrix that get ``suite`` (its block's filter; trained runs only for step-0 suites)."""
    entry = registry.suite(suite)
    block = evaluation_config(config).get(entry.config_block) or {}
    chosen = [run for run in runs(config) if selects(block, run)]
    if entry.model == "start":
        chosen = [run for run in chosen if run.seed is not None]
    return chosen


def _result_keys(block: dict) -> dict:
    return {k: v for k, v in block.items() if k not in SCHEDULING_KEYS}


def suite_settings(config: dict, suite: str) -> dict:
    """The config slice a suite's result depends on (encoder batch size included; the STS block as
    ``sts`` for suites reading the STS data)."""
    settings = _result_keys(suite_block(config, suite))
    settings["batch_size"] = evaluation_config(config).get("batch_size", 128)
    if registry.suite(suite).data == "sts":
        settings["sts"] = _result_keys(suite_block(config, "sts"))
    return settings


def suite_source(config: dict, suite: str) -> str | None:
    """The data source a suite reads (None for suites reading the training corpus)."""
    data = registry.suite(suite).data
    if data == "corpus":
        return None
    return suite_block(config, "sts" if data == "sts" else suite)["source"]


def source_is_synthetic(config: dict, source: str) -> bool:
    return bool(config["data"]["sources"][source].get("synthetic", False))


def suite_resources(config: dict, suite: str) -> dict:
    """The suite's registry defaults, overridden by ``evaluation.<suite>.resources``."""
    block = evaluation_config(config).get(registry.suite(suite).config_block) or {}
    return {**registry.suite(suite).resources, **(block.get("resources") or {})}


def enabled_figures(config: dict) -> list[str]:
    """``evaluation.figures`` (default none); each needs its suite enabled."""
    names = list(evaluation_config(config).get("figures", []))
    suites = set(enabled_suites(config))
    for name in names:
        if name not in registry.figures():
            raise ConfigError(f"evaluation.figures: unknown figure '{name}' (known: {', '.join(registry.figures())})")
        needed = registry.figure(name).suite
        if needed not in suites:
            raise ConfigError(f"evaluation.figures: figure '{name}' needs suite '{needed}' in evaluation.suites")
    return names


def drawable_figures(config: dict) -> list[str]:
    """The enabled figures whose suite selects at least one run (a figure of nothing is not drawn)."""
    return [name for name in enabled_figures(config) if suite_runs(config, registry.figure(name).suite)]


def check_plan(config: dict) -> None:
    """Cross-reference checks the schema cannot express; raises ConfigError naming the key."""
    problems = []
    try:
        suites = enabled_suites(config)
        enabled_figures(config)
    except ConfigError as error:
        raise ConfigError(f"invalid configuration:\n  {error}") from None
    sources = config["data"]["sources"]
    evaluation = evaluation_config(config)
    needed = {registry.suite(suite).config_block: suite for suite in suites}
    needed.update({"sts": suite for suite in suites if registry.suite(suite).data == "sts"})
    problems += [f"evaluation.{block}: missing (suite '{suite}' reads it)"
                 for block, suite in needed.items() if block not in evaluation]
    for name, entry in registry.suites().items():  # every block present is checked, enabled or not
        block = evaluation.get(name)
        if block is None or entry.settings is None:
            continue
        source = block.get("source")
        if source is not None and source not in sources:
            problems.append(f"evaluation.{name}.source: unknown source '{source}'")
        selection = block.get("runs") or {}
        for backbone in selection.get("backbones") or []:
            if backbone not in config["backbones"]:
                problems.append(f"evaluation.{name}.runs.backbones: unknown backbone '{backbone}'")
        for method in selection.get("methods") or []:
            if method not in config["methods"]:
                problems.append(f"evaluation.{name}.runs.methods: unknown method '{method}'")
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
