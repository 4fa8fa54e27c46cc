"""``sentrepro``: the one command-line entry point every workflow rule calls.

Rules pass the config slice they depend on as a JSON string (``--spec``), so a job's behaviour is
fully determined by its command line and inputs; the same commands work by hand for debugging.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _spec(text: str) -> dict:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--spec is not valid JSON: {exc}") from exc


def cmd_check_config(args) -> int:
    from sentrepro.config import ConfigError, load_config, runs

    try:
        config = load_config(*args.configfiles)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"config OK: experiment '{config['experiment']}', {len(runs(config))} runs")
    return 0


def cmd_download(args) -> int:
    from sentrepro.data.prepare import download

    record = download(args.name, _spec(args.spec), Path(args.out_dir), progress=not args.quiet)
    print(f"{args.name}: {record['file']} sha256 {record['sha256']} ({record['verification']})")
    return 0


def cmd_prepare_dataset(args) -> int:
    from sentrepro.data.prepare import prepare

    manifest = prepare(args.name, _spec(args.spec), Path(args.out_dir),
                       Path(args.download_record) if args.download_record else None)
    print(f"{args.name}: {len(manifest['files'])} files prepared")
    return 0


def cmd_prepare_corpus(args) -> int:
    from sentrepro.data.prepare import build_corpus

    record = build_corpus(_spec(args.spec), Path(args.manifest), Path(args.out))
    print(f"corpus: {record['sentences']} sentences")
    return 0


def cmd_tokenize(args) -> int:
    from sentrepro.backbones import load_tokenizer
    from sentrepro.fsutil import atomic_write_json
    from sentrepro.provenance import Provenance
    from sentrepro.tokenize import tokenize_corpus

    spec = _spec(args.spec)
    out_dir = Path(args.out_dir)
    prov = Provenance(step="tokenize", config=spec)
    prov.add_input(args.corpus, "corpus sentences")
    prov.add_input(args.corpus + ".json", "corpus record")
    meta = tokenize_corpus(Path(args.corpus), load_tokenizer(spec["model"]), out_dir, progress=not args.quiet)
    atomic_write_json(out_dir / "tokenized.json", {**meta, "provenance": prov.finish()})
    print(f"tokenized {meta['sentences']} sentences, {meta['tokens']} tokens")
    return 0


def cmd_train(args) -> int:
    from sentrepro.runner import run_training

    summary = run_training(_spec(args.spec), Path(args.tokenized), Path(args.dev_manifest), Path(args.run_dir),
                           stop_after=args.stop_after)
    if "interrupted_at" in summary:
        print(f"stopped at step {summary['interrupted_at']} as asked (--stop-after)")
        return 3
    print(f"trained {summary['steps']} steps; best STS-B dev {summary['best_stsb_dev_spearman']:.2f} "
          f"at step {summary['best_step']}")
    return 0


def cmd_evaluate(args) -> int:
    from sentrepro.runner import run_sts_evaluation

    if args.suite != "sts":
        raise SystemExit(f"unknown evaluation suite '{args.suite}'")
    payload = run_sts_evaluation(_spec(args.spec), Path(args.run_dir) if args.run_dir else None,
                                 Path(args.data_manifest), Path(args.out))
    scores = ", ".join(f"{k} {v['reported']:.2f}" for k, v in payload["results"].items())
    print(f"sts: {scores}")
    return 0


def cmd_table(args) -> int:
    from sentrepro.tables.build import build_table, load_spec, write_table

    spec = load_spec(args.name)
    context = _spec(args.spec)
    cells = build_table(spec, [Path(p) for p in args.metrics], context["backbones"],
                        synthetic=context.get("synthetic", False))
    write_table(spec, cells, Path(args.out_prefix), context["experiment"], context.get("synthetic", False))
    print(f"table {args.name}: {len(cells)} cells -> {args.out_prefix}.md/.csv")
    return 0


def cmd_audit(args) -> int:
    from sentrepro.audit import AuditError, audit_cell

    try:
        report = audit_cell(Path(args.csv), args.row, args.column)
    except AuditError as exc:
        print(exc, file=sys.stderr)
        return 2
    sys.stdout.write(report.text())
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sentrepro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check-config", help="validate config files (later ones overlay earlier ones)")
    p.add_argument("configfiles", nargs="+")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("download", help="fetch a data source and verify its sha256")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the source's config slice as JSON")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_download)

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

    p = sub.add_parser("tokenize", help="tokenize the corpus once for a tokenizer")
    p.add_argument("--spec", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_tokenize)

    p = sub.add_parser("train", help="train one backbone x method x seed run (resumes if interrupted)")
    p.add_argument("--spec", required=True)
    p.add_argument("--tokenized", required=True)
    p.add_argument("--dev-manifest", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="evaluate a run (or a frozen backbone) on a suite")
    p.add_argument("suite", choices=["sts"])
    p.add_argument("--spec", required=True)
    p.add_argument("--run-dir", default="")
    p.add_argument("--data-manifest", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("table", help="aggregate metrics files into a paper table")
    p.add_argument("name")
    p.add_argument("--spec", required=True, help="experiment context as JSON")
    p.add_argument("--out-prefix", required=True)
    p.add_argument("--metrics", nargs="+", required=True, help="metrics JSON files")
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("audit", help="trace a table cell back to raw data and verify every hash")
    p.add_argument("csv")
    p.add_argument("row")
    p.add_argument("column")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
