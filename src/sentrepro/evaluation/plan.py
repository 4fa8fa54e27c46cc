"""Which evaluation suites and figures the workflow runs, for which runs, on which data: config -> plan.

Light on purpose (no torch): the Snakefile imports it while it builds the DAG.

* ``evaluation.suites`` lists the suites to run. Each suite writes one metrics file per run,
  ``results/<exp>/metrics/<backbone>/<method>/<run>/<suite>.json``.
* ``evaluation.<suite>.runs`` (optional) narrows a suite to some backbones and/or methods, e.g.
  clustering only for the BERT rows of ConPVP Table 6; absent means every run of the matrix.
* ``evaluation.figures`` lists the figures to draw; each is drawn from the metrics files of the suite
  of the same name, over every run that has it (a figure whose suite selects no run is skipped, so an
  overlay with other backbones, like the tests', still plans).

A suite's settings reach its job as one JSON slice (:func:`suite_settings`), so changing, say, the
clustering seeds reruns the clustering jobs and nothing else.
"""

from __future__ import annotations

from sentrepro.config import ConfigError, Run, runs

# Suites with a SentEval-style protocol (one rule family: evaluate_suite) and the analyses behind
# the papers' figures (rule family: analyse). ``sts`` has its own rule (evaluate_sts).
PROTOCOL_SUITES = ("transfer", "fewshot", "clustering", "wos")
ANALYSIS_SUITES = ("cosine_gold", "token_removal", "tsne", "align_uniform", "anisotropy")
SUITES = ("sts",) + PROTOCOL_SUITES + ANALYSIS_SUITES
FIGURES = ("cosine_gold", "token_removal", "tsne", "fewshot", "align_uniform", "anisotropy")

# Analyses read STS-B (and token_removal all STS tasks) from evaluation.sts; anisotropy reads the
# prepared training corpus.
STS_ANALYSES = ("cosine_gold", "token_removal", "tsne", "align_uniform")

# Keys of a suite block that only schedule or select jobs; they never change a result.
_NOT_RESULT_KEYS = ("runs", "resources")


def evaluation_config(config: dict) -> dict:
    return config.get("evaluation", {})


def enabled_suites(config: dict) -> list[str]:
    """``evaluation.suites`` (default: just ``sts``), checked against the known suites."""
    names = list(evaluation_config(config).get("suites", ["sts"]))
    for name in names:
        if name not in SUITES:
            raise ConfigError(f"evaluation.suites: unknown suite '{name}' (known: {', '.join(SUITES)})")
    return names


def suite_block(config: dict, suite: str) -> dict:
    """``evaluation.<suite>``; an enabled suite without its block is a config error."""
    block = evaluation_config(config).get(suite)
    if block is None:
        raise ConfigError(f"evaluation.{suite}: missing (the suite is listed in evaluation.suites)")
    return block


def selects(block: dict, run: Run) -> bool:
    """True when ``run`` passes the block's ``runs`` filter (backbones and/or methods; absent = all)."""
    selection = block.get("runs") or {}
    backbones, methods = selection.get("backbones"), selection.get("methods")
    return (backbones is None or run.backbone in backbones) and (methods is None or run.method in methods)


def suite_runs(config: dict, suite: str) -> list[Run]:
    """The runs of the matrix that get ``suite`` (every run for ``sts`` unless filtered)."""
    block = evaluation_config(config).get(suite) or {}
    return [run for run in runs(config) if selects(block, run)]


def suite_settings(config: dict, suite: str) -> dict:
    """The config slice a suite's result depends on (encoder batch size included)."""
    block = suite_block(config, suite)
    settings = {k: v for k, v in block.items() if k not in _NOT_RESULT_KEYS}
    settings["batch_size"] = evaluation_config(config).get("batch_size", 128)
    if suite in STS_ANALYSES:
        settings["sts"] = {k: v for k, v in suite_block(config, "sts").items() if k not in _NOT_RESULT_KEYS}
    return settings


def suite_source(config: dict, suite: str) -> str | None:
    """The data source a suite reads (None for anisotropy, which reads the training corpus)."""
    if suite == "anisotropy":
        return None
    if suite in STS_ANALYSES:
        return suite_block(config, "sts")["source"]
    return suite_block(config, suite)["source"]


def source_is_synthetic(config: dict, source: str) -> bool:
    return bool(config["data"]["sources"][source].get("synthetic", False))


def suite_resources(config: dict, suite: str) -> dict:
    return dict((evaluation_config(config).get(suite) or {}).get("resources") or {})


def enabled_figures(config: dict) -> list[str]:
    """``evaluation.figures`` (default none); each needs its suite enabled."""
    names = list(evaluation_config(config).get("figures", []))
    suites = set(enabled_suites(config))
    for name in names:
        if name not in FIGURES:
            raise ConfigError(f"evaluation.figures: unknown figure '{name}' (known: {', '.join(FIGURES)})")
        if name not in suites:
            raise ConfigError(f"evaluation.figures: figure '{name}' needs suite '{name}' in evaluation.suites")
    return names


def drawable_figures(config: dict) -> list[str]:
    """The enabled figures whose suite selects at least one run (a figure of nothing is not drawn)."""
    return [name for name in enabled_figures(config) if suite_runs(config, name)]


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
    problems += [f"evaluation.{suite}: missing (the suite is listed in evaluation.suites)"
                 for suite in suites if suite != "sts" and suite not in evaluation]
    for suite in SUITES[1:]:  # every block present is checked, enabled or not
        block = evaluation.get(suite)
        if block is None:
            continue
        source = block.get("source")
        if source is not None and source not in sources:
            problems.append(f"evaluation.{suite}.source: unknown source '{source}'")
        selection = block.get("runs") or {}
        for backbone in selection.get("backbones") or []:
            if backbone not in config["backbones"]:
                problems.append(f"evaluation.{suite}.runs.backbones: unknown backbone '{backbone}'")
        for method in selection.get("methods") or []:
            if method not in config["methods"]:
                problems.append(f"evaluation.{suite}.runs.methods: unknown method '{method}'")
        if suite in STS_ANALYSES and suite in suites and "sts" not in evaluation:
            problems.append(f"evaluation.{suite}: reads STS-B through evaluation.sts, which is missing")
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
