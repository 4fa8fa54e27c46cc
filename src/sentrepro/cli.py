"""``sentrepro``: the one command-line entry point every workflow rule calls.

Rules pass the config slice they depend on as a JSON string (``--spec``), so a job's behaviour is
fully determined by its command line and inputs; the same commands work by hand for debugging.

Exit codes, the same for every subcommand (:func:`main`, so a new subcommand gets them without a line of
its own): 0 done; 1 the job's outcome (a file failing its recorded hash, a non-finite result, a full
disk); 2 a mistake of the user's (a broken or incomplete ``--spec``, a missing input file, an unknown
name, a config error), reported as one line ``sentrepro <command>: <what>``; 3 stopped as asked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path


class UsageError(Exception):
    """A mistake in what the user asked for (arguments, --spec): :func:`main` prints it as one line, exit 2."""


class MissingSpecKey(KeyError):
    """A key a command needs is not in its --spec; the message names the key's full path."""

    def __str__(self) -> str:
        return self.args[0]


class _Spec(dict):
    """A --spec mapping whose missing keys are reported by their path (``--spec has no key 'method.params.lr'``)."""

    where = ""

    def __missing__(self, key):
        raise MissingSpecKey(f"--spec has no key '{self.where}{key}'")


def _spec_tree(value, where: str = ""):
    if isinstance(value, dict):
        node = _Spec({k: _spec_tree(v, f"{where}{k}.") for k, v in value.items()})
        node.where = where
        return node
    if isinstance(value, list):
        return [_spec_tree(v, where) for v in value]
    return value


