# Evaluation suites beyond STS (SentEval transfer, few-shot, clustering, WOS), the analyses behind the
# papers' figures, and the figures. One metrics file per (run, suite); which runs get which suite is
# config (evaluation.suites and each suite's `runs` filter, see src/sentrepro/evaluation/plan.py).


rule evaluate_suite:
    input:
        run=trained_run,
        data=suite_data,
        checked=suite_checked,
        model=frozen_model_manifest,
    output:
        f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/{{suite,{PROTOCOL_SUITE_RE}}}.json",
    params:
        spec=suite_spec,
        code=method_code("cli:evaluate"),
        run_dir=lambda w, input: str(Path(input.run[0]).parent) if input.run else "",
        model=lambda w, input: input.model[0] if input.model else "",
    resources:
        gpu=suite_resource("gpu", 0),
        slurm_partition=gpu_partition(suite_resource("gpu", 0)),
        gpu_model=gpu_model(suite_resource("gpu", 0)),
        mem_mb=suite_resource("mem_mb", 8000),
        runtime=suite_resource("runtime", 60),
        cpus_per_task=suite_resource("cpus_per_task", 2),
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/evaluate_{{suite}}/{{backbone}}/{{method}}/{{run}}.tsv",
    log:
        f"{EXP}/logs/evaluate_{{suite}}/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro evaluate {wildcards.suite} --spec {params.spec:q} --run-dir={params.run_dir:q} "
        "--model-manifest={params.model:q} --data {input.data:q} --out {output:q} > {log:q} 2>&1"


rule analyse:
    input:
        run=trained_run,
        data=suite_data,
        checked=suite_checked,
        model=frozen_model_manifest,
    output:
        f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/{{suite,{ANALYSIS_SUITE_RE}}}.json",
    params:
        spec=suite_spec,
        code=method_code("cli:evaluate"),
        run_dir=lambda w, input: str(Path(input.run[0]).parent) if input.run else "",
        model=lambda w, input: input.model[0] if input.model else "",
    resources:
        gpu=suite_resource("gpu", 0),
        slurm_partition=gpu_partition(suite_resource("gpu", 0)),
        gpu_model=gpu_model(suite_resource("gpu", 0)),
        mem_mb=suite_resource("mem_mb", 8000),
        runtime=suite_resource("runtime", 30),
        cpus_per_task=suite_resource("cpus_per_task", 2),
    conda:
        "../../envs/evaluate.yaml"
    benchmark:
        f"{EXP}/benchmarks/analyse_{{suite}}/{{backbone}}/{{method}}/{{run}}.tsv",
    log:
        f"{EXP}/logs/analyse_{{suite}}/{{backbone}}/{{method}}/{{run}}.log",
    shell:
        "HF_HUB_OFFLINE=1 sentrepro evaluate {wildcards.suite} --spec {params.spec:q} --run-dir={params.run_dir:q} "
        "--model-manifest={params.model:q} --data {input.data:q} --out {output:q} > {log:q} 2>&1"


rule figure:
    input:
        figure_metrics,
    output:
        png=report(
            f"{EXP}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=figure_paper,
            labels={"figure": "{figure}"},
        ),
        pdf=f"{EXP}/figures/{{figure}}.pdf",
        record=f"{EXP}/figures/{{figure}}.json",
    params:
        spec=lambda w: spec_json(figure_context()),
        code=rule_code("cli:figure"),
        prefix=lambda w, output: output.png[: -len(".png")],
    conda:
        "../../envs/report.yaml"
    benchmark:
        f"{EXP}/benchmarks/figure/{{figure}}.tsv",
    log:
        f"{EXP}/logs/figure/{{figure}}.log",
    shell:
        "sentrepro figure {wildcards.figure} --spec {params.spec:q} --out-prefix {params.prefix:q} "
        "--metrics {input} > {log:q} 2>&1"
