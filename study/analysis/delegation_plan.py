"""Plan a certified delegation of a study's confident pairs (METHOD.md section 3).

:func:`plan_delegation` screens each code on its blind audit decisions and, where the
screen is Valid, certifies the lowest confidence threshold whose error rate is at most
the maximum at the chosen level (:func:`screening.delegation.certify_delegation`), then
counts the uncoded pairs at or above it. Apply the plan with
:meth:`study.log.delegations.Delegations.apply` (:mod:`study.log.delegations`).
"""

from __future__ import annotations

import math
import sqlite3
from typing import TYPE_CHECKING

import numpy as np

from screening import decisions_agree
from screening.apply import AgreementMode
from screening.delegation import (
    Delegation,
    audit_outlook,
    certify_delegation,
    insufficient_reason,
)
from study.analysis.screen import SCALE_CUT, Cut, StudyScreening, scale_cut, screen_study
from study.errors import DRAW_AUDIT, SCORE, StudyError
from study.labels import backend_name
from study.log.delegation_scope import DelegationScope
from study.log.delegations import CodePlan, DelegationPlan
from study.queries.records import pair_confidences
from study.store import Study

if TYPE_CHECKING:
    import pandas as pd

    from codebooks.model import Code

__all__ = ["CodePlan", "DelegationPlan", "check_unit", "plan_delegation"]


