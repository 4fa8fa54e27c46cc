# Reproduction verdicts: every claim of src/sentrepro/tables/claims.yaml tested on the metrics files the
# claims' tables read (and the per-pair STS scores beside them) -> results/<exp>/verdicts.{md,csv,cells.csv,html}.
# claims.yaml is part of params.code, so editing it reruns this rule only.
from types import SimpleNamespace

from sentrepro.evaluation.item_scores import pairs_path
from sentrepro.verdicts.claims import claim_tables, load_claims


def verdict_targets():
    return [f"{EXP}/verdicts.{ext}" for ext in ("md", "csv", "html")]


def verdict_tables():
    return claim_tables(load_claims())


def verdict_metrics(w):
    """Every metrics file the claims' tables read (each once), as the table rule would request them."""
    files = set()
    for name in verdict_tables():
        files.update(table_metrics(SimpleNamespace(table=name)))
    return sorted(files)


def verdict_items(w):
    """The per-pair scores beside every STS metrics file the verdicts read (written by evaluate_sts)."""
    return [str(pairs_path(f)) for f in verdict_metrics(w) if f.endswith("/sts.json")]


def verdict_code(w):
    return code_fingerprint(["verdicts", "stats.py", "tables", "tables/reported.yaml", "tables/claims.yaml",
                             "evaluation/item_scores.py", "fsutil.py"]
                            + [f"tables/specs/{name}.yaml" for name in verdict_tables()])


rule verdicts:
    input:
        metrics=verdict_metrics,
        pair_scores=verdict_items,
    output:
        md=f"{EXP}/verdicts.md",
        csv=f"{EXP}/verdicts.csv",
        cells=f"{EXP}/verdicts.cells.csv",
        html=report(
            f"{EXP}/verdicts.html",
            caption="../report/verdicts.rst",
            category="Verdicts",
            labels={"verdicts": "claims of ConPVP, PromptBERT, MoCoUTRL"},
        ),
    params:
        spec=lambda w: spec_json(table_context()),
        code=verdict_code,
        prefix=lambda w, output: output.md[: -len(".md")],
    conda:
        "../../envs/report.yaml"
    log:
        f"{EXP}/logs/verdicts.log",
    shell:
        "sentrepro verdicts --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--metrics {input.metrics} > {log:q} 2>&1"
