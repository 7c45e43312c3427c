"""The ids of a study: :class:`StudyIndex`.

:class:`StudyIndex` maps the ids people use (response ids, code ids or names) to the
integer keys the tables use (``rid``, ``cid``) and back. An index is never changed: a
codebook revision or a new wave of responses gives the study a new one
(``Study.install``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from codebooks.errors import CodebookError
from codebooks.model import Code, Codebook
from study.errors import StudyError
from study.scope import PairScope


class StudyIndex:
    """Response and code ids of one study, with the tables' integer keys.

    Args:
        path: The study file (named in errors).
        codebook: The study's codebook snapshot.
        responses: ``(rid, id)`` of every response.
        codes: ``(cid, id)`` of every code of the codebook, in codebook order.
        questions: ``rid`` -> the question the response answers, when the codebook
            scopes codes to questions (:mod:`study.scope`).

    Raises:
        StudyError: a code key names a code the codebook lacks (a damaged file).
    """

    def __init__(
        self,
        *,
        path: Path,
        codebook: Codebook,
        responses: Iterable[tuple[int, str]],
        codes: Iterable[tuple[int, str]],
        questions: Mapping[int, str | None] | None = None,
    ) -> None:
        self._path = path
        self._codebook = codebook
        self._rid_of: dict[str, int] = {}
        self._id_of: dict[int, str] = {}
        for rid, rid_text in responses:
            self._rid_of[str(rid_text)] = int(rid)
            self._id_of[int(rid)] = str(rid_text)
        self._cid_of: dict[str, int] = {}
        self._code_of: dict[int, Code] = {}
        by_id = {c.id: c for c in codebook.codes}
        for cid, code_id in codes:
            code = by_id.get(code_id)
            if code is None:
                raise StudyError(
                    f"the study file is damaged: code {code_id!r} is not in its codebook "
                    "(restore from a copy)",
                    path=path,
                )
            self._cid_of[code_id] = int(cid)
            self._code_of[int(cid)] = code
        self._codable = tuple(cid for cid, c in self._code_of.items() if c.codable)
        self._codable_sql = ",".join(str(c) for c in self._codable)
        self._members: dict[str, frozenset[str]] | None = None
        self._scope = PairScope(
            codebook,
            {cid: self._code_of[cid] for cid in self._codable},
            questions if questions is not None else dict.fromkeys(self._id_of),
        )

    @property
    def scope(self) -> PairScope:
        """Which (response, code) pairs the study has (:mod:`study.scope`)."""
        return self._scope

    def needless(self, response_id: str, code_id: str, value: int) -> bool:
        """Whether a decision is "does not apply" on a pair the study does not have (a
        code scoped to questions the response does not answer): it agrees with the
        scoping, so an import leaves it out (a file listing the codes that apply implies
        "does not apply" for every other code)."""
        rid, cid = self._rid_of.get(str(response_id)), self._cid_of.get(code_id)
        if rid is None or cid is None or self._scope.applies(rid, cid):
            return False
        return value == self._codebook.scale_for(self._code_of[cid]).lowest.value

    def scoped_members(self) -> Mapping[str, frozenset[str]]:
        """code id -> the response ids it applies to, for each code scoped to
        questions (the others apply to every response)."""
        if self._members is None:
            self._members = {
                self._code_of[cid].id: frozenset(self._id_of[r] for r in self._scope.rids(cid))
                for cid in self._codable
                if self._code_of[cid].questions
            }
        return self._members

    @property
    def codable_keys(self) -> tuple[int, ...]:
        """The ``cid`` of every codable code, in codebook order."""
        return self._codable

    @property
    def codable_sql(self) -> str:
        """:attr:`codable_keys` as an SQL list's inside (``3,4,7``), for ``cid IN (...)``."""
        return self._codable_sql

    @property
    def response_count(self) -> int:
        return len(self._rid_of)

    def response_ids(self) -> list[str]:
        """Response ids in key order (natural order: ``r2`` before ``r10``)."""
        return [self._id_of[rid] for rid in sorted(self._id_of)]

    def response_key(self, response_id: str) -> int:
        """The ``rid`` of a response.

        Raises:
            StudyError: no such response.
        """
        rid = self._rid_of.get(str(response_id))
        if rid is None:
            raise StudyError(f"no response with id {response_id!r} in this study", path=self._path)
        return rid

    def response_id(self, rid: int) -> str:
        """The id of the response with key ``rid``."""
        return self._id_of[rid]

    def response_ids_by_key(self) -> Mapping[int, str]:
        """``rid`` -> response id, for mapping a whole column at once."""
        return self._id_of

    def code_key(self, code_id: str) -> int:
        """The ``cid`` of a codable code, by id or (case-insensitive) name.

        Raises:
            StudyError: no such code, or a category that only groups codes.
        """
        cid = self._cid_of.get(code_id)
        if cid is None:
            try:
                cid = self._cid_of[self._codebook.code(code_id).id]
            except (CodebookError, KeyError):
                raise StudyError(
                    f"no code {code_id!r} in the study's codebook {self._codebook.name!r}",
                    path=self._path,
                ) from None
        if not self._code_of[cid].codable:
            raise StudyError(
                f"code {self._code_of[cid].name!r} is a category that only groups codes; "
                "it cannot be decided",
                path=self._path,
            )
        return cid

    def code_at(self, cid: int) -> Code:
        """The code with key ``cid``."""
        return self._code_of[cid]

    def codable_codes(self) -> tuple[Code, ...]:
        """The codable codes, in codebook order."""
        return tuple(self._code_of[cid] for cid in self._codable)
