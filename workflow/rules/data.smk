# Data: download (sha256-pinned, resumable) -> prepare (extract / stage, manifest) -> check (parse every
# data set, documented counts: CHECKED.json, which every evaluation rule takes as input) -> corpus.
# Local rules: they need the network (or the mirror) and run on the login node, never via sbatch.
# Synthetic fixtures (offline demo) are written by `fixture` and enter through fixture:// URLs.
# The fixtures and check layouts are those the benchmark units declare (sentrepro.data.benchmarks): the
# `generator` wildcard is derived from them, and a fixture or check job's code adds its unit's module, so
# editing one benchmark reruns only the jobs reading it and adding one reruns nothing (code.smk: unit_code).

include: "inputs/data.smk"


rule fixture:
    output:
        directory(f"{FIXTURES}/{{generator}}"),
    wildcard_constraints:
        generator=FIXTURE_NAMES,
    params:
        code=unit_code("cli:fixture", fixture_unit),
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/fixture/{{generator}}.tsv",
    log:
        f"{RES}/logs/fixture/{{generator}}.log",
    shell:
        "sentrepro fixture {wildcards.generator} --out-dir {output:q} > {log:q} 2>&1"


rule download:
    input:
        fixture_inputs,
    output:
        f"{RES}/downloads/{{source}}/download.json",
    params:
        spec=lambda w: spec_json(source_slice(config, w.source)),
        code=rule_code("cli:download"),
        fixtures=FIXTURES,
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/download/{{source}}.tsv",
    log:
        f"{RES}/logs/download/{{source}}.log",
    shell:
        "sentrepro download --name {wildcards.source} --spec {params.spec:q} "
        "--out-dir $(dirname {output}) --fixtures-dir {params.fixtures:q} > {log:q} 2>&1"


rule prepare_dataset:
    input:
        download_record_for,
    output:
        manifest=f"{RES}/data/{{source}}/MANIFEST.json",
        stamp=f"{RES}/data/{{source}}/CONTENT.json",  # content stamp (sentrepro.records.integrity; content_stamp in common.smk)
    params:
        spec=lambda w: spec_json(source_slice(config, w.source)),
        code=rule_code("cli:prepare-dataset"),
        record=lambda w, input: input[0] if input else "",
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/prepare_dataset/{{source}}.tsv",
    log:
        f"{RES}/logs/prepare_dataset/{{source}}.log",
    shell:
        "sentrepro prepare-dataset --name {wildcards.source} --spec {params.spec:q} "
        "--out-dir $(dirname {output.manifest}) --download-record={params.record:q} > {log:q} 2>&1"


rule check_dataset:
    input:
        manifest=lambda w: manifest(w.source),
        stamp=lambda w: data_stamp(w.source),
    output:
        f"{RES}/data/{{source}}/CHECKED.json",
    params:
        spec=lambda w: spec_json(source_slice(config, w.source)),
        code=unit_code("cli:check-dataset", source_unit),
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/check_dataset/{{source}}.tsv",
    log:
        f"{RES}/logs/check_dataset/{{source}}.log",
    shell:
        "sentrepro check-dataset --name {wildcards.source} --spec {params.spec:q} --manifest {input.manifest:q} "
        "--out {output:q} > {log:q} 2>&1"


rule prepare_corpus:
    input:
        manifest=lambda w: manifest(config["corpus"]["source"]),
        stamp=lambda w: data_stamp(config["corpus"]["source"]),
    output:
        sentences=f"{RES}/corpus/{{corpus}}/sentences.txt",
        record=f"{RES}/corpus/{{corpus}}/sentences.txt.json",
    params:
        spec=lambda w: spec_json(corpus_slice(config)),
        code=rule_code("cli:prepare-corpus"),
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/prepare_corpus/{{corpus}}.tsv",
    log:
        f"{RES}/logs/prepare_corpus/{{corpus}}.log",
    shell:
        "sentrepro prepare-corpus --spec {params.spec:q} --manifest {input.manifest:q} --out {output.sentences:q} > {log:q} 2>&1"
