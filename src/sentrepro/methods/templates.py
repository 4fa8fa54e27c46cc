"""Prompt templates: the one module that holds template strings and turns them into token ids.

Template syntax (Prompt-BERT's ``run.sh``): ``_`` stands for a space, ``*cls*`` for the start token,
``*sent_0*`` for the sentence, ``*mask*`` for the mask token and ``*sep+*`` for the end token, e.g.
``*cls*_This_sentence_of_"*sent_0*"_means*mask*.*sep+*``.

Two ways to put a sentence into a template, both taken from the released code:

* **token level** (training, and PromptBERT's in-training dev evaluation): the template is split at
  ``*sent_0*`` into a prefix and a suffix text, each tokenized on its own
  (``prefix = encode(prefix_text)[:-1]`` = start token + prefix tokens, ``suffix =
  encode(suffix_text)[1:]`` = suffix tokens + end token, Prompt-BERT ``train.py:674-675``), and the
  sentence's token ids (tokenized without special tokens, truncated first) go in between. The
  prefix text is stripped of surrounding spaces (Prompt-BERT strips it for RoBERTa,
  ``train.py:626-628``; for WordPiece tokenizers stripping changes nothing). The suffix keeps its
  leading space, so RoBERTa's suffix starts with a ``Ġ`` token.
* **string level** (Prompt-BERT's final ``evaluation.py:193-202``): the sentence is substituted into
  the template string and the whole string is tokenized. For RoBERTa this changes the BPE of the
  first sentence word (it is now preceded by a space).

The template-only sequence used by template denoising is ``encode(prefix_text + suffix_text)``;
Prompt-BERT asserts it equals ``prefix + suffix`` (``train.py:793-794``), and so does
:func:`template_ids` unless asked not to.

Sections: the generic machinery, then one section of named templates per method (PromptBERT's
below; other methods add their own lists in their own section at the end of this file).
"""

from __future__ import annotations

from dataclasses import dataclass

CLS = "*cls*"
SEP = "*sep+*"
SENTENCE = "*sent_0*"
MASK = "*mask*"
SPACE = "_"
# Prompt-BERT's evaluation appends "." to a sentence whose last character is not one of these
# (evaluation.py:201).
SENTENCE_END_CHARACTERS = ".?\"'"


class TemplateError(ValueError):
    """A template string is malformed, unknown, or does not tokenize consistently."""


# --- generic machinery -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateText:
    """A template split at the sentence: raw texts with spaces restored and the mask token inserted."""

    prefix: str  # text before the sentence, surrounding spaces stripped
    suffix: str  # text after the sentence (keeps its leading space)


def _check_syntax(template: str) -> None:
    if " " in template:
        raise TemplateError(f"template {template!r}: write spaces as '_' (Prompt-BERT syntax)")
    for marker in (SENTENCE, MASK):
        count = template.count(marker)
        if count != 1:
            raise TemplateError(f"template {template!r}: needs exactly one {marker}, found {count}")
    if template.index(MASK) < template.index(SENTENCE):
        raise TemplateError(f"template {template!r}: the {MASK} must come after {SENTENCE}")


def template_text(template: str, mask_token: str) -> TemplateText:
    """Split ``template`` into its prefix and suffix texts for a tokenizer whose mask is ``mask_token``."""
    _check_syntax(template)
    body = template.replace(MASK, mask_token).replace(SEP, "").replace(CLS, "")
    prefix, suffix = body.split(SENTENCE)
    return TemplateText(prefix=prefix.replace(SPACE, " ").strip(), suffix=suffix.replace(SPACE, " "))


def fill_template(template: str, sentence: str, mask_token: str) -> str:
    """The string-level wrapping of Prompt-BERT's evaluation: sentence substituted, whole text stripped."""
    _check_syntax(template)
    body = template.replace(MASK, mask_token).replace(SEP, "").replace(CLS, "")
    prefix, suffix = body.split(SENTENCE)
    return (prefix.replace(SPACE, " ") + sentence + suffix.replace(SPACE, " ")).strip()


def append_period(sentence: str) -> str:
    """Prompt-BERT's evaluation: add "." unless the sentence is empty or ends in one of ``.?"'``."""
    if sentence and sentence[-1] not in SENTENCE_END_CHARACTERS:
        return sentence + "."
    return sentence


