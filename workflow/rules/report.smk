# The paper tables: metrics files -> long CSV (provenance per cell), per-seed CSV, Markdown, LaTeX and
# HTML, published numbers beside ours. The HTML goes into `snakemake --report report.html`, with the
# caption workflow/report/tables/<table>.rst; figures are marked for the report in suites.smk.


rule table:
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
        table=r"[A-Za-z0-9_-]+",
    params:
        spec=lambda w: spec_json(table_context()),
        code=rule_code("cli:table"),
        description=table_description_text,
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    log:
        f"{EXP}/logs/table/{{table}}.log",
    shell:
        "sentrepro table {wildcards.table} --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--description-text {params.description:q} --metrics {input.metrics} > {log:q} 2>&1"