def check_unit(value: float, name: str) -> float:
    """``value`` if it lies strictly between 0 and 1.

    Raises:
        StudyError: otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise StudyError(f"{name} must lie strictly between 0 and 1, not {value!r}")
    return float(value)


def _refused(reason: str, *, tier: str, max_error: float, level: float) -> Delegation:
    return Delegation(
        threshold=None,
        n=0,
        errors=0,
        upper_bound=math.nan,
        max_error=max_error,
        level=level,
        n_audit=0,
        n_audit_errors=0,
        min_pairs=0,
        tests=(),
        tier=tier,
        reason=reason,
        scope="delegated",
    )


def skipped_confidence(
    conn: sqlite3.Connection, study: Study, config_id: int, code_id: str, *, coded: set[str]
) -> np.ndarray:
    """The model's confidence on a code's skipped audit pairs: those before the last
    one ``coded`` (blind, in the audit's random order) that have no blind decision.

    Pairs not scored under the configuration are left out, as coded ones are.
    """
    missing = _skipped(study, code_id, coded)
    if not missing:
        return np.zeros(0)
    confidences = pair_confidences(
        conn,
        config_id,
        study.index.code_key(code_id),
        [study.index.response_key(r) for r in missing],
    )
    return np.asarray(confidences, dtype=float)


def _skipped(study: Study, code_id: str, coded: set[str]) -> list[str]:
    """A code's audit pairs before the last one ``coded`` that are not coded."""
    sample = study.audit.sample()
    if sample is None:
        return []
    pairs = sample.pairs(code_id)
    last = max((i for i, r in enumerate(pairs) if r in coded), default=-1)
    return [r for r in pairs[: last + 1] if r not in coded]


def plan_delegation(
    study: Study,
    *,
    max_error: float = 0.05,
    level: float = 0.95,
    code: str | None = None,
    coder: str | None = None,
    config_id: int | None = None,
    cut: Cut = SCALE_CUT,
    agreement: AgreementMode = "applies",
    study_wide: bool = False,
    screened: StudyScreening | None = None,
    pairs: pd.DataFrame | None = None,
) -> DelegationPlan:
    """Certify, per code, which uncoded pairs the model's picks may stand for.

    Args:
        study: An open study with scores, an audit sample and blind audit decisions.
        max_error: The maximum error rate among delegated pairs, in (0, 1).
        level: The confidence level of the guarantee, in (0, 1).
        code: Plan only this code (id or name).
        coder: Whose audit decisions (needed when there are several coders).
        config_id: The scoring configuration (the active one by default).
        cut: The screen's confidence cut (also the threshold of the audit outlook).
        agreement: When the model counts as correct.
        study_wide: Certify each of the m codes planned at ``1 - (1 - level) / m``
            (Bonferroni), so that all their guarantees hold together at ``level``;
            otherwise each code's guarantee holds at ``level`` on its own.
        screened: The screen of the audit sample under these same options, where the
            caller has it already (it is screened here otherwise).
        pairs: ``study.queries.annotated_pairs(config_id, coder=screened.coder)``, where
            the caller has read it already (it is read here otherwise).

    Returns:
        The plan: per code the certification or its refusal, and the pair counts.

    Raises:
        StudyError: ``max_error`` or ``level`` outside (0, 1), no scores, no audit
            sample, an unknown code or coder.
        NoBlindDecisionsError: no blind decision on the audit sample.
    """
    eps = check_unit(max_error, "the maximum error")
    lvl = check_unit(level, "the level")
    if config_id is None:
        config_id = study.scores.active_config_id()
    if config_id is None:
        raise StudyError(
            "the study has no scores yet; score it first", path=study.path, remedy=SCORE
        )
    sample = study.audit.sample()
    if sample is None:
        from study.scores.learned import is_learned

        learned = is_learned(study.scores.config_row(config_id))
        raise StudyError(
            "the study has no audit sample; draw one and code it blind"
            + (
                ": a learned configuration is judged on the blind audit only, never on "
                "the decisions it learned from"
                if learned
                else ""
            ),
            path=study.path,
            remedy=DRAW_AUDIT,
        )
    if screened is None:
        screened = screen_study(
            study, config_id, code=code, coder=coder, cut=cut, agreement=agreement, sample="audit"
        )
    frame = (
        study.queries.annotated_pairs(config_id, coder=screened.coder) if pairs is None else pairs
    )
    blind = study.audit.blind_pairs(coder=screened.coder)
    stale = study.audit.stale_pairs(coder=screened.coder)
    codes = [study.code(code)] if code is not None else list(study.codes)
    family = len(codes) if study_wide else 1
    code_level = 1.0 - (1.0 - lvl) / family
    row = study.scores.config_row(config_id)
    with study.snapshot() as conn:
        scope = DelegationScope(conn, study.index, config_id)
        plans = [
            _plan_code(
                study,
                one,
                scope=scope,
                frame=frame,
                blind=blind,
                stale=stale,
                screened=screened,
                eps=eps,
                code_level=code_level,
                family=family,
                lvl=lvl,
                cut=cut,
                agreement=agreement,
            )
            for one in codes
        ]
    return DelegationPlan(
        codes=tuple(plans),
        max_error=eps,
        level=lvl,
        config_id=config_id,
        config=(
            f"{row.model.name}@{row.model.revision} ({backend_name(row)}; {row.template_id}, "
            f"context {row.context}, key {row.key})"
        ),
        coder=screened.coder,
        seed=sample.seed,
        agreement=agreement,
        cut=cut,
        study_wide=study_wide,
    )


def _plan_code(
    study: Study,
    one: Code,
    *,
    scope: DelegationScope,
    frame: pd.DataFrame,
    blind: set[tuple[str, str, str]],
    stale: set[tuple[str, str, str]],
    screened: StudyScreening,
    eps: float,
    code_level: float,
    family: int,
    lvl: float,
    cut: Cut,
    agreement: AgreementMode,
) -> CodePlan:
    """One code's plan (:func:`plan_delegation`'s loop body)."""
    sample = study.audit.sample()
    assert sample is not None  # checked by plan_delegation
    rows = frame[(frame["code_id"] == one.id) & (frame["source"] == "human")]
    keep = [
        bool(scored) and sample.is_audit(r, one.id) and (r, one.id, w) in blind
        for r, w, scored in zip(rows["response_id"], rows["coder"], rows["scored"], strict=True)
    ]
    rows = rows[np.asarray(keep, dtype=bool)] if len(rows) else rows
    n_stale = sum(1 for r, c, _w in stale if c == one.id and sample.is_audit(r, one.id))
    left_out = scope.barred(one.id)
    skipped = scope.confidence_of(
        one.id, _skipped(study, one.id, {r for r, c, _w in blind | stale if c == one.id})
    )
    report = screened.per_code.get(one.name)
    tier = report.tier if report is not None else "Insufficient data"
    finding = (
        insufficient_reason(report.screen.distance.shortfalls)
        if report is not None and tier == "Insufficient data"
        else None
    )
    told = screened.story(one.name)
    outlook = None
    if not len(rows):
        delegation = _refused(
            "no blind audit decisions on this code yet",
            tier=tier,
            max_error=eps,
            level=code_level,
        )
    elif told.adds_nothing:
        # Whatever the screen's tier: a model that adds nothing has nothing to delegate.
        delegation = _refused(
            f"delegation needs a model that adds something; {told.headline}",
            tier=tier,
            max_error=eps,
            level=code_level,
        )
    else:
        # An audit pair the coder skipped (no blind decision, though later pairs of
        # the random order have one) may be skipped for a reason (a hard pair, a
        # confident model the coder doubted): it counts as an error, so that the
        # certificate never rests on the pairs the coder chose to code.
        confidence = np.concatenate([rows["p_max"].to_numpy(float), skipped])
        correct = decisions_agree(
            rows["pick"].to_numpy(float),
            rows["value"].to_numpy(float),
            option_values=np.asarray(rows["scale_values"].iloc[0], dtype=float),
            agreement=agreement,
            applies_from=float(rows["applies_from"].iloc[0]),
        )
        correct = np.concatenate([np.asarray(correct, dtype=bool), np.zeros(len(skipped), bool)])
        outside, uncoded_outside = scope.outside_audit(one.id)
        delegation = certify_delegation(
            confidence,
            correct,
            tier=tier,
            max_error=eps,
            level=code_level,
            outside=outside,
            delegable=uncoded_outside,
            screen_finding=finding,
        )
        if cut == "median":
            at = float(np.median(confidence))
        elif cut == SCALE_CUT:
            at = scale_cut(len(rows["scale_values"].iloc[0]))
        else:
            at = float(cut)
        outlook = audit_outlook(confidence, correct, threshold=at, max_error=eps, level=code_level)
    uncoded, unscored, above = scope.delegable(one.id, delegation.threshold)
    return CodePlan(
        code_id=one.id,
        code_name=one.name,
        delegation=delegation,
        audit_size=sample.size(one.id),
        uncoded=uncoded,
        unscored=unscored,
        delegated=above,
        left=uncoded - above,
        outlook=outlook,
        family=family,
        family_level=lvl,
        not_covered=left_out.not_covered,
        stale=left_out.stale,
        skipped=len(skipped) if len(rows) else 0,
        stale_evidence=n_stale,
        audit_left=screened.remaining.get(one.name),
        screen=told.verdict,
    )
