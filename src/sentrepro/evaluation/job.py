"""One evaluation job: load a run's model on its device, embed with the run's method, write the metrics file.

Every suite (``sentrepro evaluate <suite>``) goes through :func:`run_suite`: the registry names the
suite's function (its unit's sidecar, imported on first use), :func:`open_job` loads the model the
suite scores -- the run's best checkpoint, the frozen backbone, or (``model: start``) the model a
training job starts from at step 0 -- and the suite function gathers its sentences, embeds them with
:meth:`SuiteJob.embed` (the method's own evaluation embedding, each distinct sentence once) and writes
one metrics file with :func:`write_metrics`::

    {"suite", "results": {<column>: {..., "reported": <number>}, ...}, "aggregation", "data",
     "subset", "encoded_sentences", ..., "provenance"}

``results[<column>]["reported"]`` is what a table cell shows. ``subset`` records ``max_samples``
subsetting (:mod:`sentrepro.evaluation.subsets`); ``data`` names the source and whether it is synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sentrepro.planning import registry
from sentrepro.encoder.device import configure_threads
from sentrepro.encoder.load import load_encoder, load_tokenizer
from sentrepro.data.prepare import FILES
from sentrepro.encoder.encode import encode_sentences
from sentrepro.evaluation.subsets import SubsetLog
from sentrepro.files import atomic_write_json, nonfinite_keys
from sentrepro.records.integrity import verify_dataset
from sentrepro.records.metrics_schema import RESULT_KEYS, declared_keys
from sentrepro.records.recorded import add_verified_input, verify_best, verify_corpus
from sentrepro.methods import build_method
from sentrepro.methods.base import Method, SentenceModel
from sentrepro.runs import BEST, TRAIN_SUMMARY
from sentrepro.encoder.start import initial_model
from sentrepro.encoder.device import resolve_device, resolve_precision
from sentrepro.pretrained.reference import resolve_model
from sentrepro.records.provenance import Provenance

def load_for_eval(spec: dict, run_dir: Path | None, model_manifest: Path | None = None
                  ) -> tuple[Method, SentenceModel, list[tuple]]:
    """The method and model to evaluate, and their provenance inputs (path, role[, sha256 verified]): the best
    checkpoint of a run (verified against its ``train.json``), or the frozen backbone (from its snapshot
    ``model_manifest``)."""
    backbone, method_spec = spec["backbone"], spec["method"]
    attention = spec.get("attention", "eager")
    trained = registry.method(method_spec["kind"]).trains
    if not trained:
        reference = resolve_model(backbone, model_manifest)
        source, files = reference.location, list(reference.inputs)
    else:
        source = str(Path(run_dir) / BEST)
        verified = verify_best(run_dir)  # against train.json, before a byte of it is loaded
        files = [(Path(run_dir) / TRAIN_SUMMARY, "training summary")] + [(p, "model file", verified[p])
                                                                         for p in sorted(verified)]
    tokenizer = load_tokenizer(source)
    encoder = load_encoder(source, backbone["family"], attention=attention)
    method = build_method(method_spec["kind"], method_spec["params"], backbone["family"], tokenizer)
    model = method.build_model(encoder)
    if trained:
        model.load_extras(Path(source))
    return method, model, files


def load_at_start(spec: dict, model_manifest: Path | None) -> tuple[Method, SentenceModel, list[tuple[Path, str]]]:
    """The model a training run starts from (step 0, seeded as the training job seeds it), and its inputs."""
    kind = spec["method"]["kind"]
    if not registry.method(kind).trains:
        raise ValueError(f"method kind '{kind}' does not train, so it has no step 0 to evaluate")
    reference = resolve_model(spec["backbone"], model_manifest)
    method, model = initial_model(spec["backbone"], spec["method"], spec["seed"], spec.get("attention", "eager"),
                                  reference.location)
    return method, model, list(reference.inputs)


@dataclass
class SuiteJob:
    """One run's model loaded for a suite, plus the provenance being collected."""

    suite: str
    spec: dict
    method: Method
    model: SentenceModel
    device: str
    precision: str
    prov: Provenance
    encoded: int = 0  # distinct sentences sent to the encoder, for the metrics file

    @property
    def settings(self) -> dict:
        return self.spec["settings"]

    @property
    def tokenizer(self):
        return self.method.tokenizer

    @property
    def check_counts(self) -> bool:
        """Documented counts are checked on real data, never on a synthetic fixture."""
        return not self.spec.get("synthetic", False)

    def embed(self, sentences: list[str]) -> np.ndarray:
        """Vectors of ``sentences`` (N, H) float32 in input order; duplicates are encoded once."""
        self.encoded += len(set(sentences))
        return encode_sentences(self.method, self.model, sentences, purpose="test",
                                batch_size=self.settings["batch_size"], device=self.device,
                                precision=self.precision)

    def embed_groups(self, groups: dict) -> dict:
        """Embed several named sentence lists in one pass. ``{key: [str]} -> {key: (n, H) array}``"""
        unique = list(dict.fromkeys(s for sentences in groups.values() for s in sentences))
        table = self.embed(unique) if unique else np.zeros((0, 1), dtype=np.float32)
        row = {sentence: index for index, sentence in enumerate(unique)}
        return {key: table[[row[s] for s in sentences]] for key, sentences in groups.items()}

    def add_data_files(self, paths, role: str) -> None:
        for path in paths:
            self.prov.add_input(path, role)


