"""Guards the literal template tables of methods/templates.py (ConPVP's released and paper texts, the
sentence-end characters) and the refusal paths of the tokenized-template builders."""

from __future__ import annotations

import dataclasses

import pytest

from sentrepro.encoder.load import load_tokenizer
from sentrepro.methods import templates as T


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


# Transcribed from lemon0830/promptCSE ConPVP train.py:436-458 (released) and the paper's Table 1 (paper),
# with [MASK] written as *mask*.
RELEASED_POSITIVE = (
    ('Given " ', ' " , we assume that " *mask* "'),
    ('" ', ' " , Is this review positive ? *mask* .'),
    ('" ', ' " , is related to " *mask* "'),
    ('" ', ' " is a *mask* news'),
    ('" ', ' " is a *mask* one'),
    ('" ', ' " . In summary : " *mask* "'),
    ('By " ', ' " they mean *mask* .'),
    ('Article " ', ' " belongs to a *mask* topic'),
    ('This sentence : " ', ' " means *mask* .'),
)
PAPER_POSITIVE = (
    ('Given " ', ' " , we assume that " *mask* "'),
    ('" ', ' " , is this review positive ? *mask* .'),
    ('" ', ' " , is *mask* news'),
    ('" ', ' " , is a *mask* one'),
    ('" ', ' " . In summary : " *mask* "'),
    ('By " ', ' " they mean *mask* .'),
    ('Article " ', ' " belongs to a *mask* topic'),
    ('This sentence : " ', ' " means *mask* .'),
)
RELEASED_NEGATIVE = (
    ('" ', ' " , Is this review negative ? *mask* .'),
    ('Without " ', ' " they mean *mask* .'),
    ('" ', ' " is inconsistent to " *mask* "'),
    ('" ', ' " is totally different to : " *mask* "'),
    ('" ', ' " which not denotes *mask* .'),
    ('" ', ' " is not a *mask* one'),
    ('This sentence : " ', ' " not means *mask* .'),
    ('Article " ', ' " is definitely not about the *mask* topic'),
)
PAPER_NEGATIVE = (
    ('" ', ' " , is this review negative ? *mask* .'),
    ('Without " ', ' " , they mean *mask* .'),
    ('" ', ' " is inconsistent with " *mask* "'),
    ('" ', ' " is totally different from : " *mask* "'),
    ('" ', ' " which does not denote *mask*'),
    ('" ', ' " is not a *mask* one'),
    ('This sentence : " ', ' " does not mean *mask* .'),
    ('Article " ', ' " is definitely not about the *mask* topic'),
)


def test_conpvp_positive_templates_are_the_released_and_paper_texts():
    assert T.CONPVP_POSITIVE_TEMPLATES == {"released-code": RELEASED_POSITIVE, "paper": PAPER_POSITIVE}
    assert len(RELEASED_POSITIVE) == 9 and len(PAPER_POSITIVE) == 8


def test_conpvp_negative_templates_are_the_released_and_paper_texts():
    assert T.CONPVP_NEGATIVE_TEMPLATES == {"released-code": RELEASED_NEGATIVE, "paper": PAPER_NEGATIVE}


def test_sentence_end_characters_are_exactly_period_question_and_quotes():
    assert sorted(T.SENTENCE_END_CHARACTERS) == sorted(['.', '?', '"', "'"])
    # "X" is not a sentence end: a sentence ending in it gets the period
    assert T.append_period("ends in X") == "ends in X."


def test_template_records_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        T.TemplateText(prefix="a", suffix="b").prefix = "c"
    ids = T.TemplateIds(template="t", prefix=(1,), suffix=(2, 3), mask_in_suffix=0, alone=(1, 2, 3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ids.mask_in_suffix = 1


def test_template_ids_refuses_a_second_literal_mask_in_the_suffix(bert_tok):
    # the syntax check sees one *mask*, but the literal "[MASK]" typed after the sentence tokenizes to a
    # second mask id in the suffix
    with pytest.raises(T.TemplateError, match="exactly once"):
        T.template_ids("*cls*_*sent_0*_[MASK]_means*mask*.*sep+*", bert_tok)


def test_raw_template_ids_refuses_a_suffix_without_mask(bert_tok):
    with pytest.raises(T.TemplateError, match="exactly once"):
        T.raw_template_ids('" ', ' " means nothing .', bert_tok)
    with pytest.raises(T.TemplateError, match="exactly once"):
        T.raw_template_ids('" ', ' " *mask* and *mask* .', bert_tok)


def test_unknown_name_for_a_family_without_named_templates_says_none():
    with pytest.raises(T.TemplateError, match=r"this family: none\)"):
        T.resolve_template("T1", "deberta", T.PROMPTBERT_TEMPLATES)
