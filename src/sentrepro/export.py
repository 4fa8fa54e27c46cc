"""``sentrepro export``: a finished run as a sentence-transformers folder, model card and MTEB result files.

The folder (``SentenceTransformer(folder, trust_remote_code=True)`` loads it)::

    modules.json, config_sentence_transformers.json   one module, sentrepro_st.SentreproEncoder
    sentrepro_st.py                                    the module (src/sentrepro/st_module.py)
    sentrepro_export_config.json                       method kind, class, resolved parameters, family
    sentrepro_code/<package>/...                       the project's embedding code (see below)
    encoder/                                           the evaluated weights: the run's best/ checkpoint
                                                       (encoder, tokenizer, extras), or the frozen backbone
    whitening.safetensors                              BERT-whitening's kernel and mean (whitening only)
    mteb/<Task>.json                                   MTEB result files of the STS scores
    README.md                                          model card (Hub metadata + provenance)
    sentrepro_export.json                              sha256 of every file above + provenance (audit)

**Faithful by construction.** Rather than re-implementing each method's evaluation embedding, the folder
carries the code evaluation runs: the static-import closure (:mod:`sentrepro.codedeps`) of the method's
module and :mod:`sentrepro.backbones`, with ``sentrepro`` renamed in its import statements to a package
name derived from the code's hash (``sentrepro_<12 hex>``), so the folder loads without this repository and
beside any installed sentrepro. The module builds the method and model as ``load_for_eval`` does and embeds
with ``purpose="test"``; tests/test_export.py checks ``encode`` against ``encode_sentences`` to 1e-5 for every
kind on BERT, RoBERTa and DeBERTa tiny models, loading in a fresh process that cannot import sentrepro.

**Data-fitted transforms.** BERT-whitening (kind ``whitening``) fits its kernel on the vectors of one
encoding call, for the STS suite every sentence occurrence of the evaluated sets; the export refits it on the
same sentences (``--sts-data``, the suite's settings in the spec) and stores it, so the folder's vectors are
the ones the STS table scored (for other sentences, this fixed kernel, not a refit).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

from sentrepro import codedeps, registry, st_module
from sentrepro.fsutil import atomic_dir, read_json, sha256_file
from sentrepro.mteb_results import MTEB_STS, NOT_IN_MTEB, SPLIT, mteb_results, task_spearman

CODE_DIR = "sentrepro_code"
MODEL_DIR = "encoder"
MODULE_FILE = "sentrepro_st.py"
RECORD = st_module.EXPORT_RECORD
TRANSFORM_FILE = "whitening.safetensors"
MTEB_DIR = "mteb"
PURPOSE = "test"  # the embedding the test tables scored (PromptBERT: test_protocol decides the wrapping)
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)sentrepro(?=[.\s]|$)", re.MULTILINE)


class ExportError(ValueError):
    """The run cannot be exported as asked; the message says what is missing."""


# --- the project's code, shipped inside the folder ----------------------------------------------


def rename_imports(source: str, package: str) -> str:
    """``from sentrepro.x import y`` / ``import sentrepro.x`` -> the same with ``package``; nothing else."""
    return _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{package}", source)


def code_files(kind: str) -> list[str]:
    """Package-relative paths of the code a kind's evaluation embedding runs (modules and data files)."""
    module = registry.implementation_module(registry.method(kind).implementation)
    return codedeps.closure_files([module, "sentrepro.backbones"])


def vendor_code(kind: str, dest: Path) -> str:
    """Copy the kind's code closure under ``dest/<package>/``; returns the package name."""
    files = code_files(kind)
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + b"\0" + (codedeps.PACKAGE_DIR / rel).read_bytes() + b"\0")
    package = f"sentrepro_{digest.hexdigest()[:12]}"
    for rel in files:
        source, target = codedeps.PACKAGE_DIR / rel, dest / package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".py"):
            target.write_text(rename_imports(source.read_text(encoding="utf-8"), package), encoding="utf-8")
        else:
            shutil.copyfile(source, target)
    for directory in {(dest / package / rel).parent for rel in files}:  # namespace dirs become packages
        (directory / "__init__.py").touch()
    return package


# --- the model ------------------------------------------------------------------------------------


def model_source(spec: dict, run_dir: Path | None, model_manifest: Path | None) -> tuple[Path, bool]:
    """The directory evaluation loads the model from, and whether it is a trained run's checkpoint."""
    from sentrepro.pretrained.snapshot import model_location
    from sentrepro.train import BEST

    if registry.method(spec["method"]["kind"]).trains:
        if not run_dir or not (Path(run_dir) / BEST).is_dir():
            raise ExportError(f"method kind '{spec['method']['kind']}' trains: --run-dir must hold {BEST}/ "
                              f"(got '{run_dir}')")
        return Path(run_dir) / BEST, True
    return Path(model_location(spec["backbone"]["model"], model_manifest)), False