@dataclass(frozen=True)
class TemplateIds:
    """A template as token ids: ``prefix + sentence + suffix`` is one wrapped sequence.

    prefix: start token + prefix tokens; suffix: suffix tokens (exactly one is the mask) + end token;
    alone: the template tokenized without a sentence (the template-denoising input).
    """

    template: str
    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    mask_in_suffix: int
    alone: tuple[int, ...]

    @property
    def length(self) -> int:
        """Number of template tokens around a sentence (special tokens included)."""
        return len(self.prefix) + len(self.suffix)

    @property
    def consistent(self) -> bool:
        """Whether the template alone tokenizes to ``prefix + suffix`` (needed by denoising)."""
        return self.alone == self.prefix + self.suffix

    @property
    def mask_in_alone(self) -> int:
        """Index of the mask token in the template-only sequence."""
        return len(self.prefix) + self.mask_in_suffix

    def wrap(self, sentence: list[int]) -> list[int]:
        """``prefix + sentence + suffix`` (the sentence is not truncated here)."""
        return [*self.prefix, *sentence, *self.suffix]

    def mask_position(self, sentence_length: int) -> int:
        """Index of the mask token in a sequence wrapping a sentence of ``sentence_length`` tokens."""
        return len(self.prefix) + sentence_length + self.mask_in_suffix

    def word_positions(self, sentence_length: int) -> list[int]:
        """Indices of the template's own tokens between the special tokens, mask excluded, in order.

        The order is that of ``alone[1:mask] + alone[mask+1:-1]`` (prefix words, then suffix words),
        the order in which OptiPrompt's prompt vectors are created.
        """
        prefix = list(range(1, len(self.prefix)))
        start = len(self.prefix) + sentence_length
        suffix = [start + j for j in range(len(self.suffix) - 1) if j != self.mask_in_suffix]
        return prefix + suffix

    def word_ids(self) -> list[int]:
        """Token ids of the template's words (the tokens at :meth:`word_positions`)."""
        mask = self.mask_in_alone
        return list(self.alone[1:mask]) + list(self.alone[mask + 1:-1])


def template_ids(template: str, tokenizer, *, require_consistent: bool = True) -> TemplateIds:
    """Tokenize ``template`` for ``tokenizer`` into prefix / suffix ids (see the module docstring).

    Raises TemplateError when the mask token is not exactly once in the suffix or, with
    ``require_consistent``, when the template alone tokenizes differently from prefix + suffix.
    """
    text = template_text(template, tokenizer.mask_token)
    prefix = tuple(tokenizer.encode(text.prefix)[:-1])
    suffix = tuple(tokenizer.encode(text.suffix)[1:])
    alone = tuple(tokenizer.encode(text.prefix + text.suffix))
    mask_id = tokenizer.mask_token_id
    if suffix.count(mask_id) != 1 or mask_id in prefix:
        raise TemplateError(f"template {template!r}: the tokenized suffix {list(suffix)} must hold the mask "
                            f"token id {mask_id} exactly once (and the prefix none)")
    ids = TemplateIds(template=template, prefix=prefix, suffix=suffix, mask_in_suffix=suffix.index(mask_id),
                      alone=alone)
    if require_consistent and not ids.consistent:
        raise TemplateError(f"template {template!r}: tokenizing prefix and suffix separately gives "
                            f"{list(prefix + suffix)} but the template alone gives {list(alone)}; template "
                            f"denoising needs both equal")
    return ids


def resolve_template(spec: str, family: str, named: dict[str, dict[str, str]]) -> str:
    """A template string from config: a literal template, or a name looked up in ``named[family]``."""
    if SENTENCE in spec:
        return spec
    table = named.get(family, {})
    if spec not in table:
        known = ", ".join(sorted(table)) or "none"
        raise TemplateError(f"unknown template name '{spec}' for backbone family '{family}' (named templates "
                            f"for this family: {known}); or give a literal template containing {SENTENCE}")
    return table[spec]


# --- PromptBERT (Jiang et al., 2022; kongds/Prompt-BERT run.sh) ------------------------------------

PROMPTBERT_TEMPLATES: dict[str, dict[str, str]] = {
    "bert": {
        # unsup-bert: view 0 and evaluation use T1, view 1 uses T2 (run.sh:98-99, 106-107)
        "T1": '*cls*_This_sentence_of_"*sent_0*"_means*mask*.*sep+*',
        "T2": '*cls*_This_sentence_:_"*sent_0*"_means*mask*.*sep+*',
        # bert-prompt (non-fine-tuned, expected avg 67.85) and bert-optiprompt (run.sh:47-72)
        "manual": '*cls*_This_sentence_:_"*sent_0*"_means*mask*.*sep+*',
    },
    "roberta": {
        # unsup-roberta (run.sh:80-81)
        "T1": "*cls*_This_sentence_:_'_*sent_0*_'_means*mask*.*sep+*",
        "T2": "*cls*_The_sentence_:_'_*sent_0*_'_means*mask*.*sep+*",
    },
}


