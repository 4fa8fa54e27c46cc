# Train one backbone x method x seed. GPU job on SLURM; resources per backbone come from config.
# Resumes from <run>/last/ if the job is requeued or killed; adopts its finished run if requeued after it.

include: "inputs/train.smk"


rule train:
    """`train.json`: the training summary of one backbone x method x seed run: the resolved training slice
    (precision configured, used and the authors'), the STS-B dev history (step 0 included), the selected step,
    the files of `best/` with their sha256, and provenance. Beside it: `best/` (the checkpoint selected on
    STS-B dev, which every evaluation loads), `last/` while the run is unfinished (resumable state, removed
    once `best/` is verified unless `training.keep_resume_state`), `unreadable/` for a checkpoint that
    could not be read, and `finished.json`, a copy of `train.json` written once the run is wholly done: a job
    run again after that (SLURM requeued it; Snakemake removed `train.json` first) adopts the run from it
    where settings, code and inputs are unchanged, instead of training it again."""
    input:
        tokenized=lambda w: training_tokenized_record(w.backbone, w.method),
        dev=lambda w: manifest(config["training"]["dev_source"]),
        model=lambda w: model_manifest(w.backbone),
        dev_stamp=lambda w: data_stamp(config["training"]["dev_source"]),
        model_stamp=lambda w: model_stamp(w.backbone),
    output:
        f"{EXP}/runs/{{backbone}}/{{method}}/{{run}}/train.json",
    params:
        spec=lambda w: spec_json(train_slice(config, run_of(w))),
        code=job_code("cli:train"),
    resources:
        gpu=train_resource("gpu", 0),
        slurm_partition=gpu_partition(train_resource("gpu", 0)),
        gpu_model=gpu_model(train_resource("gpu", 0)),
        mem_mb=train_resource("mem_mb", 8000),
        runtime=train_resource("runtime", 60),
        cpus_per_task=train_resource("cpus_per_task", 2),
    conda:
        "../../envs/train.yaml"
    benchmark:
        f"{EXP}/benchmarks/train/{{backbone}}/{{method}}/{{run}}.tsv",
    log:
        f"{EXP}/logs/train/{{backbone}}/{{method}}/{{run}}.log",
    # stdout to the log; stderr (progress lines, dev scores, errors) to the log and to the terminal
    shell:
        ": > {log:q}; HF_HUB_OFFLINE=1 sentrepro train --spec {params.spec:q} --tokenized $(dirname {input.tokenized}) "
        "--dev-manifest {input.dev:q} --model-manifest {input.model:q} --run-dir $(dirname {output}) "
        "2>&1 >> {log:q} | tee -a {log:q}"
