# Input functions, params and targets of workflow/rules/export.smk, which includes this file first.

# one content-addressed copy of each weights file, used only where a hard link to the run's file is impossible
EXPORT_STORE = f"{EXP}/exports/.weights"


def export_folder(r) -> str:
    return f"{EXP}/exports/{r.backbone}/{r.method}/{r.run_id}"


def export_targets():
    """The records of every exported folder (weights and card): each run scored on STS, when export.enabled."""
    if not config["export"]["enabled"]:
        return []
    return [f"{export_folder(r)}/{name}" for r in suite_runs(config, "sts")
            for name in ("sentrepro_export.json", "sentrepro_card.json")]


def export_inputs(w):
    """What the weights export reads: its own run only -- the run's STS metrics, the run (or the backbone
    snapshot) and, for whitening, the STS data its kernel is refitted on. Never the tables or verdicts (the
    card's job reads those), so an edit of another method reruns no export."""
    inputs = {"sts": metrics_file(run_of(w), "sts")}
    if trains(w.method):
        inputs["run"] = f"{EXP}/runs/{w.backbone}/{w.method}/{w.run}/train.json"
    else:
        inputs["model"] = model_manifest(w.backbone)
    if method_kind(w.method) == "whitening":  # refits its kernel on the STS suite's sentences
        inputs["sts_data"] = manifest(suite_source(config, "sts"))
    return inputs


def export_card_inputs(w):
    """What the model card reads: the folder's record, the table CSVs and verdicts it quotes."""
    return {"export": f"{EXP}/exports/{w.backbone}/{w.method}/{w.run}/sentrepro_export.json",
            "tables": [t for t in table_targets() if t.endswith(".csv")],
            "verdicts": [t for t in verdict_targets() if t.endswith(".csv")]}
