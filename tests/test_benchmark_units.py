"""Benchmarks are units: CONTRIBUTING.md's "Add a benchmark" recipe, followed with a throwaway benchmark.

The test writes one module, ``toy.py`` (a two-split topic-classification set: its task group, documented
counts, parser, layout and fixture), and nothing else. In process, the module is put on the benchmark
package's path; every list that names benchmarks (layouts, fixtures, counts, task groups, the CLI's
fixture choices, the config check) must then show it. Through the workflow (slow tier), the module is
dropped into a copy of the checkout and a config overlay adds its source: its fixture is generated, its
data downloaded, prepared, parsed and count-checked by the real rules, its job's code fingerprint names the
unit, editing the unit reruns its jobs only and adding another unit reruns nothing.
"""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sentrepro.data import benchmarks
from tests.workflow_helpers import REPO, DryRuns, copy_checkout, planned_jobs, snakemake, write_overlay

TOY_MODULE = r'''"""Benchmark unit ``toy``: a throwaway topic-classification set (tests/test_benchmark_units.py).

Layout ``toy-topics``: ``train.tsv`` and ``test.tsv``, one ``label<TAB>text`` per line.
"""

from pathlib import Path

from sentrepro.data.benchmarks import Benchmark, Layout, relative_files
from sentrepro.data.counts import check_classes, check_count
from sentrepro.data.fixtures.archives import write_zip
from sentrepro.data.records import LabelledText, parse_int, read_text_lines, split_fields

SPLITS = {"train": 9, "test": 6}  # documented rows per split
TASKS = {"ToyTopics": {"splits": list(SPLITS)}}


def read_toy(root: Path, split: str, *, check_counts: bool = True) -> list[LabelledText]:
    path = Path(root) / f"{split}.tsv"
    rows = []
    for lineno, line in enumerate(read_text_lines(path, "utf-8"), start=1):
        label, text = split_fields(line, path, lineno, 2)
        rows.append(LabelledText(text, parse_int(label, path, lineno, "label")))
    if check_counts:
        check_count("ToyTopics", split, len(rows), path)
        check_classes("ToyTopics", len({row.label for row in rows}), path)
    return rows


def read_toy_layout(root: Path, variant, check_counts: bool) -> dict:
    splits = {split: read_toy(root, split, check_counts=check_counts) for split in SPLITS}
    return {"ToyTopics": {"family": "toy", "parts": {split: len(rows) for split, rows in splits.items()},
                          "classes": len({row.label for rows in splits.values() for row in rows}),
                          "files": relative_files([Path(root) / f"{split}.tsv" for split in SPLITS], root)}}


def write_toy_fixture(out_dir: Path) -> list[Path]:
    tree = {f"{split}.tsv": "".join(f"{i % 3}\ttopic {i % 3} sentence {i}\n" for i in range(n)).encode()
            for split, n in SPLITS.items()}
    archive = Path(out_dir) / "toy.zip"
    write_zip(tree, archive)
    return [archive]


BENCHMARK = Benchmark(
    name="toy",
    description="a throwaway topic-classification set",
    tasks={"toy": TASKS},
    counts={("ToyTopics", split): n for split, n in SPLITS.items()},
    classes={"ToyTopics": 3},
    layouts={"toy-topics": Layout("train.tsv and test.tsv, label<TAB>text", read_toy_layout)},
    fixture=write_toy_fixture,
)
'''

TOY_SOURCE = {"url": "fixture://toy/toy.zip", "sha256": None, "format": "zip", "check": {"layout": "toy-topics"}}
UNITS = Path(benchmarks.__file__).parent


def _rediscover():
    benchmarks._discovered.cache_clear()


