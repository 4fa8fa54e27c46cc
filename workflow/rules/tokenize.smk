# Tokenize the corpus once per tokenizer; every training job with that tokenizer reuses the cache.


rule tokenize:
    input:
        f"{RES}/corpus/{{corpus}}/sentences.txt",
    output:
        f"{RES}/tokenized/{{tokenizer}}/{{corpus}}/tokenized.json",
    params:
        spec=lambda w: spec_json({"tokenizer": w.tokenizer, "model": tokenizer_model(w.tokenizer)}),
        code=code_fingerprint(["tokenize.py", "backbones.py"]),
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
        "sentrepro tokenize --spec {params.spec:q} --corpus {input:q} --out-dir $(dirname {output}) "
        "--quiet > {log:q} 2>&1"
