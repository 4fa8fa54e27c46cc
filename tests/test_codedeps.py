"""Code fingerprints (sentrepro.code.codedeps): closures checked against the standard library's modulefinder,
normalisation (comments and docstrings change nothing), package data declarations, stale records."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import yaml

from sentrepro.code import codedeps
from tests.module_closures import cli_commands, command_script, modulefinder_closure, rule_entries
from tests.workflow_helpers import same_size_behaviour_change



@pytest.mark.parametrize("command", sorted(cli_commands()))
def test_each_command_closure_is_what_modulefinder_finds(command, tmp_path):
    expected = modulefinder_closure(command_script(cli_commands()[command]), tmp_path) | {"sentrepro.cli"}
    assert set(codedeps.module_closure((f"cli:{command}",))) == expected


def test_a_module_entry_closure_is_what_modulefinder_finds(tmp_path):
    expected = modulefinder_closure("import sentrepro.data.views\n", tmp_path)
    assert set(codedeps.module_closure(("sentrepro.data.views",))) == expected
    assert "sentrepro.data.wordnet" in expected


def test_closures_are_not_everything():
    """The CLI imports each command's code lazily; its own imports are not followed as a whole."""
    everything = set(codedeps.package_modules())
    tokenize = codedeps.module_closure(("cli:tokenize",))
    assert len(tokenize) < len(everything) / 2
    # none of training, the methods, evaluation's protocols, the tables or the verdicts
    assert not {m for m in tokenize if m.startswith(("sentrepro.training.loop", "sentrepro.training.job", "sentrepro.tables",
                                                     "sentrepro.verdicts", "sentrepro.verdicts.stats",
                                                     "sentrepro.evaluation.sts", "sentrepro.methods.simcse"))}
    assert "sentrepro.training.job" in codedeps.module_closure(("cli:train",))
    assert "sentrepro.training.job" not in codedeps.module_closure(("cli:figure",))


def test_no_module_but_the_cli_imports_the_cli():
    importers = [m for m in codedeps.package_modules() if "sentrepro.cli" in codedeps.direct_imports(m)]
    assert importers == []


