"""``sentrepro export``: a finished run as a sentence-transformers folder, model card and MTEB result files.

The folder (``SentenceTransformer(folder, trust_remote_code=True)`` loads it)::

    modules.json, config_sentence_transformers.json   one module, sentrepro_st.SentreproEncoder
    sentrepro_st.py                                    the module (src/sentrepro/export/st_module.py)
    sentrepro_export_config.json                       method kind, class, resolved parameters, family
    sentrepro_code/<package>/...                       the project's embedding code (see below)
    encoder/                                           the evaluated weights: the run's best/ checkpoint
                                                       (encoder, tokenizer, extras), or the frozen backbone,
                                                       hard links, not copies (see place_file)
    whitening.safetensors                              BERT-whitening's kernel and mean (whitening only)
    mteb/<Task>.json                                   MTEB result files of the STS scores
    sentrepro_export.json                              sha256 of every file above + provenance (audit)
    README.md, sentrepro_card.json                     model card (Hub metadata, the tables' cells and
                                                       verdicts about the run) and its record: written
                                                       by sentrepro.export.model_card, in the workflow by a
                                                       job of its own (rule export_card)

**Faithful by construction.** Rather than re-implementing each method's evaluation embedding, the folder
carries the code evaluation runs: the static-import closure (:mod:`sentrepro.code.codedeps`) of the method's
module and :mod:`sentrepro.encoder.load`, with ``sentrepro`` renamed in its import statements to a package
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

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from sentrepro.code import codedeps
from sentrepro.planning import registry
from sentrepro.export import st_module
from sentrepro.files import atomic_dir, atomic_path, read_json
from sentrepro.hashing import sha256_file
from sentrepro.export.model_card import write_card
from sentrepro.export.mteb_results import MTEB_DIR, mteb_results

CODE_DIR = "sentrepro_code"
MODEL_DIR = "encoder"
MODULE_FILE = "sentrepro_st.py"
RECORD = st_module.EXPORT_RECORD
TRANSFORM_FILE = "whitening.safetensors"
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
    return codedeps.closure_files([module, "sentrepro.encoder.load"])


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
    from sentrepro.pretrained.reference import resolve_model
    from sentrepro.records.recorded import verify_best
    from sentrepro.runs import BEST

    if registry.method(spec["method"]["kind"]).trains:
        if not run_dir or not (Path(run_dir) / BEST).is_dir():
            raise ExportError(f"method kind '{spec['method']['kind']}' trains: --run-dir must hold {BEST}/ "
                              f"(got '{run_dir}')")
        verify_best(run_dir)  # against train.json, before a file of it is linked into the export
        return Path(run_dir) / BEST, True
    return resolve_model(spec["backbone"], model_manifest).location, False


def whitening_transform(spec: dict, run_dir, model_manifest, sts_data: Path | None) -> dict:
    """BERT-whitening's kernel and mean on the STS suite's sentences, as the suite's one encoding call fits it."""
    import numpy as np

    from sentrepro.encoder.encode import encode_sentences
    from sentrepro.evaluation.job import load_for_eval, source_root
    from sentrepro.evaluation.sts_suite import load_sts_tasks
    from sentrepro.methods.baselines import whitening_kernel

    if sts_data is None or "settings" not in spec:
        raise ExportError("whitening fits its kernel on the STS suite's sentences: pass --sts-data (the STS "
                          "source's MANIFEST.json) and the STS suite's settings in the spec")
    tasks, _ = load_sts_tasks(source_root(sts_data), spec["settings"], check_counts=not spec.get("synthetic", False))
    # the suite's one call embeds both sides of every pair; mean and covariance ignore the order
    sentences = [s for subsets in tasks.values() for pairs in subsets.values() for p in pairs for s in (p.s1, p.s2)]
    method, model, _ = load_for_eval(spec, run_dir, model_manifest)
    method.transform_embeddings = lambda vectors, purpose: vectors  # the pooled vectors the kernel is fitted on
    raw = encode_sentences(method, model, sentences, purpose=PURPOSE,
                           batch_size=spec["settings"].get("batch_size", 128))
    kernel, mean = whitening_kernel(raw)
    return {"kernel": np.ascontiguousarray(kernel), "mean": np.ascontiguousarray(mean),
            "dims": method.params["whitening_dims"], "sentences": len(sentences)}


# --- the weights, stored once ----------------------------------------------------------------------


