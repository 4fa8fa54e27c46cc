"""Config validation: the schema, cross references, defaults, and the slices rules depend on."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from sentrepro.planning.config import ConfigError, load_config, load_yaml, validate
from sentrepro.runs import Run, method_params, source_slice
from sentrepro.planning.matrix import runs, train_slice

REPO_ROOT = Path(__file__).resolve().parents[1]
PAPER = REPO_ROOT / "config.yaml"
DEMO = REPO_ROOT / "profiles" / "demo" / "overlay.yaml"


@pytest.fixture()
def paper() -> dict:
    return load_yaml(PAPER)


def test_paper_and_demo_configs_are_valid():
    assert load_config(PAPER)["experiment"] == "paper"
    demo = load_config(PAPER, DEMO)
    assert demo["experiment"] == "demo"
    assert {r.backbone for r in runs(demo)} == {"minilm"}


def test_unknown_key_is_named(paper):
    paper["methods"]["simcse"]["params"]["lerning_rate"] = 1e-5
    with pytest.raises(ConfigError, match=r"unknown config key 'methods\.simcse\.params\.lerning_rate'"):
        validate(paper)


def test_a_parameter_of_another_kind_is_unknown_and_each_kind_takes_its_registered_params(paper):
    """Per-kind parameter schemas come from the registry: ESimCSE's dup_rate is no SimCSE key."""
    from sentrepro.planning import registry

    wrong = copy.deepcopy(paper)
    wrong["methods"]["simcse"]["params"]["dup_rate"] = 0.3
    with pytest.raises(ConfigError, match=r"unknown config key 'methods\.simcse\.params\.dup_rate'"):
        validate(wrong)
    wrong = copy.deepcopy(paper)
    wrong["methods"]["simcse"]["per_backbone"]["bert-base"]["prompt_len"] = 4  # a ConPVP key, as an override
    with pytest.raises(ConfigError, match=r"unknown config key 'methods\.simcse\.per_backbone\.bert-base\.prompt_len'"):
        validate(wrong)
    right = copy.deepcopy(paper)
    right["methods"]["esimcse"]["params"]["dup_rate"] = 0.3
    validate(right)
    assert "dup_rate" in registry.method("esimcse").params and "dup_rate" not in registry.method("simcse").params
    assert set(registry.parameter_group("trainer")) <= set(registry.method("simcse").params)


def test_kind_suite_and_figure_enums_come_from_the_registry(paper):
    from sentrepro.planning import registry
    from sentrepro.planning.config import schema

    properties = schema()["properties"]
    assert properties["methods"]["additionalProperties"]["properties"]["kind"]["enum"] == list(registry.methods())
    evaluation = properties["evaluation"]["properties"]
    assert list(evaluation["suites"]["properties"]) == list(registry.suites())
    assert list(evaluation["figures"]["properties"]) == list(registry.figures())
    assert {name for name, entry in registry.suites().items() if entry.settings} <= set(evaluation)
    wrong = copy.deepcopy(paper)
    wrong["methods"]["simcse"]["kind"] = "simcse2"
    with pytest.raises(ConfigError, match="simcse2"):
        validate(wrong)


def test_unknown_top_level_key_is_named(paper):
    paper["experimnet"] = "x"
    with pytest.raises(ConfigError, match="unknown config key 'experimnet'"):
        validate(paper)


def test_mistyped_value_names_key(paper):
    paper["methods"]["simcse"]["per_backbone"]["bert-base"]["lr"] = "fast"
    with pytest.raises(ConfigError, match=r"methods\.simcse\.per_backbone\.bert-base\.lr"):
        validate(paper)


def test_bad_checksum_format_names_key(paper):
    paper["data"]["sources"]["wiki1m"]["sha256"] = "abc"
    with pytest.raises(ConfigError, match=r"data\.sources\.wiki1m\.sha256"):
        validate(paper)


def test_matrix_reference_to_unknown_method(paper):
    paper["matrix"]["simcse"]["methods"].append("simsce")
    with pytest.raises(ConfigError, match=r"matrix\.simcse\.methods: unknown method 'simsce'"):
        validate(paper)


def test_per_backbone_overrides_and_frozen_runs(paper):
    config = validate(paper)
    assert method_params(config, "simcse", "roberta-base")["batch_size"] == 512
    assert method_params(config, "simcse", "roberta-base")["temperature"] == 0.05
    assert Run("bert-base", "frozen-cls", None) in runs(config)
    assert Run("bert-base", "simcse", 42) in runs(config)


def test_train_slice_ignores_scheduling_and_other_backbones(paper):
    config = validate(paper)
    run = Run("bert-base", "simcse", 42)
    before = train_slice(config, run)
    changed = copy.deepcopy(paper)
    changed["backbones"]["bert-base"]["resources"]["mem_mb"] = 1
    changed["methods"]["simcse"]["per_backbone"]["bert-large"]["lr"] = 9e-5
    assert train_slice(validate(changed), run) == before
    changed["methods"]["simcse"]["per_backbone"]["bert-base"]["lr"] = 9e-5
    assert train_slice(validate(changed), run) != before


def test_mirror_rewrites_source_url(paper, tmp_path):
    (tmp_path / "senteval").mkdir()
    paper["data"]["mirror"] = str(tmp_path)
    spec = source_slice(validate(paper), "senteval")
    assert spec["url"] == (tmp_path / "senteval").as_uri()
    assert spec["format"] == "directory"


# --- precision, dev scoring and line splitting in the training slice (issue 12) -------------------


