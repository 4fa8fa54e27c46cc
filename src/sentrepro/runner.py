"""The steps behind ``sentrepro train`` and ``sentrepro evaluate``: wiring config slices to the code.

Kept apart from the CLI so tests can call them directly. Each step writes one JSON with results and
a provenance block (inputs with sha256, config slice, seed, code and library versions, device...).
"""

from __future__ import annotations

from pathlib import Path

import torch

from sentrepro.backbones import configure_threads, load_encoder, load_tokenizer, model_files
from sentrepro.data.prepare import dataset_file
from sentrepro.data.sts import read_sts_benchmark
from sentrepro.encoding import encode_sentences
from sentrepro.evaluation.sts import cosine_rows, correlations
from sentrepro.config import canonical_json
from sentrepro.fsutil import atomic_write_json, read_json, sha256_bytes
from sentrepro.methods import build_method, kind_trains
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.provenance import Provenance
from sentrepro.tokenize import TokenizedCorpus
from sentrepro.train import BEST, TrainSettings, seed_everything, train

TRAIN_SUMMARY = "train.json"


def pick_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precision(requested: str, device: str) -> str:
    """``auto``: bf16 on GPUs that support it, else fp16 (with loss scaling); fp32 on CPU."""
    if device == "cpu":
        return "fp32" if requested in ("auto", "fp16") else requested
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested


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


def initial_model(backbone: dict, method_spec: dict, seed: int, attention: str) -> tuple[Method, SentenceModel]:
    """The method and its model as a training job builds them before the first update (step 0).

    Seeded first, so the method's freshly created extras (heads, soft prompts) are the same in the
    training job and in the step-0 evaluation (``run_sts_evaluation(..., at_start=True)``).
    """
    params = method_spec["params"]
    seed_everything(seed)
    tokenizer = load_tokenizer(backbone["model"])
    encoder = load_encoder(backbone["model"], backbone["family"], attention=attention, dropout=params.get("dropout"))
    method = build_method(method_spec["kind"], params, backbone["family"], tokenizer)
    return method, method.build_model(encoder)


def run_training(spec: dict, tokenized_dir: Path, dev_manifest: Path, run_dir: Path, *,
                 stop_after: int | None = None, log=print, progress=None) -> dict:
    """Train one (backbone, method, seed) run and write ``run_dir/train.json``."""
    run_dir = Path(run_dir)
    backbone, method_spec, seed = spec["backbone"], spec["method"], spec["seed"]
    training = spec["training"]
    threads = configure_threads(spec.get("threads"))
    device = pick_device()
    precision = resolve_precision(training.get("precision", "auto"), device)
    prov = Provenance(step="train", config=spec, seed=seed, device=device, precision=precision)
    for path in sorted(Path(tokenized_dir).glob("*.npy")) + [Path(tokenized_dir) / "tokenized.json"]:
        prov.add_input(path, "tokenized corpus")
    prov.add_input(dev_manifest, "dev dataset manifest")
    dev_file = dataset_file(dev_manifest, training["dev_file"])
    prov.add_input(dev_file, "STS-B dev")
    for path in model_files(backbone["model"]):
        prov.add_input(path, "backbone file")

    params = method_spec["params"]
    method, model = initial_model(backbone, method_spec, seed, training.get("attention", "eager"))
    corpus = method.training_items(TokenizedCorpus.open(tokenized_dir), seed)
    settings = TrainSettings.from_params(params, training, device, precision)
    scorer = stsb_dev_scorer(method, read_sts_benchmark(dev_file), 128, device, precision)
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
    summary["provenance"] = prov.finish()
    atomic_write_json(run_dir / TRAIN_SUMMARY, summary)
    return summary


def load_for_eval(spec: dict, run_dir: Path | None) -> tuple[Method, SentenceModel, list[Path]]:
    """The method and model to evaluate: the best checkpoint of a run, or the frozen backbone."""
    backbone, method_spec = spec["backbone"], spec["method"]
    attention = spec.get("attention", "eager")
    trained = kind_trains(method_spec["kind"])
    if not trained:
        source = backbone["model"]
        files = model_files(source)
    else:
        source = str(Path(run_dir) / BEST)
        files = [Path(run_dir) / TRAIN_SUMMARY] + sorted(p for p in (Path(run_dir) / BEST).iterdir() if p.is_file())
    tokenizer = load_tokenizer(source)
    encoder = load_encoder(source, backbone["family"], attention=attention)
    method = build_method(method_spec["kind"], method_spec["params"], backbone["family"], tokenizer)
    model = method.build_model(encoder)
    if trained:
        model.load_extras(Path(source))
    return method, model, files


def run_sts_evaluation(spec: dict, run_dir: Path | None, sts_manifest: Path, out: Path, *,
                       at_start: bool = False) -> dict:
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
        method, model = initial_model(spec["backbone"], spec["method"], spec["seed"], spec.get("attention", "eager"))
        files = model_files(spec["backbone"]["model"])
    else:
        method, model, files = load_for_eval(spec, run_dir)
    for path in files:
        prov.add_input(path, "model file" if path.name != TRAIN_SUMMARY else "training summary")
    prov.add_input(sts_manifest, "STS dataset manifest")
    model.to(device)
    sts = spec["sts"]
    results, used_files = evaluate_sts(method, model, Path(sts_manifest), sts, device=device, precision=precision)
    for path in used_files:
        prov.add_input(path, "STS data file")
    payload = {"suite": "sts", "variant": sts["variant"], "aggregation": "all", "results": results,
               **({"state": "step 0 (untrained, as the training job builds it)"} if at_start else {}),
               "provenance": prov.finish()}
    atomic_write_json(out, payload)
    return payload


def read_train_summary(run_dir: Path) -> dict:
    return read_json(Path(run_dir) / TRAIN_SUMMARY)
