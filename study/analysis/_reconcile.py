"""Reconciliation: the pairs two or more coders decided differently, and their consensus.

A disagreement is a pair that at least two of the chosen coders decided, with different
values. The consensus coder (default ``consensus``) settles it by recording a decision
of its own (source ``human``, through ``study.decisions.record``, so undo works as for any
coder); a disagreement is *resolved* once the consensus coder has decided its pair. The
consensus coder is never one of the coders compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from study.errors import StudyError
from study.queries.records import (
    coder_notes,
    coder_values,
    decision_coders,
    disagreeing_pairs,
    response_texts,
)
from study.rows import CONSENSUS
from study.view import StudyView


@dataclass(frozen=True)
class CoderView:
    """One coder's decision on a pair (``value`` None: this coder did not decide it)."""

    coder: str
    value: int | None
    note: str | None


@dataclass(frozen=True)
class Disagreement:
    """A pair the chosen coders decided differently, with the consensus so far.

    Attributes:
        response_id: The response.
        code_id: The code.
        text: The response's text.
        views: Each chosen coder's decision and note, in the order the coders were given.
        consensus: The consensus coder's value, or None while unresolved.
        consensus_note: The consensus coder's note on the pair, if any.
    """

    response_id: str
    code_id: str
    text: str
    views: tuple[CoderView, ...]
    consensus: int | None
    consensus_note: str | None

    @property
    def resolved(self) -> bool:
        return self.consensus is not None


def compared_coders(
    study: StudyView, *, coders: Sequence[str] | None = None, consensus: str = CONSENSUS
) -> tuple[str, ...]:
    """The coders a reconciliation compares: ``coders``, checked, or every coder with a
    decision other than the consensus coder.

    Raises:
        StudyError: a coder with no decisions in the study, the consensus coder among
            them, or fewer than two coders.
    """
    with study.snapshot() as conn:
        known = decision_coders(conn)
    others = [c for c in known if c != consensus]
    if coders is None:
        chosen = others
    else:
        chosen = list(dict.fromkeys(c.strip() for c in coders if c.strip()))
        for coder in chosen:
            if coder == consensus:
                raise StudyError(
                    f"{coder!r} is the consensus coder: compare the others and settle with it"
                )
            if coder not in known:
                listed = ", ".join(others) or "none yet"
                raise StudyError(f"no decisions by coder {coder!r}; coders: {listed}")
    if len(chosen) < 2:
        have = f"only {', '.join(repr(c) for c in chosen)}" if chosen else "none"
        raise StudyError(
            f"disagreements need the decisions of two coders; this study has {have} "
            f"(besides {consensus!r})"
        )
    return tuple(chosen)


def disagreements(
    study: StudyView,
    *,
    coders: Sequence[str] | None = None,
    consensus: str = CONSENSUS,
) -> list[Disagreement]:
    """Every pair the chosen coders decided differently, in response then code order.

    Args:
        study: The open study.
        coders: The coders compared (default: all with decisions, but the consensus coder).
        consensus: The coder whose decision settles a disagreement.

    Raises:
        StudyError: as :func:`compared_coders` (fewer than two coders, an unknown one).
    """
    chosen = compared_coders(study, coders=coders, consensus=consensus)
    with study.snapshot() as conn:
        pairs = disagreeing_pairs(conn, chosen)
        values: dict[tuple[int, int, str], int] = {}
        notes: dict[tuple[int, int, str], str] = {}
        texts: dict[int, str] = {}
        if pairs:
            wanted = [*chosen, consensus]
            keys = {(int(r), int(c)) for r, c in pairs}
            values = coder_values(conn, wanted, keys)
            notes = coder_notes(conn, wanted, keys)
            texts = response_texts(conn, (r for r, _ in pairs))
    out: list[Disagreement] = []
    for rid, cid in pairs:
        out.append(
            Disagreement(
                response_id=study.index.response_id(rid),
                code_id=study.index.code_at(cid).id,
                text=texts[rid],
                views=tuple(
                    CoderView(c, values.get((rid, cid, c)), notes.get((rid, cid, c)))
                    for c in chosen
                ),
                consensus=values.get((rid, cid, consensus)),
                consensus_note=notes.get((rid, cid, consensus)),
            )
        )
    return out


def resolved_count(items: Sequence[Disagreement]) -> int:
    """How many of ``items`` the consensus coder has decided."""
    return sum(1 for item in items if item.resolved)