def test_every_package_data_file_is_declared_by_a_module():
    """Every data file is either declared by the module reading it (PACKAGE_DATA) or unit metadata (a
    sidecar or shared parameter file, fingerprinted per unit), never both: a sidecar declared as package
    data would put every unit's metadata into the code of every job."""
    from sentrepro.code import entry_data, units

    declared = {rel for module in codedeps.package_modules() for rel in codedeps.declared_data(module)}
    by_entry = {rel for module in codedeps.package_modules() for rel in entry_data.declared_by_entry(module)}
    assert not declared & by_entry  # a file read entry by entry is in no fingerprint (its readers pass entries)
    declared |= by_entry
    unit_files = {p.relative_to(codedeps.PACKAGE_DIR).as_posix() for pattern in units.UNIT_FILES
                  for p in codedeps.PACKAGE_DIR.glob(pattern)}
    shipped = {p.relative_to(codedeps.PACKAGE_DIR).as_posix() for p in codedeps.PACKAGE_DIR.rglob("*")
               if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert shipped == declared | unit_files and not declared & unit_files
    assert {"methods/simcse.units.yaml", "training/loop.params.yaml"} <= unit_files
    assert "planning/specs/sts_main.yaml" in codedeps.closure_files(["cli:table"])
    assert "planning/specs/sts_main.yaml" not in codedeps.closure_files(["cli:train"])
    assert by_entry == {"planning/reported.yaml"} and "planning/reported.yaml" not in codedeps.closure_files(["cli:table"])


def test_every_rule_file_entry_is_found_and_matches_shell_entry():
    entries = rule_entries()
    assert entries["train"] == "cli:train" and entries["build_views"] == "cli:build-views"
    assert {"download", "tokenize", "evaluate_sts", "evaluate_transfer", "evaluate_cosine_gold", "figure", "table"} <= set(entries)


def test_shell_entry():
    assert codedeps.shell_entry("sentrepro evaluate {wildcards.suite} --spec x > {log:q} 2>&1") == "cli:evaluate"
    assert codedeps.shell_entry("python -m sentrepro.data.views --spec x") == "sentrepro.data.views"
    assert codedeps.shell_entry("cp a b") is None
    with pytest.raises(codedeps.CodeDepsError, match="several entry points"):
        codedeps.shell_entry("sentrepro train x && sentrepro table y")


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """codedeps pointed at a copy of the package, caches cleared before and after."""
    copy = tmp_path / "sentrepro"
    shutil.copytree(codedeps.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def clear():
        for function in (codedeps.package_modules, codedeps._tree, codedeps.direct_imports, codedeps.cli_dispatch,
                         codedeps.module_closure, codedeps.declared_data, codedeps.file_fingerprint,
                         codedeps._record):
            function.cache_clear()

    clear()
    monkeypatch.setattr(codedeps, "PACKAGE_DIR", copy)
    yield copy
    clear()


def test_comments_and_docstrings_change_nothing_but_behaviour_does(package_copy):
    before = codedeps.code_record(["cli:train"])
    runner = package_copy / "training/job.py"
    text = runner.read_text()
    edited = text.replace('"""The step behind', '"""A new docstring. The step behind', 1)
    signature = "    def score(model: SentenceModel) -> float:\n"  # a function without a docstring
    assert signature in edited
    edited = edited.replace(signature, signature + "        # a comment\n        \"\"\"A docstring added.\"\"\"\n", 1)
    assert edited.count("A docstring added") == 1 and edited.count("A new docstring") == 1
    runner.write_text(edited + "\n# a trailing comment\n")
    codedeps.file_fingerprint.cache_clear()
    codedeps._record.cache_clear()
    assert codedeps.code_record(["cli:train"]) == before
    runner.write_text(text + "\n_PROBE = 1\n")
    codedeps.file_fingerprint.cache_clear()
    codedeps._record.cache_clear()
    after = codedeps.code_record(["cli:train"])
    assert after["fingerprint"] != before["fingerprint"]
    assert [rel for rel in after["modules"] if after["modules"][rel] != before["modules"][rel]] == ["training/job.py"]
    assert codedeps.compare(before) == [f"training/job.py: {before['modules']['training/job.py']} -> {after['modules']['training/job.py']}"]
    assert "training/job.py" in codedeps.stale_description(before)
    assert codedeps.compare(after) == [] and codedeps.stale_description(after) is None


def function_body_string(tree: ast.Module) -> ast.Constant:
    """The first string literal inside a function body that is not the function's docstring."""
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            docstring = ast.get_docstring(function, clean=False) is not None
            for statement in function.body[1 if docstring else 0:]:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value \
                            and node.lineno == node.end_lineno:
                        return node
    raise AssertionError("no string literal in a function body")


def test_a_string_literal_edit_inside_a_function_body_changes_the_fingerprint(package_copy):
    """A mode name or a config key inside a function is behaviour: only docstrings are ignored, not strings."""
    before = codedeps.code_record(["cli:train"])
    runner = package_copy / "training/job.py"
    text = runner.read_text()
    node = function_body_string(ast.parse(text))
    lines = text.splitlines(keepends=True)
    line = lines[node.lineno - 1].encode()
    literal = line[node.col_offset:node.end_col_offset].decode()
    assert ast.literal_eval(literal) == node.value
    edited = literal[0] + "x" + literal[1:] if literal[0] in "'\"" else None  # one character added inside the quotes
    assert edited is not None and ast.literal_eval(edited) == "x" + node.value
    lines[node.lineno - 1] = (line[:node.col_offset] + edited.encode() + line[node.end_col_offset:]).decode()
    runner.write_text("".join(lines))
    codedeps.file_fingerprint.cache_clear()
    codedeps._record.cache_clear()
    after = codedeps.code_record(["cli:train"])
    assert [rel for rel in after["modules"] if after["modules"][rel] != before["modules"][rel]] == ["training/job.py"], \
        f"editing {literal} at training/job.py:{node.lineno} changed no fingerprint"


def test_yaml_comments_change_nothing_but_values_do(package_copy):
    before = codedeps.rule_code("cli:table")
    spec = package_copy / "planning" / "specs" / "sts_main.yaml"
    text = spec.read_text()
    spec.write_text("# a comment\n" + text)
    codedeps.file_fingerprint.cache_clear()
    codedeps._record.cache_clear()
    assert codedeps.rule_code("cli:table") == before
    spec.write_text(text.replace("\ntitle: \"", "\ntitle: \"PROBE ", 1))
    codedeps.file_fingerprint.cache_clear()
    codedeps._record.cache_clear()
    assert codedeps.rule_code("cli:table") != before


def test_an_import_added_inside_a_function_joins_the_closure(package_copy):
    assert "sentrepro.methods.templates" not in codedeps.module_closure(("cli:figure",))
    figures = package_copy / "evaluation" / "figures.py"
    figures.write_text(figures.read_text() + "\n\ndef _probe():\n    from ..methods.templates import fill_template\n    return fill_template\n")
    codedeps._tree.cache_clear()
    codedeps.direct_imports.cache_clear()
    codedeps.module_closure.cache_clear()
    assert "sentrepro.methods.templates" in codedeps.module_closure(("cli:figure",))


def test_a_method_job_covers_its_own_method_module_only():
    """The method registry imports method modules on demand: a training job's code is the command's
    closure plus its own method's module (and what that imports), so editing ConPVP reruns ConPVP only."""
    from sentrepro.planning import registry
    from sentrepro.code.codedeps import closure_files
    from sentrepro.methods import method_class, method_entry

    command = set(closure_files(["cli:train"]))
    assert not any(f.startswith("methods/") and f not in ("methods/__init__.py", "methods/base.py") for f in command)
    simcse = set(closure_files(["cli:train", method_entry("simcse")]))
    assert "methods/simcse.py" in simcse and "methods/conpvp.py" not in simcse
    esimcse = set(closure_files(["cli:evaluate", method_entry("esimcse")]))
    assert {"methods/esimcse.py", "methods/simcse.py"} <= esimcse  # ESimCSE builds on SimCSE's module
    for kind in registry.methods():
        assert method_class(kind).kind == kind


def test_an_evaluation_job_covers_its_own_suite_module_only():
    """Suites are imported on demand too: an STS job's code holds the STS suite's module, not clustering's."""
    from sentrepro.planning import registry
    from sentrepro.code.codedeps import closure_files

    command = set(closure_files(["cli:evaluate"]))
    assert "evaluation/sts_suite.py" not in command and "evaluation/suites.py" not in command
    sts = set(closure_files(registry.job_entries("cli:evaluate", "simcse", "sts")))
    assert "evaluation/sts_suite.py" in sts and "methods/simcse.py" in sts and "evaluation/suites.py" not in sts
    clustering = set(closure_files(registry.job_entries("cli:evaluate", "frozen", "clustering")))
    assert "evaluation/suites.py" in clustering and "evaluation/sts_suite.py" not in clustering


@pytest.fixture
def units_copy(package_copy, monkeypatch):
    """package_copy, with unit discovery and the registry reading the copy too."""
    from sentrepro.code import units
    from sentrepro.planning import registry

    def clear():
        for function in (units.discover, units.shared_parameters, registry.methods, registry.suites,
                         registry.figures, registry._method_params, codedeps.file_fingerprint, codedeps._record):
            function.cache_clear()

    clear()
    monkeypatch.setattr(units, "PACKAGE_DIR", package_copy)
    yield package_copy
    clear()


def _unit_codes(units_copy) -> dict[tuple, str]:
    """(kind, suite) -> the code fingerprint of an evaluation job, for a few kinds and suites, recomputed."""
    from sentrepro.code import units
    from sentrepro.planning import registry

    for function in (units.discover, units.shared_parameters, registry.methods, registry.suites,
                     registry._method_params, codedeps.file_fingerprint, codedeps._record):
        function.cache_clear()
    return {(kind, suite): codedeps.rule_code(registry.job_entries("cli:evaluate", kind, suite))
            for kind in ("simcse", "esimcse", "frozen") for suite in ("sts", "clustering")}


def test_unit_keys_that_only_schedule_change_no_fingerprint(units_copy):
    """A unit's resources, group and cost leave every job's code as it was; what a suite reads does not."""
    before = _unit_codes(units_copy)
    sidecar = units_copy / "evaluation" / "sts_suite.units.yaml"
    text = sidecar.read_text()
    for old, new in (("resources: {mem_mb: 8000, runtime: 30, cpus_per_task: 2, gpu: 0}",
                      "resources: {mem_mb: 9000, runtime: 45, cpus_per_task: 4, gpu: 1}"),
                     ("cost: {small: 20, base: 60, large: 150}", "cost: {small: 21, base: 61, large: 151}"),
                     ("    group: evaluate\n", "    group: other\n")):
        assert old in text
        text = text.replace(old, new)
    sidecar.write_text(text)
    assert _unit_codes(units_copy) == before
    sidecar.write_text(text.replace("    data: source\n", "    data: sts\n", 1))  # what the STS suite reads
    after = _unit_codes(units_copy)
    assert {key for key in before if after[key] != before[key]} == {("simcse", "sts"), ("esimcse", "sts"),
                                                                    ("frozen", "sts")}


def test_a_new_unit_changes_no_fingerprint_and_a_unit_edit_only_its_own(units_copy):
    """Adding a unit (a module and its sidecar) changes no existing job's code; editing one unit's
    parameter schema changes the code of its jobs only; the shared trainer keys are the trained kinds'."""
    from sentrepro.planning import registry

    before = _unit_codes(units_copy)
    methods = units_copy / "methods"
    (methods / "probe_kind.py").write_text("from sentrepro.methods.simcse import SimCSE\n\n\n"
                                           "class Probe(SimCSE):\n    kind = 'probe_kind'\n")
    (methods / "probe_kind.units.yaml").write_text(
        "methods:\n  probe_kind:\n    implementation: Probe\n    trains: true\n    authors_precision: fp32\n"
        "    params:\n      temperature: {type: number}\n")
    codedeps.package_modules.cache_clear()
    assert _unit_codes(units_copy) == before
    assert "probe_kind" in registry.methods() and "lr" in registry.method("probe_kind").params
    sidecar = methods / "esimcse.units.yaml"
    sidecar.write_text(sidecar.read_text().replace("dup_rate: {type: number, exclusiveMinimum: 0,",
                                                   "dup_rate: {type: number, exclusiveMinimum: 0.01,"))
    after = _unit_codes(units_copy)
    assert {key for key in before if after[key] != before[key]} == {("esimcse", "sts"), ("esimcse", "clustering")}
    trainer = units_copy / "training/loop.params.yaml"
    trainer.write_text(trainer.read_text().replace("lr: {type: number, exclusiveMinimum: 0}",
                                                   "lr: {type: number, exclusiveMinimum: 0, maximum: 1}"))
    changed = _unit_codes(units_copy)
    assert {key for key in before if changed[key] != after[key]} == {(k, s) for k in ("simcse", "esimcse")
                                                                     for s in ("sts", "clustering")}


# --- the content-addressed fingerprint cache ----------------------------------------------------


def test_a_same_size_same_mtime_behaviour_edit_changes_the_cached_fingerprint(package_copy, tmp_path, monkeypatch):
    """The cache is keyed by content: an edit that keeps a file's size and modification time (what an
    mtime-keyed cache would miss) still changes the fingerprint, read through a warm cache."""
    import os

    monkeypatch.setenv(codedeps.CACHE_ENV, str(tmp_path / "fp-cache"))
    runner = package_copy / "training/job.py"
    text = runner.read_text()
    stat = runner.stat()
    before = codedeps.file_fingerprint("training/job.py")
    assert any((tmp_path / "fp-cache").rglob("*")), "the cache was not written"
    codedeps.file_fingerprint.cache_clear()
    assert codedeps.file_fingerprint("training/job.py") == before  # read back from the warm cache
    edited = same_size_behaviour_change(text)
    assert edited != text and len(edited.encode()) == len(text.encode())
    runner.write_text(edited)
    os.utime(runner, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert runner.stat().st_size == stat.st_size and runner.stat().st_mtime_ns == stat.st_mtime_ns
    codedeps.file_fingerprint.cache_clear()
    after = codedeps.file_fingerprint("training/job.py")
    monkeypatch.setenv(codedeps.CACHE_ENV, "off")
    codedeps.file_fingerprint.cache_clear()
    assert after == codedeps.file_fingerprint("training/job.py") != before  # what no cache computes


def test_a_corrupt_or_misplaced_cache_entry_is_ignored_and_rewritten(package_copy, tmp_path, monkeypatch):
    """An entry is used only when it reads back as '<its own key> <checksum> <value>': a truncated, garbled
    or altered entry, or a valid entry of another file copied under this key, is recomputed and replaced."""
    cache = tmp_path / "fp-cache"
    monkeypatch.setenv(codedeps.CACHE_ENV, str(cache))
    rel, other = "training/job.py", "methods/templates.py"
    key = codedeps.cache_key(rel, (package_copy / rel).read_bytes())
    other_key = codedeps.cache_key(other, (package_copy / other).read_bytes())
    assert key != other_key
    true = codedeps.file_fingerprint(rel)
    codedeps.file_fingerprint(other)
    entry, other_entry = cache / key[:2] / key, cache / other_key[:2] / other_key
    good = entry.read_text()
    assert good.startswith(f"{key} ") and good.endswith(f" {true}\n")
    wrong = "0" * codedeps.DIGITS if true != "0" * codedeps.DIGITS else "1" * codedeps.DIGITS
    for corrupt in (good[:-4] + "\n", good[:-1], "\x00garbage", "", good.replace(true, wrong),
                    good + "extra\n", other_entry.read_text()):
        entry.write_text(corrupt)
        codedeps.file_fingerprint.cache_clear()
        assert codedeps.file_fingerprint(rel) == true, repr(corrupt)
        assert entry.read_text() == good  # rewritten


def test_the_cache_key_is_the_content_and_the_normaliser():
    """Same bytes, same key; one byte changed, another suffix (another normalisation) or another kind of
    derivation, another key."""
    raw = b"x = 1\n"
    assert codedeps.cache_key("a.py", raw) == codedeps.cache_key("b/c.py", raw)
    assert codedeps.cache_key("a.py", raw) != codedeps.cache_key("a.py", b"x = 2\n")
    assert codedeps.cache_key("a.py", raw) != codedeps.cache_key("a.yaml", raw)
    assert codedeps.cache_key("a.py", raw, "summary:a.py") != codedeps.cache_key("a.py", raw, "summary:b/a.py")


def test_cache_key_kind_defaults_to_a_fingerprint():
    assert codedeps.cache_key("a.py", b"x = 1\n") == codedeps.cache_key("a.py", b"x = 1\n", "fingerprint")


def test_normalised_source_of_a_module_read_from_disk_is_that_of_its_bytes():
    raw = (codedeps.PACKAGE_DIR / "training/job.py").read_bytes()
    assert codedeps.normalised_source("training/job.py") == codedeps.normalised_source("training/job.py", raw)
    assert b"The step behind" not in codedeps.normalised_source("training/job.py")  # its docstrings are gone


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_normalised_yaml_and_json_ignore_layout_key_order_and_comments_but_not_values(suffix):
    """YAML and JSON package data are fingerprinted by content: canonical JSON (sorted keys, no spaces)."""
    first = b'{"b": [1, 2], "a": {"y": "s", "x": 1.5}}'
    same = b'{\n  "a": {"x": 1.5,  "y": "s"},\n  "b": [1, 2]\n}\n'
    if suffix != ".json":
        same = b"# a comment\na: {x: 1.5, y: s}\nb:\n  - 1\n  - 2\n"
    normalised = codedeps.normalised_source(f"data{suffix}", first)
    assert normalised == b'{"a":{"x":1.5,"y":"s"},"b":[1,2]}'
    assert codedeps.normalised_source(f"data{suffix}", same) == normalised
    assert codedeps.normalised_source(f"data{suffix}", first.replace(b"1.5", b"2.5")) != normalised
    assert codedeps.normalised_source("data.txt", first) == first  # any other file: its bytes


def test_closures_through_a_warm_cache_are_the_uncached_ones(package_copy, tmp_path, monkeypatch):
    """Imports and data declarations read back from the cache give every command the closure computed
    without it; an import added (same file, new bytes) is seen through the warm cache."""
    def closures(commands) -> dict:
        for function in (codedeps.package_modules, codedeps._tree, codedeps.direct_imports, codedeps.cli_dispatch,
                         codedeps.module_closure, codedeps.declared_data, codedeps.file_fingerprint, codedeps._record):
            function.cache_clear()
        return {command: codedeps.closure_files([f"cli:{command}"]) for command in commands}

    commands = sorted(codedeps.cli_dispatch())
    monkeypatch.setenv(codedeps.CACHE_ENV, "off")
    uncached = closures(commands)
    monkeypatch.setenv(codedeps.CACHE_ENV, str(tmp_path / "fp-cache"))
    closures(commands)  # cold: computed and written
    assert any((tmp_path / "fp-cache").rglob("*"))
    assert closures(commands) == uncached  # warm: read back
    figures = package_copy / "evaluation" / "figures.py"
    figures.write_text(figures.read_text() + "\n\ndef _probe():\n    from ..methods.templates import fill_template\n")
    assert "methods/templates.py" in closures(["figure"])["figure"] and "methods/templates.py" not in uncached["figure"]


def test_an_unwritable_cache_changes_no_fingerprint(package_copy, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv(codedeps.CACHE_ENV, str(blocker / "cache"))
    value = codedeps.file_fingerprint("training/job.py")
    monkeypatch.setenv(codedeps.CACHE_ENV, "off")
    codedeps.file_fingerprint.cache_clear()
    assert codedeps.file_fingerprint("training/job.py") == value


# ---- parsed YAML through the same content-addressed cache (sentrepro.yaml_files.parse_yaml)

def _yaml_entries(cache: Path) -> list[Path]:
    return [path for path in cache.rglob("*") if path.is_file() and not path.name.startswith(".")]


def test_parsed_yaml_is_cached_by_content_and_equal_to_an_uncached_parse(tmp_path, monkeypatch):
    from sentrepro.yaml_files import parse_yaml

    text = "a: 1\nb: [x, 2.5, true, null]\nnested: &base {k: v}\nagain: *base\n"
    monkeypatch.setenv(codedeps.CACHE_ENV, "off")
    uncached = parse_yaml(text)
    cache = tmp_path / "cache"
    monkeypatch.setenv(codedeps.CACHE_ENV, str(cache))
    first = parse_yaml(text)
    assert len(_yaml_entries(cache)) == 1
    second = parse_yaml(text)
    assert first == second == uncached == yaml.safe_load(text)
    assert second["again"] is not second["nested"]  # an alias is a copy, on the first parse and from the cache alike
    assert first["again"] is not first["nested"] and uncached["again"] is not uncached["nested"]
    # the same size, another content: another key, the other value (never the cached one)
    edited = text.replace("a: 1", "a: 7")
    assert len(edited) == len(text) and parse_yaml(edited)["a"] == 7
    assert len(_yaml_entries(cache)) == 2


def test_a_tampered_yaml_entry_is_ignored_and_a_document_json_cannot_hold_is_never_served_from_json(tmp_path,
                                                                                                     monkeypatch):
    import datetime

    from sentrepro.yaml_files import parse_yaml

    cache = tmp_path / "cache"
    monkeypatch.setenv(codedeps.CACHE_ENV, str(cache))
    assert parse_yaml("value: 1\n") == {"value": 1}
    (entry,) = _yaml_entries(cache)
    key, check, _ = entry.read_text().split(" ", 2)
    entry.write_text(f"{key} {check} {{\"value\":2}}\n")  # a value that does not match its checksum
    assert parse_yaml("value: 1\n") == {"value": 1}
    assert parse_yaml("when: 2026-12-02\n1: one\n") == {"when": datetime.date(2026, 12, 2), 1: "one"}
    assert parse_yaml("when: 2026-12-02\n1: one\n") == {"when": datetime.date(2026, 12, 2), 1: "one"}
    with pytest.raises(yaml.YAMLError):
        parse_yaml("a: [unclosed\n")