def open_job(suite: str, spec: dict, run_dir: Path | None, model_manifest: Path | None = None) -> SuiteJob:
    """Load the model ``suite`` scores (registry ``model``) on the suite's device; start its provenance."""
    configure_threads(spec.get("threads"))
    device = resolve_device(spec["settings"].get("device", "auto"))
    precision = resolve_precision(spec.get("precision", "fp32"), device)
    prov = Provenance(step=f"evaluate_{suite}", config=spec, seed=spec.get("seed"), device=device,
                      precision=precision)
    if registry.suite(suite).model == "start":
        method, model, files = load_at_start(spec, model_manifest)
    else:
        method, model, files = load_for_eval(spec, run_dir, model_manifest)
    for path, role, *verified in files:
        add_verified_input(prov, path, role, verified[0] if verified else None)
    model.to(device)
    return SuiteJob(suite, spec, method, model, device, precision, prov)


class NonFiniteResult(ValueError):
    """A suite produced a NaN or infinite score; the metrics file is not written."""


def nonfinite_cause(model: torch.nn.Module) -> str:
    """Why a score came out non-finite, as far as the model tells: its first non-finite parameter, if any."""
    for name, param in model.named_parameters():
        if not torch.isfinite(param.detach()).all():
            return f"the model's parameter '{name}' holds NaN or inf (a corrupt or diverged checkpoint)"
    return ("the model's parameters are finite; the embeddings or the gold scores gave an undefined correlation "
            "(e.g. constant embeddings or constant gold scores)")


def write_metrics(job: SuiteJob, out: Path, results: dict, *, aggregation: str, subset: SubsetLog | None = None,
                  extra: dict | None = None) -> dict:
    """Write the suite's metrics file (atomically) and return its payload.

    A NaN or infinite result fails the job (:class:`NonFiniteResult`, naming the suite, the result key and
    the likely cause) before anything is written, so the previous metrics file, if any, stays in place.
    """
    bad = nonfinite_keys({"results": results, **(extra or {})})
    if bad:
        raise NonFiniteResult(f"evaluate {job.suite}: non-finite score at {', '.join(bad[:5])}; cause: "
                              f"{nonfinite_cause(job.model)}; {out} not written (left as it was)")
    payload = {
        "suite": job.suite,
        "results": results,
        RESULT_KEYS: declared_keys(results),  # what the table builder reads this file against (metrics_schema)
        "aggregation": aggregation,
        "data": {"source": job.spec.get("source"), "synthetic": bool(job.spec.get("synthetic", False))},
        "subset": subset.record() if subset is not None else None,
        "encoded_sentences": job.encoded,
        **(extra or {}),
        "provenance": job.prov.finish(),
    }
    atomic_write_json(out, payload)
    return payload


def source_root(manifest: Path) -> Path:
    """The prepared tree of a data source, from its MANIFEST.json."""
    return Path(manifest).parent / FILES


def mean_reported(results: dict, keys) -> dict:
    """``{"reported": plain mean of results[k]["reported"]}`` over ``keys`` (the tables' Avg. column)."""
    values = [results[k]["reported"] for k in keys]
    return {"reported": float(np.mean(values)), "n": len(values)}


def run_suite(suite: str, spec: dict, run_dir: Path | None, data: Path, out: Path,
              model_manifest: Path | None = None) -> dict:
    """Evaluate one run on one suite; ``data`` is the source's MANIFEST.json (the training corpus sentences
    for suites with ``data: corpus``); ``model_manifest`` is the backbone's snapshot (rule fetch_model)."""
    entry = registry.suite(suite)
    if spec.get("suite") not in (None, suite):
        raise ValueError(f"--spec is for suite '{spec['suite']}', not '{suite}'")
    score = registry.load_implementation(entry.implementation)
    job = open_job(suite, spec, run_dir, model_manifest)
    if entry.data == "corpus":
        verified = verify_corpus(Path(data))  # as its prepare_corpus job recorded it
        add_verified_input(job.prov, Path(data), "training corpus sentences", verified.get(Path(data)))
        record = Path(f"{data}.json")  # prepare_corpus's record: carries the corpus provenance for audit
        if record.exists():
            job.prov.add_input(record, "corpus record")
    else:
        verify_dataset(Path(data))  # every file of the source, against its MANIFEST, before any is read
        job.prov.add_input(data, "dataset manifest")
    return score(job, Path(data), Path(out))
