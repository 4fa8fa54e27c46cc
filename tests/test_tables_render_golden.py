"""Every rendering of three paper tables, byte for byte against reviewed files in tests/golden/: the long CSV, the
per-seed CSV, Markdown, LaTeX and HTML, with a caption that carries every kind of note a reader can meet (stale
code, an average left empty, a paper number of another statistic, marks, notes on the paper's numbers, published
± from a README, reported-only rows, a stand-in backbone, a subsampled suite, a training precision other than the
authors', synthetic data) and cells of every kind (best of N with its second table, mean ± std, forced
statistics, four decimals, a dash for a missing number).

The metrics files are hand-made (tests/test_tables.py's layout) with fixed numbers; paths are written relative to
the experiment (as the workflow writes them), and each file's sha256 is left out (the stale file holds today's
code record). After an intended change of the
wording or layout, regenerate with ``SENTREPRO_UPDATE_GOLDEN=1 pytest tests/test_tables_render_golden.py`` and
review the diff."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from sentrepro.planning.table_specs import load_spec
from sentrepro.tables.build import build_table
from sentrepro.tables.render import OUTPUT_SUFFIXES, write_outputs
from tests.test_tables import STS_KEYS

GOLDEN = Path(__file__).resolve().parent / "golden" / "render"
TABLES = ("conpvp_table3", "promptbert_knowl8", "promptbert_knowl9_stability")
DESCRIPTION = "What the table shows, in the paper's words.\n\n  A second paragraph, its spaces trimmed.  \n"


def _metrics(root: Path, backbone: str, method: str, seed, values: dict, *, inputs=(), extra=None) -> Path:
    run = "frozen" if seed is None else f"seed{seed}"
    path = root / "metrics" / backbone / method / run / "sts.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"suite": "sts", "results": {k: {"reported": v} for k, v in values.items()},
               "provenance": {"config": {"run": {"backbone": backbone, "method": method, "seed": seed}},
                              "inputs": list(inputs)}, **(extra or {})}
    path.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")
    return path


def _sts(base: float, step: float = 0.5) -> dict:
    values = {task: round(base + step * i, 2) for i, task in enumerate(STS_KEYS)}
    values["avg"] = round(sum(values.values()) / len(STS_KEYS), 4)
    return values


def experiment(root: Path) -> tuple[list[Path], dict]:
    """Metrics files of a small experiment that touches every caption note."""
    files = []
    for seed, base in ((1, 70.0), (2, 71.5), (3, 69.0)):            # best of 3, one subsampled, one stale
        extra = {"subset": {"applied": True, "max_samples": 100}} if seed == 2 else {}
        if seed == 3:
            extra["provenance_code"] = True
        files.append(_metrics(root, "bert-base", "simcse", seed, _sts(base), extra=extra))
    for seed in range(1, 6):                                          # PromptBERT: a mean of 10 in the paper
        files.append(_metrics(root, "bert-base", "promptbert", seed, _sts(75.0 + 0.3 * seed, 0.25)))
    train = root / "runs" / "conpvp" / "train.json"
    train.parent.mkdir(parents=True)
    train.write_text(json.dumps({"precision": {"used": "fp32", "authors": "fp16"}}), encoding="utf-8")
    for seed in (1, 2):                                               # trained in fp32, the authors in fp16
        files.append(_metrics(root, "bert-base", "conpvp", seed, _sts(77.0 + seed),
                              inputs=[{"role": "training summary", "path": str(train)}]))
    manifest = root / "data" / "synthetic-sts" / "MANIFEST.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"synthetic": True, "name": "synthetic-sts"}), encoding="utf-8")
    files.append(_metrics(root, "tiny-roberta", "simcse", 1,           # a stand-in on synthetic data, 2 tasks
                          {"STSBenchmark": 60.0, "SICKRelatedness": 61.25, "avg": 60.625},
                          inputs=[{"role": "dataset", "path": str(manifest)}]))
    files.append(_metrics(root, "bert-base", "frozen-avg", None, _sts(50.0, 1.0)))
    backbones = {"bert-base": {"stands_in_for": "bert-base"},
                 "tiny-roberta": {"stands_in_for": "roberta-base", "stand_in": "tiny://roberta/base"}}
    return files, backbones


def _stale(path: Path) -> None:
    from sentrepro.code.codedeps import code_record

    payload = json.loads(path.read_text(encoding="utf-8"))
    del payload["provenance_code"]
    record = json.loads(json.dumps(code_record(["cli:evaluate"])))
    record["fingerprint"] = "0" * 16
    record["modules"] = {name: "1" * 16 if name == "evaluation/job.py" else value
                         for name, value in record["modules"].items()}
    payload["provenance"]["code_fingerprint"] = record
    path.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("render")
    here = os.getcwd()
    os.chdir(root)                  # every path relative to the experiment, as the workflow writes them
    try:
        files, backbones = experiment(Path("."))
        for path in files:
            if "provenance_code" in json.loads(path.read_text(encoding="utf-8")):
                _stale(path)
        out = {}
        for name in TABLES:
            spec = load_spec(name)
            result = build_table(spec, files, backbones)
            for path in write_outputs(result, Path("tables") / name, "golden", DESCRIPTION):
                out[path.name] = _normalised(path.read_text(encoding="utf-8"))
    finally:
        os.chdir(here)
    return out


def _normalised(text: str) -> str:
    """Without what changes with every edit of the code: a file's sha256 (the stale file holds today's code
    record) and today's fingerprints in the stale note."""
    return _without_current_fingerprints(re.sub(r"sha256=[0-9a-f]{64}", "sha256=<sha256>", text))


