"""Extension units (sentrepro.code.units, sentrepro.planning.registry): discovery of sidecars and plug-ins, their checks,
their fingerprints; and the load-time name checks of what names a unit (table specs, the demo summary)."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from sentrepro.code import codedeps, units
from sentrepro.planning import registry
from sentrepro.planning.table_specs import SpecError, spec_path, validate_spec
from tests.norms_suite import norms_suite_module, norms_suite_units

REPO = Path(__file__).resolve().parents[1]


def _clear():
    for function in (units.discover, units.shared_parameters, registry.methods, registry.suites, registry.figures,
                     registry._method_params, codedeps.file_fingerprint, codedeps._record, codedeps.package_modules):
        function.cache_clear()


@pytest.fixture
def fresh():
    _clear()
    yield
    _clear()


# --- table specs: every name checked at load ------------------------------------------------------


def _spec(name: str) -> tuple[dict, Path]:
    path = spec_path(name)
    return yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_every_shipped_spec_passes_the_name_checks():
    methods = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["methods"]
    from sentrepro.planning.table_specs import available_specs, load_spec

    for name in available_specs():
        load_spec(name, methods)


def test_a_spec_naming_an_unknown_suite_fails_at_load_with_file_and_key():
    spec, path = _spec("conpvp_table6")
    spec["suite"] = "clusterin"
    with pytest.raises(SpecError, match=r"conpvp_table6\.yaml: suite: 'clusterin' is no evaluation suite"):
        validate_spec(spec, path)
    spec, path = _spec("sts_main")
    spec["rows"][2]["suite"] = "sts_strat"
    with pytest.raises(SpecError, match=r"sts_main\.yaml: rows\[2\]\.suite: 'sts_strat'"):
        validate_spec(spec, path)


def test_a_spec_naming_an_unknown_method_fails_at_load_with_file_and_key():
    spec, path = _spec("conpvp_table6")
    methods = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["methods"]
    validate_spec(copy.deepcopy(spec), path, methods)
    spec["rows"][1]["method"] = "simcs"
    with pytest.raises(SpecError, match=r"conpvp_table6\.yaml: rows\[1\]\.method: 'simcs' is no method of the config"):
        validate_spec(spec, path, methods)


def test_a_spec_naming_an_unknown_column_fails_at_load_with_file_and_key():
    spec, path = _spec("conpvp_table6")
    spec["columns"][0]["key"] = "AgNew"
    with pytest.raises(SpecError, match=r"conpvp_table6\.yaml: columns\[0\]\.key: 'AgNew' is no column"):
        validate_spec(spec, path)
    spec, path = _spec("conpvp_table6")
    spec["columns"][8]["reported_column"] = "average"
    with pytest.raises(SpecError, match=r"columns\[8\]\.reported_column: 'average' is no column"):
        validate_spec(spec, path)
    spec, path = _spec("conpvp_table6")
    spec["rows"][0]["reported"] = "bert-base/BRT"
    with pytest.raises(SpecError, match=r"rows\[0\]\.reported: 'bert-base/BRT' is no row"):
        validate_spec(spec, path)


def test_the_demo_summary_suites_are_checked(monkeypatch):
    from sentrepro.tables import demo_summary

    assert demo_summary.summary_suite("before") == "sts_start" and demo_summary.summary_suite("after") == "sts"
    monkeypatch.setitem(demo_summary.SUITES, "before", ("sts_strat", "start"))
    with pytest.raises(demo_summary.SummaryError, match=r"SUITES\['before'\]: 'sts_strat' is no evaluation suite"):
        demo_summary.summary_suite("before")
    monkeypatch.setitem(demo_summary.SUITES, "before", ("sts", "start"))
    with pytest.raises(demo_summary.SummaryError, match="scores the checkpoint model"):
        demo_summary.summary_suite("before")


# --- built-in units -----------------------------------------------------------------------------------


def test_every_unit_is_its_module_plus_its_sidecar():
    """Each unit's implementation lives in the module beside its sidecar (the shipped kinds among them: a
    copy extended by CONTRIBUTING's recipe runs this test too)."""
    found = units.discover()
    assert set(found["methods"]) >= {"simcse", "esimcse", "promptbert", "optiprompt", "conpvp", "mocoutrl",
                                     "frozen", "manual_prompt", "whitening", "static_token_avg"}
    for section, entries in found.items():
        for name, unit in entries.items():
            assert unit.origin == units.BUILT_IN
            assert unit.module_file == unit.sidecar.with_name(unit.sidecar.name.replace(".units.yaml", ".py"))
            assert unit.module_file.is_file(), unit.where
    assert registry.method("simcse").implementation == "sentrepro.methods.simcse:SimCSE"
    # the training loop's keys come with every trained kind, and only with those
    trainer = set(registry.parameter_group("trainer"))
    assert all(trainer <= set(e.params) for e in registry.methods().values() if e.trains)
    assert not any(trainer & set(e.params) for e in registry.methods().values() if not e.trains)


