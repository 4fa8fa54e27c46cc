# sentrepro export (config export.enabled, on in the demo): every run scored on STS as a sentence-transformers
# folder at results/<exp>/exports/<backbone>/<method>/<run>/, in two jobs:
# - export: the evaluated weights (hard links to the run's best/ or the backbone snapshot, never a copy where
#   the file system allows links), the project's embedding code and MTEB result files; it reads its own run only,
#   so editing another method reruns no export (src/sentrepro/export/folder.py);
# - export_card: the model card (README.md) quoting the tables and verdicts about the run, a few kB, rerun
#   whenever a table changes (src/sentrepro/export/model_card.py).
# Each writes a record (sentrepro_export.json, sentrepro_card.json) listing its files' sha256 and provenance;
# `sentrepro audit <folder>` verifies both.

include: "inputs/export.smk"


rule export:
    """A finished run as a sentence-transformers folder: the evaluated weights (hard links to `best/` or the
    backbone snapshot), the project's embedding code, `mteb/<Task>.json` (MTEB result files of its STS scores)
    and `sentrepro_export.json`, the record listing each file's sha256 and what it is linked to."""
    input:
        unpack(export_inputs),
    output:
        f"{EXP}/exports/{{backbone}}/{{method}}/{{run}}/sentrepro_export.json",
    params:
        spec=suite_spec("sts"),
        code=job_code("cli:export"),
        run_dir=lambda w, input: str(Path(input.run).parent) if "run" in input.keys() else "",
        model=lambda w, input: input.model if "model" in input.keys() else "",
        sts_data=lambda w, input: input.sts_data if "sts_data" in input.keys() else "",
        folder=lambda w, output: str(Path(output[0]).parent),
        store=EXPORT_STORE,
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/export/{{backbone}}/{{method}}/{{run}}.tsv"
    log:
        f"{EXP}/logs/export/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro export --spec {params.spec:q} --run-dir={params.run_dir:q} "
        "--model-manifest={params.model:q} --sts-metrics {input.sts:q} --sts-data={params.sts_data:q} "
        "--no-card --store {params.store:q} --out {params.folder:q} > {log:q} 2>&1"


rule export_card:
    """The exported folder's model card: `README.md` (Hub metadata with a `model-index` of the STS results,
    settings, our numbers beside the paper's, the verdicts about the row, provenance) and
    `sentrepro_card.json`, its record (the table cells and verdict rows it quotes)."""
    input:
        unpack(export_card_inputs),
    output:
        card=f"{EXP}/exports/{{backbone}}/{{method}}/{{run}}/README.md",
        record=f"{EXP}/exports/{{backbone}}/{{method}}/{{run}}/sentrepro_card.json",
    params:
        code=rule_code("cli:export-card"),
    conda:
        "../../envs/report.yaml"
    benchmark:
        f"{EXP}/benchmarks/export_card/{{backbone}}/{{method}}/{{run}}.tsv"
    log:
        f"{EXP}/logs/export_card/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "sentrepro export-card --folder $(dirname {input.export:q}) --tables {input.tables} "
        "--verdicts={input.verdicts:q} > {log:q} 2>&1"
