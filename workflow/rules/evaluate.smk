# Evaluate runs on the suites (the discovered units, sentrepro.code.units): one rule per suite, all from this one
# definition (rule evaluate_<suite>), each job writing one metrics file for one (run, suite). Which runs
# get which suite is config (evaluation.suites and each suite's `runs` filter; see
# src/sentrepro/planning/evaluations.py); resources and SLURM grouping come from the registry, overridden by
# evaluation.<suite>.resources.

include: "inputs/evaluate.smk"


for _suite, _entry in SUITE_ENTRIES.items():

    rule:
        """One metrics file per (run, suite): `results[<column>]` holds each score (`reported` is what a table
        cell shows), with `aggregation`, `data` (source, synthetic), `subset` (a `max_samples` draw),
        `encoded_sentences` and provenance. STS suites also keep `<suite>.pairs.npz`, every scored pair's
        cosine and gold score, which the verdicts resample."""
        name:
            f"evaluate_{_suite}"
        input:
            run=suite_trained_run(_suite),
            data=suite_data(_suite),
            checked=suite_checked(_suite),
            model=suite_model_manifest(_suite),
            stamps=suite_stamps(_suite),
        output:
            metrics=f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/{_suite}.json",
            # every scored pair's cosine and gold score (sentrepro.evaluation.item_scores), for the verdicts
            **({"pairs": f"{EXP}/metrics/{{backbone}}/{{method}}/{{run}}/{_suite}.pairs.npz"} if _entry.item_scores else {}),
        params:
            suite=_suite,
            spec=suite_spec(_suite),
            code=job_code("cli:evaluate", _suite),
            run_dir=lambda w, input: str(Path(input.run[0]).parent) if input.run else "",
            model=lambda w, input: input.model[0] if input.model else "",
        # the same for every job of the suite: values, not functions (Snakemake calls a resource function
        # for each job it plans, four hundred evaluation jobs on the paper config)
        resources:
            **suite_resource_values(_suite),
        # Short CPU jobs (STS) run several to a SLURM job (profiles/slurm: group-components), so a job's
        # scheduling overhead does not dominate. Local runs ignore groups.
        group:
            _entry.group
        conda:
            "../../envs/evaluate.yaml"
        benchmark:
            f"{EXP}/benchmarks/evaluate_{_suite}/{{backbone}}/{{method}}/{{run}}.tsv"
        log:
            f"{EXP}/logs/evaluate_{_suite}/{{backbone}}/{{method}}/{{run}}.log",
        shell:
            "HF_HUB_OFFLINE=1 sentrepro evaluate {params.suite} --spec {params.spec:q} --run-dir={params.run_dir:q} "
            "--model-manifest={params.model:q} --data {input.data:q} --out {output.metrics:q} > {log:q} 2>&1"
