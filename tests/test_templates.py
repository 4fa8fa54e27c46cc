"""Template parsing and token layouts for BERT (real WordPiece vocabulary) and RoBERTa (byte-level BPE)."""

from __future__ import annotations

import pytest

from sentrepro.encoder.load import load_tokenizer
from sentrepro.methods.templates import (
    PROMPTBERT_TEMPLATES,
    TemplateError,
    append_period,
    fill_template,
    resolve_template,
    template_ids,
    template_text,
)

T1_BERT = PROMPTBERT_TEMPLATES["bert"]["T1"]
T2_BERT = PROMPTBERT_TEMPLATES["bert"]["T2"]
T1_ROBERTA = PROMPTBERT_TEMPLATES["roberta"]["T1"]


@pytest.fixture(scope="module")
def bert_tok(tiny_models):
    return load_tokenizer(str(tiny_models["bert"]))


@pytest.fixture(scope="module")
def roberta_tok(tiny_models):
    return load_tokenizer(str(tiny_models["roberta"]))


def tokens(tok, ids):
    return tok.convert_ids_to_tokens(list(ids))


def test_paper_templates_are_the_released_strings():
    assert T1_BERT == '*cls*_This_sentence_of_"*sent_0*"_means*mask*.*sep+*'
    assert T2_BERT == '*cls*_This_sentence_:_"*sent_0*"_means*mask*.*sep+*'
    assert PROMPTBERT_TEMPLATES["bert"]["manual"] == T2_BERT
    assert T1_ROBERTA == "*cls*_This_sentence_:_'_*sent_0*_'_means*mask*.*sep+*"
    assert PROMPTBERT_TEMPLATES["roberta"]["T2"] == "*cls*_The_sentence_:_'_*sent_0*_'_means*mask*.*sep+*"


def test_template_text_split_at_the_sentence():
    bert = template_text(T1_BERT, "[MASK]")
    assert (bert.prefix, bert.suffix) == ('This sentence of "', '" means[MASK].')
    roberta = template_text(T1_ROBERTA, "<mask>")
    # prefix stripped, suffix keeps its leading space (so it starts with a Ġ token)
    assert (roberta.prefix, roberta.suffix) == ("This sentence : '", " ' means<mask>.")


def test_bert_token_layout(bert_tok):
    t1 = template_ids(T1_BERT, bert_tok)
    assert tokens(bert_tok, t1.prefix) == ["[CLS]", "this", "sentence", "of", '"']
    assert tokens(bert_tok, t1.suffix) == ['"', "means", "[MASK]", ".", "[SEP]"]
    assert t1.mask_in_suffix == 2 and t1.length == 10 and t1.consistent
    assert tokens(bert_tok, t1.alone) == ["[CLS]", "this", "sentence", "of", '"', '"', "means", "[MASK]", ".",
                                          "[SEP]"]
    assert t1.mask_in_alone == 7
    t2 = template_ids(T2_BERT, bert_tok)
    assert tokens(bert_tok, t2.prefix) == ["[CLS]", "this", "sentence", ":", '"']


def test_wrap_and_mask_position(bert_tok):
    t1 = template_ids(T1_BERT, bert_tok)
    sentence = bert_tok("a man plays", add_special_tokens=False)["input_ids"]
    wrapped = t1.wrap(sentence)
    assert tokens(bert_tok, wrapped) == ["[CLS]", "this", "sentence", "of", '"', "a", "man", "plays", '"', "means",
                                         "[MASK]", ".", "[SEP]"]
    assert wrapped[t1.mask_position(len(sentence))] == bert_tok.mask_token_id
    assert t1.mask_position(3) == 10


def test_template_word_ids_and_positions(bert_tok):
    manual = template_ids(PROMPTBERT_TEMPLATES["bert"]["manual"], bert_tok)
    # OptiPrompt's prompt tokens: template[1:mask] + template[mask+1:-1]
    assert tokens(bert_tok, manual.word_ids()) == ["this", "sentence", ":", '"', '"', "means", "."]
    # [CLS] this sentence : " s0 s1 " means [MASK] . [SEP]  ->  words at 1,2,3,4 then 7,8,10
    assert manual.word_positions(2) == [1, 2, 3, 4, 7, 8, 10]
    wrapped = manual.wrap([1037, 1038])
    assert [wrapped[i] for i in manual.word_positions(2)] == manual.word_ids()


def test_roberta_token_layout(roberta_tok):
    t1 = template_ids(T1_ROBERTA, roberta_tok)
    assert t1.prefix[0] == roberta_tok.cls_token_id and t1.suffix[-1] == roberta_tok.sep_token_id
    assert roberta_tok.sep_token_id not in t1.prefix and roberta_tok.cls_token_id not in t1.suffix
    assert tokens(roberta_tok, t1.suffix)[0].startswith("Ġ")  # the suffix text starts with a space
    assert tokens(roberta_tok, t1.prefix)[1] == "This"  # the stripped prefix: no space before "This"
    assert t1.suffix[t1.mask_in_suffix] == roberta_tok.mask_token_id
    assert t1.consistent


def test_inconsistent_template_is_refused(bert_tok):
    # "un" + "able" tokenize as two pieces apart but as one word together
    template = "*cls*_un*sent_0*able_means*mask*.*sep+*"
    with pytest.raises(TemplateError, match="denoising needs both equal"):
        template_ids(template, bert_tok)
    assert not template_ids(template, bert_tok, require_consistent=False).consistent


def test_string_level_filling_and_period():
    assert fill_template(T1_BERT, "a man plays.", "[MASK]") == 'This sentence of "a man plays." means[MASK].'
    assert fill_template(T1_ROBERTA, "A man.", "<mask>") == "This sentence : ' A man. ' means<mask>."
    assert append_period("a man plays") == "a man plays."
    assert append_period("a man plays,") == "a man plays,."
    for done in ("Stop.", "Why?", 'He said "no"', "the dogs'"):
        assert append_period(done) == done
    assert append_period("") == ""


@pytest.mark.parametrize("bad, message", [
    ("*cls*_This_*sent_0*_and_*sent_0*_means*mask*.*sep+*", "exactly one"),
    ("*cls*_This_*sent_0*_means.*sep+*", "exactly one"),
    ("*cls* This *sent_0* means*mask*.*sep+*", "spaces"),
    ("*cls*_*mask*_is_*sent_0*.*sep+*", "after"),
])
def test_malformed_templates_are_named(bad, message):
    with pytest.raises(TemplateError, match=message):
        template_text(bad, "[MASK]")


def test_resolve_names_literals_and_unknown():
    assert resolve_template("T2", "roberta", PROMPTBERT_TEMPLATES) == PROMPTBERT_TEMPLATES["roberta"]["T2"]
    literal = "*cls*_*sent_0*_means*mask*.*sep+*"
    assert resolve_template(literal, "deberta", PROMPTBERT_TEMPLATES) == literal
    with pytest.raises(TemplateError, match="manual.*family 'roberta'.*T1, T2"):
        resolve_template("manual", "roberta", PROMPTBERT_TEMPLATES)
