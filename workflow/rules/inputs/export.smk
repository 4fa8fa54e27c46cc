# Input functions, params and targets of workflow/rules/export.smk, which includes this file first.

def export_targets():
    """The record of every exported folder: each run scored on STS, when export.enabled."""
    if not config["export"]["enabled"]:
        return []
    return [f"{EXP}/exports/{r.backbone}/{r.method}/{r.run_id}/sentrepro_export.json"
            for r in suite_runs(config, "sts")]


def export_inputs(w):
    """What an export reads: the run's STS metrics, the table CSVs and verdicts its card quotes, the run (or the
    backbone snapshot) and, for whitening, the STS data its kernel is refitted on."""
    inputs = {"sts": metrics_file(run_of(w), "sts"),
              "tables": [t for t in table_targets() if t.endswith(".csv")],
              "verdicts": [t for t in verdict_targets() if t.endswith(".csv")]}
    if trains(w.method):
        inputs["run"] = f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"
    else:
        inputs["model"] = model_manifest(w.backbone)
    if method_kind(w.method) == "whitening":  # refits its kernel on the STS suite's sentences
        inputs["sts_data"] = manifest(suite_source(config, "sts"))
    return inputs
