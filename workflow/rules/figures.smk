# The papers' figures, each drawn from the metrics files of one suite (the figure units: e.g.
# src/sentrepro/evaluation/figures.units.yaml) over every run that has it. The suites themselves run
# in workflow/rules/evaluate.smk.

include: "inputs/figures.smk"


rule figure:
    """A paper figure drawn from one suite's metrics files over every run that has them: `<figure>.png` and
    `<figure>.pdf`, and `<figure>.json` listing the metrics files drawn with their sha256."""
    input:
        figure_metrics,
    output:
        png=report(
            f"{EXP}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=figure_paper,
            labels={"figure": "{figure}"},
        ),
        pdf=f"{EXP}/figures/{{figure}}.pdf",
        record=f"{EXP}/figures/{{figure}}.json",
    params:
        spec=lambda w: spec_json(figure_context()),
        code=figure_code("cli:figure"),
        prefix=lambda w, output: output.png[: -len(".png")],
    conda:
        "../../envs/report.yaml"
    benchmark:
        f"{EXP}/benchmarks/figure/{{figure}}.tsv",
    log:
        f"{EXP}/logs/figure/{{figure}}.log",
    shell:
        "sentrepro figure {wildcards.figure} --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--metrics {input} > {log:q} 2>&1"