def _without_current_fingerprints(text: str) -> str:
    """The stale note names today's fingerprint of the evaluation code, which changes with every edit of it."""
    from sentrepro.code.codedeps import code_record

    record = code_record(["cli:evaluate"])
    text = text.replace(record["fingerprint"], "<today>")
    return text.replace(f"-> {record['modules']['evaluation/job.py']}", "-> <today>")


def test_every_rendering_equals_its_reviewed_file(rendered):
    assert sorted(rendered) == sorted(f"{name}{suffix}" for name in TABLES for suffix in OUTPUT_SUFFIXES)
    if os.environ.get("SENTREPRO_UPDATE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    for name, text in rendered.items():
        want = (GOLDEN / name).read_text(encoding="utf-8")
        assert text == want, f"{name} differs from tests/golden/render/{name} (regenerate and review if intended)"


def _mini_spec() -> dict:
    """A made-up table that meets what the paper tables do not: notes, an ungrouped row before the groups, a
    "|" in labels, two suites (each subsampled), two stand-ins, two synthetic sources, two training precisions,
    a mean table without a selection metric (its best-of-N falls back to each cell's maximum)."""
    from sentrepro.planning.table_specs import validate_spec

    spec = {"name": "golden_mini", "paper": "ConPVP", "title": "A mini | table", "reported": "conpvp_table3",
            "statistic": "mean", "suite": "sts", "notes": ["First note.", "Second note, with <html> & a | pipe."],
            "columns": [{"key": "STS12", "label": "STS12"},
                        {"key": "MR", "label": "MR", "suite": "transfer", "reported_column": None}],
            "rows": [{"label": "SimCSE | bert", "backbone": "bert-base", "method": "simcse",
                      "reported": "bert-base/SimCSE"},
                     {"group": "RoBERTa", "label": "RoBERTa SimCSE", "backbone": "roberta-base", "method": "simcse",
                      "reported": "roberta-base/SimCSE"},
                     {"group": "RoBERTa", "label": "RoBERTa PromptBERT", "backbone": "roberta-base",
                      "method": "promptbert", "reported": "roberta-base/PromptBERT"},
                     {"group": "BERT-large", "label": "BERT-large SimCSE", "backbone": "bert-large",
                      "method": "simcse", "reported": "bert-large/SimCSE"}]}
    return validate_spec(spec, Path("golden_mini.yaml"))


def _mini_experiment(root: Path) -> list[Path]:
    files = []
    manifests = {}
    for name in ("syn-b", "syn-a"):
        manifests[name] = root / "data" / name / "MANIFEST.json"
        manifests[name].parent.mkdir(parents=True)
        manifests[name].write_text(json.dumps({"synthetic": True, "name": name}), encoding="utf-8")
    trains = {}
    for method, used in (("simcse", "bf16"), ("promptbert", "fp32"), ("simcse-a", "fp32")):
        trains[method] = root / "runs" / method / "train.json"
        trains[method].parent.mkdir(parents=True)
        trains[method].write_text(json.dumps({"precision": {"used": used, "authors": "fp16"}}), encoding="utf-8")

    def write(backbone, method, seed, suite, values, inputs, subset=None):
        path = root / "metrics" / backbone / method / f"seed{seed}" / f"{suite}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"suite": suite, "results": {k: {"reported": v} for k, v in values.items()},
                   "provenance": {"config": {"run": {"backbone": backbone, "method": method, "seed": seed}},
                                  "inputs": [{"path": str(p), "role": r} for p, r in inputs]}}
        if subset:
            payload["subset"] = {"applied": True, "max_samples": subset}
        path.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")
        files.append(path)

    for seed, base in ((1, 60.0), (2, 63.0), (3, 61.5)):
        write("tiny-a", "simcse", seed, "sts", {"STS12": base}, [(manifests["syn-a"], "dataset"),
                                                                 (trains["simcse-a"], "training summary")], 50)
        write("tiny-a", "simcse", seed, "transfer", {"MR": base + 10}, [(manifests["syn-b"], "dataset")], 30)
    write("tiny-b", "simcse", 1, "sts", {"STS12": 58.25}, [(trains["simcse"], "training summary")])
    write("tiny-b", "promptbert", 1, "sts", {"STS12": 59.5}, [(trains["promptbert"], "training summary")])
    for seed, value in ((1, 69.5), (2, 71.25)):              # the paper's backbone itself: a Δ in both tables
        write("bert-large", "simcse", seed, "sts", {"STS12": value}, [])
    return files


