"""Mutation testing of the code that decides a number or a verdict: does a small realistic bug in it make a test fail?

Every mutant of every target is run; nothing is sampled. mutmut's operators (pinned in requirements-test.txt) make
the mutants, one small edit each (an operator, a number, a comparison, a keyword, an assignment, a string); this
script runs them, which is what makes "every mutant" affordable:

- **Only the tests that reach the mutated line.** One coverage pass (coverage.py, one context per test) runs the
  unit tiers (``-m "not slow and not slurm"``) over the targets and records which tests run each line. A mutant runs
  exactly those tests, stopping at the first failure (``-x``): first the tests that killed the last mutants of the
  same function or class (``killing_test``), then those that run the body of the function or class holding the line
  or a line reading what it defines (``neighbour_lines``), then the others, each part fastest first. A mutant of a
  line run only on import runs the tests its effect reaches where that can be followed (a ``def``'s signature: the
  tests that run its body; a constant: the tests that run a line reading it, and the test files that name it), and
  otherwise every test that uses the module (``import_time_reads``). So does a line of a cached function
  (``cached_lines``): coverage gives it to the first test that called it, while later callers read its result. A
  mutant of a line no test runs is *not reached*: a survivor, without a run (the workflow tests that reach it in a
  subprocess are out of this tier's reach, and the table says so).
- **A warm fork server per worker** (``benchmarks/mutation_server.py``): torch, transformers and scikit-learn are
  imported once; each run forks a child that imports the package afresh from the worker's own copy of the
  checkout, where the mutant is written. ``--workers`` copies run in parallel (default: one per core).
- **A cache keyed by fingerprints**: a target whose module, covering test files, ``tests/conftest.py`` and this
  engine are unchanged since its recorded run (``benchmarks/mutation_results.json``) is not run again
  (``--force`` runs it); an interrupted run resumes from ``.mutation-cache/``, where each mutant's state is saved
  as it ends, with the test that killed it. If the target's test files changed since (a test file added), its
  killed mutants whose killing test's file is unchanged keep their state (``load_cache``); the rest run again.

A mutant is *killed* when its tests fail (pytest exit 1), cannot be collected (2: the mutant breaks an import) or
end by a signal (a crash), and *timed out* when they run past three times their unmutated time plus 30 s (counted
as killed, as PIT counts them: the tests notice). The first budget is estimated from the coverage pass's per-test
durations; a mutant past it is judged again against the same tests' measured time (``timeout_measured``). A mutant whose tests pass *survives*; every survivor must be killed
by a new test or listed in ``benchmarks/mutation_equivalent.yaml`` with the reason it cannot change a result (the
same module, line and mutated line listed there is "equivalent" here).

**Scope**: every line of each target module but the text of the errors it raises (``raise`` statements: their
wording decides no number, and tests/test_docs_troubleshooting.py checks that each error class is documented).

    .venv/bin/python benchmarks/mutation.py                      # every target
    .venv/bin/python benchmarks/mutation.py evaluation/sts.py     # one target
    .venv/bin/python benchmarks/mutation.py --table               # the BENCHMARKS.md table from the results file
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("src") / "sentrepro"
RESULTS = ROOT / "benchmarks" / "mutation_results.json"
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.yaml"
CACHE = ROOT / ".mutation-cache"
# A mutant that takes this long is named in the run's output as it ends, so that a run that seems stalled can be read.
SLOW_MUTANT_S = 120
SERVER = Path(__file__).resolve().with_name("mutation_server.py")
COPIED = ("src", "tests", "benchmarks", "pyproject.toml", "config.yaml", "Snakefile", "workflow", "profiles", "docs",
          "README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "CHANGELOG.md", "mkdocs.yml", "Makefile", "envs",
          "requirements.txt", "requirements-test.txt", "requirements-export.txt", "requirements-offline-data.txt",
          "config.schema.yaml")
UNIT_TIERS = "not slow and not slurm"
# unraisableexception and threadexception only collect garbage at the end of a run (~0.35 s) to warn of exceptions
# nobody raised to a test; the child exits right after
PYTEST = ("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:unraisableexception", "-p", "no:threadexception")


@dataclass(frozen=True)
class Target:
    """A module under src/sentrepro and what it decides (the table's "what" column)."""

    module: str
    what: str


# The order a whole run takes: the verdict statistics and the STS / transfer scoring first (their goal is 100 %).
TARGETS = (
    Target("verdicts/stats.py", "verdict statistics: seed tests, margins, multiplicity"),
    Target("evaluation/sts.py", "STS scoring and the 'all' aggregation"),
    Target("evaluation/sts_suite.py", "STS suite scoring"),
    Target("evaluation/transfer.py", "transfer protocols (nested CV, dev-selected, fixed test), MRPC features"),
    Target("evaluation/probe.py", "the transfer probe (SentEval's classifier, in lockstep)"),
    Target("evaluation/suites.py", "the evaluation suites' entry points"),
    Target("evaluation/fewshot.py", "few-shot transfer"),
    Target("evaluation/clustering.py", "KMeans clustering, Hungarian accuracy, NMI"),
    Target("evaluation/classification.py", "WOS classification"),
    Target("evaluation/geometry.py", "alignment, uniformity, anisotropy"),
    Target("evaluation/analyses.py", "the papers' analyses"),
    Target("evaluation/item_scores.py", "per-item scores"),
    Target("evaluation/subsets.py", "the rows a subsampled benchmark keeps (max_samples)"),
    Target("evaluation/job.py", "a suite job: embedding in batches, the suites' Avg. over tasks"),
    Target("encoder/encode.py", "encoding in length-sorted batches, rows put back in input order"),
    Target("methods/simcse.py", "SimCSE contrastive loss"),
    Target("methods/esimcse.py", "ESimCSE repetition, queue, momentum"),
    Target("methods/promptbert.py", "PromptBERT templates and denoising"),
    Target("methods/optiprompt.py", "OptiPrompt's prompt vectors"),
    Target("methods/conpvp.py", "ConPVP prototypes and loss"),
    Target("methods/mocoutrl.py", "MoCoUTRL losses"),
    Target("methods/base.py", "the methods' shared pieces: cosine logits, padding"),
    Target("methods/blocks.py", "pooling (CLS, average, first-last, top-2) and the MLP head"),
    Target("methods/templates.py", "prompt templates"),
    Target("methods/baselines.py", "frozen baselines, whitening"),
    Target("training/loop.py", "training step, clipping, schedule length, batch order"),
    Target("training/optim.py", "AdamW (HF 4.2.1), weight-decay groups, lr schedules"),
    Target("training/corpus.py", "the tokenized training corpus (tokenize once) and its vocabulary check"),
    Target("data/views.py", "MoCoUTRL's synonym and antonym views of the corpus"),
    Target("tables/aggregate.py", "table cells: statistics over seeds"),
    Target("planning/table_cells.py", "which runs and seeds fill a table cell (lowest seeds, stand-ins)"),
    Target("tables/build.py", "table building: rows, columns, reported numbers, deltas"),
    Target("tables/render.py", "table rendering: numbers, deltas, bracket labels"),
    Target("verdicts/build.py", "verdict builder: direction, margin, decidability"),
    Target("verdicts/render.py", "verdict rendering: the numbers, intervals and labels a reader sees"),
    Target("verdicts/claims.py", "claims.yaml reader"),
    Target("planning/reported.py", "reported.yaml reader (the published numbers)"),
    Target("data/benchmarks/__init__.py", "benchmark parsers' common reader"),
    Target("data/benchmarks/sts.py", "STS and SICK parsers"),
    Target("data/benchmarks/transfer.py", "transfer task parsers, SentEval's row order"),
    Target("data/benchmarks/senteval.py", "SentEval's file formats"),
    Target("data/benchmarks/clustering.py", "clustering set parsers"),
    Target("data/benchmarks/wos.py", "WOS parser"),
    Target("code/codedeps.py", "code fingerprints (what reruns)"),
    Target("data/download.py", "download checksum verification"),
    Target("records/ledger.py", "the ledger"),
    Target("records/integrity.py", "integrity checks"),
    Target("records/audit.py", "the audit of a table cell"),
)
BY_MODULE = {target.module: target for target in TARGETS}


# --------------------------------------------------------------------------------------------------- the mutants

@dataclass(frozen=True)
class Mutant:
    """One mutant of a module: where (1-based line, mutmut's index on that line), the line before and after, and
    the whole mutated source."""

    line_number: int
    index: int
    line: str
    mutant: str
    source: str = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.line_number}:{self.index}:{self.mutant}"


