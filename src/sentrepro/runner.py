"""The steps behind ``sentrepro train`` and ``sentrepro evaluate``: wiring config slices to the code.

Kept apart from the CLI so tests can call them directly. Each step writes one JSON with results and
a provenance block (inputs with sha256, config slice, seed, code and library versions, device...).
"""

from __future__ import annotations

from pathlib import Path

import torch

from sentrepro.backbones import configure_threads, load_encoder, load_tokenizer
from sentrepro.data.prepare import dataset_file
from sentrepro.data.sts import read_sts_benchmark
from sentrepro.encoding import encode_sentences
from sentrepro.evaluation.sts import cosine_rows, correlations
from sentrepro.config import canonical_json
from sentrepro.fsutil import atomic_write_json, read_json, sha256_bytes
from sentrepro.methods import build_method, kind_authors_precision, kind_trains
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.evaluation.item_scores import pairs_path, write_pairs
from sentrepro.pretrained.snapshot import model_inputs, model_location
from sentrepro.provenance import Provenance, file_record
from sentrepro.tokenize import TokenizedCorpus, check_vocabulary
from sentrepro.train import BEST, TrainSettings, seed_everything, train

TRAIN_SUMMARY = "train.json"


def pick_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precision(requested: str, device: str) -> str:
    """The precision a job computes in: ``auto`` = bf16 on GPUs that support it, else fp16 (with loss
    scaling); on CPU always fp32 (autocast is applied on CUDA only, ``encoding.autocast_context``)."""
    if device == "cpu":
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested


DEV_PRECISIONS = ("fp32", "training")


def dev_scoring_precision(option: str, training_precision: str) -> str:
    """The precision STS-B dev is scored in during training (``training.dev_precision``).

    ``fp32`` (default): outside autocast, as the reference trainers' ``evaluate`` (SimCSE
    ``simcse/trainers.py:105-118``: the SentEval batcher under ``torch.no_grad()`` only, the AMP
    ``autocast`` wrapping the training step alone); ``training``: under the training precision's
    autocast (faster on GPU; may select a different best checkpoint).
    """
    if option == "fp32":
        return "fp32"
    if option == "training":
        return training_precision
    raise ValueError(f"training.dev_precision: '{option}' is not one of {', '.join(DEV_PRECISIONS)}")


def stsb_dev_scorer(method: Method, pairs, batch_size: int, device: str, precision: str):
    """A closure scoring STS-B dev Spearman x100 with the method's dev protocol.

    The dev sentences are fixed, so they are deduplicated and length-sorted once per call inside
    ``encode_sentences``; only STS-B dev is encoded (the reference also encodes train/test splits
    of STS-B and SICK-R at every evaluation).
    """
    left = [p.s1 for p in pairs]
    right = [p.s2 for p in pairs]
    gold = [p.score for p in pairs]
    sentences = left + right

    def score(model: SentenceModel) -> float:
        emb = encode_sentences(method, model, sentences, purpose="dev", batch_size=batch_size, device=device,
                               precision=precision)
        sims = cosine_rows(emb[: len(left)], emb[len(left):])
        return 100 * correlations(sims, gold)["spearman"]

    return score


def initial_model(backbone: dict, method_spec: dict, seed: int, attention: str,
                  location: str) -> tuple[Method, SentenceModel]:
    """The method and its model as a training job builds them before the first update (step 0).

    Seeded first, so the method's freshly created extras (heads, soft prompts) are the same in the
    training job and in the step-0 evaluation (``run_sts_evaluation(..., at_start=True)``).
    """
    params = method_spec["params"]
    seed_everything(seed)
    tokenizer = load_tokenizer(location)  # the backbone's snapshot directory (pretrained.snapshot.model_location)
    encoder = load_encoder(location, backbone["family"], attention=attention, dropout=params.get("dropout"))
    method = build_method(method_spec["kind"], params, backbone["family"], tokenizer)
    return method, method.build_model(encoder)


def run_training(spec: dict, tokenized_dir: Path, dev_manifest: Path, run_dir: Path, *,
                 stop_after: int | None = None, log=print, model_manifest: Path | None = None,
                 progress=None) -> dict:
    """Train one (backbone, method, seed) run and write ``run_dir/train.json``.

    ``model_manifest``: the backbone's fetched snapshot (the workflow always passes it); without it
    only a local model directory can be loaded.
    """
    run_dir = Path(run_dir)
    backbone, method_spec, seed = spec["backbone"], spec["method"], spec["seed"]
    training = spec["training"]
    threads = configure_threads(spec.get("threads"))
    device = pick_device()
    authors = kind_authors_precision(method_spec["kind"])
    configured = training.get("precision", "authors")
    configured = authors if configured == "authors" else configured  # a slice is resolved already
    precision = resolve_precision(configured, device)
    dev_precision = dev_scoring_precision(training.get("dev_precision", "fp32"), precision)
    prov = Provenance(step="train", config=spec, seed=seed, device=device, precision=precision)
    for path in sorted(Path(tokenized_dir).glob("*.npy")) + [Path(tokenized_dir) / "tokenized.json"]:
        prov.add_input(path, "tokenized corpus")
    prov.add_input(dev_manifest, "dev dataset manifest")
    dev_file = dataset_file(dev_manifest, training["dev_file"])
    prov.add_input(dev_file, "STS-B dev")
    for path, role in model_inputs(backbone["model"], model_manifest):
        prov.add_input(path, role)

    params = method_spec["params"]
    location = model_location(backbone["model"], model_manifest)
    check_vocabulary(load_tokenizer(location), tokenized_dir)
    method, model = initial_model(backbone, method_spec, seed, training.get("attention", "eager"), location)
    corpus = method.training_items(TokenizedCorpus.open(tokenized_dir), seed)
    settings = TrainSettings.from_params(params, training, device, precision)
    scorer = stsb_dev_scorer(method, read_sts_benchmark(dev_file), 128, device, dev_precision)
    meta = {"kind": method_spec["kind"], "family": backbone["family"], "params": params, "seed": seed}
    resume_key = sha256_bytes(canonical_json(spec).encode())
    summary = train(method, model, corpus, run_dir, settings, seed, scorer, save_meta=meta, log=log,
                    stop_after=stop_after, resume_key=resume_key, progress=progress)
    if "interrupted_at" in summary:
        return summary
    best = run_dir / BEST
    for path in sorted(p for p in best.iterdir() if p.is_file()):
        prov.add_input(path, "best checkpoint file (output)")
    summary["threads"] = threads
    # configured: the slice's (per-method) precision; used: what this device computed in (fp32 on CPU)
    summary["precision"] = {"configured": configured, "used": precision, "authors": authors,
                            "dev_scoring": dev_precision}
    summary["provenance"] = prov.finish()
    atomic_write_json(run_dir / TRAIN_SUMMARY, summary)
    return summary