AUTHORS_PRECISION = {"simcse": "fp16", "promptbert": "fp16", "promptbert-no-denoise": "fp16", "optiprompt": "fp16",
                     "esimcse": "fp16", "conpvp": "fp16", "conpvp-no-proto": "fp16", "mocoutrl": "fp32",
                     "mocoutrl-released": "fp32"}


def test_default_precision_is_the_authors_per_method_even_without_a_gpu(paper):
    """The slice carries the resolved precision: what each method's authors trained in, whatever the machine."""
    config = validate(paper)
    assert config["training"]["precision"] == "authors"
    for method, precision in AUTHORS_PRECISION.items():
        training = train_slice(config, Run("bert-base", method, 42))["training"]
        assert training["precision"] == precision, method
        assert training["dev_precision"] == "fp32"
    # a frozen baseline never trains: its slice (read for its method params) keeps the option as configured
    assert train_slice(config, Run("bert-base", "frozen-cls", None))["training"]["precision"] == "authors"
    changed = copy.deepcopy(paper)
    changed["training"]["precision"] = "bf16"  # the speed option applies to every method as given
    config = validate(changed)
    assert {train_slice(config, Run("bert-base", m, 42))["training"]["precision"] for m in AUTHORS_PRECISION} == {"bf16"}


def test_explicit_precision_equal_to_the_authors_leaves_those_slices_unchanged(paper):
    config = validate(paper)
    changed = copy.deepcopy(paper)
    changed["training"]["precision"] = "fp16"
    fp16 = validate(changed)
    for method in ("simcse", "esimcse", "conpvp"):
        run = Run("bert-base", method, 42)
        assert train_slice(fp16, run) == train_slice(config, run)
    run = Run("deberta-base", "mocoutrl", 42)
    assert train_slice(fp16, run)["training"]["precision"] == "fp16" != train_slice(config, run)["training"]["precision"]


def test_line_split_is_in_the_lines_corpus_slice_only(paper):
    config = validate(paper)
    assert train_slice(config, Run("bert-base", "simcse", 42))["corpus"]["line_split"] == "splitlines"
    demo = load_config(PAPER, DEMO)  # the wikidump reader: the option does not apply, so it is not in the slice
    assert "line_split" not in train_slice(demo, Run("minilm", "simcse", 42))["corpus"]
    changed = copy.deepcopy(paper)
    changed["corpus"]["line_split"] = "lines"
    with pytest.raises(ConfigError, match="corpus.line_split"):
        validate(changed)


def test_schema_defaults_are_filled_where_absent_and_only_there(paper):
    """Every `default:` of the schema reaches the validated config (the one place defaults are written):
    top level, nested blocks, additionalProperties maps (sources, backbones), $ref'd properties, and
    blocks created from a default (models, demo_summary). Given values win; blocks without a default
    are not invented, and method params (no schema defaults) stay as written."""
    source = next(iter(paper["data"]["sources"]))
    backbone = next(iter(paper["backbones"]))
    for block, key in [(paper, "resources_dir"), (paper, "models"), (paper, "demo_summary"),
                       (paper["data"], "mirror"), (paper["data"]["sources"][source], "sha256"),
                       (paper["data"]["sources"][source], "synthetic"), (paper["backbones"][backbone], "revision"),
                       (paper["training"], "checkpoint_every"), (paper["training"], "eval_at_start"),
                       (paper["evaluation"], "batch_size"), (paper["evaluation"]["transfer"], "seed"),
                       (paper["evaluation"]["fewshot"], "holdout_seed"), (paper["evaluation"]["wos"], "seed"),
                       (paper["evaluation"]["tsne"], "perplexity")]:
        block.pop(key, None)
    paper["training"]["compile"] = True
    paper["evaluation"]["tsne"].pop("runs", None)
    filled = validate(paper)
    assert filled["resources_dir"] == "resources"
    assert filled["models"] == {"mirror": None} and filled["demo_summary"] == {"enabled": False}
    assert filled["data"]["mirror"] is None
    assert filled["data"]["sources"][source]["sha256"] is None
    assert filled["data"]["sources"][source]["synthetic"] is False
    assert filled["backbones"][backbone]["revision"] is None
    assert filled["training"]["checkpoint_every"] == 125 and filled["training"]["eval_at_start"] is True
    assert filled["training"]["compile"] is True  # given, not overwritten
    assert filled["evaluation"]["batch_size"] == 128
    assert filled["evaluation"]["transfer"]["seed"] == 1111 and filled["evaluation"]["wos"]["seed"] == 1111
    assert filled["evaluation"]["fewshot"]["holdout_seed"] == 1111
    assert filled["evaluation"]["tsne"]["perplexity"] == 30 and filled["evaluation"]["tsne"]["device"] == "auto"
    assert "runs" not in filled["evaluation"]["tsne"]  # an object without a default is not invented
    assert filled["methods"] == paper["methods"]  # method params have no schema defaults
    assert "sha256" not in paper["data"]["sources"][source]  # the caller's dict is left as it was


def test_a_default_the_filler_cannot_place_is_an_error(paper, monkeypatch):
    import sentrepro.planning.config as config_module

    schema = config_module.schema()
    schema["properties"]["training"]["oneOf"] = [{"properties": {"threads": {"default": 4}}}, {}]
    monkeypatch.setattr(config_module, "_schema_with_registry", lambda: schema)
    with pytest.raises(ConfigError, match="default inside 'oneOf'"):
        config_module._with_defaults(paper)