def raise_lines(source: str) -> set[int]:
    """Lines (1-based) of the module's ``raise`` statements: out of scope (an error's wording decides nothing)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
LOGGERS = {"LOG", "LOGGER", "log", "logger", "logging"}


def log_lines(source: str) -> set[int]:
    """Lines (1-based) of the statements that only log (``LOG.info(...)`` and the like, a ``log(...)`` callable
    the function was given, ``self.log(...)``): out of scope, as raise statements are (a message's wording decides no number; what is logged is never read back)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        call = node.value if isinstance(node, ast.Expr) else None
        func = call.func if isinstance(call, ast.Call) else None
        on = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        if ((on in LOGGERS and func.attr in LOG_METHODS) or (on == "self" and func.attr == "log")
                or (isinstance(func, ast.Name) and func.id == "log")):  # a log callable it was given
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def _top_level_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
        else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def fixture_lines(source: str) -> set[int]:
    """Lines (1-based) of a benchmark unit's fixture generator: the function its ``BENCHMARK`` names as
    ``fixture=`` and every top-level name that only it needs (derived from the names each top-level statement
    reads, transitively). Out of scope: it writes a synthetic stand-in in the upstream format, which the tests
    parse back with the unit's own parsers and count (tests/test_fixtures.py); no number set against a paper's
    comes from it (a synthetic cell is labelled and never compared)."""
    body = ast.parse(source).body
    by_name = {name: node for node in body for name in _top_level_names(node)}
    generator = None
    for node in body:
        if "BENCHMARK" in _top_level_names(node) and isinstance(node.value, ast.Call):
            generator = next((k.value.id for k in node.value.keywords
                              if k.arg == "fixture" and isinstance(k.value, ast.Name)), None)
    if generator is None:
        return set()

    def reads(node: ast.stmt) -> set[str]:
        skip = set()
        if "BENCHMARK" in _top_level_names(node):  # the unit itself names its fixture: not a use of it
            skip = {id(k.value) for k in node.value.keywords if k.arg == "fixture"}
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in skip} & set(by_name)

    def closure(roots: set[str]) -> set[str]:
        found, todo = set(), list(roots)
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo.extend(reads(by_name[name]) - found)
        return found

    only_generator = closure({generator})
    needed_elsewhere = closure({name for name in by_name if name not in only_generator})
    lines: set[int] = set()
    for name in only_generator - needed_elsewhere:
        node = by_name[name]
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        lines.update(range(first, node.end_lineno + 1))
    return lines


def changed_lines(original: str, mutated: str) -> tuple[int, str]:
    """Where a mutant differs: the first changed line of ``original`` (1-based) and the mutated line(s), stripped
    and joined by " / " ("(line removed)" when the mutant only removes). mutmut's own line number is the line its
    parser node ends on, which for an operator in a statement over several lines is not the line it edits."""
    old, new = original.splitlines(), mutated.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            added = [line.strip() for line in new[j1:j2]]
            # a removal that takes a blank or comment line with it (difflib's pick, for a removed decorator) names
            # the code line it removes
            first = next((i for i in range(i1, i2) if old[i].strip() and not old[i].strip().startswith("#")), i1)
            return first + 1, " / ".join(added) if added else "(line removed)"
    raise ValueError("the mutant equals the original")


def generate_mutants(rel: str, source: str, only: set[int] | None = None) -> list[Mutant]:
    """Every mutant mutmut makes of ``source`` outside its raise statements, its log calls and a benchmark unit's
    fixture generator (:func:`fixture_lines`), in line order. ``only``: just the mutants that edit these lines
    (1-based); a mutant whose mutmut line (the line its node ends on) lies outside their statements' lines is not
    made (making one re-parses the module: 40 ms and more)."""
    from mutmut import Context, list_mutations, mutate

    excluded = raise_lines(source) | log_lines(source) | fixture_lines(source)
    lines = source.splitlines()
    if only is not None:
        heads = statement_heads(source)
        wanted = {heads.get(n, n) for n in only}
        near = {line for line, head in heads.items() if head in wanted} | set(only)
    mutants = []
    for mutation_id in list_mutations(Context(source=source, filename=rel)):
        if only is not None and mutation_id.line_number + 1 not in near:
            continue
        mutated, performed = mutate(Context(source=source, mutation_id=mutation_id, filename=rel))
        if performed != 1 or mutated == source:
            raise RuntimeError(f"{rel}:{mutation_id.line_number + 1}: mutmut's mutant {mutation_id.index} changed "
                               f"nothing ({performed} edits)")
        number, text = changed_lines(source, mutated)
        if number in excluded or (only is not None and number not in only):
            continue
        mutants.append(Mutant(number, mutation_id.index, lines[number - 1].strip(), text, mutated))
    mutants.sort(key=lambda m: (m.line_number, m.index))
    return mutants


def import_time_statements(source: str) -> set[int]:
    """First lines of the statements that run on import: the module's and its classes' bodies (a ``def`` line
    itself included, its body not). coverage.py gives such a line to the test that first imported the module,
    which may be one test that imports it lazily: the line's effect reaches every test that uses the module."""
    lines: set[int] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            lines.add(node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno)
            lines.add(node.lineno)
            if isinstance(node, ast.ClassDef):
                visit(node.body)
            elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for field_name in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field_name, None) or []
                    visit([n for n in inner if isinstance(n, ast.stmt)] +
                          [m for h in inner if isinstance(h, ast.ExceptHandler) for m in h.body])

    visit(ast.parse(source).body)
    return lines


