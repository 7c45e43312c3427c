"""Which (response, code) pairs a study has: :class:`PairScope`.

A survey of several open questions keeps them in one study: the codebook names the
response column that says which question a response answers (``question_column``) and,
per code, the questions it applies to (``Code.questions``). A pair exists only where its
code applies to its response (:meth:`codebooks.model.Codebook.applies`); a codebook
without scoping has every (response, codable code) pair, as before.

:class:`PairScope` is the one place that turns that rule into the study's pairs: the
index holds one, and every consumer asks it (the queue's and the scoring's SQL through
:meth:`PairScope.sql`, counts through :meth:`PairScope.count`, samples and findings
through :meth:`PairScope.rids`). :func:`check_scope` refuses, in one line, a codebook
whose scoping does not fit the responses. The SQL reads the scoped codes' pairs from the
file's ``scoped_pairs`` table, the scope's copy on disk (:mod:`study.file.scoped_pairs`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from codebooks.model import Code, Codebook
from study.errors import StudyError


def attrs_of(text: str) -> Mapping[str, Any]:
    """A response's stored ``attrs`` JSON as a mapping (empty when it is not one)."""
    try:
        attrs = json.loads(text)
    except ValueError:
        return {}
    return attrs if isinstance(attrs, dict) else {}


def question_value(attrs: Mapping[str, Any], column: str) -> str | None:
    """A response's question: its ``column`` value as text (``2`` for 2 or 2.0), None
    when it has none."""
    value = attrs.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


class PairScope:
    """The pairs of a study: for each codable code, the responses it applies to.

    Args:
        codebook: The study's codebook (its ``question_column`` and codes' ``questions``).
        codes: ``cid`` -> code, of every codable code.
        questions: ``rid`` -> the response's question (None: it names none), of every
            response; only read when the codebook scopes a code.
    """

    def __init__(
        self,
        codebook: Codebook,
        codes: Mapping[int, Code],
        questions: Mapping[int, str | None],
    ) -> None:
        self._all = frozenset(questions)
        self._question_of = dict(questions) if codebook.scoped else {}
        self._rids: dict[int, frozenset[int]] = {}
        by_question: dict[str | None, list[int]] = {}
        for rid, question in self._question_of.items():
            by_question.setdefault(question, []).append(rid)
        for cid, code in codes.items():
            if code.questions:
                self._rids[cid] = frozenset(
                    rid
                    for question, rids in by_question.items()
                    if codebook.applies(code, question)
                    for rid in rids
                )
        self._codes = tuple(codes)
        self._sql = self._build_sql(codes)

    @property
    def scoped(self) -> bool:
        """Whether some code applies to only some responses."""
        return bool(self._rids)

    def limited(self, cid: int) -> bool:
        """Whether code ``cid`` applies to only some responses (it is scoped)."""
        return cid in self._rids

    def applies(self, rid: int, cid: int) -> bool:
        """Whether the study has the pair (response ``rid``, code ``cid``)."""
        rids = self._rids.get(cid)
        return rids is None or rid in rids

    def rids(self, cid: int) -> frozenset[int]:
        """The responses code ``cid`` applies to."""
        return self._rids.get(cid, self._all)

    def count(self, cid: int) -> int:
        """How many pairs code ``cid`` has."""
        rids = self._rids.get(cid)
        return len(self._all) if rids is None else len(rids)

    @property
    def total(self) -> int:
        """How many pairs the study has (codable codes only)."""
        return sum(self.count(cid) for cid in self._codes)

    def question_of(self, rid: int) -> str | None:
        """The question response ``rid`` answers (None: unscoped, or none named)."""
        return self._question_of.get(rid)

    def check(self, rid: int, cid: int, *, response: str, code: Code) -> None:
        """Refuse the pair (``response``, ``code``) when the study does not have it.

        Raises:
            StudyError: the code is scoped to questions the response does not answer.
        """
        if self.applies(rid, cid):
            return
        answered = self.question_of(rid)
        raise StudyError(
            f"code {code.name!r} does not apply to response {response!r}: it answers "
            + ("no question" if answered is None else f"question {answered!r}")
            + f", and the code applies to {', '.join(code.questions)} only"
        )

    def scoped_pairs(self) -> Iterator[tuple[int, int]]:
        """``(cid, rid)`` of every pair of a scoped code (what ``scoped_pairs`` holds)."""
        for cid, rids in self._rids.items():
            for rid in rids:
                yield cid, rid

    def sql(self, rid: str, cid: str) -> str:
        """An SQL condition true for the pairs the study has, over the columns (or
        expressions) ``rid`` and ``cid``: ``1`` when every pair exists.

        A scoped code's pair is looked up in the file's ``scoped_pairs`` table (one
        index seek), which :mod:`study.file.scoped_pairs` keeps equal to this scope in
        every transaction that changes it; the codes that apply everywhere are listed."""
        return self._sql.replace("{rid}", rid).replace("{cid}", cid)

    def _build_sql(self, codes: Mapping[int, Code]) -> str:
        if not self._rids:
            return "1"
        # A row-value IN over the table's primary key: SQLite looks the pair up in that
        # index (one seek, no temporary b-tree); a correlated EXISTS costs about a seventh
        # more per pair on a page deep in the queue. The unary + keeps the planner from
        # driving a query from the table (every scoped pair, then a seek into the
        # decisions: 5 ms to count none), so the condition only ever tests a pair.
        stored = "(+{cid}, +{rid}) IN (SELECT cid, rid FROM scoped_pairs)"
        everywhere = [cid for cid in codes if cid not in self._rids]
        if not everywhere:
            return stored
        return f"({{cid}} IN ({_keys(everywhere)}) OR {stored})"


def _keys(keys: Iterable[int]) -> str:
    return ",".join(str(k) for k in sorted(keys))


def check_scope(
    codebook: Codebook, attrs: Iterable[Mapping[str, Any]], *, columns: Iterable[str] = ()
) -> None:
    """Refuse a codebook whose scoping does not fit the responses.

    Args:
        codebook: The codebook.
        attrs: Every response's other columns.
        columns: The response file's other columns (named in the error), if known.

    Raises:
        StudyError: the question column is not a column of the responses, or a code
            names a question no response answers.
    """
    column = codebook.question_column
    if column is None:
        return
    seen: set[str] = set()
    has_column = False
    for row in attrs:
        if column in row:
            has_column = True
        question = question_value(row, column)
        if question is not None:
            seen.add(question)
    if not has_column:
        known = ", ".join(columns) or "none besides the id and the text"
        raise StudyError(
            f"the codebook's question_column {column!r} is not a column of the responses "
            f"(their other columns: {known})"
        )
    for code in codebook.codes:
        missing = [q for q in code.questions if q not in seen]
        if missing:
            answered = ", ".join(sorted(seen, key=str)) or "none"
            raise StudyError(
                f"code {code.name!r} names question {missing[0]!r}, which no response "
                f"answers in column {column!r} (questions there: {answered})"
            )
