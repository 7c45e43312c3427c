"""A study's blind random audit sample (METHOD.md section 3).

One seeded permutation of the responses, shared by all codes and drawn without looking
at any score (:func:`screening.sampling.audit_permutation`); a code's audit pairs are
the first ``size`` responses of it. Every draw and every extension is an ``audit``
event whose ``detail`` JSON holds::

    {"seed": S, "sizes": {code_id: n, ...}, "added": {code_id: n, ...},
     "population": N, "draw": first_event_id, "responses": [...]}

``sizes`` are the cumulative sizes after the event; ``responses`` (the ids present at the
first draw, which the permutation is of) is stored by the first draw only, so that
responses added later (a new wave) never change the sample: a new wave needs its own
audit. Audit events are not on the undo stack: a sample is not taken back.

The study's namespace ``study.audit`` is :class:`Audit`: :meth:`Audit.sample`,
:meth:`Audit.draw`, :meth:`Audit.extend`, :meth:`Audit.progress`, :meth:`Audit.blind_pairs`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from codebooks.errors import Remedy
from screening.sampling import (
    AuditProgress,
    audit_extension,
    audit_permutation,
    audit_progress,
    audit_sizes,
    new_audit_seed,
)
from study.errors import StudyError
from study.file import events
from study.handle import StudyHandle
from study.index import StudyIndex
from study.iteration import revisions


@dataclass(frozen=True)
class AuditSample:
    """The study's audit sample as last drawn or extended.

    Attributes:
        seed: The permutation's seed.
        permutation: Response ids in audit order (the responses of the first draw).
        sizes: code id -> audit size (the first ``size`` responses of the permutation),
            in codebook order.
        event_id: The latest ``audit`` event.
        drawn_at: When it was drawn or last extended (ISO 8601 UTC).
        draws: Ids of every ``audit`` event, oldest first.
        members: code id -> the responses it applies to, for each code scoped to survey
            questions (:mod:`study.scope`): its audit pairs are the first ``size`` of
            *those* responses in the permutation, a simple random sample of its own
            population. Codes not in it apply to every response.
    """

    seed: int
    permutation: tuple[str, ...]
    sizes: Mapping[str, int]
    event_id: int
    drawn_at: str
    draws: tuple[int, ...] = ()
    _positions: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)
    members: Mapping[str, frozenset[str]] = field(default_factory=dict, compare=False)
    _orders: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)
    _ranks: dict[str, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._positions:
            positions = {r: i for i, r in enumerate(self.permutation)}
            object.__setattr__(self, "_positions", positions)

    @property
    def population(self) -> int:
        """Responses the permutation is of."""
        return len(self.permutation)

    def order(self, code_id: str) -> tuple[str, ...]:
        """The responses code ``code_id`` applies to, in audit order."""
        members = self.members.get(code_id)
        if members is None:
            return self.permutation
        found = self._orders.get(code_id)
        if found is None:
            found = tuple(r for r in self.permutation if r in members)
            self._orders[code_id] = found
            self._ranks[code_id] = {r: i for i, r in enumerate(found)}
        return found

    def population_of(self, code_id: str) -> int:
        """How many responses of the permutation code ``code_id`` applies to."""
        return len(self.order(code_id))

    @property
    def total(self) -> int:
        """Audit pairs over all codes."""
        return sum(self.sizes.values())

    def size(self, code_id: str) -> int:
        """The audit size of a code (0 for a code not in the sample)."""
        return int(self.sizes.get(code_id, 0))

    def pairs(self, code_id: str) -> tuple[str, ...]:
        """The response ids of a code's audit pairs, in audit order."""
        return self.order(code_id)[: self.size(code_id)]

    def position(self, response_id: str) -> int | None:
        """A response's 0-based place in the audit order (None: not in the population).

        Sort a queue by it to walk the audit pairs in their random order.
        """
        return self._positions.get(response_id)

    def queue(self) -> tuple[tuple[str, str], ...]:
        """Every audit pair as ``(response_id, code_id)``, in the order to code them.

        Response first: a response's audit pairs on all codes come together (one
        reading), responses in audit order, codes in codebook order.
        """
        if self.members:
            return tuple(
                (rid, code)
                for rid in self.permutation
                for code in self.sizes
                if self.is_audit(rid, code)
            )
        deepest = max(self.sizes.values(), default=0)
        return tuple(
            (rid, code)
            for i, rid in enumerate(self.permutation[:deepest])
            for code, size in self.sizes.items()
            if i < size
        )

    def is_audit(self, response_id: str, code_id: str) -> bool:
        """Whether the pair is in the audit sample."""
        if code_id in self.members:
            self.order(code_id)
            pos = self._ranks[code_id].get(response_id)
        else:
            pos = self._positions.get(response_id)
        return pos is not None and pos < self.size(code_id)