@dataclass(frozen=True)
class ImportReads:
    """Where the effect of a line run on import goes: the names it binds, with every top-level name computed from
    them on import (its closure), and the lines that read those names at run time, inside a function's body."""

    names: frozenset[str]
    lines: frozenset[int]


def _loads(node: ast.AST) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _function_parts(node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """A statement's parts evaluated on import and those evaluated when a function of it is called: a ``def``'s
    decorators and defaults run on import, its body when called; a class's body runs on import, its methods'
    bodies when called; any other statement runs on import."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        return [*node.decorator_list, *defaults], list(node.body)
    if isinstance(node, ast.ClassDef):
        now, later = [*node.decorator_list, *node.bases, *node.keywords], []
        for child in node.body:
            child_now, child_later = _function_parts(child)
            now.extend(child_now)
            later.extend(child_later)
        return now, later
    return [node], []


def _simple_binding(node: ast.stmt) -> list[str] | None:
    """The names a top-level assignment binds when every target is a plain name (``A = ...``, ``A: T = ...``,
    ``A += ...``); None for any other statement."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return None
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return names if len(names) == len(targets) else None


def import_time_reads(source: str) -> dict[int, ImportReads]:
    """Line (1-based) -> :class:`ImportReads`, for the lines run on import whose effect can be followed:

    - a ``def``'s signature (its defaults: what a call without the argument gets): the lines of its body;
    - a top-level assignment to plain names: the names, closed over the top-level assignments computed from them
      on import, and the lines in function bodies that read any of them.

    A cached function (``functools.cache`` and the like) is not followed: coverage gives its body to the first
    test that called it, while every later caller reads what that call returned.

    A line whose effect cannot be followed is absent (its mutants reach every test that uses the module): a
    decorator, a class body, any other top-level statement, or an assignment whose names feed one of those on
    import (a ``BENCHMARK = Benchmark(classes=CLASSES)`` that a registry reads by name elsewhere is followed; a
    ``register(CLASSES)`` call is not)."""
    tree = ast.parse(source)
    reads: dict[int, ImportReads] = {}
    cached = cached_lines(source)  # a cached function's body runs in the first test that calls it, not the others
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and node.lineno not in cached:
            body_lines = frozenset(s.lineno for s in ast.walk(ast.Module(node.body, [])) if isinstance(s, ast.stmt))
            for line in range(node.lineno, node.body[0].lineno):  # whoever calls it runs its body
                reads[line] = ImportReads(frozenset(), body_lines)
    body = tree.body
    parts = {id(node): _function_parts(node) for node in body}

    def followed(roots: set[str]) -> ImportReads | None:
        names, lines, todo = set(), set(), list(roots)
        while todo:
            name = todo.pop()
            if name in names:
                continue
            names.add(name)
            for node in body:
                now, later = parts[id(node)]
                lines.update(n.lineno for part in later for n in _loads(part) if n.id == name)
                if lines & cached:
                    return None  # read by a cached function: its later callers are not traced
                if not any(n.id == name for part in now for n in _loads(part)):
                    continue
                bound = _simple_binding(node)
                if bound is not None:
                    todo.extend(bound)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not any(
                        n.id == name for d in node.decorator_list for n in _loads(d)):
                    lines.update(s.lineno for s in ast.walk(ast.Module(node.body, [])) if isinstance(s, ast.stmt))
                    if node.lineno in cached:
                        return None
                else:
                    return None  # read on import by a statement whose effect is not followed
        return ImportReads(frozenset(names), frozenset(lines))

    for node in body:
        bound = _simple_binding(node)
        if bound and not any(name.startswith("__") for name in bound):
            found = followed(set(bound))
            if found is not None:
                for line in range(node.lineno, node.end_lineno + 1):
                    reads[line] = found
    return reads


def mentions(text: str, names) -> bool:
    """Whether ``text`` holds any of ``names`` as a whole word (an import, an attribute, a string key)."""
    return any(re.search(rf"\b{re.escape(name)}\b", text) for name in names)


def cached_lines(source: str) -> set[int]:
    """Lines (1-based) of the functions under a cache decorator (``functools.cache``, ``lru_cache``,
    ``cached_property``): coverage gives such a body to the first test that called it, while every later caller
    reads what that call returned, so a mutant there reaches every test that uses the module."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                "cache" in ast.unparse(d) for d in node.decorator_list):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def statement_heads(source: str) -> dict[int, int]:
    """Line (1-based) -> the first line of the innermost statement holding it (for a compound statement, of its
    header: ``if a and\\n b:``'s two lines map to the ``if``). coverage.py records a statement by its first line."""
    heads: dict[int, int] = {}
    for node in ast.walk(ast.parse(source)):  # breadth first: inner statements come later and overwrite
        if not isinstance(node, ast.stmt):
            continue
        body = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
        end = min(child.lineno for child in body) - 1 if body else node.end_lineno
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for line in range(first, max(end, node.lineno) + 1):
            heads[line] = node.lineno
    return heads


def _scopes(tree: ast.Module) -> dict[int, tuple[ast.stmt, ast.AST | None]]:
    """Line (1-based) -> (its top-level statement, the innermost ``def`` or ``class`` holding it or None)."""
    found: dict[int, tuple[ast.stmt, ast.AST | None]] = {}
    for top in tree.body:
        scopes = [n for n in ast.walk(top) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        for line in range(top.lineno, top.end_lineno + 1):
            inner = [n for n in scopes if n.lineno <= line <= n.end_lineno]
            found[line] = (top, max(inner, key=lambda n: n.lineno) if inner else None)
    return found


def neighbour_lines(source: str) -> dict[int, frozenset[int]]:
    """Line (1-based) -> the statements run at call time that most likely show a mutant of it: the bodies of the
    innermost ``def`` or ``class`` holding the line, and every function body line that reads a name the line's
    top-level statement binds (a class, a function, a constant). A mutant of a dataclass field reaches every test
    that uses the module (:meth:`Reach.tests_for`), but the tests that build or call that class see it first.
    Only the order of a mutant's tests comes from this, never which tests run, so no state depends on it."""
    tree = ast.parse(source)
    parts = {id(node): _function_parts(node) for node in tree.body}

    def run_lines(nodes) -> set[int]:
        return {s.lineno for n in nodes for s in ast.walk(n) if isinstance(s, ast.stmt)}

    def bound(node: ast.stmt) -> list[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        return _simple_binding(node) or []

    readers = {id(top): {n.lineno for node in tree.body for part in parts[id(node)][1] for n in _loads(part)
                         if n.id in bound(top)} for top in tree.body}
    return {line: frozenset((run_lines(_function_parts(inner)[1]) if inner is not None else set())
                            | readers[id(top)])
            for line, (top, inner) in _scopes(tree).items()}


def tests_running(reach: Reach, lines) -> set[str]:
    """The tests that run any of ``lines`` (each read as coverage records it, by its statement's first line). Not a
    method of :class:`Reach`, which is part of the engine's fingerprint: only the order of a mutant's tests uses it."""
    return set().union(*(reach.by_line.get(reach.heads.get(n, n), set()) for n in lines)) - {""}


def scope_heads(source: str) -> dict[int, int]:
    """Line (1-based) -> the first line of the innermost ``def`` or ``class`` holding it, or of its top-level
    statement: the mutants of one scope share a key, so the test that killed one is tried first on the next."""
    return {line: (inner or top).lineno for line, (top, inner) in _scopes(ast.parse(source)).items()}


def run_order(tests: set[str], first: set[str], durations: dict[str, float], recent=()) -> list[str]:
    """A mutant's tests in the order they run under ``-x``: the tests in ``recent`` (those that killed the last
    mutants of the same scope, latest first), then those in ``first`` (they run a line near the mutant), then the
    rest, each part fastest first. A killed mutant stops at its first failing test, so this order decides how long
    a kill takes; a survivor runs them all in any order."""
    rank = {test: k for k, test in enumerate(recent)}
    return sorted(tests, key=lambda t: (rank.get(t, len(rank)), t not in first, durations.get(t, 0.0), t))


def killing_test(log: Path) -> str | None:
    """The id of the test a ``-x`` run stopped at, from pytest's short summary (``FAILED <id> - <message>``);
    None when the log names none (a mutant that broke collection, or a crash)."""
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ", 1)[0].strip()
    return None


# ------------------------------------------------------------------------------------------------------ coverage

@dataclass
class Reach:
    """Which tests run which lines of one module (from the coverage pass)."""

    by_line: dict[int, set[str]]  # executed statement line -> the test ids that ran it ("" = outside any test)
    missing: set[int]  # statements no test ran
    heads: dict[int, int]
    on_import: set[int] = field(default_factory=set)  # statements run when the module is imported
    file_tests: dict[str, set[str]] = field(default_factory=dict)  # test file -> every test of it the pass ran
    followed: dict[int, set[str]] = field(default_factory=dict)  # line run on import -> the tests its effect reaches
    shared: set[int] = field(default_factory=set)  # lines of cached functions (cached_lines): every user

    def users(self) -> set[str]:
        """The tests that use the module: those that run any line of it, and every other test of their files. A
        test may read the module's constants through another module and run none of its lines (a registry's
        table of every unit's class counts), while a test beside it in the same file parses with them."""
        direct = set().union(*self.by_line.values()) - {""}
        return direct.union(*(self.file_tests.get(name, set()) for name in test_files(direct)))

    def tests_for(self, line_number: int) -> set[str] | None:
        """The tests that reach ``line_number``; None when no test does. A line run only outside the tests (a
        ``def`` or a constant, on import) is reached by every test that uses the module (:meth:`users`)."""
        head = self.heads.get(line_number, line_number)
        if head in self.missing:
            return None
        if self.followed.get(line_number):  # see narrowed_reach
            return self.followed[line_number]
        if head in self.on_import or head in self.shared:  # whichever test imported the module first, every test using it sees the line
            return self.users() or None
        tests = self.by_line.get(head, set()) - {""}
        if tests:
            return tests
        if "" in self.by_line.get(head, set()) or head not in self.by_line:
            return self.users() or None
        return None


def narrowed_reach(reach: Reach, source: str, others: list[str], test_texts: dict[str, str]) -> dict[int, set[str]]:
    """Line run on import -> the tests its effect reaches, where :func:`import_time_reads` can follow it: the tests
    that run a line reading what it binds, and every test of the test files that name it. Not followed (absent:
    every user of the module) where ``others`` (the checkout's other Python and rule files: the package, test
    helpers, workflow scripts) name it, since their readers are not traced."""
    followed: dict[int, set[str]] = {}
    for line, found in import_time_reads(source).items():
        if found.names and any(mentions(text, found.names) for text in others):
            continue
        tests = set().union(*(reach.by_line.get(reach.heads.get(n, n), set()) for n in found.lines)) - {""}
        for name, text in test_texts.items():
            if found.names and mentions(text, found.names):
                tests |= reach.file_tests.get(name, set())
        followed[line] = tests
    return followed


def checkout_texts(copy_root: Path) -> tuple[dict[str, str], dict[Path, str]]:
    """The test files' texts (by the path a test id starts with) and every other Python or rule file's, by path:
    the package, test helpers and conftest, workflow scripts and rules, benchmarks (but this engine, which reads
    no module's names)."""
    tests, others = {}, {}
    for path in sorted(copy_root.rglob("*.py")) + sorted(copy_root.rglob("*.smk")) + [copy_root / "Snakefile"]:
        rel = path.relative_to(copy_root)
        if not path.is_file() or rel.parts[0] not in ("src", "tests", "workflow", "benchmarks", "Snakefile") or \
                rel.name in ("mutation.py", "mutation_server.py"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if rel.parts[0] == "tests" and rel.name.startswith("test_"):
            tests[str(rel)] = text
        else:
            others[path.resolve()] = text
    return tests, others


def coverage_reach(data_file: Path, copy_root: Path, modules: list[str], ran=()) -> dict[str, Reach]:
    """Per module, its :class:`Reach` from the coverage data of one or more workers' passes (combined); ``ran``:
    the ids of every test the pass ran (a module's users include the other tests of their files)."""
    import coverage

    cov = coverage.Coverage(data_file=str(data_file))
    cov.combine(data_paths=[str(p) for p in data_file.parent.glob(data_file.name + ".*")], keep=True)
    cov.load()
    data = cov.get_data()
    measured = {Path(name).resolve(): name for name in data.measured_files()}
    file_tests: dict[str, set[str]] = {}
    for test in ran:
        file_tests.setdefault(test.split("::")[0], set()).add(test)
    reach = {}
    test_texts, others = checkout_texts(copy_root)
    for module in modules:
        path = (copy_root / PACKAGE / module).resolve()
        source = path.read_text(encoding="utf-8")
        name = measured.get(path)
        if name is None:  # no test imports the module at all
            statements = set(statement_heads(source).values())
            reach[module] = Reach({}, statements, statement_heads(source))
            continue
        _, statements, _, missing, _ = cov.analysis2(name)
        by_line = {line: set(contexts) for line, contexts in (data.contexts_by_lineno(name) or {}).items()}
        reach[module] = Reach(by_line, set(missing), statement_heads(source), import_time_statements(source),
                              file_tests)
        reach[module].shared = cached_lines(source)
        reach[module].followed = narrowed_reach(reach[module], source,
                                                [text for p, text in others.items() if p != path], test_texts)
    return reach


# ------------------------------------------------------------------------------------------------------- workers

def copy_checkout(target_dir: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "results", "resources", "site")
    target_dir.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target_dir / name, ignore=ignore, symlinks=True)
        elif source.exists():
            shutil.copy2(source, target_dir / name)


class Worker:
    """A copy of the checkout and its fork server (benchmarks/mutation_server.py); one mutant at a time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        copy_checkout(root)
        self.sock = root / "pytest.sock"
        self.env = {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONDONTWRITEBYTECODE": "1",
                    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                    # the tests' default (tests/conftest.py SHARED_DATA) is beside the checkout, which a copy is not
                    "SENTREPRO_SHARED_DATA": os.environ.get("SENTREPRO_SHARED_DATA",
                                                            str(ROOT.parent / "shared" / "data"))}
        self.server = subprocess.Popen([sys.executable, str(root / "benchmarks" / "mutation_server.py"), "serve",
                                        str(self.sock)], cwd=root, env=self.env)
        deadline = time.monotonic() + 300
        while not self.sock.exists():
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the mutation test server did not start (exit {self.server.poll()})")
            time.sleep(0.2)
        # warm-up: collect every test file once with bytecode written (pytest's rewritten tests, the package's
        # modules), so that no mutant's run compiles them again
        code = self.pytest([*PYTEST, "--collect-only", "tests"], 600, write_bytecode=True,
                           log=str(root / "warm-up.log"))
        if code != 0:
            raise SystemExit(f"collecting the unmutated tests failed (exit {code}); see {root / 'warm-up.log'}")

    def pytest(self, args: list[str], limit_s: float, **extra) -> int:
        from mutation_server import ask

        return ask(str(self.sock), {"cwd": str(self.root), "args": list(args), "limit_s": limit_s, **extra})

    def run_mutant(self, rel: str, mutant: Mutant, tests: list[str], limit_s: float) -> int:
        path = self.root / rel
        original = path.read_bytes()
        try:
            path.write_text(mutant.source, encoding="utf-8")
            code = self.pytest([*PYTEST, "-x", *tests], limit_s, log=str(self.root / "last.log"))
            log = (self.root / "last.log").read_text(errors="replace") if code in (4, 5) else ""
            if code == 4 and "ERROR: not found:" in log:
                # the mutant changed a parametrisation computed from the package (a test id of the unmutated run
                # is gone): run those tests' functions, under whatever parameters the mutant gives them
                code = self.pytest([*PYTEST, "-x", *without_parameters(tests)], limit_s,
                                   log=str(self.root / "last.log"))
                log = (self.root / "last.log").read_text(errors="replace") if code in (4, 5) else ""
            if code in (4, 5):
                if code == 4 and "ERROR collecting" in log:  # a test file no longer imports: the mutant broke it
                    return 2
                tail = log[-1500:]  # the engine's fault, not the mutant's: say what pytest said
                raise RuntimeError(f"{rel}:{mutant.line_number}: pytest exit {code} for {tests[:3]}...:\n{tail}")
            return code
        finally:
            path.write_bytes(original)

    def close(self) -> None:
        from mutation_server import stop

        try:
            stop(str(self.sock))
            self.server.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.server.kill()


def without_parameters(tests: list[str]) -> list[str]:
    """Test ids with their parametrisation cut off (``f.py::t[a]`` -> ``f.py::t``), each once, in order."""
    return list(dict.fromkeys(test.split("[", 1)[0] for test in tests))


def classify(code: int) -> str:
    """A mutant's state from its tests' exit status (pytest's code, or -signal from the fork server)."""
    if code == 0:
        return "survived"
    if code in (1, 2, 3):  # failed; not collectable (the mutant breaks an import); pytest's internal error
        return "killed"
    if code == -14:  # the server's alarm
        return "timeout"
    if code < 0:  # a crash (a mutated tensor call can segfault)
        return "killed"
    raise RuntimeError(f"pytest exit {code} (4: usage error, 5: no test collected): the engine built a bad run")


def test_files(test_ids) -> list[str]:
    return sorted({test.split("::")[0] for test in test_ids})


def engine_source() -> str:
    """The parts of the engine that decide a mutant's state (not its list of targets or its table, whose edits
    change no recorded result): which mutants, which tests, how a run is read; and the fork server."""
    import inspect

    parts = [generate_mutants, raise_lines, log_lines, _top_level_names, fixture_lines, changed_lines,
             statement_heads, import_time_statements, cached_lines, ImportReads, _loads, _function_parts, _simple_binding,
             import_time_reads, mentions, narrowed_reach, checkout_texts, Reach, test_files, Worker.run_mutant,
             without_parameters, classify, timeout_measured]
    return "\n".join([*(inspect.getsource(part) for part in parts), repr((PYTEST, UNIT_TIERS)),
                      SERVER.read_text(encoding="utf-8") if SERVER.exists() else ""])


def fingerprint(module: str, files: list[str]) -> str:
    """What a target's result depends on: the module, the test files that reach it, tests/conftest.py, the engine."""
    return _paths_digest([ROOT / PACKAGE / module, ROOT / "tests" / "conftest.py", *(ROOT / f for f in files)])


def _paths_digest(paths: list[Path]) -> str:
    """sha256 over the engine's deciding parts, then each path's name and bytes."""
    digest = hashlib.sha256(engine_source().encode())
    for path in paths:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"(absent)")
    return digest.hexdigest()


def keep_failed_log(log: Path, kept: Path) -> Path:
    """Copy a failed pass's log out of the scratch folder, which is deleted when the run stops; the copy's path."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log, kept)
    return kept


def failed_tests(log: Path) -> str:
    """The tests pytest's short summary names as failed or in error, from a log (what the error message shows)."""
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
             if line.startswith(("FAILED ", "ERROR "))]
    return "; ".join(lines) if lines else "no FAILED or ERROR line in the log (pytest stopped before its summary)"


def coverage_pass(workers: list[Worker], modules: list[str], scratch: Path,
                  tests: list[Path]) -> tuple[dict[str, Reach], dict[str, float]]:
    """Run the unit tiers of ``tests`` once under coverage, the files shared among the workers; the reach of every
    module and every test's duration. Fails when the unmutated tests fail (a mutant could not be judged)."""
    files = sorted(tests, key=lambda p: -p.stat().st_size)
    shares: list[list[str]] = [[] for _ in workers]
    sizes = [0] * len(workers)
    for path in files:  # largest first onto the least loaded worker
        k = sizes.index(min(sizes))
        shares[k].append(str(path.relative_to(ROOT)))
        sizes[k] += path.stat().st_size
    data_file = scratch / ".coverage"
    results: list[tuple[int, Path]] = [None] * len(workers)  # type: ignore[list-item]

    def one(k: int) -> None:
        worker = workers[k]
        include = [str(worker.root / PACKAGE / module) for module in modules]
        durations = scratch / f"durations.{k}.json"
        log = scratch / f"coverage.{k}.log"
        code = worker.pytest([*PYTEST, "-m", UNIT_TIERS, *shares[k]],
                             4 * 3600, write_bytecode=True, coverage={"data_file": f"{data_file}.{k}", "include": include,
                                                 "durations_file": str(durations)}, log=str(log))
        results[k] = (code, durations)

    busy = [k for k in range(len(workers)) if shares[k]]  # pytest with no file would run every test
    threads = [threading.Thread(target=one, args=(k,)) for k in busy]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    durations: dict[str, float] = {}
    for k in busy:
        code, path = results[k]
        if code not in (0, 5):
            kept = keep_failed_log(scratch / f"coverage.{k}.log", CACHE / f"coverage-failed.{k}.log")
            raise SystemExit(f"the unmutated unit tests failed in the coverage pass (exit {code}): "
                             f"{failed_tests(kept)}; the log is kept in {kept}")
        durations.update(json.loads(path.read_text(encoding="utf-8")))
    # the workers' copies hold the same files at different paths: map each to the first worker's
    for k in busy:
        if k:
            rewrite_paths(Path(f"{data_file}.{k}"), workers[k].root, workers[0].root)
    return coverage_reach(data_file, workers[0].root, modules, durations), durations


def rewrite_paths(data_path: Path, old_root: Path, new_root: Path) -> None:
    """coverage data of one worker's copy, its file names moved onto another copy's (so the passes combine)."""
    import coverage

    old = coverage.CoverageData(basename=str(data_path))
    old.read()
    new = coverage.CoverageData(basename=str(data_path) + ".moved")
    for name in old.measured_files():
        moved = str(new_root / Path(name).relative_to(old_root))
        for context in old.measured_contexts():
            old.set_query_context(context)
            lines = old.lines(name)
            if lines:
                new.set_context(context)
                new.add_lines({moved: lines})
    new.write()
    os.replace(str(data_path) + ".moved", data_path)


# ---------------------------------------------------------------------------------------------------- the run

def module_fingerprint(module: str) -> str:
    """What every mutant's state depends on whatever tests reach it: the engine, the module, tests/conftest.py."""
    return _paths_digest([ROOT / PACKAGE / module, ROOT / "tests" / "conftest.py"])


def file_hashes(files: list[str]) -> dict[str, str]:
    return {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest() if (ROOT / f).exists() else "(absent)"
            for f in files}


def load_cache(module: str, print_: str, files: list[str] | None = None) -> dict[str, dict]:
    """The states of a target's mutants that an earlier, interrupted run left and that still hold: all of them
    when the target's fingerprint is unchanged; when only its reaching test files changed (a test file added or
    edited), the killed mutants whose killing test's file is byte for byte the same (with the module, the engine
    and conftest unchanged, that test still fails on that mutant). Survivors and the rest run again: a new test
    may kill them."""
    path = CACHE / (module.replace("/", "__") + ".json")
    if not path.exists():
        return {}
    stored = json.loads(path.read_text(encoding="utf-8"))
    if stored.get("fingerprint") == print_:
        return stored["mutants"]
    if files is None or stored.get("module") != module_fingerprint(module):
        return {}
    now, then = file_hashes(files), stored.get("files", {})
    return {key: outcome for key, outcome in stored["mutants"].items()
            if outcome["state"] == "killed" and outcome.get("killer")
            and now.get(outcome["killer"].split("::")[0], "") == then.get(outcome["killer"].split("::")[0])}


def cache_stamp(module: str, files: list[str]) -> dict:
    """What a saved cache is checked against on a later run's :func:`load_cache` (computed once per target: it
    reads the engine's source and every reaching test file)."""
    return {"module": module_fingerprint(module), "files": file_hashes(files)}


def save_cache(module: str, print_: str, outcomes: dict[str, dict], stamp: dict | None = None) -> None:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / (module.replace("/", "__") + ".json")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"fingerprint": print_, **(stamp or cache_stamp(module, [])), "mutants": outcomes}),
                   encoding="utf-8")
    os.replace(tmp, path)


