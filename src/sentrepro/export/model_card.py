"""The model card of an exported folder: ``README.md`` and its record ``sentrepro_card.json``.

Why a job of its own: the card quotes cross-run results (the table cells beside the paper's numbers, the
verdict rows about the run), so it must follow every table and verdict, while the weights export
(:mod:`sentrepro.export.folder`) depends only on its own run. Kept apart, an edit of one method rebuilds the
tables and every run's light card (a few kB each), and reruns the weights export of that method's runs
only; weights are never written again for a card change. The workflow's ``export_card`` rule runs
:func:`write_card` on a folder ``sentrepro export`` wrote; ``sentrepro export`` alone (outside the
workflow) writes both.

The card reads everything about the run from the folder's own record (``sentrepro_export.json``: the
spec, the STS metrics and training summary it was exported from) and adds the tables and verdicts. Its
record lists the sha256 of ``README.md`` and of every input, so ``sentrepro audit <folder>`` verifies
the card like the rest of the folder. No torch here: the job is light.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from sentrepro.files import atomic_write_json, atomic_write_text, read_json
from sentrepro.hashing import sha256_file
from sentrepro.records.provenance import CARD_RECORD, EXPORT_RECORD
from sentrepro.export.mteb_results import MTEB_DIR, MTEB_STS, NOT_IN_MTEB, SPLIT, task_spearman

EXPORT_CONFIG = "sentrepro_export_config.json"
CARD = "README.md"


# --- what the tables and verdicts say about this run ----------------------------------------------


def _names(entry: str, path: Path) -> bool:
    recorded = entry.partition("#sha256=")[0]
    return bool(recorded) and Path(recorded).resolve() == path.resolve()


def table_cells(table_csvs: list[Path], metrics: Path) -> list[dict]:
    """Table cells computed from ``metrics`` (its path in the cell's provenance), with the paper's number."""
    cells = []
    for csv_path in table_csvs:
        with open(csv_path, newline="", encoding="utf-8") as handle:
            for record in csv.DictReader(handle):
                entries = [e for e in record.get("provenance", "").split(";") if e]
                if any(_names(e, metrics) for e in entries if "=" not in e.partition("#")[0]):
                    cells.append({k: record[k] for k in ("table", "row", "column", "value", "std", "n", "reported")})
    return cells


def run_verdicts(verdicts_csv: Path | None, metrics: Path) -> list[dict]:
    """Verdict rows whose sides used or compared this run's metrics file."""
    if verdicts_csv is None or not Path(verdicts_csv).exists():
        return []
    rows = []
    with open(verdicts_csv, newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            prov = json.loads(record["provenance"])
            files = [s["metrics"] for key in ("a", "b") for s in prov.get(key, {}).get("seeds", [])]
            if any(_names(f, metrics) for f in files if f):
                rows.append({k: record[k] for k in ("claim", "text", "ours_delta", "paper_delta", "verdict")})
    return rows


# --- the model card -------------------------------------------------------------------------------


def _yaml_value(value) -> str:
    return json.dumps(value)  # JSON scalars are valid YAML scalars


def card_metadata(name: str, base_model: str | None, kind: str, sts: dict | None) -> list[str]:
    """Hub model-card metadata: library, tags, base model and a model-index of the MTEB STS results."""
    lines = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity",
             "language:", "- en", "tags:", "- sentence-transformers", "- sentence-similarity",
             "- feature-extraction", "- sentrepro", f"- {kind}"]
    if base_model:
        lines.append(f"base_model: {_yaml_value(base_model)}")
    if sts:
        lines += ["model-index:", f"- name: {_yaml_value(name)}", "  results:"]
        for task, result in sts["results"].items():
            if task not in MTEB_STS:
                continue
            entry = MTEB_STS[task]
            lines += ["  - task:", "      type: STS", "    dataset:", f"      name: MTEB {entry['task']}",
                      f"      type: {entry['dataset']}", "      config: default", f"      split: {SPLIT}",
                      f"      revision: {entry['revision']}", "    metrics:",
                      "    - type: cos_sim_spearman", f"      value: {100 * task_spearman(result):.4f}"]
    lines.append("---")
    return lines


def model_card(*, name: str, spec: dict, trained: bool, base_model: str | None, sts: dict | None,
               cells: list[dict], verdicts: list[dict], train_summary: dict | None, inputs: list[dict],
               transform: dict | None, synthetic: bool, code_dir: str) -> str:
    """The card's Markdown: Hub metadata, loading, settings, STS results, the cells and verdicts about this run
    (cross-run parts, from the tables and verdicts) and the provenance of the export and of this card."""
    kind = spec["method"]["kind"]
    backbone = spec["backbone"]
    lines = card_metadata(name, base_model, kind, sts)
    lines += ["", f"# {name}", "",
              f"A `{kind}` sentence encoder on backbone `{backbone.get('model')}` "
              f"({'trained, seed ' + str(spec.get('seed')) if trained else 'not fine-tuned'}), reproduced by the "
              "sentrepro workflow (ConPVP / PromptBERT / MoCoUTRL reproduction) and exported by `sentrepro export`.",
              "", "## Loading", "",
              "```python", "from sentence_transformers import SentenceTransformer",
              "model = SentenceTransformer(\"path/to/this/folder\", trust_remote_code=True)",
              "vectors = model.encode([\"A man is playing a guitar.\"])", "```", "",
              "Loading needs `sentence-transformers`, `transformers`, `torch`, `numpy`, `safetensors` and `PyYAML`, "
              "and `trust_remote_code=True`: the module `sentrepro_st.py` builds the method's evaluation embedding "
              f"from the project code shipped in `{code_dir}/` (no clone of sentrepro needed). `encode()` gives "
              "the vectors the evaluation scored: same template, [MASK] readout, denoising, prompt vectors, "
              "head, pooling and truncation. Score with cosine similarity; do not pass `prompt=` "
              "(the method builds its own template) and keep `normalize_embeddings=False` to get the raw vectors.", ""]
    if transform:
        lines += [f"BERT-whitening's kernel was fitted on the {transform['sentences']} sentence occurrences of the "
                  "STS suite (as its evaluation did) and is applied as a fixed transform "
                  f"(`{transform['file']}`).", ""]
    lines += ["## Method and settings", "", "```json",
              json.dumps({"kind": kind, "params": spec["method"]["params"], "backbone": backbone,
                          "seed": spec.get("seed"), "attention": spec.get("attention", "eager")},
                         indent=2, sort_keys=True), "```", ""]
    if synthetic:
        lines += ["**The scores below come from a synthetic fixture (the offline demo), not the real "
                  "benchmark data; they are not comparable with the papers or the MTEB leaderboard.**", ""]
    if sts:
        lines += ["## STS results (test sets, Spearman x100)", "", "| task | reproduced | MTEB task |", "|---|---|---|"]
        for task, result in sts["results"].items():
            if task == "avg":
                continue
            mteb_name = MTEB_STS[task]["task"] if task in MTEB_STS else f"– ({NOT_IN_MTEB.get(task, 'not in MTEB')})"
            lines.append(f"| {task} | {result['reported']:.2f} | {mteb_name} |")
        lines += ["", f"MTEB result files (MTEB's TaskResult schema, main score `cosine_spearman`, split "
                  f"`{SPLIT}`): `{MTEB_DIR}/`.", ""]
    lines += ["## Beside the papers", ""]
    lines += _markdown_table(
        ["table", "row", "column", "reproduced", "std", "n", "paper"],
        [[c["table"], c["row"], c["column"], c["value"] or "–", c["std"] or "–", c["n"], c["reported"] or "–"]
         for c in cells],
        empty="No table cell of this experiment reads this run's STS metrics.")
    lines += ["", "## Verdicts on the papers' claims about this row", ""]
    lines += _markdown_table(
        ["claim", "verdict", "ours Δ", "paper Δ"],
        [[f"{v['claim']}: {v['text']}", v["verdict"], v["ours_delta"] or "–", v["paper_delta"] or "–"]
         for v in verdicts],
        empty="No verdict of this experiment uses this run.")
    lines += ["", "## Provenance", ""]
    if train_summary:
        data = [i for i in train_summary.get("provenance", {}).get("inputs", [])
                if "tokenized" in i["role"] or "corpus" in i["role"] or "views" in i["role"]]
        lines.append(f"- best step {train_summary.get('best_step')} (STS-B dev), training inputs:")
        lines += [f"  - {i['role']}: `{i['path']}` sha256 `{i['sha256']}`" for i in data]
    code = (sts or {}).get("provenance", {}).get("code", {})
    if code:
        lines.append(f"- code: {json.dumps(code, sort_keys=True)}")
    lines.append("- inputs of this export (sha256 as read; `sentrepro audit <folder>` verifies the chain):")
    lines += [f"  - {i['role']}: `{i['path']}` sha256 `{i['sha256']}`" for i in inputs]
    lines += ["", f"Every file of this folder is listed with its sha256 in `{EXPORT_RECORD}` (the weights export) or "
              f"`{CARD_RECORD}` (this card).", ""]
    return "\n".join(lines)



# --- the card job -----------------------------------------------------------------------------------


def _markdown_table(header: list[str], rows: list[list], *, empty: str) -> list[str]:
    """A markdown table's lines (header, rule, one line per row), or ``empty`` as the one line when no row."""
    if not rows:
        return [empty]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def _input(record: dict, role: str) -> Path | None:
    found = [i["path"] for i in record["provenance"]["inputs"] if i["role"] == role]
    return Path(found[0]) if found else None


def write_card(folder: Path, tables: list[Path] = (), verdicts: Path | None = None) -> dict:
    """Write ``README.md`` and ``sentrepro_card.json`` into an exported ``folder`` (atomically, each) from
    the folder's record, the table CSVs and verdicts.csv; return the card's record."""
    from sentrepro.records.provenance import Provenance

    folder = Path(folder)
    record_path = folder / EXPORT_RECORD
    if not record_path.is_file():
        raise FileNotFoundError(2, "not an exported folder (no record; `sentrepro export` writes it)", str(record_path))
    record = read_json(record_path)
    about = record["card"]
    spec = record["provenance"]["config"]
    prov = Provenance(step="export-card", config={"run": spec.get("run"), "folder": str(folder)},
                      seed=spec.get("seed"))
    prov.add_input(record_path, "export record")
    sts_path = _input(record, "STS metrics")
    sts = read_json(sts_path) if sts_path else None
    summary_path = _input(record, "training summary")
    train_summary = read_json(summary_path) if summary_path else None
    for table in tables:
        prov.add_input(table, "table")
    if verdicts:
        prov.add_input(verdicts, "verdicts")
    cells = table_cells(list(tables), sts_path) if sts_path else []
    rows = run_verdicts(verdicts, sts_path) if sts_path else []
    config = read_json(folder / EXPORT_CONFIG)
    transform = config.get("transform")
    text = model_card(name=record["name"], spec=spec, trained=about["trained"], base_model=about["base_model"],
                      sts=sts, cells=cells, verdicts=rows, train_summary=train_summary,
                      inputs=record["provenance"]["inputs"] + prov.inputs,
                      transform={**transform, "sentences": about["transform_sentences"]} if transform else None,
                      synthetic=about["synthetic"], code_dir=config["code_dir"])
    atomic_write_text(folder / CARD, text)
    card = {"kind": "sentrepro-card", "name": record["name"], "folder_files": {CARD: sha256_file(folder / CARD)},
            "table_cells": cells, "verdicts": rows, "provenance": prov.finish()}
    atomic_write_json(folder / CARD_RECORD, card)
    return card
