"""Certified delegation in the log: recording, undoing and quoting it (METHOD.md section 3).

A delegation applied is one ``delegate`` event (coder, configuration, ``detail`` JSON:
the level, maximum error, agreement rule, the audit's seed and, per code, the certified
threshold, its audit evidence, the guarantee sentence and the counts) and one ``record``
event per delegated pair (source ``delegated``, the model's pick) pointing to it through
``events.batch``. Earlier delegated decisions of the same coder on the codes planned that
the new plan no longer covers are cleared in the same batch, so that a repeated
delegation (after more audit coding) replaces the last one. The whole batch is undone as
one action (:meth:`Delegations.undo`, or the coder's undo when it is the
latest thing they did). A pair with a decision that is not ``delegated`` (anyone's) is
never touched, and neither is an audit pair: it is left for the blind audit.

The plan itself (the screen and the certification) is made by
:func:`study.analysis.delegation_plan.plan_delegation`; this module only needs its result.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from screening.delegation import AuditOutlook, Delegation
from study.audit.sample import read_audit
from study.errors import StudyError
from study.file import events
from study.handle import StudyHandle
from study.index import StudyIndex
from study.iteration import revisions
from study.log import decision_log as decisions
from study.rows import Decision, check_coder

#: The SQL condition "no one made a decision on pair (s.rid, s.cid) other than a
#: delegation, and the pair is not in the audit sample" (the parameter: a JSON array of
#: the code's audit rids).
_UNCODED = (
    "NOT EXISTS (SELECT 1 FROM annotations a WHERE a.rid = s.rid AND a.cid = s.cid "
    "AND a.source != 'delegated') AND s.rid NOT IN (SELECT value FROM json_each(?))"
)


@dataclass(frozen=True)
class CodePlan:
    """Delegation of one code: the certification and how it splits the uncoded pairs.

    Attributes:
        code_id: The code.
        code_name: Its name.
        delegation: The certification (threshold, audit evidence, tests, refusal reason).
        audit_size: Audit pairs drawn for the code.
        uncoded: Pairs of the code with no decision but delegated ones (anyone's) and
            not in the audit sample (audit pairs are left for the blind audit).
        unscored: Uncoded pairs not scored under the configuration (left for review).
        delegated: Uncoded scored pairs at or above the threshold (0 when refused).
        left: Uncoded pairs left for review (``uncoded - delegated``).
        outlook: How far the audit is from certifying above the screen's cut (None
            without audit decisions).
        family: How many codes share one study-wide guarantee (1: this code's holds
            on its own, at the delegation's level).
        family_level: The level at which all ``family`` guarantees hold together.
        not_covered: Uncoded pairs of responses added after the audit was drawn: left
            for review until the audit is extended over them.
        stale: Uncoded pairs whose score is stale (a changed definition or text): left
            for review until they are scored again.
        skipped: Audit pairs the coder skipped (no blind decision, though later pairs of
            the audit's random order have one): counted as errors in the certificate.
        stale_evidence: Blind audit decisions made under an older definition of the
            code: left out of the evidence.
        screen: What the code's screen says, in the words of its story (``"adds
            nothing"``, ``"no pathology found"``: :func:`screening.story.story`).
        audit_left: Responses the code's blind audit can still gain (None: not known):
            the ceiling of the outlook's "N more audit responses".
    """

    code_id: str
    code_name: str
    delegation: Delegation
    audit_size: int
    uncoded: int
    unscored: int
    delegated: int
    left: int
    outlook: AuditOutlook | None
    family: int = 1
    family_level: float | None = None
    not_covered: int = 0
    stale: int = 0
    skipped: int = 0
    stale_evidence: int = 0
    audit_left: int | None = None
    screen: str = ""

    @property
    def certified(self) -> bool:
        return self.delegation.certified

    def evidence_note(self) -> str:
        """What the audit evidence leaves out or counts against the model ("" if nothing)."""
        parts = []
        if self.skipped:
            parts.append(
                f"{self.skipped} audit pair(s) the coder skipped (no blind decision, though "
                "later pairs of the random order have one) are counted as errors"
            )
        if self.stale_evidence:
            parts.append(
                f"{self.stale_evidence} blind audit decision(s) made under an older "
                "definition of the code are left out as stale evidence"
            )
        return "; ".join(parts)

    def guarantee(self) -> str:
        """The sentence a methods section can quote (or the refusal and its reason).

        It says which guarantee it gives: this code's alone, or its share of a study-wide
        one over ``family`` codes.
        """
        sentence = self.delegation.guarantee(self.code_name)
        note = self.evidence_note()
        if note:
            sentence += f" Audit evidence: {note}."
        if not self.certified:
            return sentence
        if self.family > 1 and self.family_level is not None:
            return (
                f"{sentence} Study-wide: certified at {self.delegation.level:.4g} so that, "
                f"with {self.family_level:.0%} confidence, the guarantees of all "
                f"{self.family} codes planned hold together."
            )
        return f"{sentence} (This code's own guarantee, not a study-wide one.)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code_id": self.code_id,
            "code_name": self.code_name,
            **self.delegation.to_dict(),
            "audit_size": self.audit_size,
            "uncoded": self.uncoded,
            "unscored": self.unscored,
            "delegated": self.delegated,
            "left": self.left,
            "not_covered": self.not_covered,
            "stale": self.stale,
            "skipped": self.skipped,
            "stale_evidence": self.stale_evidence,
            "guarantee": self.guarantee(),
            "screen": self.screen,
        }


@dataclass(frozen=True)
class DelegationPlan:
    """A delegation plan over codes (from :func:`study.analysis.delegation_plan.plan_delegation`).

    Attributes:
        codes: One plan per code, in codebook order.
        max_error: The maximum error rate.
        level: The confidence level.
        config_id: The scoring configuration whose picks and confidences are used.
        config: The configuration in words (model, template, context).
        coder: Whose blind audit decisions were used.
        seed: The audit sample's seed.
        agreement: When the model counts as correct (``applies``, ``exact``, ``within1``).
        cut: The screen's confidence cut.
        study_wide: Whether the codes' guarantees hold together at ``level`` (each code
            certified at ``1 - (1 - level) / m``) or each on its own.
    """

    codes: tuple[CodePlan, ...]
    max_error: float
    level: float
    config_id: int
    config: str
    coder: str | None
    seed: int
    agreement: str
    cut: float | str
    study_wide: bool = False

    @property
    def delegated(self) -> int:
        """Pairs delegated over all codes."""
        return sum(c.delegated for c in self.codes)

    @property
    def left(self) -> int:
        """Pairs left for review over all codes."""
        return sum(c.left for c in self.codes)

    @property
    def certified(self) -> tuple[CodePlan, ...]:
        return tuple(c for c in self.codes if c.certified)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_error": self.max_error,
            "level": self.level,
            "config_id": self.config_id,
            "config": self.config,
            "coder": self.coder,
            "audit_seed": self.seed,
            "agreement": self.agreement,
            "cut": self.cut,
            "study_wide": self.study_wide,
            "sample": "blind random audit",
            "delegated": self.delegated,
            "left": self.left,
            "codes": {c.code_id: c.to_dict() for c in self.codes},
        }


@dataclass(frozen=True)
class DelegationApplied:
    """What :meth:`Delegations.apply` recorded.

    Attributes:
        event_id: The ``delegate`` event (undo it to take the whole delegation back);
            None when nothing changed (every pair already stood as delegated).
        recorded: code id -> delegated decisions recorded (new or changed picks).
        withdrawn: code id -> earlier delegated decisions cleared (no longer covered).
        unchanged: code id -> pairs already delegated to the same pick, left as they are.
    """

    event_id: int | None
    recorded: Mapping[str, int]
    withdrawn: Mapping[str, int]
    unchanged: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.recorded.values())


def audit_keys(conn: sqlite3.Connection, index: StudyIndex, code_id: str) -> str:
    """The ``rid`` of a code's audit pairs, as the JSON array :data:`_UNCODED` takes."""
    sample = read_audit(conn, index)
    if sample is None:
        return "[]"
    return json.dumps([index.response_key(r) for r in sample.pairs(code_id)])


@dataclass(frozen=True)
class Barred:
    """The pairs of one code that a delegation must leave alone, beside the audit's.

    Attributes:
        keys: The JSON array of ``rid`` :data:`_UNCODED` takes: the audit pairs, the
            responses the audit was not drawn from, and the pairs whose score is stale.
        not_covered: Uncoded pairs of responses added after the audit was drawn (a new
            wave needs its audit extended over it).
        stale: Uncoded pairs whose score came from another version of the code's
            definition or of the response's text (score them again).
    """

    keys: str
    not_covered: int
    stale: int


def barred(conn: sqlite3.Connection, index: StudyIndex, config_id: int, code_id: str) -> Barred:
    """What delegation leaves out of one code besides its audit pairs, and why."""
    cid = index.code_key(code_id)
    sample = read_audit(conn, index)
    audit = set() if sample is None else {index.response_key(r) for r in sample.pairs(code_id)}
    drawn = set() if sample is None else {index.response_key(r) for r in sample.permutation}
    coded = {
        int(r[0])
        for r in conn.execute(
            "SELECT rid FROM annotations WHERE cid = ? AND source != 'delegated'", (cid,)
        )
    }
    everyone = {int(r[0]) for r in conn.execute("SELECT rid FROM responses")}
    # A code scoped to survey questions has no pair on another question's response.
    outside = everyone - index.scope.rids(cid)
    new = (everyone - drawn if sample is not None else set()) - outside
    stale = revisions.stale_keys(conn, index, config_id, cid) - audit - new
    keys = sorted(audit | new | stale | outside)
    return Barred(json.dumps(keys), len(new - coded), len(stale - coded))


def delegable(
    conn: sqlite3.Connection,
    index: StudyIndex,
    config_id: int,
    code_id: str,
    threshold: float | None,
    left_out: Barred,
) -> tuple[int, int, int]:
    """``(uncoded, unscored, at_or_above)`` pair counts of one code under a configuration.

    Uncoded: no decision but delegated ones, and not an audit pair. At or above: uncoded
    pairs the threshold delegates, which leaves out the ``left_out`` ones
    (:func:`barred`: a new wave the audit does not cover, stale scores).
    """
    cid = index.code_key(code_id)
    audit = audit_keys(conn, index, code_id)
    bar = left_out.keys
    uncoded = int(
        conn.execute(
            "SELECT COUNT(*) FROM responses s, (SELECT ? AS cid) c WHERE "
            + _UNCODED.replace("s.cid", "c.cid")
            + f" AND {index.scope.sql('s.rid', 'c.cid')}",
            (cid, audit),
        ).fetchone()[0]
    )
    scored = int(
        conn.execute(
            f"SELECT COUNT(*) FROM scores s WHERE config_id = ? AND cid = ? AND {_UNCODED}",
            (config_id, cid, audit),
        ).fetchone()[0]
    )
    above = 0
    if threshold is not None:
        above = int(
            conn.execute(
                f"SELECT COUNT(*) FROM scores s WHERE config_id = ? AND cid = ? "
                f"AND confidence >= ? AND {_UNCODED}",
                (config_id, cid, threshold, bar),
            ).fetchone()[0]
        )
    return uncoded, uncoded - scored, above


def outside_audit(
    conn: sqlite3.Connection, index: StudyIndex, config_id: int, code_id: str, left_out: Barred
) -> tuple[list[float], list[bool]]:
    """The confidence of a code's scored pairs outside its audit, and which are uncoded.

    What certifying the delegated remainder needs
    (:func:`screening.delegation.certify_delegation`'s ``outside`` and ``delegable``):
    the pairs of the responses the audit was drawn from, with a fresh score (the
    ``left_out`` ones, from :func:`barred`, are not).
    """
    cid = index.code_key(code_id)
    audit = left_out.keys
    rows = conn.execute(
        "SELECT s.confidence, NOT EXISTS (SELECT 1 FROM annotations a WHERE a.rid = s.rid "
        "AND a.cid = s.cid AND a.source != 'delegated') FROM scores s WHERE s.config_id = ? "
        "AND s.cid = ? AND s.rid NOT IN (SELECT value FROM json_each(?))",
        (config_id, cid, audit),
    ).fetchall()
    return [float(c) for c, _ in rows], [bool(u) for _, u in rows]


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def latest_delegations(study: StudyHandle) -> dict[str, dict[str, Any]]:
    """code id -> that code's entry of the latest delegation not undone that planned it.

    Each entry is the plan's JSON for the code (threshold, audit evidence, counts,
    ``guarantee``) with ``event_id``, ``at`` and ``coder`` of its ``delegate`` event, and
    the plan's ``max_error``, ``level`` and ``config``.
    """
    with study.snapshot() as conn:
        rows = events.of_kind(
            conn, "delegate", ("id", "at", "coder", "detail", "config_id"), standing=True
        )
    out: dict[str, dict[str, Any]] = {}
    for event_id, at, coder, detail, config_id in rows:
        try:
            data = json.loads(detail or "")
            codes = data["codes"]
        except (ValueError, KeyError, TypeError):
            raise StudyError(
                f"the delegation event {event_id} cannot be read (damaged file?)",
                path=study.path,
            ) from None
        for code_id, entry in codes.items():
            out[str(code_id)] = {
                **entry,
                "event_id": int(event_id),
                "at": str(at),
                "coder": coder,
                "max_error": data.get("max_error"),
                "level": data.get("level"),
                "config": data.get("config"),
                "config_id": None if config_id is None else int(config_id),
            }
    return out


def guarantee_sentences(study: StudyHandle, *, config_id: int | None = None) -> dict[str, str]:
    """code id -> the one-sentence guarantee of its latest delegation (for provenance).

    Only codes a delegation (not undone) planned are listed; a refused code's sentence
    says that nothing was delegated and why. Each sentence names its delegation and the
    scoring configuration it was certified on, and says so when that is not
    ``config_id`` (the configuration exported, after another was activated).
    """
    out = {}
    for code, entry in latest_delegations(study).items():
        sentence = str(entry["guarantee"])
        where = f"Delegation {entry['event_id']} by {entry['coder']}"
        if entry.get("config"):
            where += f", certified on the scores of configuration {entry['config']}"
        other = entry.get("config_id")
        if config_id is not None and other is not None and other != config_id:
            where += (
                f" (configuration {other}, not the configuration {config_id} this export "
                "shows: the guarantee is about that configuration's picks)"
            )
        out[code] = f"{sentence} [{where}.]"
    return out


class Delegations:
    """Applying and undoing a delegation, and quoting its guarantees."""

    def __init__(self, study: StudyHandle) -> None:
        self._study = study

    @property
    def _index(self) -> StudyIndex:
        return self._study.index  # a revision or a wave renews it: read it each time

    def apply(self, plan: DelegationPlan, *, coder: str) -> DelegationApplied:
        """Record the model's picks on the plan's pairs as ``delegated`` decisions.

        One transaction: the pairs are found again inside it (uncoded, scored under the
        plan's configuration, confidence at or above the code's threshold), so a pair a
        human decided since the plan was made is left alone. A pair already delegated by
        ``coder`` to the same pick stands and is not recorded again; when every pair
        stands, nothing is written and ``event_id`` is None.

        Raises:
            StudyError: nothing to record, withdraw or keep, a bad coder, or a read-only
                study.
        """
        coder = check_coder(coder)
        detail = _json_safe(plan.to_dict())
        recorded: dict[str, int] = {}
        withdrawn: dict[str, int] = {}
        unchanged: dict[str, int] = {}
        with self._study.transaction(current=True) as conn:
            work: list[tuple[int, dict[int, int], list[int]]] = []
            for code_plan in plan.codes:
                cid = self._index.code_key(code_plan.code_id)
                audit = barred(conn, self._index, plan.config_id, code_plan.code_id).keys
                threshold = code_plan.delegation.threshold
                targets: dict[int, int] = {}
                if threshold is not None:
                    targets = {
                        int(rid): int(pick)
                        for rid, pick in conn.execute(
                            "SELECT rid, pick FROM scores s WHERE config_id = ? AND cid = ? "
                            f"AND confidence >= ? AND {_UNCODED}",
                            (plan.config_id, cid, threshold, audit),
                        )
                    }
                earlier = {
                    int(r[0]): int(r[1])
                    for r in conn.execute(
                        "SELECT rid, value FROM annotations WHERE coder = ? AND cid = ? "
                        "AND source = 'delegated'",
                        (coder, cid),
                    )
                }
                gone = [rid for rid in earlier if rid not in targets]
                # A pair already delegated to the same pick stands: it is not new again.
                new = {rid: pick for rid, pick in targets.items() if earlier.get(rid) != pick}
                work.append((cid, new, gone))
                recorded[code_plan.code_id] = len(new)
                withdrawn[code_plan.code_id] = len(gone)
                unchanged[code_plan.code_id] = len(targets) - len(new)
            if not any(recorded.values()) and not any(withdrawn.values()):
                if any(unchanged.values()):
                    return DelegationApplied(
                        event_id=None, recorded=recorded, withdrawn=withdrawn, unchanged=unchanged
                    )
                raise StudyError(
                    "nothing to delegate: no code is certified with uncoded pairs at or "
                    "above its threshold",
                    path=self._study.path,
                )
            head = events.append(
                conn,
                "delegate",
                coder=coder,
                source="delegated",
                config_id=plan.config_id,
                detail=json.dumps(detail, ensure_ascii=False),
            )
            for cid, new, gone in work:
                for rid in gone:
                    decisions.apply_event(
                        conn,
                        self._index,
                        "clear",
                        rid,
                        cid,
                        coder,
                        value=None,
                        source=None,
                        batch=head,
                    )
                for rid, pick in new.items():
                    decisions.apply_event(
                        conn,
                        self._index,
                        "record",
                        rid,
                        cid,
                        coder,
                        value=pick,
                        source="delegated",
                        config_id=plan.config_id,
                        batch=head,
                    )
        return DelegationApplied(
            event_id=head, recorded=recorded, withdrawn=withdrawn, unchanged=unchanged
        )

    def undo(self, *, coder: str | None = None) -> Decision | None:
        """Undo the latest delegation not yet undone (of ``coder``, or anyone's).

        Each delegated decision is taken back while it is still its pair's decision;
        pairs decided since keep the later decision.

        Returns:
            The delegation event as a :class:`Decision` of kind ``delegate``, or None
            when there is no delegation to undo.
        """
        sql = (
            "SELECT id FROM events e WHERE kind = 'delegate' "
            "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.id)"
        )
        params: list[Any] = []
        if coder is not None:
            sql += " AND coder = ?"
            params.append(check_coder(coder))
        with self._study.transaction() as conn:
            row = conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
            if row is None:
                return None
            return decisions.undo_batch(conn, self._index, int(row[0]))

    def guarantees(self) -> dict[str, str]:
        """code id -> the guarantee sentence of its latest delegation (see
        :func:`guarantee_sentences`)."""
        return guarantee_sentences(self._study)
