"""OptiPrompt trains its prompt vectors on one template: both views use it, whatever ``template2`` the config
carries (the unit accepts PromptBERT's keys; the released OptiPrompt run has a single template)."""

from __future__ import annotations

import pytest

from sentrepro.encoder.load import load_tokenizer
from sentrepro.methods import build_method


@pytest.mark.parametrize("template2", ["T2", "T1", None])
def test_both_views_use_the_one_template(tiny_models, template2):
    tokenizer = load_tokenizer(str(tiny_models["bert"]))
    params = {"max_seq_length": 32, "temperature": 0.05, "template2": template2}
    method = build_method("optiprompt", params, "bert", tokenizer)
    assert method.template2_string == method.template_string
    assert method.views[0] == method.views[1]