def whitening_transform(spec: dict, run_dir, model_manifest, sts_data: Path | None) -> dict:
    """BERT-whitening's kernel and mean on the STS suite's sentences, as the suite's one encoding call fits it."""
    import numpy as np

    from sentrepro.encoding import encode_sentences
    from sentrepro.evaluation.job import load_for_eval, source_root
    from sentrepro.evaluation.sts_suite import load_sts_tasks
    from sentrepro.methods.baselines import whitening_kernel

    if sts_data is None or "settings" not in spec:
        raise ExportError("whitening fits its kernel on the STS suite's sentences: pass --sts-data (the STS "
                          "source's MANIFEST.json) and the STS suite's settings in the spec")
    tasks, _ = load_sts_tasks(source_root(sts_data), spec["settings"])
    # the suite's one call embeds both sides of every pair; mean and covariance ignore the order
    sentences = [s for subsets in tasks.values() for pairs in subsets.values() for p in pairs for s in (p.s1, p.s2)]
    method, model, _ = load_for_eval(spec, run_dir, model_manifest)
    method.transform_embeddings = lambda vectors, purpose: vectors  # the pooled vectors the kernel is fitted on
    raw = encode_sentences(method, model, sentences, purpose=PURPOSE,
                           batch_size=spec["settings"].get("batch_size", 128))
    kernel, mean = whitening_kernel(raw)
    return {"kernel": np.ascontiguousarray(kernel), "mean": np.ascontiguousarray(mean),
            "dims": method.params["whitening_dims"], "sentences": len(sentences)}


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
               transform: dict | None, synthetic: bool) -> str:
    kind = spec["method"]["kind"]
    backbone = spec["backbone"]
    lines = card_metadata(name, base_model, kind, sts)
    lines += ["", f"# {name}", "",
              f"A `{kind}` sentence encoder on backbone `{backbone.get('model')}` "
              f"({'trained, seed ' + str(spec.get('seed')) if trained else 'not fine-tuned'}), reproduced by the "
              "sentrepro workflow (ConPVP / PromptBERT / MoCoUTRL reproduction) and exported by `sentrepro export`.",
              "", "## Loading", "",
              "```python", "from sentence_transformers import SentenceTransformer",
              f"model = SentenceTransformer(\"path/to/this/folder\", trust_remote_code=True)",
              "vectors = model.encode([\"A man is playing a guitar.\"])", "```", "",
              "Loading needs `sentence-transformers`, `transformers`, `torch`, `numpy`, `safetensors` and `PyYAML`, "
              "and `trust_remote_code=True`: the module `sentrepro_st.py` builds the method's evaluation embedding "
              f"from the project code shipped in `{CODE_DIR}/` (no clone of sentrepro needed). `encode()` gives "
              "the vectors the evaluation scored: same template, [MASK] readout, denoising, prompt vectors, "
              "head, pooling and truncation. Score with cosine similarity; do not pass `prompt=` "
              "(the method builds its own template) and keep `normalize_embeddings=False` to get the raw vectors.", ""]
    if transform:
        lines += [f"BERT-whitening's kernel was fitted on the {transform['sentences']} sentence occurrences of the "
                  "STS suite (as its evaluation did) and is applied as a fixed transform "
                  f"(`{TRANSFORM_FILE}`).", ""]
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
    if cells:
        lines += ["| table | row | column | reproduced | std | n | paper |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {c['table']} | {c['row']} | {c['column']} | {c['value'] or '–'} | {c['std'] or '–'} | "
                  f"{c['n']} | {c['reported'] or '–'} |" for c in cells]
    else:
        lines.append("No table cell of this experiment reads this run's STS metrics.")
    lines += ["", "## Verdicts on the papers' claims about this row", ""]
    if verdicts:
        lines += ["| claim | verdict | ours Δ | paper Δ |", "|---|---|---|---|"]
        lines += [f"| {v['claim']}: {v['text']} | {v['verdict']} | {v['ours_delta'] or '–'} | "
                  f"{v['paper_delta'] or '–'} |" for v in verdicts]
    else:
        lines.append("No verdict of this experiment uses this run.")
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
    lines += ["", f"Every file of this folder is listed with its sha256 in `{RECORD}`.", ""]
    return "\n".join(lines)


# --- the export -----------------------------------------------------------------------------------


