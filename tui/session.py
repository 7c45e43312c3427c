"""One coder's review session over a study: no textual here, so it can be tested plainly.

The screens call :class:`ReviewSession` to record, undo and annotate; it writes through
to the study at once (one transaction per decision), so there is never unsaved state.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from codebooks.model import Code, Scale
from tui.source import Query, Row

if TYPE_CHECKING:
    from study.rows import Decision
    from study.store import Study


def default_coder() -> str:
    """The OS user name, the coder id when ``--coder`` is not given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return os.environ.get("USER") or "coder"


def response_rows(study: Study, config_id: int | None, response_id: str) -> list[Row]:
    """Every code's row for one response, in codebook order (one indexed query)."""
    return list(study.response_pairs(config_id, response_id))


class StudySource:
    """A :class:`~tui.source.PairSource` over one scoring configuration of a study."""

    def __init__(self, study: Study, config_id: int | None) -> None:
        self.study = study
        self.config_id = config_id

    def count(self, query: Query) -> int:
        return self.study.count_pairs(
            self.config_id, code_id=query.code_id, status=query.status, search=query.search
        )

    def page(self, query: Query, offset: int, limit: int) -> Sequence[Row]:
        return self.study.query_pairs(
            self.config_id,
            order=query.order,
            code_id=query.code_id,
            status=query.status,
            search=query.search,
            offset=offset,
            limit=limit,
        )

    def position(self, query: Query, key: tuple[str, str]) -> int | None:
        """Index of the pair ``key`` under ``query``, in any order, or None when the
        filters leave it out: one count of the pairs before it (a pair that jumped far,
        scored while highlighted)."""
        response_id, code_id = key
        return self.study.pair_position(
            self.config_id,
            response_id,
            code_id,
            order=query.order,
            code_filter=query.code_id,
            status=query.status,
            search=query.search,
        )
        return None


class ReviewSession:
    """The study, the coder and the scoring configuration the queue shows."""

    def __init__(self, study: Study, *, coder: str | None = None) -> None:
        self.study = study
        self.coder = coder or default_coder()
        self.codebook = study.codebook
        self.config_id: int | None = study.active_config_id()
        self.codes: dict[str, Code] = {c.id: c for c in self.codebook.codable}
        self.scales: dict[str, Scale] = {
            c.id: self.codebook.scale_for(c) for c in self.codebook.codable
        }

    @property
    def source(self) -> StudySource:
        return StudySource(self.study, self.config_id)

    def code(self, code_id: str) -> Code | None:
        return self.codes.get(code_id)

    def scale(self, code_id: str) -> Scale:
        return self.scales.get(code_id, self.codebook.scale)

    def value_at(self, code_id: str, position: int) -> int | None:
        """The value of option ``position`` (1-based) of the code's scale, if it has one."""
        options = self.scale(code_id).options
        return options[position - 1].value if 1 <= position <= len(options) else None

    def record(self, row: Row, value: int, *, source: str = "human") -> None:
        """Save a decision (durable when this returns)."""
        self.study.record(row.response_id, row.code_id, value, coder=self.coder, source=source)

    def undo(self) -> Decision | None:
        """Take back this coder's last decision; None when there is nothing to undo."""
        return self.study.undo(coder=self.coder)

    def set_note(self, row: Row, note: str) -> None:
        self.study.set_note(row.response_id, row.code_id, note or None, coder=self.coder)

    def progress(self, *, scored: bool = False) -> dict[str, Any]:
        """Decided / total, overall and per code; ``scored`` adds scored counts (a scan
        of the scores, so the status line, refreshed after every key, leaves it out)."""
        return self.study.progress(self.config_id if scored else None)

    def response_rows(self, response_id: str) -> list[Row]:
        """Every code's row for one response, in codebook order."""
        return response_rows(self.study, self.config_id, response_id)
