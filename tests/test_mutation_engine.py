"""The mutation engine's own pieces (benchmarks/mutation.py): which mutants it makes, which tests it runs for each,
how it reads a run's exit status, and what it refuses. No mutant is run here (that is `make mutation`)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "benchmarks" / "mutation.py"


@pytest.fixture(scope="module")
def engine():
    spec = importlib.util.spec_from_file_location("mutation_engine", ENGINE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SOURCE = textwrap.dedent('''\
    """A toy module."""

    LIMIT = 3


    def clip(value, low=0):
        if value > LIMIT and \\
                value != 99:
            return LIMIT
        if value < low:
            raise ValueError(
                "value below " + "the floor")
        total = (value +
                 low)
        return total
''')


def test_every_mutant_differs_in_one_place_outside_raise_statements(engine):
    mutants = engine.generate_mutants("toy.py", SOURCE)
    raising = engine.raise_lines(SOURCE)
    assert raising == {11, 12}
    assert mutants and all(m.line_number not in raising for m in mutants)
    assert len({m.key for m in mutants}) == len(mutants)
    lines = SOURCE.splitlines()
    for mutant in mutants:
        changed = [n for n, (a, b) in enumerate(zip(lines, mutant.source.splitlines()), 1) if a != b]
        assert changed and changed[0] == mutant.line_number, mutant
        assert mutant.line == lines[mutant.line_number - 1].strip()
    # the comparison of line 7 is among them, with its mutated text as the equivalents file names it; so is the
    # `and` of line 7, which mutmut places on line 8 (where its node ends)
    assert any(m.line_number == 7 and m.mutant == "if value >= LIMIT and \\" for m in mutants)
    assert any(m.line_number == 7 and m.mutant == "if value > LIMIT or \\" for m in mutants)
    assert not any(m.line_number == 8 and "or" in m.mutant for m in mutants)


def test_a_continuation_line_maps_to_the_line_coverage_records(engine):
    heads = engine.statement_heads(SOURCE)
    assert heads[8] == 7  # the `if` header's second line
    assert heads[9] == 9
    assert heads[14] == 13  # an assignment over two lines
    assert heads[3] == 3


def test_a_mutant_runs_the_tests_that_reach_its_line_or_none(engine):
    heads = engine.statement_heads(SOURCE)
    reach = engine.Reach({3: {""}, 6: {""}, 7: {"t.py::a", "t.py::b"}, 9: {"t.py::a"}, 13: {"t.py::b"}},
                         missing={10, 11}, heads=heads)
    assert reach.tests_for(8) == {"t.py::a", "t.py::b"}
    assert reach.tests_for(9) == {"t.py::a"}
    assert reach.tests_for(14) == {"t.py::b"}
    assert reach.tests_for(10) is None  # a statement no test runs: not reached, no run
    # a line run only on import (a constant, a def) is reached by every test that reaches the module
    assert reach.tests_for(3) == {"t.py::a", "t.py::b"}
    assert reach.tests_for(6) == {"t.py::a", "t.py::b"}
    assert engine.Reach({}, missing={3}, heads=heads).tests_for(3) is None


def test_exit_status_reads(engine):
    assert engine.classify(0) == "survived"
    assert engine.classify(1) == "killed"
    assert engine.classify(2) == "killed"  # a test file no longer imports
    assert engine.classify(-14) == "timeout"  # the fork server's alarm
    assert engine.classify(-11) == "killed"
    for bad in (4, 5):  # a usage error or no test collected is the engine's fault: never a kill
        with pytest.raises(RuntimeError, match="engine"):
            engine.classify(bad)


def test_a_test_id_a_mutant_took_away_is_run_by_its_function(engine, tmp_path):
    # a mutant of a module that a test's parametrisation reads changes the ids: the unmutated run's
    # `t[c]` is "not found" (exit 4), and the function's id runs it under whatever parameters are left
    (tmp_path / "test_p.py").write_text("import pytest\n\n@pytest.mark.parametrize('n', ['a', 'b'])\n"
                                        "def test_t(n):\n    assert n\n\ndef test_u():\n    pass\n")
    ids = ["test_p.py::test_t[c]", "test_p.py::test_u", "test_p.py::test_t[a]"]
    assert engine.without_parameters(ids) == ["test_p.py::test_t", "test_p.py::test_u"]
    probe = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ids[:2]],
                           cwd=tmp_path, capture_output=True, text=True)
    assert probe.returncode == 4 and "ERROR: not found:" in probe.stdout + probe.stderr
    probe = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *engine.without_parameters(ids)], cwd=tmp_path, capture_output=True, text=True)
    assert probe.returncode == 0 and "3 passed" in probe.stdout


def test_an_equivalent_without_a_reason_is_refused(engine, tmp_path, monkeypatch):
    listed = tmp_path / "equivalent.yaml"
    listed.write_text("- {module: m.py, line: 'a = 1', mutant: 'a = 2', reason: ''}\n", encoding="utf-8")
    monkeypatch.setattr(engine, "EQUIVALENT", listed)
    with pytest.raises(SystemExit, match="gives no reason"):
        engine.equivalents()
    listed.write_text("- {module: m.py, line: 'a = 1', mutant: 'a = 2'}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="lacks reason"):
        engine.equivalents()


def test_a_mutant_listed_twice_as_equivalent_is_refused(engine, tmp_path, monkeypatch):
    listed = tmp_path / "equivalent.yaml"
    listed.write_text("- {module: m.py, line: 'a = 1', mutant: 'a = 2', reason: 'never read'}\n"
                      "- {module: m.py, line: 'a = 1', mutant: 'a = 3', reason: 'never read'}\n"
                      "- {module: m.py, line: ' a = 1', mutant: 'a = 2 ', reason: 'not read'}\n", encoding="utf-8")
    monkeypatch.setattr(engine, "EQUIVALENT", listed)
    with pytest.raises(SystemExit, match="entry 2 .*repeats entry 0"):
        engine.equivalents()


def test_every_equivalent_listed_names_a_target_and_a_line_of_it(engine):
    """An entry whose line is gone from its module can no longer be checked by a reviewer: it must go."""
    for (module, line, _), _reason in engine.equivalents().items():
        if module == "*":
            assert line in engine.RULES
            continue
        assert module in engine.BY_MODULE, module
        source = (engine.ROOT / engine.PACKAGE / module).read_text(encoding="utf-8")
        assert line in {text.strip() for text in source.splitlines()}, (module, line)


@pytest.mark.heavy  # makes the mutants of each listed line: ~20 s
def test_every_equivalent_listed_is_a_mutant_the_engine_makes(engine):
    """An entry whose mutant the engine no longer makes (its line kept, the edit gone, or moved out of scope) is
    a reason for nothing."""
    listed: dict[str, set[tuple[str, str]]] = {}
    for (module, line, mutant), _reason in engine.equivalents().items():
        if module != "*":
            listed.setdefault(module, set()).add((line, mutant))
    for module, entries in listed.items():
        source = (engine.ROOT / engine.PACKAGE / module).read_text(encoding="utf-8")
        numbers = {n for n, text in enumerate(source.splitlines(), 1) if text.strip() in {line for line, _ in entries}}
        made = engine.generate_mutants(str(engine.PACKAGE / module), source, only=numbers)
        assert entries <= {(m.line, m.mutant) for m in made}, (module, entries - {(m.line, m.mutant) for m in made})


@pytest.mark.parametrize("module", [None, "evaluation/sts.py", "tables/aggregate.py"])
def test_mutants_made_for_some_lines_are_those_of_every_mutant_on_them(engine, module):
    rel = "toy.py" if module is None else str(engine.PACKAGE / module)
    source = SOURCE if module is None else (engine.ROOT / rel).read_text(encoding="utf-8")
    every = engine.generate_mutants(rel, source)
    on = sorted({m.line_number for m in every})
    for numbers in [{n} for n in on] + [set(on[::2]), set(on[1::3])]:
        assert engine.generate_mutants(rel, source, only=numbers) == [m for m in every if m.line_number in numbers]


def test_a_target_fingerprint_follows_its_module_and_its_tests(engine, tmp_path, monkeypatch):
    (tmp_path / "src" / "sentrepro").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    module = tmp_path / "src" / "sentrepro" / "m.py"
    test = tmp_path / "tests" / "test_m.py"
    module.write_text("a = 1\n")
    test.write_text("def test(): pass\n")
    (tmp_path / "tests" / "conftest.py").write_text("")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    monkeypatch.setattr(engine, "engine_source", lambda: "")
    first = engine.fingerprint("m.py", ["tests/test_m.py"])
    assert engine.fingerprint("m.py", ["tests/test_m.py"]) == first
    test.write_text("def test(): assert 1\n")
    second = engine.fingerprint("m.py", ["tests/test_m.py"])
    module.write_text("a = 2\n")
    third = engine.fingerprint("m.py", ["tests/test_m.py"])
    monkeypatch.setattr(engine, "engine_source", lambda: "another engine")
    assert len({first, second, third, engine.fingerprint("m.py", ["tests/test_m.py"])}) == 4


def test_the_engine_fingerprint_leaves_out_the_target_list(engine, monkeypatch):
    before = engine.engine_source()
    monkeypatch.setattr(engine, "TARGETS", engine.TARGETS[:1])
    assert engine.engine_source() == before
    assert "def classify" in before and "def serve" in before


def test_the_table_scores_each_row_against_its_goal_and_marks_a_stale_one(engine, tmp_path, monkeypatch):
    (tmp_path / "src" / "sentrepro").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "sentrepro" / "m.py").write_text("a = 1\n")
    (tmp_path / "tests" / "conftest.py").write_text("")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    monkeypatch.setattr(engine, "engine_source", lambda: "")
    monkeypatch.setattr(engine, "EQUIVALENT", tmp_path / "none.yaml")
    monkeypatch.setattr(engine, "TARGETS", (engine.Target("m.py", "m"), engine.Target("evaluation/sts.py", "sts")))
    monkeypatch.setattr(engine, "tests_added_since", lambda commit: [])
    survivor = {"line_number": 1, "line": "a = 1", "mutant": "a = 2", "state": "survived", "reason": None}
    record = {"mutants": 20, "killed": 19, "timeout": 0, "not_reached": 0, "tests_reaching": 3, "seconds": 1.0,
              "not_killed": [survivor], "test_files": [], "commit": "abc1234"}
    results = {"m.py": {**record, "fingerprint": engine.fingerprint("m.py", [])},
               "evaluation/sts.py": {**record, "fingerprint": "an older tree's"}}
    rows = engine.table(results).splitlines()
    assert rows[2].endswith("| 95.0 % | 95% met | 1 | abc1234 |")  # 19 of 20 meets 95 %, and is current
    assert rows[3].endswith("| 95.0 % | 100% not met | 1 | abc1234 (stale) |")  # the STS scoring's goal is all


def test_a_target_whose_unmutated_tests_fail_after_its_mutants_is_refused(engine, tmp_path):
    class FakeWorker:
        root = tmp_path
        asked: list = []

        def __init__(self, code):
            self.code = code

        def pytest(self, args, limit_s, log):
            self.asked.append([a for a in args if "::" in a])
            Path(log).write_text("FAILED tests/test_l.py::test_ledger\n")
            return self.code

    tests = {"tests/test_l.py::test_ledger[a]", "tests/test_m.py::test_m"}
    engine.check_unmutated(FakeWorker(0), "records/ledger.py", tests, {})
    assert sorted(FakeWorker.asked[0]) == ["tests/test_l.py::test_ledger", "tests/test_m.py::test_m"]
    with pytest.raises(RuntimeError, match="(?s)records/ledger.py: the unmutated tests .*FAILED tests/test_l"):
        engine.check_unmutated(FakeWorker(1), "records/ledger.py", tests, {})


def test_a_new_test_file_that_reaches_a_module_changes_its_fingerprint(engine, tmp_path, monkeypatch):
    (tmp_path / "src" / "sentrepro").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "src" / "sentrepro" / "m.py").write_text("a = 1\n")
    for name in ("conftest.py", "test_a.py", "test_b.py"):
        (tmp_path / "tests" / name).write_text("def test(): pass\n")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    monkeypatch.setattr(engine, "engine_source", lambda: "")
    target = engine.Target("m.py", "m")
    heads = engine.statement_heads("a = 1\n")
    before = engine.reach_fingerprint(target, engine.Reach({1: {"tests/test_a.py::test"}}, set(), heads))
    after = engine.reach_fingerprint(target, engine.Reach({1: {"tests/test_a.py::test", "tests/test_b.py::test"}},
                                                          set(), heads))
    assert before[0] == ["tests/test_a.py"] and after[0] == ["tests/test_a.py", "tests/test_b.py"]
    assert before[1] != after[1]
    # the recorded list alone (what the table's stale mark uses) cannot see the new file
    assert engine.fingerprint("m.py", before[0]) == before[1]


def test_test_files_added_since_a_rows_commit_are_named(engine, tmp_path, monkeypatch):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "tests"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    (tmp_path / "tests" / "test_b.py").write_text("")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    assert engine.tests_added_since(commit + "+edits") == ["tests/test_b.py"]
    assert engine.tests_added_since("0000000") is None
    assert engine.freshness(True, ["tests/test_b.py"]) == " (1 test files added since)"
    assert engine.freshness(True, []) == "" and engine.freshness(False, []) == " (stale)"


def test_a_line_run_on_import_reaches_every_test_even_when_one_test_imported_the_module(engine):
    source = textwrap.dedent('''\
        import os
        YEARS = {"a": 1}


        def f(x):
            return x + 1


        class C:
            k = 2

            def g(self):
                return 3
        ''')
    assert engine.import_time_statements(source) == {1, 2, 5, 9, 10, 12}
    heads = engine.statement_heads(source)
    # the module imported lazily inside t.py::lazy: coverage gives its import-time lines to that test alone
    by_line = {1: {"t.py::lazy"}, 2: {"t.py::lazy"}, 5: {"t.py::lazy"}, 6: {"t.py::a", "t.py::lazy"},
               13: {"t.py::b"}}
    reach = engine.Reach(by_line, set(), heads, engine.import_time_statements(source))
    assert reach.tests_for(2) == {"t.py::lazy", "t.py::a", "t.py::b"}
    assert reach.tests_for(6) == {"t.py::a", "t.py::lazy"}  # a function's body: the tests that ran it


def test_a_line_run_on_import_reaches_the_other_tests_of_the_files_that_use_the_module(engine):
    """A test may read a module's constants through a registry and run none of its lines (data/benchmarks'
    expected_classes() over every unit's CLASSES); a test beside it that parses with the module makes it a user."""
    source = "CLASSES = {'MR': 2}\n\n\ndef parse(x):\n    return x\n"
    heads = engine.statement_heads(source)
    ran = ["tests/test_p.py::test_parse", "tests/test_p.py::test_classes", "tests/test_q.py::test_other"]
    reach = engine.Reach(
        {5: {"tests/test_p.py::test_parse"}}, set(), heads, engine.import_time_statements(source),
        {"tests/test_p.py": set(ran[:2]), "tests/test_q.py": {ran[2]}})
    assert reach.tests_for(1) == {"tests/test_p.py::test_parse", "tests/test_p.py::test_classes"}
    assert reach.tests_for(5) == {"tests/test_p.py::test_parse"}      # a function's body: the test that ran it
    assert reach.users() == set(ran[:2])


