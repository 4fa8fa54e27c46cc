# Aggregate metrics files into the paper tables (Markdown + long CSV with provenance per cell).


def table_context():
    return {
        "experiment": config["experiment"],
        "backbones": {n: {"stands_in_for": b.get("stands_in_for", n)} for n, b in config["backbones"].items()},
        "synthetic": any_synthetic(),
    }


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
    log:
        f"{EXP}/logs/table/{{table}}.log",
    shell:
        "sentrepro table {wildcards.table} --spec {params.spec:q} --out-prefix {params.prefix:q} --metrics {input} "
        "> {log:q} 2>&1"
