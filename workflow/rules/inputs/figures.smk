# Input functions, params and targets of workflow/rules/figures.smk, which includes this file first.

from sentrepro.planning.evaluations import drawable_figures


def figure_targets() -> list[str]:
    return [f"{EXP}/figures/{name}.{ext}" for name in drawable_figures(config) for ext in ("png", "pdf")]


def figure_metrics(w):
    return [metrics_file(run, registry.figure(w.figure).suite)
            for run in suite_runs(config, registry.figure(w.figure).suite)]


def primary_stand_in(name, backbone):
    """The paper backbone a demo backbone is labelled as in figures (the first of a list); a tiny random
    backbone (the rehearsal) is labelled as what it is, whatever its name."""
    value = backbone.get("stands_in_for", name)
    value = value if isinstance(value, str) else value[0]
    label = tiny.stand_in_label(backbone)
    return f"{value} ({label})" if label else value


def figure_context():
    return {
        "experiment": config["experiment"],
        "stands_in": {n: primary_stand_in(n, b) for n, b in config["backbones"].items()},
    }


def figure_paper(w):
    return registry.figure(w.figure).paper
