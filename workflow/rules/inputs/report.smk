# Input functions, params and targets of workflow/rules/report.smk, which includes this file first.

from sentrepro.planning.reported import REPORTED_PATH, spec_entries
from sentrepro.planning.table_cells import table_inputs
from sentrepro.planning.table_specs import load_spec as load_table_spec

REPORT_DIR = Path(workflow.basedir) / "workflow" / "report"


def table_targets() -> list[str]:
    return [f"{EXP}/tables/{name}.{ext}" for name in config["tables"] for ext in ("md", "csv")]


def table_context():
    return {
        "experiment": config["experiment"],
        "backbones": {n: {"stands_in_for": b.get("stands_in_for", n), **stand_in_entry(b)}
                      for n, b in config["backbones"].items()},
        "synthetic": any_synthetic(),
    }


def stand_in_entry(backbone: dict) -> dict:
    """``{"stand_in": "tiny random <kind>/<size>"}`` for a tiny:// backbone (the rehearsal), else nothing: so a
    config without tiny backbones hands the table jobs exactly the params it did before."""
    label = tiny.stand_in_label(backbone)
    return {"stand_in": label} if label else {}


def suite_runs_if_enabled(suite):
    """Runs that get ``suite`` when it is enabled (evaluation.suites), else none."""
    if suite not in enabled_suites(config):
        return []
    return suite_runs(config, suite)


def table_metrics(w):
    """The metrics files one table reads (its spec's cells x the runs the evaluation plan produces)."""
    spec = load_table_spec(w.table, config["methods"])  # every suite, method and column it names exists
    pairs = table_inputs(spec, RUNS, config["backbones"], suite_runs_if_enabled)
    return [metrics_file(run, suite) for run, suite in pairs]


def table_description(w):
    return str(REPORT_DIR / "tables" / f"{w.table}.rst")


def table_description_text(w):
    """The caption text itself is the table rule's param (and reaches the job on its command line): no
    path of this checkout is an input or param, so a moved or copied project plans nothing."""
    return Path(table_description(w)).read_text(encoding="utf-8")


def table_paper(w):
    return load_table_spec(w.table)["paper"]


def summary_runs() -> list[Run]:
    """Every trained run of the matrix, in matrix order."""
    return [run for run in RUNS if trains(run.method)]


def summary_run(run: Run) -> dict:
    from sentrepro.tables.demo_summary import summary_suite  # its suites, checked against the units

    before, after = summary_suite("before"), summary_suite("after")
    return {"backbone": run.backbone, "method": run.method, "seed": run.seed,
            "train": f"{run_dir(run)}/train.json", "before": metrics_file(run, before),
            "after": metrics_file(run, after)}


def demo_summary_spec() -> dict:
    stands = {n: b.get("stands_in_for", n) for n, b in config["backbones"].items()}
    return {"experiment": config["experiment"], "runs": [summary_run(r) for r in summary_runs()],
            "stands_in": {n: [v] if isinstance(v, str) else list(v) for n, v in stands.items()}}


def demo_summary_entries() -> list[str]:
    """The reported.yaml entries the demo summary reads (the paper's STS-B number of each run's method)."""
    from sentrepro.tables.demo_summary import context_entries

    spec = demo_summary_spec()
    return context_entries(spec["runs"], spec["stands_in"])


def demo_summary_targets() -> list[str]:
    if not config["demo_summary"]["enabled"]:
        return []
    return [f"{EXP}/tables/demo_summary.{ext}" for ext in ("md", "csv")]