def export_run(spec: dict, run_dir: Path | None, model_manifest: Path | None, out: Path, *,
               sts_metrics: Path | None = None, tables: list[Path] = (), verdicts: Path | None = None,
               sts_data: Path | None = None) -> dict:
    """Write the exported folder ``out`` (atomically) and return its record."""
    from sentrepro.provenance import Provenance

    kind = spec["method"]["kind"]
    registry.method(kind)  # unknown kinds fail here, naming the known ones
    source, trained = model_source(spec, run_dir, model_manifest)
    run = spec.get("run", {})
    name = "/".join(str(run.get(k)) for k in ("backbone", "method") if run.get(k)) or kind
    name += f"/{'seed' + str(spec['seed']) if trained else 'frozen'}"
    prov = Provenance(step="export", config=spec, seed=spec.get("seed"))
    train_summary = None
    if trained:
        summary_path = Path(run_dir) / "train.json"
        if summary_path.exists():
            prov.add_input(summary_path, "training summary")
            train_summary = read_json(summary_path)
    elif model_manifest:
        prov.add_input(model_manifest, "model manifest")
    sts = None
    if sts_metrics:
        prov.add_input(sts_metrics, "STS metrics")
        sts = read_json(sts_metrics)
    for table in tables:
        prov.add_input(table, "table")
    if verdicts:
        prov.add_input(verdicts, "verdicts")
    transform = None
    if kind == "whitening":
        transform = whitening_transform(spec, run_dir, model_manifest, sts_data)
        prov.add_input(sts_data, "STS data (whitening statistics)")
    cells = table_cells(list(tables), Path(sts_metrics)) if sts_metrics else []
    rows = run_verdicts(verdicts, Path(sts_metrics)) if sts_metrics else []
    implementation = registry.method(kind).implementation
    module, _, cls = implementation.partition(":")
    with atomic_dir(out) as tmp:
        model_dir = tmp / MODEL_DIR
        model_dir.mkdir()
        for path in sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")):
            shutil.copyfile(path, model_dir / path.name)
            if not trained:
                prov.add_input(path, "backbone file")
        if trained:
            for path in sorted(p for p in source.iterdir() if p.is_file()):
                prov.add_input(path, "model file")
        package = vendor_code(kind, tmp / CODE_DIR)
        shutil.copyfile(st_module.__file__, tmp / MODULE_FILE)
        config = {"package": package, "code_dir": CODE_DIR, "model_dir": MODEL_DIR,
                  "implementation": f"{module.removeprefix('sentrepro.')}:{cls}", "kind": kind,
                  "params": spec["method"]["params"], "family": spec["backbone"]["family"],
                  "attention": spec.get("attention", "eager"), "trained": trained, "purpose": PURPOSE,
                  "transform": {"file": TRANSFORM_FILE, "dims": transform["dims"]} if transform else None}
        if transform:
            import torch
            from safetensors.torch import save_file

            save_file({"kernel": torch.from_numpy(transform["kernel"]), "mean": torch.from_numpy(transform["mean"])},
                      str(tmp / TRANSFORM_FILE))
        _write_json(tmp / st_module.EXPORT_CONFIG, config)
        _write_json(tmp / "modules.json", [{"idx": 0, "name": "0", "path": "",
                                             "type": f"{Path(MODULE_FILE).stem}.{st_module.SentreproEncoder.__name__}"}])
        _write_json(tmp / "config_sentence_transformers.json",
                    {"model_type": "SentenceTransformer", "prompts": {}, "default_prompt_name": None,
                     "similarity_fn_name": "cosine"})
        if sts:
            evaluation_time = sts.get("provenance", {}).get("wall_seconds")
            for task, payload in mteb_results(sts, mteb_version=None, evaluation_time=evaluation_time).items():
                _write_json(tmp / MTEB_DIR / f"{task}.json", payload)
        base_model = spec["backbone"].get("model")
        card = model_card(name=name, spec=spec, trained=trained,
                          base_model=base_model if base_model and not base_model.startswith(("pkg://", "/", ".")) else None,
                          sts=sts, cells=cells, verdicts=rows, train_summary=train_summary, inputs=prov.inputs,
                          transform=transform, synthetic=bool((sts or {}).get("data", {}).get("synthetic")))
        (tmp / "README.md").write_text(card, encoding="utf-8")
        files = {p.relative_to(tmp).as_posix(): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        record = {"kind": "sentrepro-export", "name": name, "folder_files": files, "table_cells": cells, "verdicts": rows,
                  "mteb_tasks": sorted(p.stem for p in (tmp / MTEB_DIR).glob("*.json")),
                  "provenance": prov.finish()}
        _write_json(tmp / RECORD, record)
    return record


def _write_json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
