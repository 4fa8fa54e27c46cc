# Evaluate a trained run's best checkpoint, or a frozen backbone, on a suite: one metrics file each.


rule evaluate_sts:
    input:
        run=trained_run,
        data=lambda w: manifest(config["evaluation"]["sts"]["source"]),
        checked=lambda w: checked(config["evaluation"]["sts"]["source"]),
        model=frozen_model_manifest,
    output:
        metrics=f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/sts.json",
        # every test pair's cosine and gold score (sentrepro.evaluation.item_scores), for the verdicts
        pairs=f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/sts.pairs.npz",
    params:
        spec=lambda w: eval_spec(w, sts_slice(config)),
        code=method_code("cli:evaluate"),
        run_dir=lambda w, input: str(Path(input.run[0]).parent) if input.run else "",
        model=lambda w, input: input.model[0] if input.model else "",
    resources:
        mem_mb=8000,
        runtime=30,
        cpus_per_task=2,
    # CPU-only and short: on SLURM several run in one job (profiles/slurm: group-components), so a
    # job's scheduling overhead does not dominate. Local runs ignore groups.
    group:
        "evaluate"
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/evaluate_sts/{{backbone}}/{{method}}/{{run}}.tsv",
    log:
        f"{EXP}/logs/evaluate_sts/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro evaluate sts --spec {params.spec:q} --run-dir={params.run_dir:q} "
        "--model-manifest={params.model:q} --data-manifest {input.data:q} --out {output.metrics:q} > {log:q} 2>&1"


# The "before" of a training run on the STS test sets: the model the training job starts from (step 0,
# seeded as the job seeds it) scored with the method's own evaluation embedding. Needs no training, and
# nothing is selected on it (the run's checkpoint is chosen on STS-B dev). Used by the demo summary.
rule evaluate_sts_start:
    input:
        data=lambda w: manifest(config["evaluation"]["sts"]["source"]),
        checked=lambda w: checked(config["evaluation"]["sts"]["source"]),
        model=lambda w: model_manifest(w.backbone),
    output:
        metrics=f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/sts_start.json",
        pairs=f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/sts_start.pairs.npz",
    params:
        spec=lambda w: eval_spec(w, sts_slice(config)),
        code=method_code("cli:evaluate"),
    resources:
        mem_mb=8000,
        runtime=30,
        cpus_per_task=2,
    group:
        "evaluate"
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/evaluate_sts_start/{{backbone}}/{{method}}/{{run}}.tsv",
    log:
        f"{EXP}/logs/evaluate_sts_start/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro evaluate sts --at-start --spec {params.spec:q} "
        "--model-manifest={input.model:q} --data-manifest {input.data:q} --out {output.metrics:q} > {log:q} 2>&1"