def reach_fingerprint(target: Target, reach: Reach, mutants: list[Mutant] | None = None) -> tuple[list[str], str]:
    """The test files that reach ``target`` in this coverage pass, and its fingerprint over them: a test file added
    since the recorded run that reaches the module changes it (the recorded file list alone cannot show that).
    ``mutants``: the target's, when the caller has generated them already."""
    if mutants is None:
        source = (ROOT / PACKAGE / target.module).read_text(encoding="utf-8")
        mutants = generate_mutants(str(PACKAGE / target.module), source)
    files = test_files(set().union(*[t for t in (reach.tests_for(m.line_number) for m in mutants) if t]))
    return files, fingerprint(target.module, files)


def run_target(target: Target, workers: list[Worker], reach: Reach, durations: dict[str, float]) -> dict:
    """Every mutant of ``target``, shared among the workers; the target's result record."""
    rel = str(PACKAGE / target.module)
    source = (ROOT / rel).read_text(encoding="utf-8")
    mutants = generate_mutants(rel, source)
    reached_by = {m.key: reach.tests_for(m.line_number) for m in mutants}
    near = neighbour_lines(source)
    scopes = scope_heads(source)
    killers: dict[int, list[str]] = {}  # scope -> the tests that killed its last mutants, latest first
    files, print_ = reach_fingerprint(target, reach, mutants)
    outcomes = load_cache(target.module, print_, files)
    stamp = cache_stamp(target.module, files)
    pending: queue.Queue = queue.Queue()
    for mutant in mutants:
        if mutant.key not in outcomes:
            pending.put(mutant)
    lock = threading.Lock()
    start = time.monotonic()
    failures: list[BaseException] = []

    def drain(worker: Worker) -> None:
        while not failures:
            try:
                mutant = pending.get_nowait()
            except queue.Empty:
                return
            tests = reached_by[mutant.key]
            if tests is None:
                outcome = {"state": "not reached", "tests": 0, "seconds": 0.0}
            else:
                scope = scopes.get(mutant.line_number, mutant.line_number)
                with lock:
                    recent = list(killers.get(scope, ()))
                ordered = run_order(tests, tests_running(reach, near.get(mutant.line_number, ())), durations, recent)
                budget = 3 * sum(durations.get(t, 1.0) for t in ordered) + 30
                began = time.monotonic()
                try:
                    state = classify(worker.run_mutant(rel, mutant, ordered, budget))
                    if state == "timeout":
                        state = timeout_measured(worker, rel, mutant, ordered, budget)
                except BaseException as error:  # noqa: BLE001 - stop every worker, report it below
                    failures.append(error)
                    return
                outcome = {"state": state, "tests": len(ordered), "seconds": round(time.monotonic() - began, 2)}
                killer = killing_test(worker.root / "last.log") if state == "killed" else None
                if killer in tests:
                    outcome["killer"] = killer
                    with lock:
                        killers[scope] = [killer] + [t for t in killers.get(scope, ()) if t != killer][:2]
            with lock:
                outcomes[mutant.key] = outcome
                done = len(outcomes)
                save_cache(target.module, print_, outcomes, stamp)
                if outcome["seconds"] >= SLOW_MUTANT_S:
                    print(f"[mutation] {target.module}:{mutant.line_number} took {outcome['seconds']:.0f} s over "
                          f"{outcome['tests']} tests ({outcome['state']}): {mutant.mutant.strip()[:80]}", flush=True)
                if done % 25 == 0 or done == len(mutants):
                    print(f"[mutation] {target.module}: {done}/{len(mutants)}", flush=True)

    threads = [threading.Thread(target=drain, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    save_cache(target.module, print_, outcomes, stamp)
    check_unmutated(workers[0], target.module, set().union(*[t for t in reached_by.values() if t]), durations)
    known = equivalents()
    counts = {"killed": 0, "timeout": 0, "equivalent": 0, "survived": 0, "not_reached": 0}
    not_killed = []
    for mutant in mutants:
        state = outcomes[mutant.key]["state"]
        if state in ("killed", "timeout"):
            counts[state] += 1
            continue
        reason = equivalence(known, target.module, mutant.line, mutant.mutant)
        final = "equivalent" if reason else state
        counts["equivalent" if reason else ("not_reached" if state == "not reached" else "survived")] += 1
        not_killed.append({"line_number": mutant.line_number, "line": mutant.line, "mutant": mutant.mutant,
                           "state": final, "reason": reason})
    scope = "all but raise statements, log calls" + (" and the fixture generator" if fixture_lines(source) else "")
    return {"module": target.module, "what": target.what, "scope": scope,
            "mutants": len(mutants), **counts, "tests_reaching": len(set().union(*[t for t in reached_by.values()
                                                                                  if t])),
            "test_files": files, "fingerprint": print_,
            "seconds": round(time.monotonic() - start, 1),
            "mutant_seconds": round(sum(o["seconds"] for o in outcomes.values()), 1), "not_killed": not_killed}


def timeout_measured(worker, rel: str, mutant: Mutant, tests: list[str], budget: float) -> str:
    """The state of a mutant that ran past its budget, against its tests' measured time: the budget comes from the
    coverage pass's per-test durations, which leave out collecting the test files and the package's first imports
    in a fresh child (a run of 14 audit tests with 1.2 s of durations takes 19 s). The same tests run on the
    unmutated tree, timed; when three times that plus 30 s exceeds the budget, the mutant runs again under it."""
    began = time.monotonic()
    code = worker.pytest([*PYTEST, "-x", *tests], max(10 * budget, 600), log=str(worker.root / "unmutated.log"))
    unmutated = time.monotonic() - began
    if code != 0:
        raise RuntimeError(f"{rel}:{mutant.line_number}: the unmutated tests fail (exit {code}) after a timed-out "
                           f"mutant; see {worker.root / 'unmutated.log'}")
    limit = 3 * unmutated + 30
    if limit <= budget:
        return "timeout"
    return classify(worker.run_mutant(rel, mutant, tests, limit))


def check_unmutated(worker: Worker, module: str, tests: set[str], durations: dict[str, float]) -> None:
    """The tests that reach ``module``, run once more on the unmutated tree after its mutants: a mutant can leave
    a trace outside its worker's copy (one of records/ledger.py wrote /ledger.jsonl, which then made a ledger test
    fail for every later mutant). If they fail now, the target's kills cannot be trusted: stop, naming the log."""
    if not tests:
        return
    ordered = sorted(tests, key=lambda t: (durations.get(t, 0.0), t))
    budget = 3 * sum(durations.get(t, 1.0) for t in ordered) + 60
    log = worker.root / "unmutated.log"
    code = worker.pytest([*PYTEST, *without_parameters(ordered)], budget, log=str(log))
    if code != 0:
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        raise RuntimeError(f"{module}: the unmutated tests that reach it fail after its mutants ran (exit {code}): "
                           f"a mutant left something behind outside its copy:\n{tail}")


def equivalents() -> dict[tuple[str, str, str], str]:
    """(module, original line, mutated line) -> reason, from benchmarks/mutation_equivalent.yaml; a rule entry
    (``rule:`` naming one of RULES, with its reason) is keyed ("*", rule, "*")."""
    if not EQUIVALENT.exists():
        return {}
    entries = yaml.safe_load(EQUIVALENT.read_text(encoding="utf-8")) or []
    table = {}
    first: dict[tuple[str, str, str], int] = {}
    for number, entry in enumerate(entries):
        if "rule" in entry:
            if entry["rule"] not in RULES:
                raise SystemExit(f"{EQUIVALENT}: entry {number} names rule {entry['rule']!r}; the engine's rules "
                                 f"are {', '.join(sorted(RULES))}")
            if not str(entry.get("reason", "")).strip():
                raise SystemExit(f"{EQUIVALENT}: entry {number} (rule {entry['rule']}) gives no reason")
            table[("*", entry["rule"], "*")] = entry["reason"]
            continue
        missing = {"module", "line", "mutant", "reason"} - set(entry)
        if missing:
            raise SystemExit(f"{EQUIVALENT}: entry {number} lacks {', '.join(sorted(missing))}")
        if not str(entry["reason"]).strip():
            raise SystemExit(f"{EQUIVALENT}: entry {number} ({entry['module']}) gives no reason")
        key = (entry["module"], entry["line"].strip(), entry["mutant"].strip())
        if key in first:  # one reason per mutant: a second would silently replace the first a reviewer read
            raise SystemExit(f"{EQUIVALENT}: entry {number} ({entry['module']}: {key[2][:60]}) repeats entry "
                             f"{first[key]}; keep one reason")
        first[key] = number
        table[key] = entry["reason"]
    return table


def equivalence(known: dict[tuple[str, str, str], str], module: str, line: str, mutant: str) -> str | None:
    """Why a surviving mutant of ``module`` is equivalent: its own entry's reason, or that of a rule of the
    equivalents file that holds for it; None when neither does."""
    reason = known.get((module, line, mutant))
    if reason:
        return reason
    for (kind, rule, _), text in known.items():
        if kind == "*" and RULES[rule](module, line, mutant):
            return f"{rule}: {text}"
    return None


_NOT_A_PLAIN_ANNOTATION = ("ClassVar", "InitVar", "KW_ONLY")


def _statements(text: str) -> list[ast.AST] | None:
    """``text`` (one stripped source line, its comment allowed) parsed as it stands, as a header given a body, or
    as a parameter of a ``def``; None when none of these parses."""
    for wrapped in (text, text + " ...", f"def _({text.rstrip(',')}): ..."):
        try:
            return ast.parse(wrapped).body
        except SyntaxError:
            continue
    return None


def _without_annotations(body: list[ast.AST]) -> str | None:
    """The dump of ``body`` with every annotation blanked; None when an annotation is one dataclasses read
    (ClassVar, InitVar, KW_ONLY) rather than keep as text."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        for name in ("annotation", "returns"):
            value = getattr(node, name, None)
            if value is None:
                continue
            if any(word in ast.unparse(value) for word in _NOT_A_PLAIN_ANNOTATION):
                return None
            setattr(node, name, ast.Constant(None) if isinstance(node, ast.AnnAssign) else None)
    return ast.dump(ast.Module(body=body, type_ignores=[]))


@functools.lru_cache(maxsize=None)
def _annotations_stay_text(path: Path) -> bool:
    """Whether the module at ``path`` starts with ``from __future__ import annotations`` (read once per table,
    not once per survivor)."""
    return any(isinstance(node, ast.ImportFrom) and node.module == "__future__" and
               any(alias.name == "annotations" for alias in node.names)
               for node in ast.parse(path.read_text(encoding="utf-8")).body)


def annotation_only(module: str, line: str, mutant: str) -> bool:
    """Does ``mutant`` change nothing but annotations of a module that keeps them as text? Under ``from __future__
    import annotations`` (PEP 563) an annotation is a string that runs only if something evaluates it, and nothing
    in sentrepro does (tests/test_mutation_engine.py checks the package for it)."""
    if not _annotations_stay_text(ROOT / PACKAGE / module):
        return False
    before, after = _statements(line), _statements(mutant)
    if before is None or after is None:
        return False
    stripped = _without_annotations(before), _without_annotations(after)
    return None not in stripped and stripped[0] == stripped[1]


RULES = {"annotation only": annotation_only}


def load_results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}


def write_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, RESULTS)  # atomic: a killed run leaves the previous results whole


def score(killed: int, mutants: int, equivalent: int) -> str:
    judged = mutants - equivalent
    return f"{100 * killed / judged:.1f} %" if judged else "–"


def goal(module: str) -> float:
    """The share of non-equivalent mutants a target must kill (issue 47): all of them for the verdict statistics
    and the STS and transfer scoring, 95 % elsewhere."""
    return 1.0 if module in FULL_GOAL else 0.95


FULL_GOAL = ("verdicts/stats.py", "evaluation/sts.py", "evaluation/sts_suite.py", "evaluation/transfer.py")


def head_commit() -> str:
    """The checkout's commit (short), with "+edits" when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    edits = git("status", "--porcelain", "-uno", "--", ".", f":!{RESULTS.relative_to(ROOT)}")
    return git("rev-parse", "--short", "HEAD") + ("+edits" if edits else "")


def tests_added_since(commit: str) -> list[str] | None:
    """Test files of the checkout that the commit ``commit`` (a record's, "+edits" allowed) did not have: each may
    reach the target, which only a run can tell. None when the commit is unknown here."""
    name = commit.split("+", 1)[0]
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", name, "tests/"], cwd=ROOT, capture_output=True,
                            text=True)
    if not name or listed.returncode != 0:
        return None
    then = set(listed.stdout.split())
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                  if str(p.relative_to(ROOT)) not in then)


