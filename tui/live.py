"""What the other coders of a study did: noticed, and brought into this coder's session.

A team codes one study at once, each coder in their own app. :class:`Live` asks the study
on a timer whether another session committed (:meth:`study.store.Study.refresh`, one
``PRAGMA data_version`` read, so it costs nothing while nobody else works) and, when one
did, brings the session up to date: another codebook version, another active
configuration, this coder's blind double coding turned on or off in another session of
theirs (each coder's setting is their own: another coder's never reaches this session).
The app then repaints what shows counts, scores and decisions. Nothing here reads
another coder's decisions: under blind double coding the queue keeps showing this
coder's own (the session's source decides that), and :func:`team` gives only names and
how many decisions each has made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from study.audit import blind_setting
from study.errors import StudyError

if TYPE_CHECKING:
    from study import Study
    from tui.session import ReviewSession

#: Seconds between two looks at the study: others' work shows within about a second.
INTERVAL = 0.5


@dataclass(frozen=True)
class Change:
    """What another session changed since the last look.

    Attributes:
        structure: The codebook or the responses (the queue's rows and the codes).
        config: The active configuration, now shown.
        blind: This coder's blind double coding was turned on or off elsewhere.
    """

    structure: bool
    config: bool
    blind: bool


@dataclass(frozen=True)
class Teammate:
    """A coder with a session open on the study now, and their decisions so far."""

    coder: str
    decided: int
    host: str


class Live:
    """Polls the study for other sessions' commits and updates the coder's session."""

    def __init__(self, study: Study, session: ReviewSession) -> None:
        self.study = study
        self.session = session
        #: The study's active configuration when last seen: the session follows another
        #: session's change of it, never a difference it chose (a coder's own learned
        #: curves are shown in their session only).
        self.active = study.scores.active_config_id()

    def poll(self) -> Change | None:
        """Look once; None when nobody else committed (or the study cannot be read now:
        the next look tries again)."""
        if self.study.closed:
            return None
        try:
            update = self.study.refresh()
            if not update.changed:
                return None
            session = self.session
            # A write refused as prepared on an older codebook has installed the new one
            # in the handle already: compare with what the session codes by, not only
            # with what this look found.
            structure = update.structure or self.study.codebook != session.codebook
            if structure:
                session.set_codebook(self.study.codebook)
            active = self.study.scores.active_config_id()
            config = active is not None and active != self.active and active != session.config_id
            self.active = active
            setting = blind_setting(self.study, coder=session.coder)
        except StudyError:
            return None
        blind = setting.enabled != session.blind_coding
        session.blind_setting = setting
        return Change(structure=structure, config=config, blind=blind)


def team(study: Study, *, coder: str) -> list[Teammate]:
    """The other coders with a session open on the study, by name, with their counts."""
    others = [h for h in study.sessions() if h.coder != coder]
    if not others:
        return []
    with study.query() as conn:
        counts = dict(
            conn.execute(
                "SELECT coder, COUNT(*) FROM annotations WHERE coder IN "
                f"({', '.join('?' * len(others))}) GROUP BY coder",
                [h.coder for h in others],
            ).fetchall()
        )
    return [Teammate(h.coder, int(counts.get(h.coder, 0)), h.host) for h in others]
