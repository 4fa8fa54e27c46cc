# Aggregate metrics files into the paper tables (Markdown + long CSV with provenance per cell).


rule table:
    input:
        lambda w: [metrics_file(r, "sts") for r in RUNS],
    output:
        md=f"{EXP}/tables/{{table}}.md",
        csv=f"{EXP}/tables/{{table}}.csv",
    params:
        spec=lambda w: spec_json(table_context()),
        code=code_fingerprint(["tables"]),
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    log:
        f"{EXP}/logs/table/{{table}}.log",
    shell:
        "sentrepro table {wildcards.table} --spec {params.spec:q} --out-prefix {params.prefix:q} --metrics {input} "
        "> {log:q} 2>&1"