def load_for_eval(spec: dict, run_dir: Path | None, model_manifest: Path | None = None
                  ) -> tuple[Method, SentenceModel, list[tuple[Path, str]]]:
    """The method and model to evaluate, and their provenance inputs (path, role): the best checkpoint of a
    run, or the frozen backbone (from its snapshot ``model_manifest``)."""
    backbone, method_spec = spec["backbone"], spec["method"]
    attention = spec.get("attention", "eager")
    trained = kind_trains(method_spec["kind"])
    if not trained:
        source = model_location(backbone["model"], model_manifest)
        files = model_inputs(backbone["model"], model_manifest)
    else:
        source = str(Path(run_dir) / BEST)
        files = [(Path(run_dir) / TRAIN_SUMMARY, "training summary")] + [
            (p, "model file") for p in sorted(p for p in (Path(run_dir) / BEST).iterdir() if p.is_file())]
    tokenizer = load_tokenizer(source)
    encoder = load_encoder(source, backbone["family"], attention=attention)
    method = build_method(method_spec["kind"], method_spec["params"], backbone["family"], tokenizer)
    model = method.build_model(encoder)
    if trained:
        model.load_extras(Path(source))
    return method, model, files


def run_sts_evaluation(spec: dict, run_dir: Path | None, sts_manifest: Path, out: Path,
                       model_manifest: Path | None = None, *, at_start: bool = False) -> dict:
    """Score a model on the configured STS tasks; write the metrics JSON with provenance.

    ``at_start``: score the model a training run starts from (step 0, before any update) with the
    method's own evaluation embedding instead of the run's best checkpoint -- the "before" of a run
    on the test sets. Nothing is selected on it, so it leaks nothing into training.
    """
    from sentrepro.evaluation.sts_suite import evaluate_sts

    configure_threads(spec.get("threads"))
    device = pick_device()
    precision = resolve_precision(spec.get("precision", "fp32"), device)
    prov = Provenance(step="evaluate_sts_start" if at_start else "evaluate_sts", config=spec, seed=spec.get("seed"),
                      device=device, precision=precision)
    if at_start:
        if not kind_trains(spec["method"]["kind"]):
            raise ValueError(f"--at-start: method kind '{spec['method']['kind']}' does not train, so it has no step 0")
        location = model_location(spec["backbone"]["model"], model_manifest)
        method, model = initial_model(spec["backbone"], spec["method"], spec["seed"], spec.get("attention", "eager"),
                                      location)
        files = model_inputs(spec["backbone"]["model"], model_manifest)
    else:
        method, model, files = load_for_eval(spec, run_dir, model_manifest)
    for path, role in files:
        prov.add_input(path, role)
    prov.add_input(sts_manifest, "STS dataset manifest")
    model.to(device)
    sts = spec["sts"]
    items: dict = {}
    results, used_files, encoded = evaluate_sts(method, model, Path(sts_manifest), sts, device=device,
                                                precision=precision, items=items)
    for path in used_files:
        prov.add_input(path, "STS data file")
    item_scores = write_pairs(pairs_path(out), items)
    prov.extra["outputs"] = [file_record(pairs_path(out), "per-pair cosines and gold scores (item_scores)")]
    manifest = read_json(sts_manifest)
    # The keys every metrics file has (README, evaluation suites): the data's source and whether it is
    # a generated fixture (from its manifest), the subset scored (STS always scores whole test sets)
    # and how many distinct sentences were encoded.
    payload = {"suite": "sts", "variant": sts["variant"], "aggregation": "all", "results": results,
               "data": {"source": sts.get("source") or manifest.get("name"),
                        "synthetic": bool(manifest.get("synthetic", False))},
               "subset": None, "encoded_sentences": encoded, "item_scores": item_scores,
               **({"state": "step 0 (untrained, as the training job builds it)"} if at_start else {}),
               "provenance": prov.finish()}
    atomic_write_json(out, payload)
    return payload


def read_train_summary(run_dir: Path) -> dict:
    return read_json(Path(run_dir) / TRAIN_SUMMARY)
