"""The prompt templates against their sources: ConPVP's "paper" sets are read from the paper's own Table 1
(shared/seeds/conpvp-paper.txt), not typed a second time; the "released-code" sets (train.py:436-458 of
lemon0830/promptCSE's ConPVP.zip, not in this corpus) against the examples methods.md quotes from it and against
the release's own rule that every template puts [MASK] third from the end (models.py:70-72 pools at length - 3);
and the template records cannot be changed by a caller."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from sentrepro.methods import templates
from sentrepro.methods.templates import CONPVP_NEGATIVE_TEMPLATES, CONPVP_POSITIVE_TEMPLATES
from tests.test_templates import bert_tok  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[1]
SEEDS = Path(os.environ.get("SENTREPRO_SHARED_SEEDS", REPO.parent / "shared" / "seeds")).resolve()
DOCS = SEEDS.parent / "docs"


def _squeezed(text: str) -> str:
    """A template with typographic quotes as straight ones and no whitespace: the paper's and the code's layout
    of spaces around quotes differ, their words and marks do not."""
    return re.sub(r"\s+", "", text.replace("“", '"').replace("”", '"'))


def _ours(pairs) -> list[str]:
    return [_squeezed(f"{prefix}<S>{suffix}".replace("*mask*", "[MASK]")) for prefix, suffix in pairs]


def _paper_table_1() -> tuple[list[str], list[str]]:
    if not SEEDS.is_dir():
        pytest.skip(f"paper texts not found at {SEEDS} (set SENTREPRO_SHARED_SEEDS)")
    lines = (SEEDS / "conpvp-paper.txt").read_text(encoding="utf-8").splitlines()
    start = lines.index("Basic Templates")
    middle = lines.index("Semantically Opposite Templates")
    end = next(i for i in range(middle, len(lines)) if lines[i].startswith("Table 1:"))
    positive = [_squeezed(line) for line in lines[start:middle] if "<S>" in line]
    negative = [_squeezed(line) for line in lines[middle:end] if "<S>" in line]
    return positive, negative


def test_the_paper_sets_are_the_papers_table_1():
    positive, negative = _paper_table_1()
    assert (len(positive), len(negative)) == (8, 8)
    assert _ours(CONPVP_POSITIVE_TEMPLATES["paper"]) == positive
    assert _ours(CONPVP_NEGATIVE_TEMPLATES["paper"]) == negative


def test_the_released_sets_hold_the_examples_methods_md_quotes_and_end_in_mask_and_one_token(bert_tok):
    if not DOCS.is_dir():
        pytest.skip(f"reference docs not found at {DOCS}")
    section = (DOCS / "methods.md").read_text(encoding="utf-8").split("### 3.2 Inputs", 1)[1].split("\n* ", 1)[0]
    quoted = [_squeezed(q.replace("X", "<S>")) for q in re.findall(r"`([^`]*\bX\b[^`]*)`", section)]
    assert len(quoted) == 6
    released = _ours(CONPVP_POSITIVE_TEMPLATES["released-code"]) + _ours(CONPVP_NEGATIVE_TEMPLATES["released-code"])
    assert set(quoted) <= set(released)
    assert (len(CONPVP_POSITIVE_TEMPLATES["released-code"]), len(CONPVP_NEGATIVE_TEMPLATES["released-code"])) == (9, 8)
    for prefix, suffix in (CONPVP_POSITIVE_TEMPLATES["released-code"] + CONPVP_NEGATIVE_TEMPLATES["released-code"]):
        ids = bert_tok(f"{prefix}a sentence{suffix}".replace("*mask*", bert_tok.mask_token))["input_ids"]
        assert ids[-3] == bert_tok.mask_token_id, (prefix, suffix)     # [MASK] <one token> [SEP]


def test_the_released_prefixes_and_suffixes_as_the_release_writes_them():
    """train.py:436-458 as transcribed (the prefix keeps its trailing space: for byte-level BPE it is a token)."""
    assert CONPVP_POSITIVE_TEMPLATES["released-code"] == (
        ('Given " ', ' " , we assume that " *mask* "'), ('" ', ' " , Is this review positive ? *mask* .'),
        ('" ', ' " , is related to " *mask* "'), ('" ', ' " is a *mask* news'), ('" ', ' " is a *mask* one'),
        ('" ', ' " . In summary : " *mask* "'), ('By " ', ' " they mean *mask* .'),
        ('Article " ', ' " belongs to a *mask* topic'), ('This sentence : " ', ' " means *mask* .'))
    assert CONPVP_NEGATIVE_TEMPLATES["released-code"] == (
        ('" ', ' " , Is this review negative ? *mask* .'), ('Without " ', ' " they mean *mask* .'),
        ('" ', ' " is inconsistent to " *mask* "'), ('" ', ' " is totally different to : " *mask* "'),
        ('" ', ' " which not denotes *mask* .'), ('" ', ' " is not a *mask* one'),
        ('This sentence : " ', ' " not means *mask* .'), ('Article " ', ' " is definitely not about the *mask* topic'))


def test_template_records_cannot_be_changed_by_a_caller():
    frozen = [cls for cls in vars(templates).values()
              if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == templates.__name__]
    assert len(frozen) >= 2
    for cls in frozen:
        assert cls.__dataclass_params__.frozen, cls.__name__
