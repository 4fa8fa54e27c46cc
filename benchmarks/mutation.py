"""Mutation testing of the protocol-critical code: does a small realistic bug in it make a fast test fail?

For each target below, mutmut (pinned in requirements.txt) mutates the target's functions one small edit at a
time (an operator, a number, a comparison, a keyword, an assignment, a string) and runs only the unit tests that
cover that module after each edit; a mutant no test notices *survives*. Every survivor must be killed by a new test
or listed in ``benchmarks/mutation_equivalent.yaml`` with the reason it cannot change a result (the same mutated line
listed there is "equivalent" here; anything else is "survived" and the table says so).

Each target runs in a throwaway copy of the checkout (``src``, ``tests``, ``benchmarks`` and the top-level files),
imported first through ``PYTHONPATH``, so the working tree is never edited and no bytecode cache goes stale. Targets
run one after another, each mutant's tests in one pytest run (``-x``, no xdist) forked from a server that imported
torch once (``benchmarks/mutation_server.py``): the machine is shared.

Scope: a target names the functions (or classes) that carry the papers' protocol; only their lines are mutated
(passed to mutmut as a patch of "added" lines). A target's ``cap`` (``--max-mutants`` for all) keeps the first
mutants in line order where a run must stay short; the table shows "N of M (cap C)" when it bit. ``--limit`` stops a
target's mutmut after that many seconds; mutants it left untested (stopped, or mutmut failed: the record keeps the
end of its log) are counted as "not run".

Run from the repository root::

    .venv/bin/python benchmarks/mutation.py                      # every target (tens of minutes on 2 cores)
    .venv/bin/python benchmarks/mutation.py evaluation/sts.py     # one target
    .venv/bin/python benchmarks/mutation.py --table               # the BENCHMARKS.md table from the results file

Results (per target: counts, time, every surviving or equivalent mutant as a diff line) are merged into
``benchmarks/mutation_results.json`` (committed: the table is made from it); ``--table`` prints BENCHMARKS.md's table.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("src") / "sentrepro"
RESULTS = ROOT / "benchmarks" / "mutation_results.json"
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.yaml"
COPIED = ("src", "tests", "benchmarks", "pyproject.toml", "config.yaml", "Snakefile", "workflow", "profiles")


@dataclass(frozen=True)
class Target:
    """A module (under src/sentrepro), the functions or classes of it that are mutated (None: all of it), the
    test selection run against each mutant (pytest arguments), what the module carries (for the table) and the cap
    on its mutants (2 shared cores: ~5-20 s per mutant)."""

    module: str
    functions: tuple[str, ...] | None
    tests: tuple[str, ...]
    what: str
    cap: int | None = 20  # mutants at most, the first in line order (None: every mutant of the scope)


# Most protocol-critical first: the order `python benchmarks/mutation.py` runs them in. A test selection is the
# pytest arguments after the file names (-k narrows to the tests that exercise the mutated functions).
K_TRAIN = "train_step or batches_cover or adamw or schedule"  # -k matches file names too: all of test_train_step.py
TARGETS = (
    Target("evaluation/sts.py", None, ("tests/test_eval_sts.py",), "STS scoring and the 'all' aggregation", cap=None),
    Target("evaluation/sts_suite.py", ("score_tasks",), ("tests/test_eval_sts.py",), "STS suite scoring", cap=None),
    Target("training/optim.py", None, ("tests/test_train_step.py", "tests/test_simcse.py", "-k", K_TRAIN),
           "AdamW (HF 4.2.1), weight-decay groups, lr schedules", cap=None),
    Target("training/loop.py", ("total_steps", "batch_indices", "epoch_order", "build_optimization", "optimizer_step"),
           ("tests/test_train_step.py", "tests/test_train.py", "-k", K_TRAIN),
           "training step, clipping, schedule length, batch order", cap=None),
    Target("evaluation/suites.py", ("senteval_ordered", "split_features", "score_transfer_task", "run_transfer"),
           ("tests/test_senteval_parity.py",), "transfer suite entry", cap=25),
    Target("data/benchmarks/transfer.py", ("senteval_order",), ("tests/test_senteval_parity.py",),
           "SentEval's row order"),
    Target("evaluation/transfer.py", None, ("tests/test_eval_transfer.py", "tests/test_senteval_parity.py", "-k",
                                            "not cuda and not fewshot"),
           "transfer protocols (nested CV, dev-selected, fixed test), MRPC features"),
    Target("evaluation/probe.py", ("resolve_mode", "_holdout_split", "encode_labels", "search_l2_on_folds"),
           ("tests/test_eval_probe.py", "tests/test_senteval_parity.py"), "the transfer probe"),
    Target("evaluation/clustering.py", None, ("tests/test_eval_clustering.py",),
           "KMeans clustering, Hungarian accuracy, NMI"),
    Target("tables/aggregate.py", None, ("tests/test_tables.py", "-k", "seed or summary or statistic"),
           "table cells: statistics over seeds"),
    Target("code/codedeps.py", ("_strip_docstrings", "normalised_source", "cache_key", "file_fingerprint", "combine"),
           ("tests/test_codedeps.py", "-k",
            "docstring or string_literal or yaml or behaviour or cache_key or normalised"),
           "code fingerprints", cap=None),
    Target("records/integrity.py", ("file_sha256", "verify_files", "dataset_files", "verify_dataset", "manifest_files"),
           ("tests/test_reliability.py", "-k", "dataset or weight_byte or stamp"), "dataset integrity check"),
    Target("data/download.py", ("_normalise_sha256", "_reuse_existing", "_verify_partial", "_download_http_verified"),
           ("tests/test_download.py",), "download checksum verification"),
    Target("methods/simcse.py", ("simcse_loss", "with_special_tokens", "SimCSE"), ("tests/test_simcse.py",),
           "SimCSE contrastive loss"),
    Target("methods/conpvp.py", ("prototype_logits", "prototype_loss", "template_choice", "wrap_with_template",
                                 "insert_prompt"), ("tests/test_method_conpvp.py",), "ConPVP prototypes and loss"),
    Target("methods/promptbert.py", ("shifted_position_ids", "gather_positions", "last_occurrence", "template_bias",
                                     "PromptBERT"), ("tests/test_method_promptbert.py",),
           "PromptBERT templates and denoising"),
    Target("methods/esimcse.py", ("repeat_subwords", "enqueue", "esimcse_loss", "ema_update"),
           ("tests/test_method_esimcse.py",), "ESimCSE repetition, queue, momentum"),
    Target("methods/mocoutrl.py", ("ntxent_pml", "released_labels", "views_infonce", "token_contrast"),
           ("tests/test_method_mocoutrl.py",), "MoCoUTRL losses"),
    Target("verdicts/stats.py", None, ("tests/test_stats.py",), "verdict statistics"),
)
BY_MODULE = {target.module: target for target in TARGETS}


def selected_lines(path: Path, names: tuple[str, ...] | None) -> set[int]:
    """Line numbers (1-based) of the named top-level functions or classes of ``path`` (all lines for None)."""
    source = path.read_text(encoding="utf-8")
    if names is None:
        return set(range(1, source.count("\n") + 2))
    found: dict[str, ast.AST] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names:
            found[node.name] = node
    missing = sorted(set(names) - set(found))
    if missing:
        raise SystemExit(f"{path}: no top-level function or class named {', '.join(missing)} (benchmarks/mutation.py "
                         "TARGETS)")
    return {line for node in found.values() for line in range(node.lineno, node.end_lineno + 1)}


def scope_patch(rel: str, source: str, lines: set[int]) -> str:
    """A unified diff that "adds" exactly ``lines`` of ``rel`` (mutmut --use-patch-file mutates added lines only)."""
    new = source.splitlines(keepends=True)
    old = [line for number, line in enumerate(new, 1) if number not in lines]
    return "".join(difflib.unified_diff(old, new, fromfile=rel, tofile=rel))


def copy_checkout(target_dir: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "results", "mutants", ".mutmut-cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target_dir / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, target_dir / name)


def wait_for(sock: Path, server: subprocess.Popen, limit_s: float = 300) -> None:
    """Until the fork server listens (it imports torch first), or fail if it died or never did."""
    deadline = time.monotonic() + limit_s
    while not sock.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the mutation test server did not start (exit {server.poll()})")
        time.sleep(0.2)


def mutant_rows(cache: Path) -> list[dict]:
    """(id, line number, source line, status) of every mutant mutmut recorded."""
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT m.id, l.line_number, l.line, m.status FROM Mutant m JOIN Line l ON m.line = l.id "
                          "ORDER BY l.line_number, m.\"index\"").fetchall()
    return [{"id": row[0], "line_number": row[1] + 1, "line": row[2], "status": row[3]} for row in rows]


def mutated_line(workdir: Path, env: dict, mutant_id: int) -> str:
    """The mutant's new line(s), from ``mutmut show`` (a unified diff of the module)."""
    diff = subprocess.run([sys.executable, "-m", "mutmut", "show", str(mutant_id)], cwd=workdir, env=env,
                          capture_output=True, text=True, check=True).stdout
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return " / ".join(added) if added else "(line removed)"