def freshness(current: bool, added: list[str] | None) -> str:
    """The "run at" column's mark: stale (module, reaching tests or engine changed), or test files added since."""
    if not current:
        return " (stale)"
    if added is None:
        return " (commit unknown)"
    return f" ({len(added)} test files added since)" if added else ""


def table(results: dict) -> str:
    """The BENCHMARKS.md table: one row per target in TARGETS order (a target never run says so), survivors
    classified against the equivalents file as it is now (a reason added after the run counts). A row whose
    fingerprint no longer matches the checkout (its module, its tests or the engine changed since) is marked
    stale: its figures are those of the commit it names, not of this tree."""
    rows = ["| module | what it decides | tests reaching it | mutants | killed (of which timed out) | equivalent | "
            "survived (of which no unit test reaches) | killed of non-equivalent | goal | time (s) | run at |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    known = equivalents()
    total_seconds = 0.0
    for target in TARGETS:
        record = results.get(target.module)
        if record is None or "not_reached" not in record:
            rows.append(f"| `{target.module}` | {target.what} | not run | | | | | | | | |")
            continue
        open_ = [m for m in record["not_killed"] if not equivalence(known, target.module, m["line"], m["mutant"])]
        equivalent = len(record["not_killed"]) - len(open_)
        unreached = sum(m["state"] == "not reached" for m in open_)
        killed = record["killed"] + record["timeout"]
        total_seconds += record["seconds"]
        judged = record["mutants"] - equivalent
        met = "met" if judged == 0 or killed >= goal(target.module) * judged else "not met"
        current = record.get("fingerprint") == fingerprint(target.module, record.get("test_files", []))
        added = tests_added_since(record.get("commit", ""))
        what = target.what + ("; its fixture generator out of scope" if "fixture" in record.get("scope", "") else "")
        rows.append(f"| `{target.module}` | {what} | {record['tests_reaching']} | {record['mutants']} | "
                    f"{killed} ({record['timeout']}) | {equivalent} | {len(open_)} ({unreached}) | "
                    f"{score(killed, record['mutants'], equivalent)} | {goal(target.module):.0%} {met} | "
                    f"{record['seconds']:.0f} | {record.get('commit', '?')}{freshness(current, added)} |")
    rows.append(f"\nTargets' time together: {total_seconds / 60:.0f} min (the coverage pass not included).")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help=f"targets to run (default: all); known: {', '.join(BY_MODULE)}")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel workers (default: cores)")
    parser.add_argument("--force", action="store_true", help="run targets whose fingerprint is unchanged, too")
    parser.add_argument("--table", action="store_true", help="print the table from the results file and exit")
    parser.add_argument("--tests", nargs="+", type=Path, default=None,
                        help="test files of the coverage pass (default: every tests/test_*.py; fewer files reach "
                             "less, so such a run is not recorded in the results file)")
    args = parser.parse_args(argv)
    if args.table:
        print(table(load_results()))
        return 0
    unknown = [m for m in args.modules if m not in BY_MODULE]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (known: {', '.join(BY_MODULE)})")
    chosen = [BY_MODULE[m] for m in args.modules] or list(TARGETS)
    recorded = load_results()
    todo = list(chosen)  # which are unchanged is known after the coverage pass: a new test file may reach a module
    status = 0
    commit = head_commit()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sentrepro-mutation-") as tmp:
        scratch = Path(tmp)
        workers = []
        try:
            for k in range(max(1, args.workers)):
                workers.append(Worker(scratch / f"worker{k}"))
            print(f"[mutation] coverage pass over the unit tiers ({len(workers)} workers)", flush=True)
            tests = [(ROOT / p).resolve() for p in args.tests] if args.tests else sorted(
                (ROOT / "tests").glob("test_*.py"))
            reach, durations = coverage_pass(workers, [t.module for t in todo], scratch, tests)
            print(f"[mutation] coverage pass: {time.monotonic() - began:.0f} s, {len(durations)} tests", flush=True)
            for target in todo:
                if not args.force and args.tests is None and recorded.get(target.module, {}).get("fingerprint") == \
                        reach_fingerprint(target, reach[target.module])[1]:
                    print(f"[mutation] {target.module}: unchanged since its recorded run (--force runs it)")
                    results = load_results()  # its figures hold for this tree: say so, so the table can tell
                    results[target.module]["commit"] = commit
                    write_results(results)
                    continue
                print(f"[mutation] {target.module}: {target.what}", flush=True)
                record = {**run_target(target, workers, reach[target.module], durations), "commit": commit}
                if args.tests is None:
                    results = load_results()
                    results[target.module] = record
                    write_results(results)
                print(f"[mutation] {target.module}: {record['mutants']} mutants, {record['killed']} killed, "
                      f"{record['timeout']} timed out, {record['equivalent']} equivalent, {record['survived']} "
                      f"survived, {record['not_reached']} not reached, {record['seconds']:.0f} s", flush=True)
                for mutant in record["not_killed"]:
                    if mutant["state"] != "equivalent":
                        status = 1
                        print(f"  {mutant['state']}: line {mutant['line_number']}: {mutant['line']}  ->  "
                              f"{mutant['mutant']}")
        finally:
            for worker in workers:
                worker.close()
    print(f"[mutation] whole run: {time.monotonic() - began:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