def test_a_mutant_of_nothing_but_an_annotation_is_equivalent_only_where_annotations_stay_text(engine, tmp_path,
                                                                                               monkeypatch):
    package = tmp_path / "src" / "sentrepro"
    package.mkdir(parents=True)
    (package / "lazy.py").write_text("from __future__ import annotations\n", encoding="utf-8")
    (package / "eager.py").write_text("import os\n", encoding="utf-8")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    only = engine.annotation_only
    assert only("lazy.py", "kind: str | None = None   # a comment", "kind: str & None = None   # a comment")
    assert only("lazy.py", "def f(a: int | None, b=2) -> str | None:", "def f(a: int & None, b=2) -> str | None:")
    assert only("lazy.py", "def f(a, b=2) -> str | None:", "def f(a, b=2) -> str & None:")
    assert only("lazy.py", "value: float | None = None,", "value: float & None = None,")  # a parameter of a def
    assert not only("lazy.py", "kind: str | None = None", "kind: str | None = ''")  # the default runs
    assert not only("lazy.py", "def f(a: int | None, b=2):", "def f(a: int | None, b=3):")
    assert not only("lazy.py", "seen: ClassVar[int | None] = 0", "seen: ClassVar[int & None] = 0")
    assert not only("lazy.py", "kind: str | None = None", "(line removed)")
    assert not only("eager.py", "kind: str | None = None", "kind: str & None = None")  # evaluated on import
    listed = tmp_path / "equivalent.yaml"
    listed.write_text("- {rule: annotation only, reason: kept as text}\n", encoding="utf-8")
    monkeypatch.setattr(engine, "EQUIVALENT", listed)
    known = engine.equivalents()
    assert engine.equivalence(known, "lazy.py", "kind: str | None = None", "kind: str & None = None") == \
        "annotation only: kept as text"
    assert engine.equivalence(known, "lazy.py", "kind: str | None = None", "kind: str | None = 1") is None
    listed.write_text("- {rule: no such rule, reason: x}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="names rule 'no such rule'"):
        engine.equivalents()


def test_nothing_in_the_package_evaluates_an_annotation(engine):
    """The premise of the "annotation only" rule: no target module evaluates its annotations, and nothing in the
    package reads them."""
    readers = ("get_type_hints", "get_annotations", "__annotations__", "eval_type")
    for path in sorted((engine.ROOT / engine.PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not [word for word in readers if word in text], path
    for module in engine.BY_MODULE:
        assert engine.annotation_only(module, "x: int | None = None", "x: int & None = None"), module


def test_a_units_fixture_generator_is_out_of_scope_and_what_the_parsers_share_is_not(engine):
    source = textwrap.dedent('''\
        SIZES = {"a": 3}
        LABELS = (0, 1)


        def parse(line):
            return int(line) in LABELS


        def _rows(rng):
            return [str(rng) for _ in range(SIZES["a"])] + [str(l) for l in LABELS]


        def write_fixture(out_dir):
            return _rows(1)


        BENCHMARK = Benchmark(name="toy", layouts={"toy": Layout("x", parse)}, fixture=write_fixture)
        ''')
    assert engine.fixture_lines(source) == {1, 9, 10, 13, 14}       # SIZES, _rows, write_fixture; LABELS stays
    assert engine.fixture_lines(source.replace(", fixture=write_fixture", "")) == set()
    mutated_lines = {m.line_number for m in engine.generate_mutants("toy.py", source)}
    assert not mutated_lines & {1, 9, 10, 13, 14} and {2, 6} <= mutated_lines


def test_a_statement_that_only_logs_is_out_of_scope(engine):
    source = textwrap.dedent('''\
        import logging
        LOG = logging.getLogger(__name__)


        def fetch(url, n):
            LOG.info("fetching %s (%d bytes)",
                     url, n + 1)
            total = n + 1
            LOG.warning("done")
            return total
        ''')
    assert engine.log_lines(source) == {6, 7, 9}
    lines = {m.line_number for m in engine.generate_mutants("f.py", source)}
    assert not lines & {6, 7, 9} and 8 in lines


def test_a_call_of_a_log_callable_only_logs_too(engine):
    """The training loop logs through a ``log`` it is given (print, or the job's log file), and its evaluator
    through ``self.log``; a method that is not ``log`` on ``self`` may do anything."""
    source = textwrap.dedent('''\
        def train(steps, log=print):
            log(f"starting {steps} steps")
            self.log(f"step {steps + 1}")
            self.error("kept: not a log call")
            record(f"{steps}")
            return steps
        ''')
    assert engine.log_lines(source) == {2, 3}


FOLLOWED = textwrap.dedent('''\
    LIMIT = 3
    DOUBLE = LIMIT * 2
    NAMES = {"a": 1}
    BENCHMARK = Benchmark(classes=NAMES)
    register(LIMIT_2 := 5)
    TABLE = [1, 2]
    register(TABLE)


    def clip(value, low=0,
             high=DOUBLE):
        """Doc."""
        return min(value, high)


    def unused():
        return 0


    class C:
        k = 2

        def m(self, x=1):
            return x + DOUBLE
    ''')


def test_a_constant_reaches_the_tests_that_read_it_not_every_user_of_the_module(engine):
    reads = engine.import_time_reads(FOLLOWED)
    # LIMIT feeds DOUBLE on import; DOUBLE is read by clip's default (its body) and by C.m's body
    assert reads[1].names == {"LIMIT", "DOUBLE"} and reads[1].lines == {12, 13, 24}
    assert reads[2].names == {"DOUBLE"} and reads[2].lines == {12, 13, 24}
    assert reads[3].names == {"NAMES", "BENCHMARK"} and reads[3].lines == frozenset()
    assert 6 not in reads and 5 not in reads  # fed to a call on import: not followed
    assert 21 not in reads  # a class body line: not followed
    # a def's signature (its defaults), over two lines: the lines of its body, whoever calls it
    assert reads[10] == reads[11] == engine.ImportReads(frozenset(), frozenset({12, 13}))
    assert reads[23] == engine.ImportReads(frozenset(), frozenset({24}))


def test_a_followed_constant_runs_the_tests_of_its_readers_and_of_the_files_that_name_it(engine):
    heads = engine.statement_heads(FOLLOWED)
    imported = engine.import_time_statements(FOLLOWED)
    by_line = {line: {"tests/test_p.py::lazy"} for line in imported}
    by_line.update({13: {"tests/test_p.py::clip", "tests/test_p.py::lazy"}, 17: {"tests/test_q.py::unused"},
                    24: {"tests/test_q.py::method"}})
    files = {"tests/test_p.py": {"tests/test_p.py::lazy", "tests/test_p.py::clip"},
             "tests/test_q.py": {"tests/test_q.py::unused", "tests/test_q.py::method"},
             "tests/test_r.py": {"tests/test_r.py::names"}}
    reach = engine.Reach(by_line, set(), heads, imported, files)
    texts = {"tests/test_p.py": "clip(4)", "tests/test_q.py": "C().m()", "tests/test_r.py": "assert NAMES"}
    reach.followed = engine.narrowed_reach(reach, FOLLOWED, ["import os"], texts)
    assert reach.tests_for(1) == {"tests/test_p.py::clip", "tests/test_p.py::lazy", "tests/test_q.py::method"}
    assert reach.tests_for(11) == {"tests/test_p.py::clip", "tests/test_p.py::lazy"}
    assert reach.tests_for(3) == {"tests/test_r.py::names"}  # read by no function: the test file that names it
    assert reach.tests_for(21) == reach.users()  # a class body: every user
    # named by another module of the checkout (a registry reading BENCHMARK): every user
    reach.followed = engine.narrowed_reach(reach, FOLLOWED, ['getattr(unit, "BENCHMARK")'], texts)
    assert reach.tests_for(3) == reach.users()
    assert reach.tests_for(1) == {"tests/test_p.py::clip", "tests/test_p.py::lazy", "tests/test_q.py::method"}


def test_a_constant_read_by_a_cached_function_is_not_followed(engine):
    """coverage gives a cached function's body to the first test that called it; the later callers read its
    result: a constant it reads, or its own signature, reaches every user of the module."""
    source = textwrap.dedent('''\
        import functools
        TABLE = {"a": 1}
        OTHER = 2


        @functools.lru_cache(maxsize=1)
        def table(key="a"):
            return TABLE[key]


        def other():
            return OTHER
        ''')
    reads = engine.import_time_reads(source)
    assert 2 not in reads and 7 not in reads
    assert reads[3].lines == {12} and reads[11].lines == {12}


class _FakeWorker:
    """A worker whose mutant runs give the exit statuses listed, and whose unmutated run takes ``seconds``."""

    def __init__(self, tmp_path, statuses, seconds=0.01, unmutated_code=0):
        self.root, self.statuses, self.seconds, self.code = tmp_path, list(statuses), seconds, unmutated_code
        self.limits = []

    def pytest(self, args, limit_s, **extra):
        import time

        time.sleep(self.seconds)
        return self.code

    def run_mutant(self, rel, mutant, tests, limit_s):
        self.limits.append(limit_s)
        return self.statuses.pop(0)


def test_a_timeout_is_judged_again_against_the_tests_measured_time(engine, tmp_path):
    mutant = engine.Mutant(3, 0, "a = 1", "a = 2", "a = 2\n")
    # the estimated budget (1 s) was short: 3 x the measured time + 30 s is longer, and under it the tests fail
    worker = _FakeWorker(tmp_path, [1])
    assert engine.timeout_measured(worker, "m.py", mutant, ["t.py::a"], 1.0) == "killed"
    assert len(worker.limits) == 1 and 30 < worker.limits[0] < 31
    worker = _FakeWorker(tmp_path, [0])
    assert engine.timeout_measured(worker, "m.py", mutant, ["t.py::a"], 1.0) == "survived"
    # the budget already held three times the measured time: a timeout it stays, without another run
    worker = _FakeWorker(tmp_path, [])
    assert engine.timeout_measured(worker, "m.py", mutant, ["t.py::a"], 100.0) == "timeout"
    with pytest.raises(RuntimeError, match="the unmutated tests fail"):
        engine.timeout_measured(_FakeWorker(tmp_path, [], unmutated_code=1), "m.py", mutant, ["t.py::a"], 1.0)


def test_a_line_of_a_cached_function_reaches_every_user_of_the_module(engine):
    """coverage gives a cached function's body to the first test that called it (codedeps' package_modules():
    a test of the names it derives called it second, and so was never run on its mutants)."""
    source = textwrap.dedent('''\
        import functools


        @functools.lru_cache(maxsize=1)
        def names():
            return ["a", "b"]


        def first():
            return names()[0]
        ''')
    assert engine.cached_lines(source) == {5, 6}
    heads = engine.statement_heads(source)
    by_line = {6: {"t.py::early"}, 10: {"t.py::early", "t.py::names"}}
    reach = engine.Reach(by_line, set(), heads, engine.import_time_statements(source),
                         {"t.py": {"t.py::early", "t.py::names", "t.py::other"}})
    reach.shared = engine.cached_lines(source)
    assert reach.tests_for(6) == {"t.py::early", "t.py::names", "t.py::other"}
    assert reach.tests_for(10) == {"t.py::early", "t.py::names"}


def test_a_failed_coverage_pass_names_the_failed_tests_and_keeps_its_log(engine, tmp_path, monkeypatch):
    """The scratch folder goes when the run stops, so the log the message names is a copy outside it."""
    import shutil

    class FailingWorker:
        root = tmp_path / "worker0"

        def pytest(self, args, timeout, **kw):
            Path(kw["log"]).write_text("..F\n=== short test summary info ===\n"
                                       "FAILED tests/test_x.py::test_y - assert 0\nERROR tests/test_z.py\n", "utf-8")
            return 1

    monkeypatch.setattr(engine, "CACHE", tmp_path / "cache")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(SystemExit) as failure:
        engine.coverage_pass([FailingWorker()], ["records/audit.py"], scratch, [ENGINE.parents[1] / "tests" / "conftest.py"])
    kept = tmp_path / "cache" / "coverage-failed.0.log"
    assert str(failure.value) == ("the unmutated unit tests failed in the coverage pass (exit 1): FAILED "
                                  "tests/test_x.py::test_y - assert 0; ERROR tests/test_z.py; the log is kept in "
                                  f"{kept}")
    shutil.rmtree(scratch)
    assert "FAILED tests/test_x.py::test_y" in kept.read_text(encoding="utf-8")
    kept.write_text("Traceback (most recent call last):\n", encoding="utf-8")
    assert engine.failed_tests(kept).startswith("no FAILED or ERROR line")


def test_an_interrupted_target_keeps_each_finished_mutants_state_and_resumes_from_it(engine, tmp_path, monkeypatch):
    (tmp_path / "src" / "sentrepro").mkdir(parents=True)
    (tmp_path / "src" / "sentrepro" / "toy.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_toy.py").write_text("def test_t():\n    pass\n", encoding="utf-8")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    monkeypatch.setattr(engine, "CACHE", tmp_path / ".mutation-cache")
    mutants = engine.generate_mutants("src/sentrepro/toy.py", SOURCE)
    assert len(mutants) > 3
    lines = {m.line_number for m in mutants}
    reach = engine.Reach(by_line={n: {"tests/test_toy.py::test_t"} for n in lines}, missing=set(),
                         heads={n: n for n in lines})
    target = engine.Target("toy.py", "a toy")

    class InterruptedWorker:
        root = tmp_path
        ran: list = []

        def run_mutant(self, rel, mutant, tests, limit_s):
            if len(self.ran) == 2:
                raise KeyboardInterrupt  # the run stopped by hand while its third mutant ran
            self.ran.append(mutant.key)
            (tmp_path / "last.log").write_text("F\nFAILED tests/test_toy.py::test_t - assert 0\n", encoding="utf-8")
            return 1

    with pytest.raises(KeyboardInterrupt):
        engine.run_target(target, [InterruptedWorker()], reach, {})
    _, print_ = engine.reach_fingerprint(target, reach, mutants)
    assert sorted(engine.load_cache("toy.py", print_)) == sorted(InterruptedWorker.ran)

    class Worker:
        root = tmp_path
        ran: list = []

        def run_mutant(self, rel, mutant, tests, limit_s):
            self.ran.append(mutant.key)
            (tmp_path / "last.log").write_text("F\nFAILED tests/test_toy.py::test_t - assert 0\n", encoding="utf-8")
            return 1

        def pytest(self, args, limit_s, log):
            return 0

    record = engine.run_target(target, [Worker()], reach, {})
    assert sorted(Worker.ran) == sorted(m.key for m in mutants if m.key not in InterruptedWorker.ran)
    assert record["killed"] == len(mutants)


CLASSY = textwrap.dedent('''\
    from dataclasses import dataclass, field

    LIMIT = 3


    @dataclass
    class Report:
        lines: list = field(default_factory=list)

        def ok(self):
            return not self.lines


    def build(values):
        report = Report()
        report.lines.extend(v for v in values if v > LIMIT)
        return report


    def other():
        return 1
''')


def test_a_field_mutant_runs_first_the_tests_that_use_its_class(engine):
    """A dataclass field runs on import, so its mutant reaches every test of the module; the tests that build the
    class (a line reading its name) or call its methods run first, each part fastest first."""
    near = engine.neighbour_lines(CLASSY)
    assert near[8] == {11, 15}  # Report.ok's body; the line of build that reads Report
    assert 16 in near[3] and 20 not in near[3]  # LIMIT: build reads it, other does not
    assert near[20] == {21}  # a line of a function body: that body
    heads = engine.statement_heads(CLASSY)
    reach = engine.Reach({8: {""}, 11: {"t.py::slow_ok"}, 15: {"t.py::build"}, 21: {"t.py::other"}},
                         missing=set(), heads=heads, on_import={1, 3, 6, 7, 8, 10, 14, 20})
    tests = reach.tests_for(8)
    assert tests == {"t.py::slow_ok", "t.py::build", "t.py::other"}
    durations = {"t.py::slow_ok": 9.0, "t.py::build": 5.0, "t.py::other": 0.1}
    assert engine.run_order(tests, engine.tests_running(reach, near[8]), durations) == ["t.py::build", "t.py::slow_ok",
                                                                           "t.py::other"]
    # which tests run never changes, only their order
    assert set(engine.run_order(tests, set(), durations)) == tests
    assert engine.run_order(tests, set(), durations)[0] == "t.py::other"


def test_the_test_that_killed_a_scopes_last_mutant_runs_first_on_the_next(engine, tmp_path):
    """Mutants of one function are mostly killed by the same test: it runs first on the next mutant of that scope,
    before the neighbours and the rest. The killer is read from pytest's short summary."""
    log = tmp_path / "last.log"
    log.write_text("..F\n=== short test summary info ===\nFAILED tests/t.py::test_b[x-1] - AssertionError: no\n"
                   "1 failed, 2 passed in 0.1s\n", encoding="utf-8")
    assert engine.killing_test(log) == "tests/t.py::test_b[x-1]"
    log.write_text("ERROR tests/t.py - ImportError\n", encoding="utf-8")
    assert engine.killing_test(log) == "tests/t.py"
    log.write_text("3 passed in 0.1s\n", encoding="utf-8")
    assert engine.killing_test(log) is None
    heads = engine.scope_heads(CLASSY)
    assert heads[8] == 7 and heads[11] == 10 and heads[16] == 14 and heads[3] == 3  # class, method, def, constant
    tests = {"t.py::slow_ok", "t.py::build", "t.py::other"}
    durations = {"t.py::slow_ok": 9.0, "t.py::build": 5.0, "t.py::other": 0.1}
    assert engine.run_order(tests, {"t.py::build"}, durations, ["t.py::slow_ok"]) == [
        "t.py::slow_ok", "t.py::build", "t.py::other"]
    assert engine.run_order(tests, {"t.py::build"}, durations) == ["t.py::build", "t.py::other", "t.py::slow_ok"]


def test_a_test_file_added_since_keeps_the_kills_whose_killing_test_is_unchanged(engine, tmp_path, monkeypatch):
    """An interrupted target whose reaching test files changed since (a test file added, another edited) keeps the
    killed mutants whose killing test's file is byte for byte the same, and runs the rest again; with the module
    changed it keeps nothing."""
    (tmp_path / "src" / "sentrepro").mkdir(parents=True)
    (tmp_path / "src" / "sentrepro" / "toy.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py", "test_new.py"):
        (tmp_path / "tests" / name).write_text("def test_t():\n    pass\n", encoding="utf-8")
    monkeypatch.setattr(engine, "ROOT", tmp_path)
    monkeypatch.setattr(engine, "CACHE", tmp_path / ".mutation-cache")
    mutants = engine.generate_mutants("src/sentrepro/toy.py", SOURCE)
    lines = {m.line_number for m in mutants}
    by_line = {n: {"tests/test_a.py::test_t", "tests/test_b.py::test_t"} for n in lines}
    reach = engine.Reach(by_line=by_line, missing=set(), heads={n: n for n in lines})
    target = engine.Target("toy.py", "a toy")
    killers = {m.key: ("tests/test_a.py::test_t" if k % 2 else "tests/test_b.py::test_t")
               for k, m in enumerate(mutants)}

    class Worker:
        root = tmp_path

        def run_mutant(self, rel, mutant, tests, limit_s):
            if mutant.key == mutants[-1].key:
                return 0  # one survivor
            (tmp_path / "last.log").write_text(f"F\nFAILED {killers[mutant.key]} - assert 0\n", encoding="utf-8")
            return 1

        def pytest(self, args, limit_s, log):
            return 0

    engine.run_target(target, [Worker()], reach, {})
    # a test file added that reaches the module, and test_b edited: the fingerprint changes, the module does not
    added = engine.Reach(by_line={n: {*tests, "tests/test_new.py::test_t"} for n, tests in by_line.items()},
                         missing=set(), heads={n: n for n in lines})
    (tmp_path / "tests" / "test_b.py").write_text("def test_t():\n    assert 1\n", encoding="utf-8")
    files, print_ = engine.reach_fingerprint(target, added, mutants)
    kept = engine.load_cache("toy.py", print_, files)
    assert set(kept) == {key for key, test in killers.items() if test.startswith("tests/test_a.py")
                         and key != mutants[-1].key}
    assert all(outcome["state"] == "killed" and outcome["killer"] == "tests/test_a.py::test_t"
               for outcome in kept.values())
    (tmp_path / "src" / "sentrepro" / "toy.py").write_text(SOURCE + "\n", encoding="utf-8")
    assert engine.load_cache("toy.py", print_, files) == {}