def equivalents() -> dict[tuple[str, str, str], str]:
    """(module, original line, mutated line) -> reason, from benchmarks/mutation_equivalent.yaml."""
    if not EQUIVALENT.exists():
        return {}
    entries = yaml.safe_load(EQUIVALENT.read_text(encoding="utf-8")) or []
    table = {}
    for number, entry in enumerate(entries):
        missing = {"module", "line", "mutant", "reason"} - set(entry)
        if missing:
            raise SystemExit(f"{EQUIVALENT}: entry {number} lacks {', '.join(sorted(missing))}")
        table[(entry["module"], entry["line"].strip(), entry["mutant"].strip())] = entry["reason"]
    return table


def run_limited(command: list[str], cwd: Path, env: dict, log: Path, limit_s: float) -> int | None:
    """Run mutmut (output to ``log``); after ``limit_s`` stop it and its children (mutmut 2 has been seen to stall
    under load): the mutants it tested keep their status, the rest count as "untested". None: it was stopped."""
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            return process.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            return None


def run_target(target: Target, cap: int | None, limit_s: float) -> dict:
    """Mutate ``target`` in a throwaway copy and classify every mutant; returns the target's result record."""
    rel = str(PACKAGE / target.module)
    with tempfile.TemporaryDirectory(prefix="sentrepro-mutation-") as tmp:
        work = Path(tmp)
        copy_checkout(work)
        source = (work / rel).read_text(encoding="utf-8")
        lines = selected_lines(work / rel, target.functions)
        per_line = mutants_per_line(rel, source)
        in_scope = sum(n for line, n in per_line.items() if line in lines)
        if cap is not None:  # mutmut has no cap of its own: keep the first lines holding at most `cap` mutants
            lines = capped_lines(per_line, lines, cap)
        (work / "scope.patch").write_text(scope_patch(rel, source, lines), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(work / "src"), "PYTHONDONTWRITEBYTECODE": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               # the tests' default (tests/conftest.py SHARED_DATA) is beside the checkout, which the copy is not
               "SENTREPRO_SHARED_DATA": os.environ.get("SENTREPRO_SHARED_DATA", str(ROOT.parent / "shared" / "data"))}
        # The test command: the fork server's client (benchmarks/mutation_server.py: torch imported once per target,
        # every failure reported as exit 1, which is what mutmut 2 counts as killed).
        sock = str(work / "pytest.sock")
        server = subprocess.Popen([sys.executable, str(work / "benchmarks" / "mutation_server.py"), "serve", sock],
                                  cwd=work, env=env)
        runner = " ".join([sys.executable, str(work / "benchmarks" / "mutation_server.py"), "client", sock, "--",
                           "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           *(f"'{arg}'" for arg in target.tests)])
        command = [sys.executable, "-m", "mutmut", "run", "--paths-to-mutate", rel, "--tests-dir", "tests",
                   "--runner", runner, "--use-patch-file", "scope.patch", "--no-progress", "--simple-output"]
        start = time.monotonic()
        log = work / "mutmut.log"
        try:
            wait_for(Path(sock), server)
            returncode = run_limited(command, work, env, log, limit_s)
        finally:
            server.terminate()
            server.wait()
        elapsed = time.monotonic() - start
        cache = work / ".mutmut-cache"
        if not cache.exists():
            raise SystemExit(f"{target.module}: mutmut wrote no results (exit {returncode}):\n"
                             f"{log.read_text(errors='replace')[-3000:]}")
        rows = mutant_rows(cache)
        # the committed results name no path of the machine that made them
        log_tail = (log.read_text(errors="replace")[-2000:]
                    .replace(sys.prefix, "<venv>").replace(str(work), "<copy>"))
        if not rows and returncode:
            raise SystemExit(f"{target.module}: mutmut made no mutant (exit {returncode}; did the unmutated tests "
                             f"pass?):\n{log_tail}")
        known = equivalents()
        mutants, survivors = len(rows), []
        counts = {"killed": 0, "equivalent": 0, "survived": 0, "timeout": 0, "untested": 0}
        for row in rows:
            if row["status"] in ("ok_killed", "ok_suspicious"):
                counts["killed"] += 1
                continue
            if row["status"] == "untested":
                counts["untested"] += 1
                continue
            new = mutated_line(work, env, row["id"])
            key = (target.module, row["line"].strip(), new)
            state = "equivalent" if key in known else ("timeout" if row["status"] == "bad_timeout" else "survived")
            counts[state] += 1
            survivors.append({"line_number": row["line_number"], "line": row["line"].strip(), "mutant": new,
                              "state": state, "reason": known.get(key)})
    return {"module": target.module, "functions": list(target.functions) if target.functions else "all",
            "tests": list(target.tests), "what": target.what, "mutants": mutants, "in_scope": in_scope, **counts,
            "seconds": round(elapsed, 1), "cap": cap, "mutmut_exit": returncode, "not_killed": survivors,
            **({"mutmut_log_tail": log_tail} if counts["untested"] else {})}


def mutants_per_line(rel: str, source: str) -> dict[int, int]:
    """Line number (1-based) -> how many mutants mutmut makes on it."""
    from mutmut import Context, list_mutations

    per_line: dict[int, int] = {}
    for mutation_id in list_mutations(Context(source=source, filename=rel)):
        per_line[mutation_id.line_number + 1] = per_line.get(mutation_id.line_number + 1, 0) + 1
    return per_line


def capped_lines(per_line: dict[int, int], lines: set[int], cap: int) -> set[int]:
    """The first of ``lines`` whose mutants number at most ``cap``."""
    keep, total = set(), 0
    for number in sorted(line for line in per_line if line in lines):
        if total + per_line[number] > cap:
            break
        keep.add(number)
        total += per_line[number]
    return keep


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}


def write_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, RESULTS)  # atomic: a killed run leaves the previous results whole