@dataclass(frozen=True)
class CodeAuditProgress:
    """How far one code's audit is coded.

    Attributes:
        code_id: The code.
        progress: Coded (blind), skipped and remaining audit pairs.
        unblind: Audit pairs decided while seeing the model (left out of the screen).
        stale: Audit pairs coded blind under an older definition of the code (counted
            as coded here, but left out of the screen and the delegation as evidence).
    """

    code_id: str
    progress: AuditProgress
    unblind: int
    stale: int = 0


def _decode(detail: str | None, event_id: int) -> dict[str, Any]:
    try:
        data = json.loads(detail or "")
    except ValueError:
        data = None
    if not isinstance(data, dict) or "seed" not in data or "sizes" not in data:
        raise StudyError(f"the audit event {event_id} cannot be read (damaged file?)")
    return data


def read_audit(conn: sqlite3.Connection, index: StudyIndex) -> AuditSample | None:
    """The audit sample recorded in the log, or None when none was drawn; ``index``
    says which responses each code applies to (:meth:`StudyIndex.scoped_members`)."""
    rows = events.of_kind(conn, "audit", ("id", "at", "detail"))
    if not rows:
        return None
    seed, permutation, positions = _first_draw(rows[0][2], int(rows[0][0]))
    last_id, last_at, last_detail = rows[-1]
    last = _decode(last_detail, last_id)
    return AuditSample(
        seed=seed,
        permutation=permutation,
        sizes={str(k): int(v) for k, v in last["sizes"].items()},
        event_id=int(last_id),
        drawn_at=str(last_at),
        draws=tuple(int(r[0]) for r in rows),
        _positions=positions,
        members=index.scoped_members(),
    )


@lru_cache(maxsize=4)
def _first_draw(
    detail: str | None, event_id: int
) -> tuple[int, tuple[str, ...], Mapping[str, int]]:
    """The seed, the permutation and each response's place in it, from the first draw's
    ``detail`` text alone (so kept by that text): an analysis reads the sample once per
    code and per step, and would otherwise sort and permute every response each time."""
    first = _decode(detail, event_id)
    responses = first.get("responses")
    if not isinstance(responses, list):
        raise StudyError(f"the audit event {event_id} lists no responses (damaged file?)")
    seed = int(first["seed"])
    permutation = tuple(audit_permutation([str(r) for r in responses], seed=seed))
    return seed, permutation, MappingProxyType({r: i for i, r in enumerate(permutation)})


def _check_codes(study: StudyHandle, codes: Sequence[str] | None) -> list[str]:
    """Code ids of ``codes`` (ids or names), or every codable code."""
    if codes is None:
        return [c.id for c in study.codes]
    out = []
    for code in codes:
        cid = study.index.code_key(code)
        out.append(study.index.code_at(cid).id)
    return out


def _split_total(total: int, codes: Sequence[str]) -> dict[str, int]:
    """``total`` audit pairs split as evenly as possible over ``codes`` (earlier first)."""
    base, extra = divmod(total, len(codes))
    return {c: base + (1 if i < extra else 0) for i, c in enumerate(codes)}