def _package_copy(tmp_path, monkeypatch) -> Path:
    import shutil

    copy_ = tmp_path / "sentrepro"
    shutil.copytree(units.PACKAGE_DIR, copy_, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(units, "PACKAGE_DIR", copy_)
    monkeypatch.setattr(codedeps, "PACKAGE_DIR", copy_)
    return copy_


def test_sidecar_mistakes_name_the_sidecar_and_the_key(tmp_path, monkeypatch, fresh):
    package = _package_copy(tmp_path, monkeypatch)
    sidecar = package / "methods" / "frozen.units.yaml"
    original = sidecar.read_text()
    cases = [
        (original.replace("implementation: Frozen", "implementation: Frozn"),
         r"frozen\.units\.yaml: methods\.frozen\.implementation: frozen\.py defines no 'Frozn'"),
        (original.replace("    trains: false", "    trains: false\n    train: true"),
         r"frozen\.units\.yaml: methods\.frozen: unknown key\(s\) train"),
        (original.replace("methods:", "method:"), r"frozen\.units\.yaml: unknown section\(s\) method"),
        (original.replace("  frozen:", "  simcse:"), r"methods\.simcse: already defined by .*frozen\.units\.yaml"),
    ]
    for text, message in cases:
        sidecar.write_text(text)
        _clear()
        with pytest.raises(registry.RegistryError, match=message):
            registry.methods()
    sidecar.write_text(original)
    (package / "methods" / "orphan.units.yaml").write_text("methods: {orphan: {implementation: X, trains: false}}\n")
    _clear()
    with pytest.raises(registry.RegistryError, match=r"orphan\.units\.yaml: describes units of orphan\.py"):
        registry.methods()


# --- plug-ins -------------------------------------------------------------------------------------------

PLUGIN_METHOD = '''"""A plug-in method kind: SimCSE's loss on mean-pooled token states (no projection head)."""

from torch import Tensor

from sentrepro.methods.blocks import pool_avg
from sentrepro.methods.base import SentenceModel
from sentrepro.methods.simcse import SimCSE, simcse_loss


class PluginMeanSimCSE(SimCSE):
    kind = "plugin_mean_simcse"

    def build_model(self, encoder) -> SentenceModel:
        return SentenceModel(encoder)

    def loss(self, model: SentenceModel, batch: dict[str, Tensor]) -> Tensor:
        out = model.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        pooled = pool_avg(out.last_hidden_state, batch["attention_mask"])  # (2B, H)
        pairs = pooled.view(-1, 2, pooled.shape[-1])  # (B, 2, H): the two dropout views of each sentence
        return simcse_loss(pairs[:, 0], pairs[:, 1], self.params["temperature"])

    def embed(self, model: SentenceModel, inputs: dict[str, Tensor], purpose: str) -> Tensor:
        return pool_avg(model.encoder(**inputs).last_hidden_state, inputs["attention_mask"])
'''

PLUGIN_METHOD_UNITS = '''methods:
  plugin_mean_simcse:
    implementation: PluginMeanSimCSE
    trains: true
    training_corpus: sentences
    authors_precision: fp32
    params:
      temperature: {type: number, exclusiveMinimum: 0}
      max_seq_length: {type: integer, minimum: 4}
    cost: {encoder_passes: 2, sequence_factor: 1.0}
'''

PLUGIN_SUITE = norms_suite_module("A plug-in suite: the mean L2 norm of a run's STS-B sentence vectors.")

PLUGIN_SUITE_UNITS = norms_suite_units("plugin_norms")


def build_plugin(root: Path, version: str = "0.3.1") -> Path:
    """A throwaway distribution ``sentrepro-plugin-demo`` in ``root`` (a sys.path entry): its package (a
    method kind and a suite, each a module with its sidecar) and an installed-style ``.dist-info`` whose
    entry_points.txt declares both modules in the ``sentrepro.code.units`` group."""
    package = root / "sentrepro_plugin_demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A plug-in for sentrepro (a test fixture)."""\n')
    (package / "mean_simcse.py").write_text(PLUGIN_METHOD)
    (package / "mean_simcse.units.yaml").write_text(PLUGIN_METHOD_UNITS)
    (package / "norms.py").write_text(PLUGIN_SUITE)
    (package / "norms.units.yaml").write_text(PLUGIN_SUITE_UNITS)
    info = root / f"sentrepro_plugin_demo-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sentrepro-plugin-demo\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [sentrepro.code.units]
        mean_simcse = sentrepro_plugin_demo.mean_simcse
        norms = sentrepro_plugin_demo.norms
    """))
    return root


@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch, fresh):
    root = build_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    _clear()
    return root


def test_a_plugin_is_discovered_with_its_origin_without_being_imported(plugin_on_path):
    kind, suite = registry.method("plugin_mean_simcse"), registry.suite("plugin_norms")
    assert kind.origin == suite.origin == "sentrepro-plugin-demo==0.3.1"
    assert kind.implementation == "sentrepro_plugin_demo.mean_simcse:PluginMeanSimCSE" and kind.trains
    assert set(registry.parameter_group("trainer")) <= set(kind.params) and "temperature" in kind.params
    assert "sentrepro_plugin_demo" not in sys.modules  # located, never imported, while discovered
    schema = registry.parameter_schema("plugin_mean_simcse")
    assert schema["additionalProperties"] is False and "dup_rate" not in schema["properties"]
    # the same checks as a built-in unit
    sidecar = plugin_on_path / "sentrepro_plugin_demo" / "norms.units.yaml"
    sidecar.write_text(PLUGIN_SUITE_UNITS.replace("data: sts", "data: stss"))
    _clear()
    with pytest.raises(registry.RegistryError, match=r"norms\.units\.yaml: suites\.plugin_norms\.data: 'stss'"):
        registry.suites()


def test_a_plugin_job_records_its_files_and_origin_and_built_in_jobs_do_not_change(plugin_on_path):
    entries = registry.job_entries("cli:evaluate", "plugin_mean_simcse", "plugin_norms")
    assert entries == ["cli:evaluate", "unit:method:plugin_mean_simcse", "unit:suite:plugin_norms"]
    record = codedeps.code_record(entries)
    assert record["units"] == {"unit:method:plugin_mean_simcse": "sentrepro-plugin-demo==0.3.1",
                               "unit:suite:plugin_norms": "sentrepro-plugin-demo==0.3.1"}
    assert {"plugin:sentrepro-plugin-demo/sentrepro_plugin_demo/mean_simcse.py",
            "plugin:sentrepro-plugin-demo/sentrepro_plugin_demo/norms.py",
            "methods/simcse.py", "evaluation/job.py"} <= set(record["modules"])  # it imports these of ours
    assert "plugin:sentrepro-plugin-demo/sentrepro_plugin_demo/norms.py" not in \
        codedeps.code_record(["cli:train", "unit:method:plugin_mean_simcse"])["modules"]  # the other unit's
    builtin = codedeps.rule_code(registry.job_entries("cli:evaluate", "simcse", "sts"))
    training = codedeps.rule_code(["cli:train", "unit:method:plugin_mean_simcse"])
    module = plugin_on_path / "sentrepro_plugin_demo" / "norms.py"
    module.write_text(PLUGIN_SUITE + "\n_PROBE = 1\n")
    _clear()
    assert codedeps.code_record(entries)["fingerprint"] != record["fingerprint"]
    assert codedeps.rule_code(registry.job_entries("cli:evaluate", "simcse", "sts")) == builtin
    assert codedeps.rule_code(["cli:train", "unit:method:plugin_mean_simcse"]) == training


def test_registry_command_lists_a_plugin_with_its_origin(tmp_path):
    root = build_plugin(tmp_path / "site", version="1.2.0")
    env = {"PYTHONPATH": f"{root}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "SENTREPRO_FP_CACHE": "off"}
    result = subprocess.run([str(Path(sys.executable).with_name("sentrepro")), "registry"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert "sentrepro-plugin-demo==1.2.0; sentrepro_plugin_demo.mean_simcse" in lines["plugin_mean_simcse"]
    assert "sentrepro-plugin-demo==1.2.0; sentrepro_plugin_demo.norms" in lines["plugin_norms"]
    assert "built-in; sentrepro.methods.simcse" in lines["simcse"]
