# sentrepro export (config export.enabled, on in the demo): every run scored on STS as a sentence-transformers
# folder -- the evaluated weights, the project's embedding code, a model card quoting the tables and verdicts
# about the run, MTEB result files -- at results/<exp>/exports/<backbone>/<method>/<run>/ (src/sentrepro/export.py).
# The folder's record sentrepro_export.json lists every file's sha256 and the provenance chain;
# `sentrepro audit <folder>` verifies both.

include: "inputs/export.smk"


rule export:
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
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/export/{{backbone}}/{{method}}/{{run}}.tsv"
    log:
        f"{EXP}/logs/export/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro export --spec {params.spec:q} --run-dir={params.run_dir:q} "
        "--model-manifest={params.model:q} --sts-metrics {input.sts:q} --tables {input.tables} "
        "--verdicts={input.verdicts:q} --sts-data={params.sts_data:q} --out {params.folder:q} > {log:q} 2>&1"
