"""The commands the documentation shows, read from its Markdown, and checked against the code that runs them.

A command is a line of a fenced code block (shell, or no language) or an inline code span whose first word is
``sentrepro``, ``snakemake`` or ``make`` (a path ending in one of them counts, ``VAR=value`` before it is
dropped, ``&&``/``;``/``|`` separate commands, ``#`` starts a comment). Lines of a fenced block are concrete:
they must parse as they stand (``sentrepro``'s own argument parser, Snakemake's, the Makefile's targets and
variables). Inline spans may hold placeholders (``<suite>``, ``[--profile ...]``, ``...``): only the subcommand
and every ``--flag`` must exist there, and a span that is a message (``sentrepro evaluate: ...``) is not a
command. A fenced block right after a line ``<!-- runnable -->`` is also run by the test suite against a
finished tiny run (``tests/test_docs_commands.py``). Used by the tests only.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("sentrepro", "snakemake", "make")
SHELL_LANGUAGES = ("", "bash", "sh", "shell", "console")
RUNNABLE = "<!-- runnable -->"
FENCE = re.compile(r"^(`{3,})(\w*)[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]  # the program's base name first
    where: str  # file:line
    concrete: bool  # from a fenced block (must parse as written)
    runnable: bool  # from a block marked runnable
    line: str  # the whole shell line, as written


def documentation_files(root: Path = ROOT) -> list[Path]:
    """Where commands are shown: the README, the contributing guide and every hand-written page of the site."""
    pages = [p for p in sorted((root / "docs").rglob("*.md")) if "reference" not in p.relative_to(root / "docs").parts]
    return [root / "README.md", root / "CONTRIBUTING.md", *pages]


def _split(line: str) -> list[list[str]] | None:
    """The commands of one shell line as word lists (None when the line is no shell, e.g. Python)."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        return None
    out, current = [], []
    for word in words:
        if word and set(word) <= set(";&|"):
            out.append(current)
            current = []
        else:
            current.append(word)
    out.append(current)
    return [c for c in out if c]


def _program(words: list[str]) -> list[str] | None:
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if words and words[0].rsplit("/", 1)[-1] in COMMANDS:
        return [words[0].rsplit("/", 1)[-1], *words[1:]]
    return None


def commands(path: Path) -> list[Command]:
    """Every command shown in one Markdown file."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: list[Command] = []
    fenced_spans = []
    for fence in FENCE.finditer(text):
        fenced_spans.append(fence.span())
        if fence.group(2) not in SHELL_LANGUAGES:
            continue
        before = text[:fence.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        first_line = text.count("\n", 0, fence.start(3)) + 1
        for offset, line in enumerate(fence.group(3).splitlines()):
            for words in _split(line) or []:
                program = _program(words)
                if program:
                    found.append(Command(tuple(program), f"{rel}:{first_line + offset}", True, before == RUNNABLE,
                                         line.strip()))
    for span in SPAN.finditer(text):
        if any(start <= span.start() < end for start, end in fenced_spans):
            continue
        for words in _split(span.group(1)) or []:
            program = _program(words)
            if program and len(program) > 1 and not program[1].endswith(":") and not program[1].startswith("<"):
                found.append(Command(tuple(program), f"{rel}:{text.count(chr(10), 0, span.start()) + 1}", False,
                                     False, span.group(1)))
    return found


# --- checks -------------------------------------------------------------------------------------------------


def _options(parser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _flags(words) -> list[str]:
    return [w.strip("[]").split("=", 1)[0] for w in words if w.strip("[]").startswith("-") and w.strip("[]") != "-"]


def _parse(parser, words) -> str | None:
    """None when ``parser`` accepts ``words``; else what it said."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(list(words))
    except SystemExit as stop:
        if stop.code not in (0, None):
            return said.getvalue().strip().splitlines()[-1] if said.getvalue().strip() else f"exit {stop.code}"
    return None


def _subparsers(parser) -> dict:
    for action in parser._actions:
        if getattr(action, "choices", None) and isinstance(action.choices, dict):
            return action.choices
    return {}


def check_sentrepro(command: Command) -> str | None:
    from sentrepro.cli import build_parser

    parser = build_parser()
    words = command.words[1:]
    if command.concrete or words[0] in ("--help", "-h"):
        return _parse(parser, words)
    sub = _subparsers(parser).get(words[0])
    if sub is None:
        return f"no subcommand {words[0]!r}"
    unknown = [flag for flag in _flags(words[1:]) if flag not in _options(sub)]
    return f"no option(s) {unknown} of `sentrepro {words[0]}`" if unknown else None


def check_snakemake(command: Command) -> str | None:
    from snakemake.cli import get_argument_parser

    parser = get_argument_parser()
    if command.concrete:
        return _parse(parser, command.words[1:])
    unknown = [flag for flag in _flags(command.words[1:]) if flag not in _options(parser)]
    return f"no Snakemake option(s) {unknown}" if unknown else None


def makefile_targets_and_variables(root: Path = ROOT) -> tuple[set[str], set[str]]:
    text = (root / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, flags=re.MULTILINE))
    variables = set(re.findall(r"\$\((\w+)\)", text))
    return targets, variables


def check_make(command: Command) -> str | None:
    targets, variables = makefile_targets_and_variables()
    problems = []
    for word in command.words[1:]:
        if "=" in word:
            if word.split("=", 1)[0] not in variables:
                problems.append(f"variable {word.split('=', 1)[0]!r} is not used by the Makefile")
        elif not word.startswith("-") and word not in targets:
            problems.append(f"no make target {word!r}")
    return "; ".join(problems) or None


CHECKS = {"sentrepro": check_sentrepro, "snakemake": check_snakemake, "make": check_make}


def problems(found: list[Command]) -> list[str]:
    """``file:line: `command`: what is wrong`` for every command the code would refuse."""
    out = []
    for command in found:
        said = CHECKS[command.words[0]](command)
        if said:
            out.append(f"{command.where}: `{' '.join(command.words)}`: {said}")
    return out
