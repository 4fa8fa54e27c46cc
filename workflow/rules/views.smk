# MoCoUTRL's training views (src/sentrepro/data/views.py): every corpus sentence with one adjective swapped for a
# WordNet synonym and for an antonym. They are written as the corpus "<corpus>-views" (3N lines: originals, then
# synonyms, then antonyms), so the ordinary tokenize rule caches them per tokenizer like any corpus, and methods
# whose class says training_corpus = "views" train on that cache (training_tokenized_record in inputs/train.smk).

include: "inputs/views.smk"


# "<corpus>-views/sentences.txt" also matches prepare_corpus's output pattern; the views rule makes it.
ruleorder: build_views > prepare_corpus


rule build_views:
    """MoCoUTRL's training views: `views.tsv` (header `original synonym antonym`, one tab-separated triple per
    kept corpus sentence: the sentence, it with one adjective swapped for a WordNet synonym, and for an
    antonym), `sentences.txt` (the three columns stacked, what the tokenizer reads) and `sentences.txt.json`,
    the record (WordNet manifest, seed, counts, provenance)."""
    input:
        corpus=f"{RES}/corpus/{{corpus}}/sentences.txt",
        wordnet=lambda w: manifest(views_spec()["wordnet_source"]),
        wordnet_stamp=lambda w: data_stamp(views_spec()["wordnet_source"]),
    output:
        sentences=f"{RES}/corpus/{{corpus}}{VIEWS_SUFFIX}/sentences.txt",
        record=f"{RES}/corpus/{{corpus}}{VIEWS_SUFFIX}/sentences.txt.json",
        tsv=f"{RES}/corpus/{{corpus}}{VIEWS_SUFFIX}/views.tsv",
    params:
        spec=lambda w: spec_json(views_spec()),
        code=rule_code("cli:build-views"),
        out_dir=lambda w, output: str(Path(output.sentences).parent),
    resources:
        mem_mb=8000,
        runtime=60,
        cpus_per_task=1,
    conda:
        "../../envs/data.yaml"
    benchmark:
        f"{RES}/benchmarks/build_views/{{corpus}}.tsv",
    log:
        f"{RES}/logs/build_views/{{corpus}}.log",
    shell:
        "sentrepro build-views --spec {params.spec:q} --corpus {input.corpus:q} "
        "--wordnet-manifest {input.wordnet:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"