@pytest.fixture
def toy_on_path(tmp_path, monkeypatch):
    """The toy unit, written by the test into a folder added to the benchmark package's path."""
    folder = tmp_path / "units"
    folder.mkdir()
    (folder / "toy.py").write_text(TOY_MODULE, encoding="utf-8")
    monkeypatch.setattr(benchmarks, "__path__", [*benchmarks.__path__, str(folder)])
    _rediscover()
    yield folder
    for name in [name for name in sys.modules if name.startswith(f"{benchmarks.__name__}.") and
                 Path(getattr(sys.modules[name], "__file__", "") or "").parent == folder]:
        del sys.modules[name]
    monkeypatch.undo()
    _rediscover()


def test_discovery_imports_every_module_of_the_package_folder():
    on_disk = sorted(f"{benchmarks.__name__}.{path.stem}" for path in UNITS.glob("*.py") if path.stem != "__init__")
    assert benchmarks.unit_module_names() == on_disk
    assert {"sts", "transfer", "senteval", "clustering", "wos"} <= set(benchmarks.benchmarks())


def test_the_new_benchmark_shows_in_every_derived_list(toy_on_path):
    from sentrepro.data import check, counts, fixtures, tasks

    assert benchmarks.layout_module("toy-topics") == "sentrepro.data.benchmarks.toy"
    assert check.LAYOUTS["toy-topics"].description.startswith("train.tsv")
    assert {"senteval", "sts-raw", "stsb", "short-text-clustering", "wos"} < set(check.LAYOUTS)
    assert fixtures.GENERATORS["toy"].__module__ == "sentrepro.data.benchmarks.toy"
    assert benchmarks.fixture_module("toy") == "sentrepro.data.benchmarks.toy"
    assert counts.EXPECTED[("ToyTopics", "train")] == 9 and counts.EXPECTED[("STS12", "test")] == 3108
    assert counts.EXPECTED_CLASSES["ToyTopics"] == 3
    assert tasks.task_names("toy") == ["ToyTopics"]
    assert tasks.task_names("wos") == ["WOS5736", "WOS11967", "WOS46985"]  # the others are still there
    from sentrepro.planning import registry  # the config schema's task enums ({enum_of: <group>}) come from the units

    assert registry.suite_block_schema("clustering", {})["properties"]["sets"]["items"]["enum"] == \
        list(benchmarks.benchmarks()["clustering"].tasks["clustering"])
    import importlib.util  # the manual's benchmark reference, generated from the units, gets the toy's section

    spec = importlib.util.spec_from_file_location("benchmarks_reference", REPO / "docs" / "gen" / "benchmarks_reference.py")
    page_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page_module)
    section = page_module.render().split("\n## `toy`\n", 1)[1].split("\n## ", 1)[0]
    assert "a throwaway topic-classification set" in section and "`sentrepro fixture toy`" in section
    assert "| `toy-topics` | train.tsv and test.tsv, label&lt;TAB&gt;text | no STS text |" in section
    assert "| `ToyTopics` | train: 9, test: 6 | 3 |" in section


def test_the_new_benchmark_gets_a_fixture_that_is_parsed_and_counted(toy_on_path, tmp_path):
    from sentrepro.data.check import text_variant
    from sentrepro.data.fixtures import write_fixture
    from sentrepro.data.records import CountMismatch

    (archive,) = write_fixture("toy", tmp_path / "fixture")
    root = tmp_path / "tree"
    zipfile.ZipFile(archive).extractall(root)
    layout = benchmarks.layouts()["toy-topics"]
    summary = layout.read(root, text_variant("toy", {"layout": "toy-topics"}), True)
    assert summary == {"ToyTopics": {"family": "toy", "parts": {"train": 9, "test": 6}, "classes": 3,
                                     "files": ["test.tsv", "train.tsv"]}}
    lines = (root / "test.tsv").read_text().splitlines(keepends=True)
    (root / "test.tsv").write_text("".join(lines[:-1]))  # one row short of the documented 6
    with pytest.raises(CountMismatch, match="ToyTopics"):
        layout.read(root, None, True)
    assert layout.read(root, None, False)["ToyTopics"]["parts"]["test"] == 5  # synthetic: parsed, not counted


