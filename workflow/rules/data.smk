# Data: download (sha256-pinned, resumable) -> prepare (extract / stage, manifest) -> corpus.
# Local rules: they need the network (or the mirror) and run on the login node, never via sbatch.


rule download:
    output:
        f"{RES}/downloads/{{source}}/download.json",
    params:
        spec=lambda w: spec_json(source_slice(config, w.source)),
        code=code_fingerprint(["data/download.py", "data/sources.py", "data/prepare.py"]),
    conda:
        "../../envs/data.yaml"
    log:
        f"{RES}/logs/download/{{source}}.log",
    shell:
        "sentrepro download --name {wildcards.source} --spec {params.spec:q} "
        "--out-dir $(dirname {output}) --quiet > {log:q} 2>&1"


rule prepare_dataset:
    input:
        download_record_for,
    output:
        f"{RES}/data/{{source}}/MANIFEST.json",
    params:
        spec=lambda w: spec_json(source_slice(config, w.source)),
        code=code_fingerprint(["data/extract.py", "data/prepare.py"]),
        record=lambda w, input: input[0] if input else "",
    conda:
        "../../envs/data.yaml"
    log:
        f"{RES}/logs/prepare_dataset/{{source}}.log",
    shell:
        "sentrepro prepare-dataset --name {wildcards.source} --spec {params.spec:q} "
        "--out-dir $(dirname {output}) --download-record={params.record:q} > {log:q} 2>&1"


rule prepare_corpus:
    input:
        lambda w: manifest(config["corpus"]["source"]),
    output:
        sentences=f"{RES}/corpus/{{corpus}}/sentences.txt",
        record=f"{RES}/corpus/{{corpus}}/sentences.txt.json",
    params:
        spec=lambda w: spec_json(config["corpus"]),
        code=code_fingerprint(["data/prepare.py", "data/wikidump.py"]),
    conda:
        "../../envs/data.yaml"
    log:
        f"{RES}/logs/prepare_corpus/{{corpus}}.log",
    shell:
        "sentrepro prepare-corpus --spec {params.spec:q} --manifest {input:q} --out {output.sentences:q} > {log:q} 2>&1"
