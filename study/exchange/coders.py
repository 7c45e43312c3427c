"""Whose decisions an export writes: one coder's, the reconciled ones, never a silent mix.

With one coder the export writes their decisions. With several, an export names a coder,
or takes the *reconciled* decisions (``coder="consensus"``, the default once the study has
consensus decisions), or keeps every coder apart (the wide layout's column per coder, the
long layout's row per pair and coder, the project's user per coder). It never takes "the
latest decision of any coder", which mixes coders pair by pair.

The reconciled decision of a pair is the consensus coder's where it decided the pair,
else the decision the other coders agree on (one coder alone counts as agreeing); a pair
the coders decided differently and the consensus coder has not settled is *unresolved*:
it has no decision, and the export says so (``final_from`` ``unresolved``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from study.errors import StudyError
from study.queries.records import decision_coders as queried_coders
from study.queries.records import decision_rows
from study.rows import CONSENSUS
from study.view import StudyView

#: The columns of :func:`chosen_decisions`' rows, in order.
DECISION_COLUMNS = (
    "rid",
    "cid",
    "decision",
    "decision_source",
    "blind",
    "coder",
    "decided_at",
    "codebook_version",
    "delegation",
)


class CoderChoiceError(StudyError):
    """Several coders decided and the export was told neither whose decisions to write
    nor to keep the coders apart."""

    def __init__(self, coders: Sequence[str]) -> None:
        self.coders = tuple(coders)
        listed = ", ".join(repr(c) for c in self.coders[:10])
        more = f" and {len(self.coders) - 10} more" if len(self.coders) > 10 else ""
        super().__init__(
            f"the study holds decisions by {len(self.coders)} coders ({listed}{more}): "
            "choose whose decisions to export, or keep every coder apart"
        )


def decision_coders(study: StudyView) -> list[str]:
    """Every coder with a decision in the study, sorted (notes alone do not count)."""
    with study.snapshot() as conn:
        return queried_coders(conn)


def export_coder(study: StudyView, coder: str | None, *, all_coders: bool = False) -> str | None:
    """Whose decisions an export writes: ``coder`` when given; with one coder (or none),
    None (that coder's); with several, ``consensus`` (the reconciled decisions) when the
    consensus coder decided anything or every coder is kept apart (the common columns
    then hold the reconciled values).

    Raises:
        CoderChoiceError: several coders, no consensus decisions, no coder chosen and
            the coders not kept apart.
    """
    if coder is not None:
        return coder
    coders = decision_coders(study)
    if len(coders) <= 1:
        return None
    if CONSENSUS in coders or all_coders:
        return CONSENSUS
    raise CoderChoiceError(coders)


@dataclass(frozen=True)
class ChosenDecisions:
    """The decisions an export writes, one per pair at most.

    Attributes:
        rows: Tuples of :data:`DECISION_COLUMNS`, oldest first.
        unresolved: ``(rid, cid)`` of the pairs the coders decided differently and no
            consensus settled (reconciled decisions only).
    """

    rows: list[tuple[Any, ...]]
    unresolved: frozenset[tuple[int, int]] = frozenset()


def chosen_decisions(conn: sqlite3.Connection, *, coder: str | None) -> ChosenDecisions:
    """The decisions an export of ``coder`` writes: theirs, or with ``consensus`` the
    reconciled ones (module docstring). With ``coder=None`` every decision is returned
    (for a study with one coder, :func:`export_coder`)."""
    if coder != CONSENSUS:
        return ChosenDecisions(decision_rows(conn, coder=coder))
    settled: dict[tuple[int, int], tuple[Any, ...]] = {}
    others: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
    for row in decision_rows(conn):
        key = (int(row[0]), int(row[1]))
        if row[5] == CONSENSUS:
            settled[key] = row
        else:
            others.setdefault(key, []).append(row)
    unresolved = set()
    for key, rows in others.items():
        if key in settled:
            continue
        if len({int(r[2]) for r in rows}) == 1:
            settled[key] = rows[-1]
        else:
            unresolved.add(key)
    chosen = sorted(settled.values(), key=lambda r: str(r[6]))
    return ChosenDecisions(chosen, frozenset(unresolved))


def describe_choice(coder: str | None, *, coders: Sequence[str], unresolved: int = 0) -> str:
    """The provenance's ``coder exported`` line."""
    if coder is None:
        if len(coders) > 1:
            return f"every coder apart ({', '.join(coders)})"
        return coders[0] if coders else "(no decisions)"
    if coder != CONSENSUS:
        return coder
    return (
        f"reconciled decisions of {', '.join(c for c in coders if c != CONSENSUS)}: the "
        f"{CONSENSUS} coder's where it settled a pair, else the decision the coders agree "
        f"on; {unresolved} unresolved disagreement(s) left without a decision"
    )