def test_the_fixture_command_takes_the_new_benchmark_and_lists_it_when_unknown(toy_on_path, tmp_path, capsys):
    from sentrepro.cli import main

    assert main(["fixture", "toy", "--out-dir", str(tmp_path / "toy")]) == 0
    assert (tmp_path / "toy" / "toy.zip").is_file()
    capsys.readouterr()
    assert main(["fixture", "nope", "--out-dir", str(tmp_path / "nope")]) == 2
    choices = capsys.readouterr().err.split("choose from", 1)[1]
    assert choices.strip(" )\n").split(", ") == ["clustering", "senteval", "toy", "wos"]  # sts, transfer: none
    assert not (tmp_path / "nope").exists()


def test_the_config_accepts_the_new_layout_and_names_the_key_of_an_unknown_one(toy_on_path):
    from sentrepro.data.check import CheckConfigError, text_variant

    assert text_variant("toy", {"layout": "toy-topics"}) is None
    with pytest.raises(CheckConfigError, match=r"data\.sources\.toy\.check\.layout: unknown layout 'toy-topic'.*toy-topics"):
        text_variant("toy", {"layout": "toy-topic"})
    with pytest.raises(CheckConfigError, match="holds no STS text"):
        text_variant("toy", {"layout": "toy-topics", "text_variant": "raw"})


@pytest.mark.parametrize("body, message", [
    ('"""No BENCHMARK here."""\n', "must define BENCHMARK"),
    (TOY_MODULE.replace('"toy-topics"', '"wos"').replace('name="toy"', 'name="toy2"').replace("{\"toy\": TASKS}", "{}")
     .replace('("ToyTopics", split)', '("Toy2", split)').replace('{"ToyTopics": 3}', "{}"),
     r"benchmarks\.(wos|toy): layout 'wos' is already defined by sentrepro\.data\.benchmarks\.(toy|wos)"),
])
def test_a_malformed_or_clashing_unit_is_an_error_naming_its_module(toy_on_path, body, message):
    (toy_on_path / "toy.py").write_text(body, encoding="utf-8")
    _rediscover()
    with pytest.raises(benchmarks.BenchmarkError, match=message):
        benchmarks.layouts()


# --- through the workflow ----------------------------------------------------------------------------------

TARGETS = ("resources/data/toy/CHECKED.json", "resources/data/toy_local/CHECKED.json",
           "resources/data/wos/CHECKED.json")
# the toy fixture's chain, and the check of the local toy copy (no fixture: only its check job reads the unit)
TOY_JOBS = {"fixture": 1, "download": 1, "prepare_dataset": 1, "check_dataset": 2}


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    """A checkout with the toy unit added (one new file), its source in an overlay, and the data jobs of the toy
    source and of the synthetic WOS source run through the workflow."""
    root = tmp_path_factory.mktemp("benchmark")
    repo = copy_checkout(root / "checkout")
    (repo / "src" / "sentrepro" / "data" / "benchmarks" / "toy.py").write_text(TOY_MODULE, encoding="utf-8")
    local = root / "toy-local"  # a copy of the data as a user would have it: a folder, documented counts
    local.mkdir()
    for split, n in (("train", 9), ("test", 6)):
        (local / f"{split}.tsv").write_text("".join(f"{i % 3}\tlocal text {i}\n" for i in range(n)), encoding="utf-8")
    overlay = {"experiment": "bench", "resources_dir": "resources",
               "data": {"sources": {"toy": TOY_SOURCE,
                                    "toy_local": {"url": local.as_uri(), "format": "directory",
                                                  "check": {"layout": "toy-topics"}},
                                    "wos": {"url": "fixture://wos/WebOfScience.zip", "sha256": None,
                                            "synthetic": True}}}}
    workdir = root / "work"
    write_overlay(workdir, overlay)
    snakemake(workdir, *TARGETS, repo=repo)
    return repo, workdir


