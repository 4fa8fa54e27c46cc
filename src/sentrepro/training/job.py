"""The step behind ``sentrepro train``: wiring a training slice to the training loop.

Kept apart from the CLI so tests can call it directly. It writes ``train.json`` with the training
summary and a provenance block (inputs with sha256, config slice, seed, code and library versions,
device...). Evaluation jobs are set up in :mod:`sentrepro.evaluation.job`, a peer this module does not import
(what both need is in :mod:`sentrepro.encoder`).
"""

from __future__ import annotations

from pathlib import Path

from sentrepro.planning import registry
from sentrepro.encoder.device import configure_threads
from sentrepro.encoder.load import load_tokenizer
from sentrepro.code.codedeps import running_record
from sentrepro.runs import BEST, FINISHED_SUMMARY, TRAIN_SUMMARY, canonical_json
from sentrepro.data.prepare import dataset_file
from sentrepro.data.benchmarks.sts import read_sts_benchmark
from sentrepro.encoder.encode import encode_sentences
from sentrepro.evaluation.sts import cosine_rows, correlations
from sentrepro.files import atomic_path, atomic_write_json, read_json
from sentrepro.hashing import sha256_bytes
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.encoder.start import initial_model
from sentrepro.encoder.device import resolve_device, resolve_precision
from sentrepro.pretrained.reference import resolve_model
from sentrepro.records.provenance import Provenance
from sentrepro.training.corpus import TokenizedCorpus, check_vocabulary
from sentrepro.records.ledger import latest_write, record_dropped
from sentrepro.records.recorded import BEST_ROLE, add_verified_input, content_record, verify_tokenized
from sentrepro.training.loop import TrainSettings, drop_resume_state, train


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


def checkpoint_key(spec: dict, code: dict | None) -> str:
    """What a ``last/`` checkpoint must have been written under for this job to resume it: the run's settings
    and the fingerprint of the code the job runs (``codedeps.running_record``; None when called directly).

    Snakemake reruns a training job when its method's code changes; the job must then train afresh with the
    new code, not restore the finished state the old code left in ``last/`` and relabel it with the new
    fingerprint. An interrupted job rerun with the same settings and code resumes.
    """
    return sha256_bytes((canonical_json(spec) + "\n" + (code or {}).get("fingerprint", "")).encode())


def read_dev_pairs(dev_manifest: Path, dev_file: Path) -> list:
    """STS-B dev, held to its documented count unless its prepared source's MANIFEST says it is a synthetic
    fixture (whose counts are its own: the rehearsal's dev split)."""
    return read_sts_benchmark(dev_file, check_counts=not read_json(dev_manifest).get("synthetic", False))


def adopt_finished_run(spec: dict, run_dir: Path, log) -> dict | None:
    """The summary of ``run_dir``'s finished run where it is exactly what this job would train, else None.

    A training job can run again after its run finished: SLURM requeues a job whose batch step did not report
    back (a node failure to slurmctld) and Snakemake, inside it, removes ``train.json`` first. The finished run
    left ``finished.json``, a byte copy of its summary that no rule declares. Where that copy was written under
    this job's settings (``--spec``) and code fingerprint, and every input it lists (the tokenized corpus, STS-B
    dev, the backbone, each file of ``best/``) still has its recorded sha256 (:mod:`sentrepro.records.adopt`), the
    job puts ``train.json`` back as those bytes and trains nothing. The ledger already records those bytes, so
    nothing is recorded again; only where its latest line for ``train.json`` is not a write of them is the put-back
    recorded. Anything else, and the job trains (resuming from ``last/`` where it can).
    """
    from sentrepro.hashing import sha256_bytes
    from sentrepro.records.adopt import why_not_adoptable

    finished = Path(run_dir) / FINISHED_SUMMARY
    if not finished.is_file():
        return None
    why_not = why_not_adoptable(finished, spec)
    if why_not is not None:
        log(f"not adopting the finished run in {run_dir}: {why_not}; training")
        return None
    summary_path = Path(run_dir) / TRAIN_SUMMARY
    data = finished.read_bytes()
    if not summary_path.is_file() or summary_path.read_bytes() != data:
        recorded = latest_write(summary_path)
        with atomic_path(summary_path, note=recorded is None or recorded["sha256"] != sha256_bytes(data)) as tmp:
            tmp.write_bytes(data)
    log(f"adopted the finished run in {run_dir}: {finished} was written with these settings, code and inputs, and "
        f"{BEST}/ is as it recorded; nothing trained (delete {run_dir} to train it again)")
    return read_json(summary_path)


