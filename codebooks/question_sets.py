"""A codebook's scoping to survey questions as REFI-QDA sets.

REFI-QDA has no place for :attr:`~codebooks.model.Codebook.question_column` and
:attr:`~codebooks.model.Code.questions`, but it has sets: named groups of codes (and, in a
project, of sources). codecurve writes one set per question, holding the codes scoped to
it, named ``question_id: q1`` for the people reading it in a QDA program, and marks it as
codecurve's in its ``Description``::

    The codes for one survey question (codecurve: question_column "question_id",
    question "q1").

Reading a set with that mark gives the scoping back; other sets stay the codebook's own.
A code that applies to every question (no ``questions``) is in no question set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from codebooks.model import Code, Codebook

_MARK = re.compile(
    r'\(codecurve: question_column (?P<column>"(?:[^"\\]|\\.)*"), '
    r'question (?P<question>"(?:[^"\\]|\\.)*")\)'
)


def set_name(column: str, question: str) -> str:
    """The name of a question's set, as a QDA program shows it."""
    return f"{column}: {question}"


def set_description(column: str, question: str) -> str:
    """The ``Description`` that marks a set as the codes of one question."""
    return (
        "The codes for one survey question (codecurve: question_column "
        f"{json.dumps(column, ensure_ascii=False)}, question "
        f"{json.dumps(question, ensure_ascii=False)})."
    )


def parse_set_description(text: str) -> tuple[str, str] | None:
    """``(column, question)`` of a set that :func:`set_description` marked, else None."""
    match = _MARK.search(text or "")
    if match is None:
        return None
    try:
        column, question = json.loads(match["column"]), json.loads(match["question"])
    except ValueError:
        return None
    if not isinstance(column, str) or not isinstance(question, str):
        return None
    if not column.strip() or not question.strip():
        return None
    return column, question


def question_members(codebook: Codebook) -> list[tuple[str, tuple[str, ...]]]:
    """Each question a code names (first appearance first) with the ids of the codes
    scoped to it, in codebook order; empty for a codebook without scoping."""
    return [
        (question, tuple(c.id for c in codebook.codes if question in c.questions))
        for question in codebook.scoped_questions()
    ]


def with_scoping(
    codebook: Codebook, column: str, members: Iterable[tuple[str, Iterable[str]]]
) -> Codebook:
    """``codebook`` scoped as the question sets say: ``question_column`` ``column``, each
    code's ``questions`` the sets it is a member of (``members``: question, code ids).

    Raises:
        CodebookError: the result is not a valid codebook.
    """
    questions: dict[str, list[str]] = {}
    for question, code_ids in members:
        for code_id in code_ids:
            held = questions.setdefault(code_id, [])
            if question not in held:
                held.append(question)
    codes = tuple(_scoped(code, questions) for code in codebook.codes)
    return replace(codebook, codes=codes, question_column=column)


def _scoped(code: Code, questions: Mapping[str, list[str]]) -> Code:
    named = questions.get(code.id)
    return replace(code, questions=tuple(named)) if named else code