@pytest.mark.slow
def test_only_the_new_module_differs_from_the_checkout(extended):
    repo, _ = extended
    differing = []
    for copied in sorted(p for p in repo.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        original = REPO / copied.relative_to(repo)
        if not original.exists() or not filecmp.cmp(copied, original, shallow=False):
            differing.append(copied.relative_to(repo).as_posix())
    assert differing == ["src/sentrepro/data/benchmarks/toy.py"]


@pytest.mark.slow
def test_the_new_benchmark_is_generated_checked_and_counted_by_the_workflow(extended):
    _, workdir = extended
    checked = json.loads((workdir / TARGETS[0]).read_text())
    assert checked["layout"] == "toy-topics" and checked["counts_checked"] is True
    assert checked["datasets"] == {"ToyTopics": {"family": "toy", "parts": {"train": 9, "test": 6}, "classes": 3,
                                                 "files": ["test.tsv", "train.tsv"]}}
    entries = checked["provenance"]["code_fingerprint"]["entries"]
    assert entries == ["cli:check-dataset", "sentrepro.data.benchmarks.toy"]
    assert "data/benchmarks/toy.py" in checked["provenance"]["code_fingerprint"]["modules"]
    local = json.loads((workdir / TARGETS[1]).read_text())
    assert local["counts_checked"] is True and local["datasets"]["ToyTopics"]["parts"] == {"train": 9, "test": 6}
    wos = json.loads((workdir / TARGETS[2]).read_text())["provenance"]["code_fingerprint"]
    assert wos["entries"] == ["cli:check-dataset", "sentrepro.data.benchmarks.wos"]
    assert "data/benchmarks/toy.py" not in wos["modules"]  # another unit is not this job's code
    assert (workdir / "resources" / "fixtures" / "toy" / "toy.zip").is_file()


@pytest.mark.slow
def test_editing_the_unit_reruns_its_jobs_only_and_adding_one_reruns_nothing(extended):
    repo, workdir = extended
    units = repo / "src" / "sentrepro" / "data" / "benchmarks"
    toy = units / "toy.py"
    with DryRuns(workdir, repo=repo) as runs:
        assert planned_jobs(runs.plan(*TARGETS)) == {}
        original = toy.read_text(encoding="utf-8")
        toy.write_text(original.replace('f"{i % 3}\\ttopic', 'f"{i % 3}\\tsubject'), encoding="utf-8")
        try:
            assert planned_jobs(runs.plan(*TARGETS)) == TOY_JOBS  # not the WOS source's (one fixture, one download)
        finally:
            toy.write_text(original, encoding="utf-8")
        assert planned_jobs(runs.plan(*TARGETS)) == {}
        added = units / "toy2.py"
        added.write_text(TOY_MODULE.replace('"toy-topics"', '"toy2-topics"').replace('name="toy"', 'name="toy2"')
                         .replace('{"toy": TASKS}', '{"toy2": TASKS}').replace("ToyTopics", "Toy2Topics"),
                         encoding="utf-8")
        try:
            assert planned_jobs(runs.plan(*TARGETS)) == {}
            clustering = units / "clustering.py"  # a unit no configured source reads
            before = clustering.read_text(encoding="utf-8")
            clustering.write_text(before.replace("text = text.strip()", "text = text.strip(' ')"), encoding="utf-8")
            try:
                assert planned_jobs(runs.plan(*TARGETS)) == {}
            finally:
                clustering.write_text(before, encoding="utf-8")
        finally:
            added.unlink()


@pytest.mark.slow
def test_the_copy_s_fixture_command_lists_the_new_benchmark(extended, tmp_path):
    repo, _ = extended
    result = subprocess.run([sys.executable, "-c", "from sentrepro.cli import main; raise SystemExit(main())",
                             "fixture", "nope", "--out-dir", str(tmp_path / "x")],
                            capture_output=True, text=True, env={"PYTHONPATH": str(repo / "src"), "PATH": ""})
    assert result.returncode == 2 and "toy" in result.stderr and "wos" in result.stderr
