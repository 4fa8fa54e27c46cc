# Data: download (sha256-pinned, resumable) -> prepare (extract / stage, manifest) -> check (parse every
# data set, documented counts: CHECKED.json, which every evaluation rule takes as input) -> corpus.
# Local rules: they need the network (or the mirror) and run on the login node, never via sbatch.
# Synthetic fixtures (offline demo) are written by `fixture` and enter through fixture:// URLs.
# The fixtures and check layouts are those the benchmark units declare (sentrepro.data.benchmarks): the
# `generator` wildcard is derived from them, and a fixture or check job's code adds its unit's module, so
# editing one benchmark reruns only the jobs reading it and adding one reruns nothing (code.smk: unit_code).

include: "inputs/data.smk"


rule fixture:
    """A synthetic data set generated in its upstream format (offline demo and tests): the folder holds the files
    a `fixture://<generator>/<file>` source URL names, e.g. a `senteval.tar` in SimCSE's layout, the 8 short-
    text clustering files, a WOS-style zip. Every table cell computed from it is labelled synthetic."""
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
    """`download.json` records one data source's download: the URL (or mirror path) it came from, the file(s)
    fetched, each file's sha256 as verified against the config's pin (or recorded on first use, with
    `.<file>.first-use.sha256` beside it) and provenance. The downloaded file(s) lie beside it in the same
    folder."""
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
    """The prepared tree of a source (extracted or staged under `files/` beside these records). `MANIFEST.json`
    lists every file with its size and sha256, the download record and provenance; every job that reads the
    source hashes its files against it. `CONTENT.json` is the content stamp the plan compares with the files
    at every load (a changed file reruns what read it)."""
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
    """`CHECKED.json`: every data set of the source parsed with the evaluation's own parsers, per task the counts
    (compared with the documented ones unless the source is synthetic), classes, the STS text variant and
    provenance. Every evaluation takes it as input, so a malformed line stops the workflow here with
    `file:line`."""
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
    """`sentences.txt`: the unsupervised training corpus, one sentence per line (cut by `corpus.line_split`, at
    most `corpus.max_sentences`). `sentences.txt.json`: its record (source manifest, line rule, counts under
    both line rules, sha256, provenance)."""
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
