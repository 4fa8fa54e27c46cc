"""Shared fixtures: where the real benchmark copies live, tiny local models."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.workflow_helpers import fixed_thread_env

# Fixed thread counts for every test process and the jobs it starts (set before anything imports torch, which
# reads them once): a float a test compares must not depend on how many cores the machine has or how loaded it is.
os.environ.update(fixed_thread_env())
# The code-fingerprint cache of this test session (codedeps; keyed by content, so sharing would be safe, but a
# test run should neither depend on nor fill the user's ~/.cache).
os.environ.setdefault("SENTREPRO_FP_CACHE", tempfile.mkdtemp(prefix="sentrepro-fp-cache-"))


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Collecting imports tests/slurm's modules, which import Snakemake and so the SLURM executor plugin, whose
    ``scontrol show config`` would wait ~9 s here (see :func:`no_slurm_controller_lookup`): collect with
    ``SLURM_CONF`` naming an empty file, then put it back. No SLURM job or daemon is started while collecting."""
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = os.devnull
    try:
        return (yield)
    finally:
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved


@pytest.hookimpl(optionalhook=True)  # xdist's hook: no error where xdist is absent or disabled (-p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    """Units of work for `pytest -n 2 --dist loadfile` (pytest-xdist; the Makefile's test targets): each test file
    runs whole on one worker, so a module's fixtures (a finished workflow run) are built once, and the SLURM tests
    (one cluster per machine: tests/slurm/*, and tests/test_slurm_cleanup.py, which looks for its jobs'
    processes) form one unit on one worker. (xdist's own `xdist_group` marks do not take effect with pytest 9.2,
    which no longer keeps a node's id in the attribute xdist 3.8 rewrites.) Other `--dist` modes are xdist's."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileOrSlurmScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            # Longest first, so the last units to finish are short ones and the workers end together: the
            # SLURM unit (mostly waiting on its jobs, while the other worker has the CPU), then the files that
            # run workflows, then the rest; within a class, the longest in the last run first (pytest's cache;
            # without one, xdist's own order, most tests first).
            if not self.ordered:
                units = dict(self.workqueue)
                self.workqueue.clear()
                for unit in unit_order(list(units), config.rootpath, last_unit_seconds(config)):
                    self.workqueue[unit] = units[unit]
                self.ordered = True
            super()._assign_work_unit(node)

    return FileOrSlurmScheduling(config, log)


# A work unit's cost class, from its file's module-level marks: lower runs first.
COST_CLASSES = ("slurm", "slow", "heavy")


def unit_order(units: list[str], rootpath: Path, last_seconds: dict[str, float]) -> list[str]:
    """``units`` in the order to hand them out: by cost class, then longest in the last run first (stable)."""
    return sorted(units, key=lambda unit: (unit_cost_class(unit, rootpath), -last_seconds.get(unit, 0.0)))


def unit_cost_class(unit: str, rootpath: Path) -> int:
    """0 for the SLURM unit, 1 for a file marked slow (workflow runs), 2 heavy, 3 the rest (unit tests)."""
    if unit == "slurm":
        return 0
    marks = module_marks(rootpath / unit)
    return next((rank for rank, mark in enumerate(COST_CLASSES) if mark in marks), len(COST_CLASSES))


# Seconds each work unit took in the last run that ran it (pytest's cache, .pytest_cache/): only the order in
# which units are handed out depends on it.
UNIT_SECONDS_KEY = "sentrepro/unit-seconds"
_unit_seconds: dict[str, float] = {}


def last_unit_seconds(config) -> dict[str, float]:
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    return dict(cache.get(UNIT_SECONDS_KEY, {})) if cache is not None else {}


def pytest_runtest_logreport(report) -> None:
    """Add up each unit's set-up, call and tear-down time (in the xdist controller: every worker's reports)."""
    unit = work_unit(report.nodeid)
    _unit_seconds[unit] = _unit_seconds.get(unit, 0.0) + report.duration


def pytest_sessionfinish(session) -> None:
    """Keep this run's unit times for the next run's order (not from an xdist worker: the controller keeps all)."""
    cache = getattr(session.config, "cache", None)
    if cache is not None and _unit_seconds and not hasattr(session.config, "workerinput"):
        cache.set(UNIT_SECONDS_KEY, {**last_unit_seconds(session.config),
                                     **{unit: round(seconds, 2) for unit, seconds in _unit_seconds.items()}})


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: "slurm" for the SLURM tests, else its file."""
    path = Path(nodeid.split("::", 1)[0])
    return "slurm" if "slurm" in path.parent.parts or path.name == "test_slurm_cleanup.py" else path.as_posix()


def pytest_ignore_collect(collection_path: Path, config):
    """Skip importing a test file whose every test the ``-m`` expression deselects: one whose module-level
    ``pytestmark`` already makes the expression false whatever other marks its tests carry (`make test-fast`'s
    ``-m "not slow and not slurm and not heavy"`` and the workflow, SLURM and perf-parity files). Importing
    them only to deselect every test cost each xdist worker seconds (Snakemake's CLI, torch._dynamo via
    benchmarks.harness, assertion rewriting of long files). The file's marks are read from its source; nothing
    is skipped that the expression could select, and without ``-m`` nothing is skipped."""
    markexpr = config.option.markexpr
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    marks = module_marks(collection_path)
    if marks and never_selected(markexpr, marks):
        return True
    return None


def module_marks(path: Path) -> frozenset[str]:
    """Names of the plain marks of a test file's top-level ``pytestmark = pytest.mark.NAME`` (or a list/tuple of
    them); marks with arguments are left out (an expression could ask for their arguments)."""
    import ast

    source = path.read_text(encoding="utf-8")
    if "pytestmark" not in source:
        return frozenset()
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for value in values:
                if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute)
                        and value.value.attr == "mark" and isinstance(value.value.value, ast.Name)
                        and value.value.value.id == "pytest"):
                    names.add(value.attr)
    return frozenset(names)


def never_selected(markexpr: str, marks: frozenset[str], most_free: int = 8) -> bool:
    """Whether the ``-m`` expression is false for every test that carries ``marks``, whatever further marks
    (with whatever arguments) it has: evaluated under every truth assignment of the other names it asks about
    (found as it asks), with ``marks`` present. Too many other names: answers False (collect the file)."""
    import itertools

    from _pytest.mark.expression import Expression

    expr = Expression.compile(markexpr)
    free: list[tuple] = []
    while True:
        known = list(free)
        if len(known) > most_free:
            return False
        for values in itertools.product((False, True), repeat=len(known)):
            assignment = dict(zip(known, values))

            def matcher(name: str, /, **kwargs) -> bool:
                if not kwargs and name in marks:
                    return True
                key = (name, tuple(sorted(kwargs.items())))
                if key not in free:
                    free.append(key)
                return assignment.get(key, False)

            if expr.evaluate(matcher):
                return False
        if len(free) == len(known):
            return True


def pytest_sessionstart(session):
    """torch imported before this file (by a plugin) would have read its threads already: set them again."""
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


REPO = Path(__file__).resolve().parents[1]
SLURM_TESTS = Path(__file__).resolve().parent / "slurm"


@pytest.fixture(scope="module", autouse=True)
def no_slurm_controller_lookup(request):
    """Every Snakemake start imports the SLURM executor plugin, which asks ``scontrol show config`` for
    MinJobAge; on a machine with a slurm.conf and no controller running (this one, after tests/slurm stopped
    its cluster) that waits ~9 s per start. Outside tests/slurm no test runs anything on SLURM, so there
    ``SLURM_CONF`` names an empty file and scontrol fails at once (the plugin then leaves MinJobAge unknown,
    which only words its --help). Module-scoped and autouse, so it is in place before the module's own
    fixtures start workflows; tests/slurm keep the real configuration."""
    if SLURM_TESTS in Path(str(request.path)).resolve().parents:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", os.devnull)
        yield


SHARED_DATA = Path(os.environ.get("SENTREPRO_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark files (see ../shared/data/README.md)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real benchmark data not found at {SHARED_DATA}; set SENTREPRO_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def wiki_sentences(shared_data) -> list[str]:
    """Real Wikipedia sentences (SimCSE's wiki1m, first 1.28 MB; the cut last line dropped)."""
    text = (shared_data / "wiki" / "wiki1m_for_simcse.first1280000bytes.txt").read_text(encoding="utf-8")
    return text.split("\n")[:-1]


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, wiki_sentences) -> dict[str, Path]:
    """Directories of tiny random BERT / RoBERTa / DeBERTa backbones (see tests/tiny_models.py)."""
    from tests.tiny_models import build_tiny_bert, build_tiny_deberta, build_tiny_roberta

    root = tmp_path_factory.mktemp("tiny-models")
    sample = wiki_sentences[:3000]
    return {
        "bert": build_tiny_bert(root / "tiny-bert"),
        "roberta": build_tiny_roberta(root / "tiny-roberta", sample),
        "deberta": build_tiny_deberta(root / "tiny-deberta", sample),
    }