def place_file(source: Path, target: Path, store: Path | None) -> str:
    """Put ``source``'s bytes at ``target`` without writing them again; returns how.

    ``link``: a hard link to ``source`` (the run's ``best/`` file, or the backbone snapshot's file for a
    frozen baseline), where the file system allows it. ``store``: otherwise (another file system, no
    hard links), a hard link to one content-addressed copy ``store/<sha256>``, written once per content
    and verified by its hash before every reuse, so every export of the same weights shares it. ``copy``:
    when even that fails (no store given, or a file system without hard links). Whichever way, the folder
    holds plain files (sentence-transformers loads it alone) and the record lists their sha256.
    Every writer of the project replaces a file by renaming a new one over it, so a file shared by links
    is never changed under another name; an edit in place by hand would be, and the audit of the run and
    of the export both name it.
    """
    try:
        os.link(source, target)
        return "link"
    except OSError:
        pass
    if store is not None:
        digest = sha256_file(source)
        kept = Path(store) / digest
        if not (kept.is_file() and sha256_file(kept) == digest):
            with atomic_path(kept) as tmp:
                shutil.copyfile(source, tmp)
            if sha256_file(kept) != digest:
                raise ExportError(f"{kept}: the stored copy of {source} does not hash to {digest}")
        try:
            os.link(kept, target)
            return "store"
        except OSError:
            pass
    shutil.copyfile(source, target)
    return "copy"


# --- the export -----------------------------------------------------------------------------------


def export_run(spec: dict, run_dir: Path | None, model_manifest: Path | None, out: Path, *,
               sts_metrics: Path | None = None, tables: list[Path] = (), verdicts: Path | None = None,
               sts_data: Path | None = None, card: bool = True, store: Path | None = None) -> dict:
    """Write the exported folder ``out`` (atomically) and return its record.

    The weights are placed by :func:`place_file` (a hard link where possible, ``store`` otherwise).
    ``card``: also write the model card (:func:`sentrepro.export.model_card.write_card`, with ``tables`` and
    ``verdicts``); the workflow passes ``card=False`` and writes it in a job of its own, so the export
    depends on its own run only."""
    from sentrepro.records.provenance import Provenance

    kind = spec["method"]["kind"]
    registry.method(kind)  # unknown kinds fail here, naming the known ones
    source, trained = model_source(spec, run_dir, model_manifest)
    run = spec.get("run", {})
    name = "/".join(str(run.get(k)) for k in ("backbone", "method") if run.get(k)) or kind
    name += f"/{'seed' + str(spec['seed']) if trained else 'frozen'}"
    prov = Provenance(step="export", config=spec, seed=spec.get("seed"))
    if trained:
        summary_path = Path(run_dir) / "train.json"
        if summary_path.exists():
            prov.add_input(summary_path, "training summary")
    elif model_manifest:
        prov.add_input(model_manifest, "model manifest")
    sts = None
    if sts_metrics:
        prov.add_input(sts_metrics, "STS metrics")
        sts = read_json(sts_metrics)
    transform = None
    if kind == "whitening":
        transform = whitening_transform(spec, run_dir, model_manifest, sts_data)
        prov.add_input(sts_data, "STS data (whitening statistics)")
    implementation = registry.method(kind).implementation
    module, _, cls = implementation.partition(":")
    with atomic_dir(out) as tmp:
        model_dir = tmp / MODEL_DIR
        model_dir.mkdir()
        placed = {}
        for path in sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")):
            placed[f"{MODEL_DIR}/{path.name}"] = {"how": place_file(path, model_dir / path.name, store),
                                                  "source": str(path)}
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
        about = {"trained": trained, "synthetic": bool((sts or {}).get("data", {}).get("synthetic")),
                 "base_model": base_model if base_model and not base_model.startswith(("pkg://", "/", ".")) else None,
                 "transform_sentences": transform["sentences"] if transform else None}
        files = {p.relative_to(tmp).as_posix(): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        record = {"kind": "sentrepro-export", "name": name, "folder_files": files, "weights": placed, "card": about,
                  "mteb_tasks": sorted(p.stem for p in (tmp / MTEB_DIR).glob("*.json")),
                  "provenance": prov.finish()}
        _write_json(tmp / RECORD, record)
    if card:
        write_card(out, list(tables), verdicts)
    return record


def _write_json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
