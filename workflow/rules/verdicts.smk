# Reproduction verdicts: every claim of src/sentrepro/verdicts/claims.yaml tested on the metrics files the
# claims' tables read (and the per-pair STS scores beside them) -> results/<exp>/verdicts.{md,csv,cells.csv,html,forest.svg}.
# claims.yaml is part of params.code, so editing it reruns this rule only; of reported.yaml, only the entries
# the claims' tables read (params.data_entries).

include: "inputs/verdicts.smk"


rule verdicts:
    """Does each published claim hold? `verdicts.md`/`.html` (the page: claims grouped by paper and table,
    verdict badges, notes, the forest plot), `verdicts.csv` (one row per claim: sides, statistic, intervals,
    verdict, magnitude, Holm), `verdicts.cells.csv` (every reproduced cell against the paper's number within
    its noise) and `verdicts.forest.svg` (per claim ours with its intervals against the paper's difference)."""
    input:
        metrics=verdict_metrics,
        pair_scores=verdict_pair_scores,
    output:
        md=f"{EXP}/verdicts.md",
        csv=f"{EXP}/verdicts.csv",
        cells=f"{EXP}/verdicts.cells.csv",
        forest=f"{EXP}/verdicts.forest.svg",
        html=report(
            f"{EXP}/verdicts.html",
            caption="../report/verdicts.rst",
            category="Verdicts",
            labels={"verdicts": "claims of ConPVP, PromptBERT, MoCoUTRL"},
        ),
    params:
        spec=lambda w: spec_json(table_context()),
        code=rule_code("cli:verdicts"),
        data_entries=entry_data("cli:verdicts", lambda w: {REPORTED_PATH: verdict_entries()}),
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    log:
        f"{EXP}/logs/verdicts.log",
    shell:
        "sentrepro verdicts --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--metrics {input.metrics} > {log:q} 2>&1"
