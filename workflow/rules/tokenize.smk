# Tokenize the corpus once per tokenizer; every training job with that tokenizer reuses the cache.

include: "inputs/tokenize.smk"


rule tokenize:
    """The corpus tokenized once per tokenizer: `ids.npy` (every sentence's token ids concatenated) and
    `offsets.npy` (the sentence boundaries), memory-mapped by every training run of a backbone with this
    `tokenizer` name, beside `tokenized.json`, which records the tokenizer's backbone MANIFEST, its
    vocabulary's sha256, the files with their sha256, counts and provenance."""
    input:
        corpus=f"{RES}/corpus/{{corpus}}/sentences.txt",
        model=lambda w: model_manifest(tokenizer_backbone(w.tokenizer)),
        model_stamp=lambda w: model_stamp(tokenizer_backbone(w.tokenizer)),
    output:
        f"{RES}/tokenized/{{tokenizer}}/{{corpus}}/tokenized.json",
    params:
        spec=lambda w: spec_json({"tokenizer": w.tokenizer, "model": tokenizer_model(w.tokenizer)}),
        code=rule_code("cli:tokenize"),
    resources:
        mem_mb=8000,
        runtime=60,
        cpus_per_task=2,
    conda:
        "../../envs/train.yaml"
    benchmark:
        f"{RES}/benchmarks/tokenize/{{tokenizer}}/{{corpus}}.tsv",
    log:
        f"{RES}/logs/tokenize/{{tokenizer}}/{{corpus}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro tokenize --spec {params.spec:q} --corpus {input.corpus:q} "
        "--model-manifest {input.model:q} --out-dir $(dirname {output}) --quiet > {log:q} 2>&1"
