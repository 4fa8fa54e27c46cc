# Pretrained backbones: fetch_model puts each backbone's files (config, tokenizer, weights) at its pinned
# revision into resources/models/<backbone>/<revision|unpinned|local>/ with a MANIFEST.json (src/sentrepro/
# pretrained/). A local rule: it needs the network (HF_ENDPOINT) or models.mirror, so it runs on the login
# node like `download`. Every tokenize, train and evaluate job loads only these snapshots, with HF_HUB_OFFLINE=1.
# tokenize and train take the MANIFEST as an input (evaluate too, for frozen backbones), so a revision change
# reruns that backbone's jobs; a shared token-id cache is built from the first backbone naming its tokenizer,
# so a revision change of that backbone also rebuilds the cache and reruns every run on it.

include: "inputs/models.smk"


rule fetch_model:
    """One backbone snapshot: the model's files (config, tokenizer, weights) in the same folder; `MANIFEST.json`
    names the repository, commit and origin and lists each file's role, size and sha256; `CONTENT.json` is its
    content stamp. Beside the snapshot: `.<snapshot>.lock.json` (the hashes a refetch must reproduce),
    `.unpinned.lock.json` for a backbone fetched without a pinned revision."""
    input:
        tiny_model_input,
    output:
        manifest=f"{RES}/models/{{backbone}}/{{snapshot}}/MANIFEST.json",
        # the content stamp the jobs reading the snapshot take as input (sentrepro.records.integrity; content_stamp)
        stamp=f"{RES}/models/{{backbone}}/{{snapshot}}/CONTENT.json",
    wildcard_constraints:
        snapshot=r"[A-Za-z0-9_.-]+",
    params:
        spec=lambda w: spec_json(fetch_spec(config["backbones"][w.backbone])),
        code=rule_code("cli:fetch-model"),
    # Where the files come from is no part of what they are (each is verified), so the mirror is passed as
    # a resource, not a param: moving from the Hub to a mirror (or back) reruns nothing.
    resources:
        models_mirror=lambda w: config["models"]["mirror"] or "",
    conda:
        "../../envs/data.yaml"
    # checkouts sharing a store run fetch jobs of one snapshot: each logs to its own file (store_log), whose
    # first line names the process; the one that waited says it reused the snapshot
    log:
        store_log(f"{RES}/logs/fetch_model/{{backbone}}/{{snapshot}}.log"),
    shell:
        "sentrepro fetch-model --name {wildcards.backbone} --spec {params.spec:q} --out-dir $(dirname {output.manifest}) "
        "--mirror={resources.models_mirror:q} > {log:q} 2>&1"


# The rehearsal's stand-ins (profiles/rehearsal): a backbone whose model is tiny://<tokenizer>/<size> is a tiny
# random model of that family, built here deterministically (its trained vocabularies from the corpus), then
# fetched like any backbone: fetch_model holds each file to the BUILD.json this rule writes.
rule tiny_model:
    """A tiny random model standing in for a paper backbone in the rehearsal (`tiny://<tokenizer>/<size>`): its
    config, random weights and tokenizer files (vocabularies learned from the corpus), and `BUILD.json`, the
    sha256 of every file, to which `fetch_model` holds its snapshot of it. The same corpus and code give the
    same bytes."""
    input:
        corpus=f"{RES}/corpus/{config['corpus']['name']}/sentences.txt",
    output:
        directory(f"{TINY_MODELS}/{{tiny}}"),
    wildcard_constraints:
        tiny="|".join(tiny.names()),
    params:
        model=lambda w: tiny.url_of(w.tiny),
        code=rule_code("cli:tiny-model"),
    conda:
        "../../envs/train.yaml"
    benchmark:
        f"{RES}/benchmarks/tiny_model/{{tiny}}.tsv",
    log:
        f"{RES}/logs/tiny_model/{{tiny}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro tiny-model --model {params.model} --corpus {input.corpus:q} "
        "--out-dir {output:q} > {log:q} 2>&1"
