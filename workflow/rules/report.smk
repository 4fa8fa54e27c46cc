# The paper tables: metrics files -> long CSV (provenance per cell), per-seed CSV, Markdown, LaTeX and
# HTML, published numbers beside ours. The HTML goes into `snakemake --report report.html`, with the
# caption workflow/report/tables/<table>.rst; figures are marked for the report in figures.smk.

include: "inputs/report.smk"


rule table:
    """One paper table, ours beside the published numbers: `.md`, `.tex` and `.html` (caption included:
    statistic, like-with-like notes, stand-in and synthetic labels), `.csv` in long format
    (`table,row,column,value,std,n,reported,provenance`; each cell's provenance names its metrics files with
    their sha256, what `sentrepro audit` follows) and `.seeds.csv` with every seed's number, to recompute
    either statistic."""
    input:
        metrics=table_metrics,
    output:
        md=f"{EXP}/tables/{{table}}.md",
        csv=f"{EXP}/tables/{{table}}.csv",
        seeds=f"{EXP}/tables/{{table}}.seeds.csv",
        tex=f"{EXP}/tables/{{table}}.tex",
        html=report(
            f"{EXP}/tables/{{table}}.html",
            caption="../report/table.rst",
            category="Tables",
            subcategory=table_paper,
            labels={"table": "{table}"},
        ),
    wildcard_constraints:
        table=r"(?!demo_summary\.)[A-Za-z0-9_-]+",  # demo_summary.* is its own rule
    params:
        spec=lambda w: spec_json(table_context()),
        code=rule_code("cli:table"),
        data_entries=entry_data("cli:table", lambda w: {REPORTED_PATH: spec_entries(load_table_spec(w.table))}),
        description=table_description_text,
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    benchmark:
        f"{EXP}/benchmarks/table/{{table}}.tsv",
    log:
        f"{EXP}/logs/table/{{table}}.log",
    shell:
        "sentrepro table {wildcards.table} --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--description-text {params.description:q} --metrics {input.metrics} > {log:q} 2>&1"


# The demo's closing table (demo_summary.enabled): each trained run on real STS-B test, before -> after.
rule demo_summary:
    """The demo's closing table: per trained run, STS-B test before (the step-0 model) and after training, the
    change, training steps and time, and the paper's number as context only. `.md`, `.html`, and `.csv` in the
    tables' long format (auditable)."""
    input:
        train=lambda w: [summary_run(r)["train"] for r in summary_runs()],
        before=lambda w: [summary_run(r)["before"] for r in summary_runs()],
        after=lambda w: [summary_run(r)["after"] for r in summary_runs()],
    output:
        md=f"{EXP}/tables/demo_summary.md",
        csv=f"{EXP}/tables/demo_summary.csv",
        html=report(
            f"{EXP}/tables/demo_summary.html",
            caption="../report/demo_summary.rst",
            category="Demo summary",
        ),
    params:
        spec=lambda w: spec_json(demo_summary_spec()),
        code=rule_code("cli:demo-summary"),
        data_entries=entry_data("cli:demo-summary", lambda w: {REPORTED_PATH: demo_summary_entries()}),
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    benchmark:
        f"{EXP}/benchmarks/demo_summary.tsv",
    log:
        f"{EXP}/logs/demo_summary.log",
    shell:
        "sentrepro demo-summary --spec {params.spec:q} --out-prefix {params.prefix:q} > {log:q} 2>&1"