def run_training(spec: dict, tokenized_dir: Path, dev_manifest: Path, run_dir: Path, *,
                 stop_after: int | None = None, log=print, model_manifest: Path | None = None,
                 progress=None, keep_resume_state: bool = True) -> dict:
    """Train one (backbone, method, seed) run and write ``run_dir/train.json``.

    ``model_manifest``: the backbone's fetched snapshot (the workflow always passes it); without it
    only a local model directory can be loaded. ``keep_resume_state=False`` (the workflow's default,
    ``training.keep_resume_state``): once the summary is written and ``best/`` verified against it,
    ``last/`` is removed and each removed file is recorded in the ledger as dropped.
    """
    run_dir = Path(run_dir)
    adopted = adopt_finished_run(spec, run_dir, log)
    if adopted is not None:
        return {**adopted, "adopted": str(run_dir / FINISHED_SUMMARY)}
    backbone, method_spec, seed = spec["backbone"], spec["method"], spec["seed"]
    training = spec["training"]
    threads = configure_threads(spec.get("threads"))
    device = resolve_device("auto")
    authors = registry.method(method_spec["kind"]).authors_precision
    configured = training.get("precision", "authors")
    configured = authors if configured == "authors" else configured  # a slice is resolved already
    precision = resolve_precision(configured, device)
    dev_precision = dev_scoring_precision(training.get("dev_precision", "fp32"), precision)
    prov = Provenance(step="train", config=spec, seed=seed, device=device, precision=precision)
    tokens = verify_tokenized(tokenized_dir)  # as its tokenize job recorded them, before anything reads them
    for path in sorted(Path(tokenized_dir).glob("*.npy")) + [Path(tokenized_dir) / "tokenized.json"]:
        add_verified_input(prov, path, "tokenized corpus", tokens.get(path))
    prov.add_input(dev_manifest, "dev dataset manifest")
    dev_file = dataset_file(dev_manifest, training["dev_file"])
    prov.add_input(dev_file, "STS-B dev")
    reference = resolve_model(backbone, model_manifest)  # the one place this job resolves its model
    for path, role in reference.inputs:
        prov.add_input(path, role)

    params = method_spec["params"]
    check_vocabulary(load_tokenizer(reference.location), tokenized_dir)
    method, model = initial_model(backbone, method_spec, seed, training.get("attention", "eager"), reference.location)
    corpus = method.training_items(TokenizedCorpus.open(tokenized_dir), seed)
    settings = TrainSettings.from_params(params, training, device, precision)
    scorer = stsb_dev_scorer(method, read_dev_pairs(dev_manifest, dev_file), 128, device, dev_precision)
    meta = {"kind": method_spec["kind"], "family": backbone["family"], "params": params, "seed": seed}
    summary = train(method, model, corpus, run_dir, settings, seed, scorer, save_meta=meta, log=log,
                    stop_after=stop_after, resume_key=checkpoint_key(spec, running_record()), progress=progress)
    if "interrupted_at" in summary:
        return summary
    best = run_dir / BEST
    best_files = {}
    for path in sorted(p for p in best.iterdir() if p.is_file()):
        best_files[str(path)] = prov.add_input(path, BEST_ROLE)["sha256"]
    # what every reader of best/ (evaluation, export) verifies it against: sha256, size and stamp per file
    summary["best_files"] = content_record([Path(p) for p in best_files], {Path(p): d for p, d in best_files.items()})
    summary["threads"] = threads
    # configured: the slice's (per-method) precision; used: what this device computed in (fp32 on CPU)
    summary["precision"] = {"configured": configured, "used": precision, "authors": authors,
                            "dev_scoring": dev_precision}
    summary["resume_state"] = ("kept" if keep_resume_state else
                               f"dropped once this summary was written and {BEST}/ verified against it "
                               "(training.keep_resume_state: false; the ledger lists the dropped files)")
    summary["provenance"] = prov.finish()
    atomic_write_json(run_dir / TRAIN_SUMMARY, summary)
    if not keep_resume_state:
        dropped = drop_resume_state(run_dir, best_files, log)
        record_dropped(dropped, "train", "resume state of a finished run (training.keep_resume_state: false)")
    with atomic_path(run_dir / FINISHED_SUMMARY) as tmp:  # last: present only once the run is wholly done
        tmp.write_bytes((run_dir / TRAIN_SUMMARY).read_bytes())
    return summary