# --- ConPVP (Zeng et al., 2022; lemon0830/promptCSE ConPVP.zip) ------------------------------------
# Raw (prefix, suffix) texts around the sentence, exactly as the release writes them (train.py:436-458),
# with MASK standing for the tokenizer's mask token. Unlike Prompt-BERT's templates the prefix is NOT
# stripped (for byte-level BPE its trailing space becomes a token of its own), and no template-only
# sequence is needed (ConPVP denoises by attention masking), so the texts are tokenized by
# ``raw_template_ids`` as ``prefix = encode(prefix)[:-1]``, ``suffix = encode(suffix)[1:]``
# (train.py:525-526).
#
# "released-code": the 9 positive / 8 negative templates of train.py; every one ends in
# "[MASK] <one word>", so the mask is the third-to-last token (the release pools at length - 3).
# "paper": the wording of the paper's Table 1 (8 + 8; typographic quotes written as "), which differs
# from the release: no 'is related to "[MASK]"' template, "is [MASK] news", "is inconsistent with",
# "is totally different from :", "does not mean", and 'which does not denote [MASK]' puts the mask
# second-to-last (the method locates the mask token instead of assuming length - 3).
CONPVP_POSITIVE_TEMPLATES: dict[str, tuple[tuple[str, str], ...]] = {
    "released-code": (
        ('Given " ', ' " , we assume that " *mask* "'),
        ('" ', ' " , Is this review positive ? *mask* .'),
        ('" ', ' " , is related to " *mask* "'),
        ('" ', ' " is a *mask* news'),
        ('" ', ' " is a *mask* one'),
        ('" ', ' " . In summary : " *mask* "'),
        ('By " ', ' " they mean *mask* .'),
        ('Article " ', ' " belongs to a *mask* topic'),
        ('This sentence : " ', ' " means *mask* .'),
    ),
    "paper": (
        ('Given " ', ' " , we assume that " *mask* "'),
        ('" ', ' " , is this review positive ? *mask* .'),
        ('" ', ' " , is *mask* news'),
        ('" ', ' " , is a *mask* one'),
        ('" ', ' " . In summary : " *mask* "'),
        ('By " ', ' " they mean *mask* .'),
        ('Article " ', ' " belongs to a *mask* topic'),
        ('This sentence : " ', ' " means *mask* .'),
    ),
}
CONPVP_NEGATIVE_TEMPLATES: dict[str, tuple[tuple[str, str], ...]] = {
    "released-code": (
        ('" ', ' " , Is this review negative ? *mask* .'),
        ('Without " ', ' " they mean *mask* .'),
        ('" ', ' " is inconsistent to " *mask* "'),
        ('" ', ' " is totally different to : " *mask* "'),
        ('" ', ' " which not denotes *mask* .'),
        ('" ', ' " is not a *mask* one'),
        ('This sentence : " ', ' " not means *mask* .'),
        ('Article " ', ' " is definitely not about the *mask* topic'),
    ),
    "paper": (
        ('" ', ' " , is this review negative ? *mask* .'),
        ('Without " ', ' " , they mean *mask* .'),
        ('" ', ' " is inconsistent with " *mask* "'),
        ('" ', ' " is totally different from : " *mask* "'),
        ('" ', ' " which does not denote *mask*'),
        ('" ', ' " is not a *mask* one'),
        ('This sentence : " ', ' " does not mean *mask* .'),
        ('Article " ', ' " is definitely not about the *mask* topic'),
    ),
}


def conpvp_anchor_suffix(prompt_length: int, pad_token: str) -> str:
    """The anchor's suffix text: ``prompt_length`` pad placeholders, then the mask and "." (train.py:463-464).

    Built like the release, ``" ".join([" "] + [pad] * k + ["[MASK] ."])``, so it starts with two spaces.
    """
    return " ".join([" "] + [pad_token] * prompt_length + [MASK + " ."])


def raw_template_ids(prefix: str, suffix: str, tokenizer) -> TemplateIds:
    """Token ids of a raw (prefix, suffix) text pair, tokenized as ConPVP does (no stripping).

    Raises TemplateError unless the suffix holds the mask token exactly once (and the prefix none).
    """
    prefix_text, suffix_text = prefix.replace(MASK, tokenizer.mask_token), suffix.replace(MASK, tokenizer.mask_token)
    prefix_ids = tuple(tokenizer.encode(prefix_text)[:-1])
    suffix_ids = tuple(tokenizer.encode(suffix_text)[1:])
    mask_id = tokenizer.mask_token_id
    if suffix_ids.count(mask_id) != 1 or mask_id in prefix_ids:
        raise TemplateError(f"template ({prefix!r}, {suffix!r}): the tokenized suffix {list(suffix_ids)} must hold "
                            f"the mask token id {mask_id} exactly once (and the prefix none)")
    return TemplateIds(template=prefix + SENTENCE + suffix, prefix=prefix_ids, suffix=suffix_ids,
                       mask_in_suffix=suffix_ids.index(mask_id),
                       alone=tuple(tokenizer.encode(prefix_text + suffix_text)))
