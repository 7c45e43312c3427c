"""The core's messages name no command and no option: the app shows them as they are.

Every string the core packages (``study``, ``screening``, ``scoring``, ``codebooks``)
write into their code may end up in front of an app user: an error's message, an advice
line, a note. None of them says ``--units all`` or ``codecurve score``; what to do is an
error's :class:`~codebooks.errors.Remedy`, which the command line words as a command and
the app as a key. Docstrings and comments are not messages and are not read; the few
literals that are not messages either (a file's header, a document's title) are named in
:data:`NOT_MESSAGES`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ("study", "screening", "scoring", "codebooks")

#: The command line's sub-commands: ``codecurve`` before one of them is a command to type;
#: before another word ("a codecurve study") it is the program's name.
COMMANDS = [
    "review",
    "demo",
    "new",
    "score",
    "import-codes",
    "learn",
    "explain",
    "audit",
    "screen",
    "delegate",
    "agreement",
    "export",
    "codebook",
    "add",
    "compare",
    "findings",
    "report",
    "serve",
]

CLI_SYNTAX = re.compile(r"--[a-z]|\bcodecurve (?:" + "|".join(COMMANDS) + r")\b")

#: Literals that are no message, with where they go.
NOT_MESSAGES = {
    # the first line of a codebook file codecurve writes
    "# codecurve codebook (layout: codebooks.mapping)\n",
    # the title of an exported statistics file or project (``export of STUDY``)
    "codecurve export of {}",
}


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements: docstrings of
    modules, classes and functions, and the attribute docstrings after assignments."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if not isinstance(body, list):
                continue
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    ids.add(id(statement.value))
    return ids


def literal_texts(source: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of each string literal of ``source`` but docstrings, an f-string
    as one text with ``{}`` for each of its fields."""
    tree = ast.parse(source)
    skipped = docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                skipped.add(id(value))
                is_text = isinstance(value, ast.Constant) and isinstance(value.value, str)
                parts.append(
                    str(value.value) if isinstance(value, ast.Constant) and is_text else "{}"
                )
            yield node.lineno, "".join(parts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            yield node.lineno, node.value


def offenders(source: str) -> list[tuple[int, str]]:
    """The literals of ``source`` that name a command or an option (docstrings and
    :data:`NOT_MESSAGES` aside)."""
    found = [
        (line, text)
        for line, text in literal_texts(source)
        if text not in NOT_MESSAGES and CLI_SYNTAX.search(text)
    ]
    return sorted(set(found))


def core_offenders() -> dict[str, list[str]]:
    """Per module of the core, its literals with CLI syntax."""
    found: dict[str, list[str]] = {}
    for package in CORE:
        for path in sorted((ROOT / package).rglob("*.py")):
            texts = [text for _, text in offenders(path.read_text(encoding="utf-8"))]
            if texts:
                found[str(path.relative_to(ROOT))] = texts
    return found


def test_the_core_messages_name_no_command_or_option() -> None:
    found = [f"{where}: {text!r}" for where, texts in core_offenders().items() for text in texts]
    assert not found, "messages with CLI syntax (give the error a Remedy instead):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "snippet",
    [
        'raise StudyError("no shared units (try --units all)")',
        "raise StudyError(f\"no scores for {name}; run 'codecurve score' first\")",
        'raise StudyError(\n    "no audit sample; draw one with "\n    "codecurve audit STUDY"\n)',
        'HINT = " (choose another with --coder NAME)"',
        'def advice():\n    return f"score them (codecurve score {path})"',
        'raise StudyError(f"not {enc} text" + "; try another --encoding")',
    ],
)
def test_the_scanner_finds_cli_syntax(snippet: str) -> None:
    assert offenders(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'def f():\n    """Run ``codecurve score --model M`` first."""\n    return 1',
        '"""The module, as ``codecurve audit --draw`` uses it."""',
        "x = 1  # codecurve score --draw",
        'raise StudyError("is not a codecurve study", remedy=Remedy("new", "create one"))',
        'raise StudyError("a range -- of values")',
        'TITLE = "codecurve export of {}".format(name)',
    ],
)
def test_the_scanner_leaves_docstrings_comments_and_prose(snippet: str) -> None:
    assert not offenders(snippet), snippet
