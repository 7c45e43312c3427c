"""Whose decisions an analysis uses when the study has several coders and none is named.

``screen``, ``delegate``, ``findings``, ``compare``, ``audit`` and ``report`` judge the
model against one coder's decisions. With several coders and no ``--coder``, they take
the coder with the most decisions that count for them (the blind audit decisions where
there are any), ties by name, and say so once, at the start, with the others and how to
choose (:attr:`CoderChoice.note`): stopping to ask sent a newcomer's first ``screen``
into an error, and a report silently lost the sections that need a coder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from codebooks.errors import Note
from study.errors import NAME_CODER


@dataclass(frozen=True)
class CoderChoice:
    """The coder an analysis uses, and whether it was taken by default among others.

    Attributes:
        coder: The coder (None: nobody has decided anything that counts).
        others: The other candidates when ``coder`` was taken by default (empty when it
            was named, or the only one).
        counted: What the candidates' counts are of (``"blind audit decisions"``).
        count: How many ``coder`` has.
    """

    coder: str | None
    others: tuple[str, ...] = ()
    counted: str = "decisions"
    count: int = 0

    @property
    def defaulted(self) -> bool:
        return bool(self.others)

    @property
    def note(self) -> str:
        """The sentence that says whose decisions are used and that another coder can be
        named ("" when the coder was named or the only one): a
        :class:`~codebooks.errors.Note` whose remedy is naming the coder."""
        if not self.others:
            return ""
        return Note(
            f"using the decisions of {self.coder} ({self.count:,} {self.counted}, the most); "
            f"also coded: {', '.join(self.others)}; another coder can be named",
            remedy=NAME_CODER,
        )


def choose_coder(
    counts: Mapping[str, int], coder: str | None, *, counted: str = "decisions"
) -> CoderChoice:
    """``coder`` when named; otherwise the one with the most of ``counts`` (coder -> how
    many decisions that count), ties by name. Whether a named coder has any is the
    caller's check (its message names what it looked for)."""
    if coder is not None:
        return CoderChoice(coder, counted=counted, count=int(counts.get(coder, 0)))
    ranked = sorted(counts, key=lambda c: (-int(counts[c]), c))
    if not ranked:
        return CoderChoice(None, counted=counted)
    first = ranked[0]
    return CoderChoice(first, tuple(ranked[1:]), counted, int(counts[first]))