def _spec(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--spec is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise UsageError(f"--spec must be a JSON object, not {type(value).__name__}: {text[:60]}")
    return _spec_tree(value)


def _validated_config(paths: list[str]) -> dict | None:
    """The config files loaded and validated, or None after printing the error (the command exits 2): one
    line per mistake, naming the file (and line) and the key; a unit sidecar's names the sidecar."""
    from sentrepro.planning.config import ConfigError, load_config
    from sentrepro.planning.registry import RegistryError

    try:
        return load_config(*paths)
    except (ConfigError, RegistryError) as exc:
        print(exc, file=sys.stderr)
        return None


def cmd_check_config(args) -> int:
    from sentrepro.planning.config import ConfigError
    from sentrepro.planning.layers import command_line_files
    from sentrepro.planning.matrix import runs

    paths = list(args.files)
    if args.profile or args.configfiles is not None or not paths:  # snakemake's own spelling of the layers
        if paths:
            print("sentrepro check-config: give config files either as arguments or with --profile/--configfiles",
                  file=sys.stderr)
            return 2
        try:
            paths = command_line_files(args.profile, args.configfiles, Path.cwd())
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            return 2
    config = _validated_config(paths)
    if config is None:
        return 2
    print(f"config OK: experiment '{config['experiment']}', {len(runs(config))} runs")
    return 0


def _log_to_stderr() -> None:
    """INFO log lines on stderr (the rule's log file): download progress, verification, staging."""
    import logging

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")


def cmd_download(args) -> int:
    from sentrepro.data.download import DownloadError, FetchSettings
    from sentrepro.data.prepare import download
    from sentrepro.data.sources import SourceError

    _log_to_stderr()
    try:
        record = download(args.name, _spec(args.spec), Path(args.out_dir), progress=not args.quiet,
                          settings=FetchSettings.from_environment(),
                          fixtures_dir=Path(args.fixtures_dir) if args.fixtures_dir else None)
    except (DownloadError, SourceError, ValueError) as exc:
        print(f"download of source '{args.name}' FAILED: {exc}", file=sys.stderr)
        return 1
    for entry in record["files"]:
        print(f"{args.name}: {entry['path']} sha256 {entry['sha256']} ({entry['verification']})")
    return 0


def cmd_fetch_model(args) -> int:
    import logging
    import os
    import socket

    from sentrepro.data.download import DownloadError, FetchSettings
    from sentrepro.data.sources import SourceError
    from sentrepro.records.ledger import declare_store
    from sentrepro.pretrained.fetch import fetch_model
    from sentrepro.pretrained.listing import ModelSourceError
    from sentrepro.pretrained.names import resources_of

    spec = _spec(args.spec)
    _log_to_stderr()
    # checkouts sharing a store run fetch jobs of one snapshot: each job's log starts by naming its process
    logging.getLogger(__name__).info("sentrepro fetch-model %s: process %d on %s", args.name, os.getpid(),
                                     socket.gethostname())
    store = resources_of(Path(args.out_dir).resolve())
    if store is not None:  # a shared store outside the project records the snapshot in its own ledger
        declare_store(store)
    try:
        manifest = fetch_model(args.name, spec, Path(args.out_dir), mirror=args.mirror or None,
                               settings=FetchSettings.from_environment(), progress=not args.quiet)
    except (DownloadError, ModelSourceError, SourceError, ValueError) as exc:
        print(f"fetching backbone '{args.name}' FAILED: {exc}", file=sys.stderr)
        return 1
    status = "complete: reused as an earlier fetch wrote it, nothing rewritten" if manifest.get("reused") else \
        manifest["lock_status"]
    print(f"{args.name}: {manifest['model']} commit {manifest['commit'] or '-'} ({manifest['pin']}, {status})")
    for entry in manifest["files"]:
        print(f"{args.name}: {entry['path']} sha256 {entry['sha256']}")
    return 0


def cmd_tiny_model(args) -> int:
    from sentrepro.pretrained.tiny import TinyModelError, build

    try:
        record = build(args.model, Path(args.corpus), Path(args.out_dir))
    except TinyModelError as exc:  # a wrong tiny:// URL or corpus: the user's input
        raise UsageError(str(exc)) from exc
    for entry in record["files"]:
        print(f"{args.model}: built {entry['path']} sha256 {entry['sha256']}")
    return 0


def cmd_fixture(args) -> int:
    from sentrepro.code.codedeps import set_running_entry
    from sentrepro.data.benchmarks import fixture_module, generators
    from sentrepro.data.fixtures import write_fixture

    if args.name not in generators():  # the choices, derived from the units (not in build_parser: see there)
        raise UsageError(f"unknown fixture {args.name!r} (choose from {', '.join(generators())})")
    # the unit is imported on demand by discovery: record its module too (unit_code in workflow/rules/common.smk)
    set_running_entry(["cli:fixture", fixture_module(args.name)])
    for path in write_fixture(args.name, Path(args.out_dir)):
        print(f"fixture {args.name}: wrote {path}")
    return 0


def cmd_check_dataset(args) -> int:
    from sentrepro.code.codedeps import set_running_entry
    from sentrepro.data.benchmarks import layout_module, layouts
    from sentrepro.data.check import CHECKED, CheckConfigError, check_source, summary_lines
    from sentrepro.data.records import CountMismatch, DataFormatError
    from sentrepro.files import atomic_write_json

    spec = _spec(args.spec)
    layout = (spec.get("check") or {}).get("layout")
    if layout in layouts():  # the unit reading the layout, imported on demand: its module is this job's code too
        set_running_entry(["cli:check-dataset", layout_module(layout)])
    try:
        payload = check_source(args.name, spec, Path(args.manifest))
    except (DataFormatError, CountMismatch, CheckConfigError, FileNotFoundError) as exc:
        print(f"check of source '{args.name}' FAILED: {exc}", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out else Path(args.manifest).with_name(CHECKED)
    atomic_write_json(out, payload)
    counts = "checked against the documented counts" if payload["counts_checked"] else \
        f"NOT checked: {payload['counts_not_checked_because']}"
    print(f"{args.name}: layout {payload['layout']}, text variant {payload['text_variant']}; counts {counts}")
    for line in summary_lines(payload):
        print(f"  {line}")
    return 0


def cmd_prepare_dataset(args) -> int:
    from sentrepro.data.extract import ExtractError
    from sentrepro.data.prepare import PinMismatch, prepare
    from sentrepro.data.sources import SourceError

    _log_to_stderr()
    try:
        manifest = prepare(args.name, _spec(args.spec), Path(args.out_dir),
                           Path(args.download_record) if args.download_record else None)
    except (ExtractError, PinMismatch, SourceError) as exc:
        print(f"preparing source '{args.name}' FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"{args.name}: {len(manifest['files'])} files prepared")
    return 0


def cmd_prepare_corpus(args) -> int:
    from sentrepro.data.prepare import build_corpus

    record = build_corpus(_spec(args.spec), Path(args.manifest), Path(args.out))
    print(f"corpus: {record['sentences']} sentences")
    return 0


def cmd_build_views(args) -> int:
    from sentrepro.data.prepare import dataset_file
    from sentrepro.data.views import build_views
    from sentrepro.data.wordnet import locate_database

    wordnet_dir = locate_database(dataset_file(Path(args.wordnet_manifest), "."))
    record = build_views(Path(args.corpus), wordnet_dir, _spec(args.spec), Path(args.out_dir), progress=True)
    print(f"views: {record['triples']} triples from {record['corpus_lines']} lines")
    return 0


def cmd_tokenize(args) -> int:
    from sentrepro.encoder.load import load_tokenizer
    from sentrepro.files import atomic_write_json
    from sentrepro.pretrained.reference import resolve_model
    from sentrepro.records.provenance import Provenance
    from sentrepro.records.recorded import add_verified_input, verify_corpus
    from sentrepro.training.corpus import tokenize_corpus

    spec = _spec(args.spec)
    out_dir = Path(args.out_dir)
    prov = Provenance(step="tokenize", config=spec)
    verified = verify_corpus(Path(args.corpus))  # as its corpus (or views) job recorded it
    add_verified_input(prov, Path(args.corpus), "corpus sentences", verified.get(Path(args.corpus)))
    prov.add_input(args.corpus + ".json", "corpus record")
    if args.model_manifest:
        prov.add_input(args.model_manifest, "model manifest")
    tokenizer = load_tokenizer(resolve_model(spec, args.model_manifest).location)
    meta = tokenize_corpus(Path(args.corpus), tokenizer, out_dir, progress=not args.quiet)
    atomic_write_json(out_dir / "tokenized.json", {**meta, "provenance": prov.finish()})
    print(f"tokenized {meta['sentences']} sentences, {meta['tokens']} tokens")
    return 0


def cmd_train(args) -> int:
    from sentrepro.training.progress import StepProgress
    from sentrepro.training.job import run_training

    _record_job_code(args)
    spec = _spec(args.spec)
    run_dir = Path(args.run_dir)
    # runs/<backbone>/<method>/<run>: name the run as the workflow does
    progress = StepProgress("/".join(run_dir.parts[-3:]))
    from sentrepro.runs import KEEP_RESUME_STATE

    summary = run_training(spec, Path(args.tokenized), Path(args.dev_manifest), run_dir,
                           stop_after=args.stop_after, log=progress.line, progress=progress,
                           model_manifest=args.model_manifest or None,
                           keep_resume_state=os.environ.get(KEEP_RESUME_STATE, "1") != "0")
    if "interrupted_at" in summary:
        print(f"stopped at step {summary['interrupted_at']} as asked (--stop-after)")
        return 3
    done = "adopted the finished run of" if "adopted" in summary else "trained"
    print(f"{done} {summary['steps']} steps; best STS-B dev {summary['best_stsb_dev_spearman']:.2f} "
          f"at step {summary['best_step']}")
    return 0


def cmd_evaluate(args) -> int:
    from sentrepro.planning import registry
    from sentrepro.evaluation.job import run_suite

    if args.suite not in registry.suites():
        raise UsageError(f"unknown suite '{args.suite}' (known: {', '.join(registry.suites())})")
    _record_job_code(args, suite=args.suite)
    payload = run_suite(args.suite, _spec(args.spec), Path(args.run_dir) if args.run_dir else None,
                        Path(args.data_manifest), Path(args.out), model_manifest=args.model_manifest or None)
    scores = ", ".join(f"{k} {v['reported']:.2f}" for k, v in payload["results"].items()
                       if isinstance(v.get("reported"), (int, float)))
    print(f"{args.suite}: {scores}")
    return 0


def cmd_figure(args) -> int:
    from sentrepro.planning import registry
    from sentrepro.code.codedeps import set_running_entry
    from sentrepro.evaluation.figures import draw_figure

    # the figure's drawing function is imported by the registry on demand: record its unit too
    try:
        set_running_entry(["cli:figure", registry.unit_entry("figures", args.name)])
    except ValueError as exc:  # an unknown figure
        raise UsageError(str(exc)) from exc

    record = draw_figure(args.name, [Path(p) for p in args.metrics], Path(args.out_prefix), _spec(args.spec))
    print(f"figure {args.name}: {len(record['runs'])} runs -> {args.out_prefix}.png/.pdf")
    return 0


def cmd_table(args) -> int:
    from sentrepro.tables.build import build_table
    from sentrepro.tables.render import write_outputs
    from sentrepro.planning.table_specs import available_specs, load_spec

    if args.name not in available_specs():
        raise UsageError(f"no table spec '{args.name}' (specs: {', '.join(available_specs())})")
    spec = load_spec(args.name)
    context = _spec(args.spec)
    result = build_table(spec, [Path(p) for p in args.metrics], context["backbones"])
    description = Path(args.description).read_text(encoding="utf-8") if args.description else args.description_text
    paths = write_outputs(result, Path(args.out_prefix), context["experiment"], description)
    filled = sum(1 for c in result.cells if c.value is not None)
    print(f"table {args.name}: {len(result.cells)} cells ({filled} with our numbers) -> "
          + ", ".join(str(p) for p in paths))
    return 0


def cmd_verdicts(args) -> int:
    from sentrepro.verdicts.build import build_verdicts
    from sentrepro.verdicts.claims import CLAIMS_PATH, load_claims
    from sentrepro.verdicts.render import summary, write_outputs

    claims_path = Path(args.claims) if args.claims else CLAIMS_PATH
    context = _spec(args.spec)
    result = build_verdicts(load_claims(claims_path), [Path(p) for p in args.metrics], context["backbones"],
                            context["experiment"], claims_path=claims_path)
    paths = write_outputs(result, Path(args.out_prefix))
    print(f"verdicts: {summary(result)} -> " + ", ".join(str(p) for p in paths))
    return 0


def cmd_demo_summary(args) -> int:
    from sentrepro.tables.demo_summary import write_summary

    spec = _spec(args.spec)
    rows = write_summary(spec["runs"], spec["stands_in"], Path(args.out_prefix), spec["experiment"])
    for row in rows:
        print(f"{row.label}: STS-B test {row.values['STS-B test before']:.2f} -> {row.values['STS-B test after']:.2f}")
    return 0


def cmd_times(args) -> int:
    from sentrepro.records.job_times import collect, format_times

    roots = [Path(p) for p in args.roots]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"{root} is not a folder (give results/<experiment> or the resources folder)")
    sys.stdout.write(format_times(collect(roots), roots))
    return 0


def cmd_cost(args) -> int:
    from sentrepro.planning.config import ConfigError, load_config
    from sentrepro.planning.cost import CostError, estimate, format_estimate
    from sentrepro.planning.registry import RegistryError
    from sentrepro.planning.workflow import PlanError, plan

    try:
        config = load_config(*args.configfiles)
        jobs = plan(args.configfiles)  # the jobs snakemake -n plans for exactly these files
        sys.stdout.write(format_estimate(estimate(config, jobs=jobs), list(args.configfiles)))
    except (ConfigError, RegistryError, CostError, PlanError) as exc:
        raise UsageError(str(exc)) from exc
    return 0


def cmd_rehearsal_check(args) -> int:
    from collections import Counter

    from sentrepro.planning.rehearsal import REHEARSAL_ONLY_RULES, check
    from sentrepro.planning.workflow import PlanError

    try:
        paper, rehearsal, differences = check(args.config, args.overlay)
    except PlanError as exc:
        raise UsageError(str(exc)) from exc
    extra = Counter(job.rule for job in rehearsal if job.rule in REHEARSAL_ONLY_RULES)
    if differences:
        print(f"sentrepro rehearsal-check: {args.overlay} does not plan the DAG of {args.config} "
              f"({len(differences)} difference(s)):", file=sys.stderr)
        for line in differences:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"the rehearsal plans the {len(paper)} jobs of {args.config} rule by rule and wildcard by wildcard, "
          f"plus {', '.join(f'{n} {rule}' for rule, n in sorted(extra.items()))} job(s) making its inputs")
    return 0


def cmd_registry(args) -> int:
    from sentrepro.planning.config import ConfigError, load_config
    from sentrepro.planning.overview import format_overview

    try:
        config = load_config(*args.configfiles)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    sys.stdout.write(format_overview(config["methods"]))
    return 0


def cmd_export(args) -> int:
    from sentrepro.export.folder import ExportError, export_run

    _record_job_code(args)
    try:
        record = export_run(_spec(args.spec), Path(args.run_dir) if args.run_dir else None,
                            Path(args.model_manifest) if args.model_manifest else None, Path(args.out),
                            sts_metrics=Path(args.sts_metrics) if args.sts_metrics else None,
                            tables=[Path(t) for t in args.tables], verdicts=Path(args.verdicts) if args.verdicts else None,
                            sts_data=Path(args.sts_data) if args.sts_data else None, card=not args.no_card,
                            store=Path(args.store) if args.store else None)
    except ExportError as exc:
        raise UsageError(str(exc)) from exc
    linked = sum(1 for w in record["weights"].values() if w["how"] != "copy")
    print(f"exported {record['name']} to {args.out} ({len(record['folder_files'])} files, {linked} of "
          f"{len(record['weights'])} model files linked, not copied; MTEB tasks: {', '.join(record['mteb_tasks']) or 'none'})")
    return 0


def cmd_export_card(args) -> int:
    from sentrepro.export.model_card import write_card

    card = write_card(Path(args.folder), [Path(t) for t in args.tables], Path(args.verdicts) if args.verdicts else None)
    print(f"wrote the model card of {card['name']} in {args.folder} ({len(card['table_cells'])} table cells, "
          f"{len(card['verdicts'])} verdicts)")
    return 0


def cmd_audit(args) -> int:
    from sentrepro.records.audit import AuditError, audit_cell, audit_export, audit_verdict, is_verdict_csv

    if args.random:
        return _audit_random_cells(Path(args.csv), args.random, args.seed)
    try:
        if Path(args.csv).is_dir():
            report = audit_export(Path(args.csv))
        elif args.row is None:
            raise AuditError(f"{args.csv}: a table cell needs a row and a column, a verdict row a claim")
        elif is_verdict_csv(Path(args.csv)):
            report = audit_verdict(Path(args.csv), args.row)
        elif args.column is None:
            raise AuditError(f"{args.csv}: a table cell needs a row and a column")
        else:
            report = audit_cell(Path(args.csv), args.row, args.column)
    except AuditError as exc:
        raise UsageError(str(exc)) from exc
    sys.stdout.write(report.text())
    return 0 if report.ok else 1


def _audit_random_cells(table: Path, count: int, seed: int) -> int:
    """Audit ``count`` cells of ``table`` drawn at random (``seed``) among those with a value of ours; one line
    per cell, exit 1 when any fails. A table without such a cell is an error, never a pass."""
    import csv
    import random

    from sentrepro.records.audit import AuditError, audit_cell

    with open(table, encoding="utf-8", newline="") as handle:
        filled = [(row["row"], row["column"]) for row in csv.DictReader(handle) if row.get("value")]
    if not filled:  # a reported-only table (PromptBERT Knowl 6): said, not skipped in silence
        print(f"none {table}: no cell with a value of ours (a table of published numbers only)")
        return 0
    failed = 0
    for row, column in random.Random(seed).sample(filled, min(count, len(filled))):
        try:
            report = audit_cell(table, row, column)
        except AuditError as exc:
            raise UsageError(str(exc)) from exc
        failed += not report.ok
        print(f"{'ok  ' if report.ok else 'FAIL'} {table} [{row}] [{column}]")
        if not report.ok:
            sys.stdout.write(report.text())
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    # No package imports here: every command runs this, and the code a command depends on is what its
    # own function imports (sentrepro.code.codedeps); suite and figure names are checked by the command.
    parser = argparse.ArgumentParser(prog="sentrepro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check-config", help="validate config files (later ones overlay earlier ones)",
                       epilog="the same layers as snakemake: `sentrepro check-config --profile profiles/demo "
                              "--configfiles profiles/demo/overlay.yaml my.yaml` checks what `snakemake` plans "
                              "with those options (config.yaml beside the Snakefile first)")
    p.add_argument("files", nargs="*", help="config files, in order (the first is the base, e.g. config.yaml)")
    p.add_argument("--profile", help="a Snakemake profile directory: its configfiles, as snakemake reads them")
    p.add_argument("--configfiles", "--configfile", nargs="+", help="overlays on config.yaml, as snakemake's")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("download", help="fetch a data source and verify its sha256",
                       epilog="retries: SENTREPRO_DOWNLOAD_RETRIES (5), SENTREPRO_DOWNLOAD_BACKOFF_S (1.0), "
                              "SENTREPRO_DOWNLOAD_TIMEOUT_S (60)")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the source's config slice as JSON")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--fixtures-dir", default="", help="where fixture:// URLs point (<resources>/fixtures)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress log lines")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("fetch-model", help="fetch a backbone's files at its pinned revision and verify them",
                       epilog="HF_ENDPOINT selects the Hub; retries as for download (SENTREPRO_DOWNLOAD_*)")
    p.add_argument("--name", required=True, help="the backbone's name in config.yaml")
    p.add_argument("--spec", required=True, help='{"model": ..., "revision": ...} as JSON')
    p.add_argument("--out-dir", required=True, help="the snapshot directory (<resources>/models/<name>/<snapshot>)")
    p.add_argument("--mirror", default="", help="models.mirror: a Hub-cache or plain-snapshot directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress log lines")
    p.set_defaults(func=cmd_fetch_model)

    p = sub.add_parser("tiny-model", help="build a tiny random backbone (tiny://<tokenizer>/<size>; the rehearsal)")
    p.add_argument("--model", required=True, help="tiny://<tokenizer>/<size>, e.g. tiny://roberta/large")
    p.add_argument("--corpus", required=True, help="corpus sentences the trained vocabularies learn from")
    p.add_argument("--out-dir", required=True, help="<resources>/tiny-models/<tokenizer>-<size>")
    p.set_defaults(func=cmd_tiny_model)

    p = sub.add_parser("fixture", help="write a synthetic fixture in its upstream format (offline demo)")
    p.add_argument("name", help="the benchmark whose fixture to write: one of the fixtures the benchmark units "
                                "declare (src/sentrepro/data/benchmarks/; an unknown name lists them)")
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_fixture)

    p = sub.add_parser("check-dataset", help="parse a prepared source's data sets and check their counts")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the source's config slice as JSON")
    p.add_argument("--manifest", required=True, help="the source's MANIFEST.json")
    p.add_argument("--out", default="", help="where to write CHECKED.json (default: next to the manifest)")
    p.set_defaults(func=cmd_check_dataset)

    p = sub.add_parser("prepare-dataset", help="extract/stage a source and write its manifest")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--download-record", default="")
    p.set_defaults(func=cmd_prepare_dataset)

    p = sub.add_parser("prepare-corpus", help="write the training sentences, one per line")
    p.add_argument("--spec", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_prepare_corpus)

    p = sub.add_parser("build-views", help="MoCoUTRL's training views: each corpus sentence with one adjective "
                       "swapped for a WordNet synonym and for an antonym")
    p.add_argument("--spec", required=True, help="the config's views section as JSON")
    p.add_argument("--corpus", required=True, help="sentences.txt of the prepared corpus")
    p.add_argument("--wordnet-manifest", required=True, help="MANIFEST.json of the prepared WordNet source")
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=cmd_build_views, writes="out_dir", record="sentences.txt.json")

    p = sub.add_parser("tokenize", help="tokenize the corpus once for a tokenizer")
    p.add_argument("--spec", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--model-manifest", default="", help="the backbone's MANIFEST.json (rule fetch_model)")
    p.set_defaults(func=cmd_tokenize, writes="out_dir", record="tokenized.json")

    p = sub.add_parser("train", help="train one backbone x method x seed run (resumes if interrupted)")
    p.add_argument("--spec", required=True)
    p.add_argument("--tokenized", required=True)
    p.add_argument("--dev-manifest", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--model-manifest", default="", help="the backbone's MANIFEST.json (rule fetch_model)")
    p.set_defaults(func=cmd_train, writes="run_dir", record="train.json")

    p = sub.add_parser("evaluate", help="evaluate a run (or a frozen backbone) on a suite")
    p.add_argument("suite", help="an evaluation suite (`sentrepro registry` lists them)")
    p.add_argument("--spec", required=True)
    p.add_argument("--run-dir", default="")
    p.add_argument("--data-manifest", "--data", dest="data_manifest", required=True,
                   help="the data source's MANIFEST.json (for anisotropy: the training corpus sentences file)")
    p.add_argument("--out", required=True)
    p.add_argument("--model-manifest", default="",
                   help="the backbone's MANIFEST.json (rule fetch_model): frozen backbones and step-0 suites")
    p.set_defaults(func=cmd_evaluate, writes="out", record="")

    p = sub.add_parser("figure", help="draw a paper figure (PNG + PDF) from one suite's metrics files")
    p.add_argument("name", help="a figure (`sentrepro registry` lists them)")
    p.add_argument("--spec", required=True, help="figure context as JSON")
    p.add_argument("--out-prefix", required=True)
    p.add_argument("--metrics", nargs="+", required=True, help="metrics JSON files of the figure's suite")
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("table", help="aggregate metrics files into a paper table")
    p.add_argument("name")
    p.add_argument("--spec", required=True, help="experiment context as JSON")
    p.add_argument("--out-prefix", required=True)
    p.add_argument("--metrics", nargs="*", default=[], help="metrics JSON files (none: reported numbers only)")
    p.add_argument("--description", default="", help="the table's caption file (workflow/report/tables/<name>.rst)")
    p.add_argument("--description-text", default="", help="the caption text itself (what the workflow passes)")
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("verdicts", help="test each published claim (claims.yaml) on the metrics files")
    p.add_argument("--spec", required=True, help="experiment context as JSON (experiment, backbones)")
    p.add_argument("--out-prefix", required=True, help="writes <prefix>.md, .csv, .cells.csv, .html, .forest.svg")
    p.add_argument("--metrics", nargs="*", default=[], help="metrics JSON files the claims' tables read")
    p.add_argument("--claims", default="", help="claims file (default: src/sentrepro/verdicts/claims.yaml)")
    p.set_defaults(func=cmd_verdicts)

    p = sub.add_parser("demo-summary", help="each trained run on STS-B test before -> after (the demo's last table)")
    p.add_argument("--spec", required=True, help='{"experiment", "stands_in": {backbone: [...]}, "runs": [{backbone, '
                   'method, seed, train, before, after}]}')
    p.add_argument("--out-prefix", required=True)
    p.set_defaults(func=cmd_demo_summary)

    p = sub.add_parser("times", help="per-step wall and CPU seconds of a run's jobs (Snakemake benchmark files)")
    p.add_argument("roots", nargs="+", help="folders holding benchmarks/ (results/<experiment>, resources)")
    p.set_defaults(func=cmd_times)

    p = sub.add_parser("cost", help="count the jobs of a config and estimate its GPU-hours before running it")
    p.add_argument("configfiles", nargs="+", help="config.yaml, then overlays")
    p.set_defaults(func=cmd_cost)

    p = sub.add_parser("rehearsal-check", help="check that the rehearsal overlay plans the paper config's DAG job "
                       "for job (two dry runs)")
    p.add_argument("--config", default="config.yaml", help="the paper config (default: config.yaml)")
    p.add_argument("--overlay", default="profiles/rehearsal/overlay.yaml", help="the rehearsal overlay")
    p.set_defaults(func=cmd_rehearsal_check)

    p = sub.add_parser("registry", help="list the method kinds, suites and figures, and the paper tables each feeds")
    p.add_argument("configfiles", nargs="*", default=["config.yaml"], help="config files naming the methods "
                   "(default: config.yaml)")
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("export", help="a finished run as a sentence-transformers folder with model card and MTEB "
                       "result files")
    p.add_argument("--spec", required=True, help="the run's STS evaluation slice as JSON (run, backbone, method, "
                   "seed, attention, settings)")
    p.add_argument("--run-dir", default="", help="the run's directory (trained kinds: holds best/ and train.json)")
    p.add_argument("--model-manifest", default="", help="the backbone's MANIFEST.json (frozen baselines)")
    p.add_argument("--sts-metrics", default="", help="the run's sts.json (scores, MTEB files, model-index)")
    p.add_argument("--tables", nargs="*", default=[], help="table CSVs: their cells of this run go into the card")
    p.add_argument("--verdicts", default="", help="verdicts.csv: its rows about this run go into the card")
    p.add_argument("--sts-data", default="", help="the STS source's MANIFEST.json (whitening refits its kernel)")
    p.add_argument("--out", required=True, help="the folder to write")
    p.add_argument("--no-card", action="store_true", help="leave the model card to `sentrepro export-card` (what "
                   "the workflow does, so an export depends on its own run only)")
    p.add_argument("--store", default="", help="a folder for one content-addressed copy of each weights file, used "
                   "where a hard link to the run's file is impossible (another file system)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("export-card", help="the model card of an exported folder: its cells in the tables and the "
                       "verdicts about its run (README.md + sentrepro_card.json)")
    p.add_argument("--folder", required=True, help="a folder `sentrepro export` wrote")
    p.add_argument("--tables", nargs="*", default=[], help="table CSVs: their cells of this run go into the card")
    p.add_argument("--verdicts", default="", help="verdicts.csv: its rows about this run go into the card")
    p.set_defaults(func=cmd_export_card, writes="folder", record=None)

    p = sub.add_parser("audit", help="trace a table cell (or a verdict row, or an exported folder) back to raw "
                       "data and verify every hash")
    p.add_argument("csv", help="a table's <name>.csv, verdicts.csv, or an exported folder (sentrepro export)")
    p.add_argument("row", nargs="?", default=None, help="the table row, or the claim id of a verdict row")
    p.add_argument("column", nargs="?", default=None, help="the table column (not for verdicts.csv)")
    p.add_argument("--random", type=int, default=0, metavar="N", help="audit N cells of the table drawn at random")
    p.add_argument("--seed", type=int, default=0, help="the draw's seed (--random)")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    from sentrepro.code.codedeps import set_running_entry

    from sentrepro.files import forget_written
    from sentrepro.records.ledger import forget_stores, record_outputs

    args = build_parser().parse_args(argv)
    set_running_entry([f"cli:{args.command}"])  # what provenance records as the code that ran
    forget_written()
    forget_stores()
    try:
        with _one_writer(args) as adopted:
            if adopted:
                return 0
            code = args.func(args)
            if code == 0:  # every file the command wrote, with its sha256, into its experiment's ledger
                record_outputs(args.command)
            return code
    except Exception as exc:  # noqa: BLE001 - each kind below becomes one line; anything else is re-raised
        message, code = _user_error(exc)
        if message is None:
            raise
        print(f"sentrepro {args.command}: {' '.join(message.split())}", file=sys.stderr)  # one line
        return code


@contextlib.contextmanager
def _one_writer(args):
    """A job command (one whose parser names the argument it ``writes``) holds its output's lock while it runs
    (:mod:`sentrepro.records.job_lock`): a twin of a still running job waits for it. Yields True when, after
    waiting, the output its parser names as its ``record`` is exactly what this job would write
    (:mod:`sentrepro.records.adopt`): the job adopts it and runs nothing."""
    output = getattr(args, "writes", None) and getattr(args, args.writes)
    if not output:
        yield False
        return
    from sentrepro.records.job_lock import one_writer

    def say(line: str) -> None:
        print(f"sentrepro {args.command}: {line}", file=sys.stderr, flush=True)

    with one_writer(output, args.command, say) as waited:
        if waited and args.record is not None:
            from sentrepro.records.adopt import why_not_adoptable

            record = Path(output) / args.record if args.record else Path(output)
            if args.func is cmd_train or args.func is cmd_evaluate:
                _record_job_code(args, suite=getattr(args, "suite", None))
            why_not = why_not_adoptable(record, _spec(args.spec))
            if why_not is None:
                say(f"adopted {record}: the job it waited for wrote exactly what this one would "
                    "(same settings, code and inputs)")
                yield True
                return
            say(f"computing {output} itself: {why_not}")
        yield False


def _user_error(exc: Exception) -> tuple[str | None, int]:
    """One line in the user's words, and the exit code, for an error a user can act on; (None, 0) for a bug.

    Missing keys, a broken --spec, YAML syntax errors and unreadable files are the user's input (exit 2),
    also where a command wrapped the missing file in its own error (a metrics file a table cannot read); a
    full disk, a file that fails its recorded hash or a non-finite result are the job's outcome (exit 1).
    """
    import errno

    import yaml

    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        named = exc.filename and str(exc.filename) not in str(exc)
        return (f"{exc}" + (f" ({exc.filename})" if named else "")), 1
    if isinstance(exc, (UsageError, MissingSpecKey)):
        return str(exc), 2
    if isinstance(exc, KeyError):
        return f"missing key {exc} (in --spec or in a file the command reads)", 2
    if isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else "a YAML file"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return f"{where}: YAML syntax error: {problem}", 2
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc}", 2
    unreadable = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
    if isinstance(exc, unreadable):
        return f"cannot read {exc.filename}: {exc.strerror}", 2
    # the job's outcome, already one line naming the file (by name: importing them here would put their
    # modules behind every command's code fingerprint)
    if type(exc).__name__ in ("IntegrityError", "SnapshotError", "NonFiniteResult", "NonFiniteError", "MetricsError"):
        return str(exc), 2 if isinstance(exc.__cause__, unreadable) else 1
    return None, 0


def _record_job_code(args, suite: str | None = None) -> None:
    """A job of one method (and one suite) runs ``cli:<command>`` plus the modules the registry imports on
    demand for it: that method's module (and that suite's). Provenance records them all, as the rule's
    params.code does (``job_code`` in workflow/rules/code.smk)."""
    from sentrepro.planning import registry
    from sentrepro.code.codedeps import set_running_entry

    method = _spec(args.spec).get("method")
    if not (isinstance(method, dict) and method.get("kind")):
        raise UsageError("--spec has no method.kind")
    set_running_entry(registry.job_entries(f"cli:{args.command}", method["kind"], suite))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