def test_every_rendering_of_a_table_the_papers_do_not_have_equals_its_reviewed_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = _mini_experiment(Path("."))
    backbones = {"tiny-a": {"stands_in_for": "bert-base"}, "tiny-b": {"stands_in_for": "roberta-base"},
                 "bert-large": {"stands_in_for": "bert-large"}}
    spec = _mini_spec()
    rendered = {}
    one_seed = [f for f in files if "tiny-b" in str(f)]       # every cell one seed: no second table
    for name, metrics in (("golden_mini", files), ("golden_mini_no_runs", []), ("golden_mini_one_seed", one_seed)):
        result = build_table(spec, metrics, backbones)
        for path in write_outputs(result, Path("tables") / name, "golden", DESCRIPTION):
            rendered[path.name] = _normalised(path.read_text(encoding="utf-8"))
    if os.environ.get("SENTREPRO_UPDATE_GOLDEN"):
        for name, text in rendered.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    for name, text in rendered.items():
        assert text == (GOLDEN / name).read_text(encoding="utf-8"), f"{name} differs from tests/golden/render/{name}"


def test_latex_escapes_every_character_it_knows():
    from sentrepro.tables.render import latex_escape

    assert latex_escape("a\\b&c%d$e#f_g{h}i~j^k") == (
        r"a\textbackslash{}b\&c\%d\$e\#f\_g\{h\}i\textasciitilde{}j\textasciicircum{}k")
    assert latex_escape("†‡♡♣±Δ–−×“”`·≤") == (
        r"\dag{}\ddag{}$^\heartsuit$$^\clubsuit$$\pm$$\Delta$--$-$$\times$``''$\cdot$$\le$")
    assert latex_escape("plain text 1.0") == "plain text 1.0"
