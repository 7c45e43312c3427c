"""Learn from the coder: a learned configuration fitted on one coder's decisions.

:func:`learn` fits, per code, a curve over the scale's points (:mod:`scoring.learned`)
on what the base configuration's model computed for each pair (its kept features, and
its zero-shot curve) and one coder's decisions, then rescores every pair of the code
from the stored features (no model pass) under the learned configuration: one row of
``configs`` per base configuration and coder, so that the queue, the screen, ``compare``,
delegation, findings, the report and the exports read it as any other.

Which decisions teach it (METHOD.md section 5): the coder's own (``human``) decisions of
the code made under a codebook version in which the code reads as it does now, **never
an audit pair** (whatever the decision and however it was made) and never a delegated or
model-sourced decision. The audit stays a random sample the learned curve never saw, so
every guarantee computed on it holds as for a zero-shot configuration
(docs/method.md, "Learning from the coder").

A code without enough decisions of each value keeps its zero-shot curve under the
learned configuration, and the result says how many more of which value it needs.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codebooks.errors import Remedy
from codebooks.model import Code, Codebook
from scoring.learned import (
    INPUTS_FEATURES,
    INPUTS_ZERO_SHOT,
    MIN_PER_VALUE,
    LearnedCurve,
    LearningError,
    fit_curve,
    learning_inputs,
    needs_text,
    shortfall,
)
from study.errors import SCORE, StudyError
from study.queries.learning import (
    codebook_snapshots,
    human_code_decisions,
    human_decision_counts,
    learned_base,
    missing_features,
    scored_rids,
)
from study.rows import ConfigRow
from study.scores import learned as stored
from study.scores.learned import ReadMemory as ReadMemory
from study.stamps import now
from study.store import Study

log = logging.getLogger(__name__)

#: Backends that cannot return the model's features: their learned curves learn from the
#: zero-shot curve alone.
NO_FEATURE_BACKENDS = ("openai",)


@dataclass(frozen=True)
class CodeLearning:
    """What learning did for one code.

    Attributes:
        code_id, code_name: The code.
        learned: Its curve was fitted; False: it keeps the zero-shot curve.
        counts: The decisions of each scale value it learned from (or has so far).
        needs: How many more decisions of each value it needs (empty when learned).
        cv_auroc: Cross-validated AUROC of "applies" on the coder's decisions (not the
            audit's; None when not learned).
        penalty: The regularisation chosen (inverse penalty C).
        inputs: What it learned from (:data:`~scoring.learned.INPUTS_FEATURES` or
            :data:`~scoring.learned.INPUTS_ZERO_SHOT`).
        pairs: Pairs rescored under the learned configuration.
        params_hash: Hash of the fitted parameters ("" when not learned).
        left_out_audit: The coder's decisions on audit pairs, never learned from.
        seconds: Time to fit and rescore the code.
        curve: The fitted curve (None when not learned): it is not kept in the study
            (:func:`fitted_curves` fits it again from the same decisions).
    """

    code_id: str
    code_name: str
    learned: bool
    counts: Mapping[int, int]
    needs: Mapping[int, int]
    cv_auroc: float | None
    penalty: float | None
    inputs: str
    pairs: int
    params_hash: str
    left_out_audit: int
    seconds: float
    curve: LearnedCurve | None = field(default=None, compare=False, repr=False)

    def needs_text(self) -> str:
        return needs_text(self.needs, self.counts) if self.needs else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "code_id": self.code_id,
            "code": self.code_name,
            "learned": self.learned,
            "counts": {str(k): v for k, v in self.counts.items()},
            "needs": {str(k): v for k, v in self.needs.items()},
            "cv_auroc": self.cv_auroc,
            "penalty": self.penalty,
            "inputs": self.inputs,
            "pairs": self.pairs,
            "params_hash": self.params_hash,
            "audit_decisions_left_out": self.left_out_audit,
        }


@dataclass(frozen=True)
class LearnRun:
    """A learned configuration as :func:`learn` left it."""

    config_id: int
    base_config_id: int
    coder: str
    codebook_version: int
    codes: tuple[CodeLearning, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def learned(self) -> tuple[CodeLearning, ...]:
        return tuple(c for c in self.codes if c.learned)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config_id,
            "base_config": self.base_config_id,
            "coder": self.coder,
            "codebook_version": self.codebook_version,
            "codes": [c.to_dict() for c in self.codes],
            "notes": list(self.notes),
        }


def resolve_coder(study: Study, coder: str | None) -> str:
    """The coder to learn from: the one named, else the only one with decisions.

    Raises:
        StudyError: nobody has decided anything, the coder named has no decision, or
            several coders have and none was named.
    """
    with study.snapshot() as conn:
        decided = human_decision_counts(conn)
    if coder is not None:
        if coder not in decided:
            known = ", ".join(decided) or "nobody has decided anything yet"
            raise StudyError(
                f"coder {coder!r} has made no decisions of their own in this study to "
                f"learn from (coders with decisions: {known})",
                path=study.path,
            )
        return coder
    if not decided:
        raise StudyError(
            "no coder has decided anything yet: code some pairs first, then learn from "
            "the decisions",
            path=study.path,
        )
    if len(decided) > 1:
        raise StudyError(
            f"several coders have decided ({', '.join(decided)}): name the one to learn "
            "from; the learned curve learns that coder",
            path=study.path,
            remedy=Remedy("retry", "name the coder to learn from", {"coder": "NAME"}),
        )
    return next(iter(decided))


def base_config(study: Study, config_id: int | None) -> ConfigRow:
    """The zero-shot configuration to learn on: the one named, else the active one (the
    base of the active one when that is itself learned).

    Raises:
        StudyError: nothing scored yet, an unknown id, or a learned configuration named.
    """
    from study.labels import resolve_config

    chosen = resolve_config(study, config_id)
    if chosen is None:
        raise StudyError(
            "nothing is scored yet: score the study first, then learn from the decisions",
            path=study.path,
            remedy=SCORE,
        )
    row = study.scores.config_row(chosen)
    if stored.is_learned(row):
        if config_id is not None:
            raise StudyError(
                f"configuration {chosen} is itself learned; learn on a scored "
                "configuration (its base, the model's zero-shot curve)",
                path=study.path,
            )
        row = study.scores.config_row(base_of(study, chosen))
    return row


def base_of(study: Study, learned_id: int) -> int:
    """The id of the base (zero-shot) configuration of the learned ``learned_id``.

    Raises:
        StudyError: its base is gone.
    """
    with study.snapshot() as conn:
        base = learned_base(conn, learned_id)
    if base is None:
        # A learned configuration keeps its base's key as its model revision.
        key = study.scores.config_row(learned_id).model.revision
        for config in study.scores.configs():
            if config.key == key:
                return config.id
        raise StudyError(
            f"configuration {learned_id} is learned but its base is gone", path=study.path
        )
    return base


def learned_config_id(study: Study, base_id: int, coder: str) -> int | None:
    """The learned configuration of ``coder`` on ``base_id``, if it exists."""
    key = stored.learned_config(study.scores.config_row(base_id), coder).key()
    for config in study.scores.configs():
        if config.key == key:
            return config.id
    return None


def learn(
    study: Study,
    *,
    coder: str | None = None,
    code: str | None = None,
    config_id: int | None = None,
    activate: bool = True,
    memory: ReadMemory | None = None,
) -> LearnRun:
    """Fit the learned configuration of ``coder`` on ``config_id`` (default the active
    configuration) and rescore its pairs from the stored features.

    Args:
        study: A study open for writing.
        coder: Whose decisions teach the curves (default: the only coder with some).
        code: Learn this code only (name or id); default every codable code.
        config_id: The base (zero-shot) configuration.
        activate: Make the learned configuration the active one (the queue's order).
        memory: Keeps the last code read, features and all, for the next call (the app's
            refits of one code); its features are reused while the code's scores are of
            the same pairs, texts and definition.

    Raises:
        StudyError: no scores, no decisions, an unknown coder or code, or features
            missing for pairs of a configuration that keeps them (scored before they
            were kept; scoring again recaptures them).
        LearningError: ``code`` named and it has too few decisions of a value; or no
            code could be learned (each one's needs named).
    """
    if study.read_only:
        raise StudyError("the study is open read-only; learning writes a configuration",
                         path=study.path)  # fmt: skip
    who = resolve_coder(study, coder)
    base = base_config(study, config_id)
    codebook = study.codebook
    codes = [codebook.code(code)] if code is not None else list(codebook.codable)
    if code is not None and not codes[0].codable:
        raise StudyError(f"code {codes[0].name!r} is not codable", path=study.path)
    version = study.versions.current()
    with_features = base.model.backend not in NO_FEATURE_BACKENDS
    layout = study.scores.feature_layout(base.id) if with_features else None
    # Everything that can refuse is checked before anything is written.
    needs = {c.id: _needs(study, c, who, base) for c in codes}
    # One code (the app's refit) is read once, here, and its features checked as read;
    # several are checked in SQL and read one at a time (never all codes' at once).
    preread: stored.CodeScores | None = None
    if len(codes) == 1:
        preread = _read_code(study, codes[0], base, layout, memory)
    if layout is not None:
        for chosen in codes:
            if preread is None or preread.missing_features:
                _check_features(study, chosen, base)
    if all(missing for _, missing in needs.values()):
        if code is not None or len(codes) == 1:
            counts, missing = needs[codes[0].id]
            raise LearningError(
                f"cannot learn {codes[0].name!r} yet: it {needs_text(missing, counts)}"
            )
        listed = "; ".join(f"{c.name}: {needs_text(needs[c.id][1], needs[c.id][0])}" for c in codes)
        raise LearningError(f"no code can be learned yet ({listed})")
    learned_id = study.scores.ensure_config(stored.learned_config(base, who), activate=False)
    notes: list[str] = []
    if layout is None:
        notes.append(
            f"configuration #{base.id} keeps no features of the model ("
            + (
                "a server returns none"
                if not with_features
                else "scored before codecurve kept them: score the study again to recapture them"
            )
            + "): the curves learn from the zero-shot curve alone"
        )
    results = [
        _learn_code(
            study,
            chosen,
            codebook,
            base,
            learned_id,
            who,
            version,
            layout,
            preread if preread is not None else _read_code(study, chosen, base, layout, memory),
            memory,
        )
        for chosen in codes
    ]
    # The codes not learned now keep what they have under the learned configuration, or
    # get their zero-shot curves, so that the learned configuration scores every code.
    learning = {c.id for c in codes}
    for other in codebook.codable:
        if other.id not in learning:
            with study.transaction() as conn:
                stored.copy_base_scores(conn, learned_id, base.id, study.index.code_key(other.id))
    if activate:
        study.scores.set_active(learned_id)
    return LearnRun(learned_id, base.id, who, version, tuple(results), tuple(notes))


def training_decisions(study: Study, code: Code, coder: str) -> tuple[dict[int, int], int]:
    """The decisions a code's curve may learn from, by response key, and how many of the
    coder's decisions of the code were left out because they are audit pairs.

    Only the coder's own decisions (source ``human``: not an accepted pick, not a
    delegation) made under a codebook version in which the code reads as now.
    """
    index = study.index
    cid = index.code_key(code.id)
    versions = _versions_like_now(study, code)
    with study.snapshot() as conn:
        rows = human_code_decisions(conn, coder, cid)
    sample = study.audit.sample()
    audit = {index.response_key(r) for r in sample.pairs(code.id)} if sample is not None else set()
    chosen: dict[int, int] = {}
    left_out = 0
    for rid, value, version in rows:
        if version not in versions:
            continue
        if rid in audit:
            left_out += 1
            continue
        chosen[rid] = value
    return chosen, left_out


def _versions_like_now(study: Study, code: Code) -> set[int]:
    """Codebook versions in which ``code`` had its current content."""
    digest = code.content_hash()
    with study.snapshot() as conn:
        rows = codebook_snapshots(conn)
    same = set()
    for version, snapshot in rows:
        try:
            other = Codebook.from_dict(json.loads(snapshot))
            if other.code(code.id).content_hash() == digest:
                same.add(version)
        except (ValueError, KeyError, TypeError):
            continue
    return same or {study.versions.current()}


def _needs(
    study: Study, code: Code, coder: str, base: ConfigRow
) -> tuple[Counter[int], dict[int, int]]:
    """The coder's usable decisions of a code by value (on pairs the base scored), and
    how many more of each value it needs (empty: enough)."""
    decisions, _ = training_decisions(study, code, coder)
    cid = study.index.code_key(code.id)
    with study.snapshot() as conn:
        # The decided pairs only (a look-up each), not the code's every scored pair.
        scored = scored_rids(conn, base.id, cid, sorted(decisions))
    labels = [v for r, v in decisions.items() if r in scored]
    values = [int(v) for v in study.codebook.scale_for(code).values]
    return Counter(labels), shortfall(labels, values)


def _check_features(study: Study, code: Code, base: ConfigRow) -> None:
    """Refuse a code some of whose scored pairs have no features kept.

    Raises:
        StudyError: naming how many, and that scoring again recaptures them.
    """
    cid = study.index.code_key(code.id)
    with study.snapshot() as conn:
        total, missing = missing_features(conn, base.id, cid)
    if missing:
        raise StudyError(
            f"{missing} of the {total} scored pairs of code {code.name!r} have no features "
            "of the model kept (scored before codecurve kept them): score the study again "
            "to recapture them; their scores stay as they are",
            path=study.path,
            remedy=SCORE,
        )


def _read_code(
    study: Study,
    code: Code,
    base: ConfigRow,
    layout: str | None,
    memory: ReadMemory | None,
) -> stored.CodeScores:
    """A code's scores under ``base``, with its features when it keeps some (those kept
    in ``memory`` when still valid); the read is kept in ``memory``."""
    cid = study.index.code_key(code.id)
    with study.snapshot() as conn:
        if memory is None:
            return stored.code_scores(conn, base.id, cid, with_features=layout is not None)
        printed = stored.fingerprint(conn, base.id, cid)
        kept = memory.current(base.id, cid, layout, printed)
        if kept is not None:
            return kept
        scores = stored.code_scores(
            conn,
            base.id,
            cid,
            with_features=layout is not None,
            known=memory.recall(base.id, cid, layout),
        )
    memory.keep(base.id, cid, layout, scores, printed)
    return scores


def _learn_code(
    study: Study,
    code: Code,
    codebook: Codebook,
    base: ConfigRow,
    learned_id: int,
    coder: str,
    version: int,
    layout: str | None,
    scores: stored.CodeScores,
    memory: ReadMemory | None,
) -> CodeLearning:
    started = time.perf_counter()
    index = study.index
    cid = index.code_key(code.id)
    scale = codebook.scale_for(code)
    values = [int(v) for v in scale.values]
    if layout is not None and scores.missing_features:
        _check_features(study, code, base)  # features went missing since the check
    fit, counts, needs, left_out = _fit_code(study, code, coder, scores)
    inputs_kind = INPUTS_FEATURES if scores.features is not None else INPUTS_ZERO_SHOT
    # The rows the last rescoring of the same read wrote, when nothing changed them since,
    # are known to be of the same pairs without reading them (the app's refits).
    kept = memory is not None and memory.recall(base.id, cid, layout) is scores
    written = memory.written(learned_id) if memory is not None and kept else None
    with study.transaction() as conn:
        in_place = stored.begin_rescoring(conn, learned_id, cid, scores, written=written)
    stamp = now()
    n = _rescore(study, learned_id, cid, scores, fit, values, in_place=in_place, stamp=stamp)
    if memory is not None and kept:
        memory.wrote(learned_id, stamp)
    with study.transaction() as conn:
        stored.record_fit(
            conn,
            stored.LearnedRow(
                config_id=learned_id,
                code_id=code.id,
                base_config_id=base.id,
                coder=coder,
                codebook_version=version,
                counts={v: counts.get(v, 0) for v in values},
                inputs=inputs_kind if fit is not None else "zero-shot (not learned yet)",
                penalty=None if fit is None else fit.penalty,
                cv_auroc=None if fit is None else fit.cv_auroc,
                params_hash="" if fit is None else fit.params_hash(),
                fitted_at=now(),
            ),
            cid,
        )
    study.scores.touch()
    return CodeLearning(
        code_id=code.id,
        code_name=code.name,
        learned=fit is not None,
        counts={v: counts.get(v, 0) for v in values},
        needs=needs if fit is None else {},
        cv_auroc=None if fit is None else fit.cv_auroc,
        penalty=None if fit is None else fit.penalty,
        inputs=inputs_kind,
        pairs=n,
        params_hash="" if fit is None else fit.params_hash(),
        left_out_audit=left_out,
        seconds=time.perf_counter() - started,
        curve=fit,
    )


def _rescore(
    study: Study,
    learned_id: int,
    cid: int,
    scores: stored.CodeScores,
    fit: LearnedCurve | None,
    values: list[int],
    *,
    in_place: bool,
    stamp: str,
) -> int:
    """Write a code's learned curves (its zero-shot ones when ``fit`` is None), a block
    of :data:`~study.scores.learned.WRITE_ROWS` rows per transaction, each block computed
    just before it is written (the writer is free meanwhile: a coder's decision goes in
    between); the count written.

    Writing one block in a thread while this one computed the next saved nothing
    measurable (SQLite's index updates are most of the time, and the binding of each
    block's values needs the GIL the computing holds) and made a decision's median wait
    longer, the writer being held without a gap.
    """
    for start in range(0, len(scores.rids), stored.WRITE_ROWS):
        stop = start + stored.WRITE_ROWS
        logprobs = scores.logprobs[start:stop]
        if fit is not None:
            features = None if scores.features is None else scores.features[start:stop]
            logprobs = fit.predict(features, logprobs)
        block = stored.learned_rows(
            learned_id, cid, scores, logprobs, values, in_place=in_place, start=start, stamp=stamp
        )
        with study.transaction() as conn:
            stored.write_rows(conn, block, in_place=in_place)
    return len(scores.rids)


def _fit_code(
    study: Study,
    code: Code,
    coder: str,
    scores: stored.CodeScores,
    *,
    penalty: float | None = None,
) -> tuple[LearnedCurve | None, Counter[int], dict[int, int], int]:
    """Fit a code's curve on the coder's decisions of the pairs of ``scores`` (in
    response order: the same decisions give the same curve); the fit (None: too few of a
    value), the decisions of each value, how many more of each it needs, and the audit
    decisions left out. ``penalty``: the one chosen before (no cross-validation)."""
    scale = study.codebook.scale_for(code)
    values = [int(v) for v in scale.values]
    decisions, left_out = training_decisions(study, code, coder)
    decided = np.asarray(sorted(decisions), dtype=np.int64)
    # The rids are in order (read ORDER BY rid): each decided pair's row by bisection.
    found = np.minimum(np.searchsorted(scores.rids, decided), max(len(scores.rids) - 1, 0))
    hit = scores.rids[found] == decided if len(scores.rids) else np.zeros(len(decided), bool)
    rows = found[hit].tolist()
    labels = [decisions[int(scores.rids[i])] for i in rows]
    counts = Counter(labels)
    needs = shortfall(labels, values)
    if needs or not rows:
        return None, counts, needs, left_out
    features = scores.features
    fit = fit_curve(
        learning_inputs(None if features is None else features[rows], scores.logprobs[rows]),
        labels,
        values=values,
        applies_from=scale.threshold,
        zero_shot_columns=len(values) + 1,
        inputs_kind=INPUTS_FEATURES if features is not None else INPUTS_ZERO_SHOT,
        penalty=penalty,
    )
    return fit, counts, needs, left_out


def fits(study: Study, config_id: int) -> list[stored.LearnedRow]:
    """What each code of a learned configuration was fitted on (empty: not learned)."""
    codes = {study.index.code_key(c.id): c.id for c in study.codebook.codable}
    with study.snapshot() as conn:
        return stored.read_fits(conn, config_id, codes)


def fitted_curves(
    study: Study,
    config_id: int,
    *,
    codes: Collection[str] | None = None,
    known: Mapping[str, LearnedCurve] | None = None,
) -> dict[str, LearnedCurve]:
    """The fitted curve of each learned code of the learned configuration ``config_id``
    (of ``codes`` only, when given), fitted again from the decisions it was fitted on;
    nothing is written. A code that kept its zero-shot curve has none.

    The study keeps what a curve was fitted on, not its weights: each is refitted here
    with the penalty chosen then (no cross-validation: a second or less per code), and
    must give the parameters kept (:attr:`LearnedRow.params_hash
    <study.scores.learned.LearnedRow.params_hash>`), which it does while the coder's
    decisions of the code are those it learned from. ``known``: curves fitted before (the
    app's own refits); one whose parameters are those kept is taken as it is.

    Raises:
        StudyError: a code's decisions changed since it was learned (or its refit was
            cut short): learn again (``codecurve learn``, or L in the app).
    """
    out: dict[str, LearnedCurve] = {}
    for row in fits(study, config_id):
        if not row.learned or (codes is not None and row.code_id not in codes):
            continue
        curve = (known or {}).get(row.code_id)
        if curve is not None and row.params_hash and curve.params_hash() == row.params_hash:
            out[row.code_id] = curve
            continue
        code = study.codebook.code(row.code_id)
        refit = None
        if row.params_hash and row.penalty is not None:
            base = study.scores.config_row(row.base_config_id)
            with_features = base.model.backend not in NO_FEATURE_BACKENDS
            layout = study.scores.feature_layout(base.id) if with_features else None
            scores = _read_code(study, code, base, layout, None)
            if layout is None or not scores.missing_features:
                refit, *_ = _fit_code(study, code, row.coder, scores, penalty=row.penalty)
        if refit is None or refit.params_hash() != row.params_hash:
            same_counts = refit is not None and dict(refit.counts) == dict(row.counts)
            raise StudyError(
                f"the learned curve of code {code.name!r} (configuration {config_id}) is not "
                f"the one {row.coder}'s decisions give now: "
                + (
                    # As many of each value: other decisions, or another fit of the same.
                    "either they changed since it was learned (as many of each value) or "
                    "an earlier version of codecurve fitted it."
                    if same_counts
                    else "they changed since it was learned."
                )
                + " Learn again, then explain it",
                path=study.path,
                remedy=Remedy("learn", "learn again"),
            )
        out[row.code_id] = refit
    return out


__all__ = [
    "MIN_PER_VALUE",
    "CodeLearning",
    "LearnRun",
    "base_config",
    "base_of",
    "fits",
    "fitted_curves",
    "learn",
    "learned_config_id",
    "resolve_coder",
    "training_decisions",
]