class Audit:
    """The study's audit sample: drawing, extending and reading it."""

    def __init__(self, study: StudyHandle) -> None:
        self._study = study

    @property
    def _index(self) -> StudyIndex:
        return self._study.index  # a revision or a wave renews it: read it each time

    def sample(self) -> AuditSample | None:
        """The study's audit sample, or None when none has been drawn."""
        with self._study.snapshot() as conn:
            return read_audit(conn, self._index)

    def draw(
        self,
        *,
        per_code: int | Mapping[str, int] | None = None,
        total: int | None = None,
        seed: int | None = None,
        codes: Sequence[str] | None = None,
    ) -> AuditSample:
        """Draw the audit sample (once per study; extend it later).

        Args:
            per_code: One size for every code, a mapping code -> size, or None for
                :data:`screening.sampling.DEFAULT_AUDIT_PER_CODE` capped by the
                population.
            total: Instead of ``per_code``: this many audit pairs over all the codes,
                split as evenly as possible.
            seed: The permutation's seed (a fresh random one by default).
            codes: Audit only these codes (ids or names); others get size 0.

        Raises:
            StudyError: a sample already exists, a size below 1 or above the
                population, an unknown code, a bad seed, or a read-only study.
        """
        if per_code is not None and total is not None:
            raise StudyError("give the audit size per code or in total, not both")
        chosen = _check_codes(self._study, codes)
        population = self._study.response_count()
        try:
            if total is not None:
                if isinstance(total, bool) or not isinstance(total, int) or total < 1:
                    raise ValueError(f"the audit size must be at least 1, got {total!r}")
                per_code = _split_total(total, chosen)
                if min(per_code.values()) < 1:
                    raise ValueError(
                        f"an audit of {total} pairs leaves some of the {len(chosen)} codes "
                        "without any"
                    )
            if isinstance(per_code, Mapping):
                per_code = {
                    self._index.code_at(self._index.code_key(c)).id: n for c, n in per_code.items()
                }
            members = self._index.scoped_members()
            if members:
                # Each code's sample is of the responses it applies to: sized on those.
                sizes = {}
                for code in chosen:
                    own = per_code.get(code) if isinstance(per_code, Mapping) else per_code
                    own_population = len(members[code]) if code in members else population
                    sizes.update(
                        audit_sizes(
                            [code],
                            population=own_population,
                            per_code=None if own is None else {code: own},
                        )
                    )
            else:
                sizes = audit_sizes(chosen, population=population, per_code=per_code)
            seed = new_audit_seed() if seed is None else seed
            permutation = audit_permutation(self._study.response_ids(), seed=seed)
        except ValueError as exc:
            raise StudyError(str(exc), path=self._study.path) from None
        all_sizes = {c.id: sizes.get(c.id, 0) for c in self._study.codes}
        detail = {
            "seed": int(seed),
            "sizes": all_sizes,
            "added": all_sizes,
            "population": population,
            "responses": sorted(permutation),
        }
        with self._study.transaction() as conn:
            if read_audit(conn, self._index) is not None:
                raise StudyError(
                    "the study already has an audit sample; extend it rather than drawing "
                    "another, which would let a sample be chosen",
                    path=self._study.path,
                    remedy=Remedy("audit", "extend the audit sample", {"extend": "N"}),
                )
            events.append(conn, "audit", detail=json.dumps(detail))
            sample = read_audit(conn, self._index)
        assert sample is not None
        return sample

    def restore(
        self, *, seed: int, responses: Sequence[str], sizes: Mapping[str, int], source: str
    ) -> AuditSample:
        """Record an audit sample drawn elsewhere (a project this study was made from):
        the same seed over the same responses gives the same random order, and each code
        keeps its size. One ``audit`` event whose detail says where it came from.

        Raises:
            StudyError: the study has a sample already, a response or code it does not
                have, or a size outside the population.
        """
        known = set(self._study.response_ids())
        missing = [r for r in responses if r not in known]
        if missing:
            raise StudyError(
                f"the audit sample names {len(missing)} response(s) the study does not have "
                f"(such as {missing[0]!r})",
                path=self._study.path,
            )
        codes = {c.id for c in self._study.codes}
        unknown = [c for c in sizes if c not in codes]
        if unknown:
            raise StudyError(f"the audit sample names unknown codes: {', '.join(unknown)}")
        if any(
            isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(responses)
            for n in sizes.values()
        ):
            raise StudyError("the audit sample has a size outside its population")
        all_sizes = {c.id: int(sizes.get(c.id, 0)) for c in self._study.codes}
        detail = {
            "seed": int(seed),
            "sizes": all_sizes,
            "added": all_sizes,
            "population": len(responses),
            "responses": sorted(responses),
            "restored_from": source,
        }
        with self._study.transaction() as conn:
            if read_audit(conn, self._index) is not None:
                raise StudyError("the study already has an audit sample", path=self._study.path)
            events.append(conn, "audit", detail=json.dumps(detail))
            sample = read_audit(conn, self._index)
        assert sample is not None
        return sample

    def extend(self, more: int, *, codes: Sequence[str] | None = None) -> AuditSample:
        """Add the next ``more`` responses of the same permutation to codes' samples.

        Each code's sample stays a simple random sample of the responses.

        Args:
            more: Responses to add per code (at least 1).
            codes: Extend only these codes (ids or names); every code by default.

        Raises:
            StudyError: no sample yet, ``more`` below 1, a size past the population,
                an unknown code, or a read-only study.
        """
        chosen = _check_codes(self._study, codes)
        if isinstance(more, bool) or not isinstance(more, int) or more < 1:
            raise StudyError(f"an audit grows by at least 1 response, not {more!r}")
        with self._study.transaction() as conn:
            sample = read_audit(conn, self._index)
            if sample is None:
                raise StudyError(
                    "the study has no audit sample to extend; draw one first", path=self._study.path
                )
            sizes = dict(sample.sizes)
            added: dict[str, int] = {}
            for code in chosen:
                current = sample.size(code)
                try:
                    audit_extension(sample.order(code), current=current, size=current + more)
                except ValueError as exc:
                    name = self._index.code_at(self._index.code_key(code)).name
                    raise StudyError(
                        f"cannot extend the audit of {name} by {more}: {exc}", path=self._study.path
                    ) from None
                sizes[code] = current + more
                added[code] = more
            detail = {
                "seed": sample.seed,
                "sizes": sizes,
                "added": added,
                "population": sample.population,
                "draw": sample.draws[0],
            }
            events.append(conn, "audit", detail=json.dumps(detail))
            extended = read_audit(conn, self._index)
        assert extended is not None
        return extended

    def blind_pairs(
        self, *, coder: str | None = None, stale: bool = False
    ) -> set[tuple[str, str, str]]:
        """``(response_id, code_id, coder)`` of every blind human decision that is
        evidence on its code's current definition (with ``stale``: of those that are not).

        Blind: decided without seeing the model's answer, or imported. Stale: made under
        an older codebook version than the one that last added or changed its code's
        definition (:func:`study.iteration.revisions.definition_versions`), so it judged
        another definition: the screen and the delegation leave it out and count it.
        """
        sql = (
            "SELECT rid, cid, coder, COALESCE(codebook_version, 1) FROM annotations "
            "WHERE blind = 1 AND source = 'human'"
        )
        params: list[Any] = []
        if coder is not None:
            sql += " AND coder = ?"
            params.append(coder)
        with self._study.snapshot() as conn:
            rows = conn.execute(sql, params).fetchall()
            since = revisions.definition_versions(conn)
        out = set()
        for rid, cid, who, version in rows:
            code_id = self._index.code_at(cid).id
            if (int(version) < since.get(code_id, 1)) is stale:
                out.add((self._index.response_id(rid), code_id, str(who)))
        return out

    def stale_pairs(self, *, coder: str | None = None) -> set[tuple[str, str, str]]:
        """The blind decisions made under an older definition of their code (see
        :meth:`blind_pairs`)."""
        return self.blind_pairs(coder=coder, stale=True)

    def progress(self, *, coder: str | None = None) -> dict[str, CodeAuditProgress]:
        """Per code: audit pairs coded blind (by ``coder``, or anyone), skipped, remaining.

        Raises:
            StudyError: the study has no audit sample.
        """
        with self._study.snapshot() as conn:
            sample = read_audit(conn, self._index)
            if sample is None:
                raise StudyError("the study has no audit sample yet", path=self._study.path)
            sql = "SELECT rid, cid, blind, source FROM annotations"
            params: list[Any] = []
            if coder is not None:
                sql += " WHERE coder = ?"
                params.append(coder)
            rows = conn.execute(sql, params).fetchall()
        blind: dict[str, set[str]] = {}
        seen: dict[str, set[str]] = {}
        for rid, cid, is_blind, source in rows:
            code_id = self._index.code_at(cid).id
            response_id = self._index.response_id(rid)
            if not sample.is_audit(response_id, code_id) or source == "delegated":
                continue
            if is_blind and source == "human":
                blind.setdefault(code_id, set()).add(response_id)
            else:
                seen.setdefault(code_id, set()).add(response_id)
        stale: dict[str, set[str]] = {}
        for response_id, code_id, _who in self.stale_pairs(coder=coder):
            if sample.is_audit(response_id, code_id):
                stale.setdefault(code_id, set()).add(response_id)
        out = {}
        for code in self._study.codes:
            done = blind.get(code.id, set())
            out[code.id] = CodeAuditProgress(
                code_id=code.id,
                progress=audit_progress(sample.pairs(code.id), done),
                unblind=len(seen.get(code.id, set()) - done),
                stale=len(stale.get(code.id, set())),
            )
        return out
