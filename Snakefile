# sentrepro: regenerate the tables of ConPVP, PromptBERT and MoCoUTRL.
#   snakemake --profile slurm            the full paper matrix on a SLURM cluster (config.yaml)
#   snakemake --profile profiles/demo    the offline demo on a laptop (config.yaml + profiles/demo/overlay.yaml)
from snakemake.utils import min_version

from sentrepro.planning.snakemake_signatures import memoize_signatures
from sentrepro.records.ledger import record_removed

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/code.smk"
include: "workflow/rules/slurm.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/views.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/verdicts.smk"
include: "workflow/rules/export.smk"


check_rule_code()


onerror:
    # a job Snakemake failed after its command succeeded (and recorded its outputs) has its outputs removed:
    # the ledger says so (sentrepro.records.ledger.record_removed); a shared store is left to its own checkouts
    record_removed([f"{EXP}/ledger.jsonl"] + ([] if SHARED_STORE else [f"{RES}/ledger.jsonl"]),
                   "gone when the workflow stopped with an error: Snakemake removes the outputs of a failed job")
memoize_signatures(workflow.rules)  # each rule function's parameters read once (sentrepro.planning.snakemake_signatures)


localrules:
    all,
    fixture,
    download,
    fetch_model,
    tiny_model,
    prepare_dataset,
    check_dataset,
    prepare_corpus,
    table,
    figure,
    verdicts,
    demo_summary,
    export,


rule all:
    input:
        table_targets(),
        checked_targets(),
        suite_targets(),
        figure_targets(),
        verdict_targets(),
        demo_summary_targets(),
        export_targets(),
    default_target: True