def table(results: dict) -> str:
    """The BENCHMARKS.md table: one row per target in TARGETS order (a target never run says so)."""
    rows = ["| module | scope | tests run per mutant | mutants | killed | equivalent | survived | not run | "
            "time (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for target in TARGETS:
        record = results.get(target.module)
        scope = "all" if target.functions is None else ", ".join(target.functions)
        tests = " ".join(arg.removeprefix("tests/") for arg in target.tests)
        if record is None:
            rows.append(f"| `{target.module}` | {scope} | {tests} | not run | | | | | |")
            continue
        # survivors are classified against the equivalents file as it is now (a reason added after the run counts)
        known = equivalents()
        equivalent = sum((target.module, m["line"], m["mutant"]) in known for m in record["not_killed"])
        survived = len(record["not_killed"]) - equivalent
        capped = record["cap"] is not None and record["in_scope"] > record["mutants"]
        mutants = f"{record['mutants']} of {record['in_scope']} (cap {record['cap']})" if capped else record["mutants"]
        rows.append(f"| `{target.module}` | {scope} | {tests} | {mutants} | {record['killed']} | "
                    f"{equivalent} | {survived} | {record['untested']} | {record['seconds']:.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help=f"targets to run (default: all); known: {', '.join(BY_MODULE)}")
    parser.add_argument("--max-mutants", type=int, default=None,
                        help="cap the mutants of every target run, in line order (0: no cap; default: each target's)")
    parser.add_argument("--limit", type=float, default=900, help="seconds per target before mutmut is stopped")
    parser.add_argument("--table", action="store_true", help="print the table from the results file and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(table(load_results()))
        return 0
    unknown = [m for m in args.modules if m not in BY_MODULE]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (known: {', '.join(BY_MODULE)})")
    status = 0
    for target in [BY_MODULE[m] for m in args.modules] or TARGETS:
        print(f"[mutation] {target.module}: {target.what}; tests: {' '.join(target.tests)}", flush=True)
        cap = target.cap if args.max_mutants is None else (args.max_mutants or None)
        record = run_target(target, cap, args.limit)
        results = load_results()
        results[target.module] = record
        write_results(results)
        print(f"[mutation] {target.module}: {record['mutants']} mutants, {record['killed']} killed, "
              f"{record['untested']} untested, "
              f"{record['equivalent']} equivalent, {record['survived'] + record['timeout']} survived, "
              f"{record['seconds']:.0f} s", flush=True)
        for mutant in record["not_killed"]:
            if mutant["state"] != "equivalent":
                status = 1
                print(f"  {mutant['state']}: line {mutant['line_number']}: {mutant['line']}  ->  {mutant['mutant']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
