"""Explaining a study's scored pairs: which sentence moved the model (``codecurve explain``).

:func:`plan_explain` chooses the pairs and says what they will cost; :func:`explain_study`
measures them (:func:`scoring.evidence.explain`) and keeps each chunk's evidence as it
is finished (``study.evidence``), so an interrupted run keeps what it measured and the
next run goes on from there.

Which configuration: evidence is measured by scoring variants of a response, which
needs the model of the configuration scored. A learned configuration's curve is a
classifier on what the model computed in the scoring pass (its features) and on the
zero-shot curve; the engine returns both for every variant in the same pass, so a
learned configuration explains itself: its model (the base configuration's) scores the
variants and each code's learned curve reads them
(:func:`study.analysis._learning.fitted_curves` fits the curves again from the decisions
they were fitted on, and refuses when those changed since: learn again first). A code
that kept its zero-shot curve is explained on it. The evidence is kept under the learned
configuration with each curve's parameters' hash, so a refit leaves it behind
(:mod:`study.scores.evidence`).

Which pairs: those of the chosen codes scored under the configuration, without valid
evidence, whose response has more than one sentence, the most likely to apply first
(the pairs where a coder looks for the quotation), at most ``limit`` of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scoring.engine import pair_work
from scoring.evidence import (
    Evidence,
    ExplainProgress,
    Reading,
    explain,
    explain_work,
    variant_count,
)
from scoring.learned import INPUTS_FEATURES
from scoring.score import Pair, Score
from study.errors import SCORE, StudyError
from study.rows import ConfigRow, ScoringRate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from scoring.engine import ScoringEngine
    from scoring.learned import LearnedCurve
    from study.store import Study


@dataclass(frozen=True)
class ExplainPlan:
    """What an explanation run will do.

    Attributes:
        config: The configuration whose model scores the variants (the base of a
            learned one).
        learned_id: The learned configuration explained, or None.
        pairs: The pairs to measure, in the order measured.
        variants: Model passes they need (one per sentence measured, one per pair).
        work: What those passes cost in :func:`~scoring.engine.pair_work`'s characters
            (:func:`~scoring.evidence.explain_work`).
        typical: The mean :func:`~scoring.engine.pair_work` of the code's pairs to
            explain, one sentence or many: what the measured speed was of.
        single: Pairs left out because their response has one sentence or none.
        explained: Pairs of the chosen codes that have valid evidence already.
        rate: The study's measured scoring speed for the configuration, if any.
        curves: The learned curves the variants are read through, by code id (empty:
            the zero-shot curve).
    """

    config: ConfigRow
    learned_id: int | None
    pairs: tuple[Pair, ...]
    variants: int
    single: int
    explained: int
    rate: ScoringRate | None
    curves: Mapping[str, LearnedCurve] = field(default_factory=dict)
    work: float = 0.0
    typical: float = 0.0

    @property
    def kept_id(self) -> int:
        """The configuration the evidence is kept under: the learned one, or ``config``."""
        return self.config.id if self.learned_id is None else self.learned_id

    @property
    def seconds(self) -> float | None:
        """The run's time at the measured speed, None without a measurement: the
        variants' work at the speed of scoring pairs of the typical work. It errs high
        (on 12 long NHS comments it said 1.9x the time the run took; counting every
        variant as a pair said 2.6x): a batch of variants reads faster than its
        characters say."""
        if self.rate is None or self.rate.rate <= 0 or self.typical <= 0:
            return None
        return self.work / (self.rate.rate * self.typical)


@dataclass(frozen=True)
class ExplainRun:
    """What :func:`explain_study` did: pairs measured and kept, variants scored."""

    config_id: int
    stored: int
    variants: int
    seconds: float
    tokens: int


def evidence_config(study: Study) -> tuple[ConfigRow, int | None]:
    """The configuration whose model measures the active one's evidence (the active one,
    or its base when it is learned) and the learned one's id (None when not learned).

    Raises:
        StudyError: nothing scored yet.
    """
    chosen = study.scores.active_config_id()
    if chosen is None:
        raise StudyError(
            "nothing is scored yet: score the study first, then explain its scores",
            path=study.path,
            remedy=SCORE,
        )
    return measuring_config(study, chosen)


def measuring_config(study: Study, config_id: int) -> tuple[ConfigRow, int | None]:
    """The configuration whose model measures ``config_id``'s evidence (itself, or its
    base when it is learned) and the learned one's id (None when not learned)."""
    from study.analysis._learning import base_of
    from study.scores.learned import is_learned

    row = study.scores.config_row(config_id)
    if not is_learned(row):
        return row, None
    return study.scores.config_row(base_of(study, config_id)), config_id


def learned_reading(curves: Mapping[str, LearnedCurve]) -> Reading | None:
    """The curve a variant's score is read through: its code's learned curve (from the
    score's features and zero-shot curve), else the zero-shot curve; None without any."""
    if not curves:
        return None

    def read(score: Score) -> npt.NDArray[np.float64]:
        curve = curves.get(score.code_id)
        if curve is None:
            return score.curve.probs
        return curve.probs_of(score.features, -score.curve.surprisal)

    return read


def plan_explain(
    study: Study,
    *,
    code: str | None = None,
    limit: int | None = None,
) -> ExplainPlan:
    """The pairs an explanation run measures and what they cost (see the module).

    Raises:
        StudyError: nothing scored, an unknown code, or no scores of the code.
    """
    config, learned_id = evidence_config(study)
    kept = config.id if learned_id is None else learned_id
    if code is not None:  # by id or name; an unknown code is a StudyError naming it
        codes = [study.index.code_at(study.index.code_key(code)).id]
    else:
        codes = [c.id for c in study.index.codable_codes()]
    if study.scores.scored_count(kept) == 0:
        raise StudyError(
            f"configuration {kept} has no scores yet: score the study first",
            path=study.path,
            remedy=SCORE,
        )
    curves = _curves(study, learned_id, codes)
    candidates = study.evidence.to_explain(kept, codes)
    explained = sum(len(study.evidence.for_config(kept, code_id=c)) for c in codes)
    chosen: list[Pair] = []
    single = variants = 0
    work = typical = 0.0
    for pair, _p in candidates:
        typical += pair_work(pair.text)
        count = variant_count(pair.text)
        if count == 0:
            single += 1
            continue
        if limit is not None and len(chosen) >= limit:
            continue
        chosen.append(pair)
        variants += count + 1
        work += explain_work(pair.text)
    return ExplainPlan(
        config=config,
        learned_id=learned_id,
        pairs=tuple(chosen),
        variants=variants,
        single=single,
        explained=explained,
        rate=study.scores.measured_rate(config.id),
        curves=curves,
        work=work,
        typical=typical / len(candidates) if candidates else 0.0,
    )


def _curves(
    study: Study,
    learned_id: int | None,
    codes: Collection[str],
    known: Mapping[str, LearnedCurve] | None = None,
) -> dict[str, LearnedCurve]:
    """The learned curves of ``codes`` (none for a zero-shot configuration).

    Raises:
        StudyError: a code's decisions changed since it was learned.
    """
    if learned_id is None:
        return {}
    from study.analysis._learning import fitted_curves

    return fitted_curves(study, learned_id, codes=codes, known=known)


def explain_study(
    study: Study,
    engine: ScoringEngine,
    plan: ExplainPlan,
    *,
    progress: Callable[[ExplainProgress], None] | None = None,
    cancel: threading.Event | None = None,
) -> ExplainRun:
    """Measure the plan's pairs with ``engine`` and keep their evidence as each chunk is
    finished.

    Raises:
        StudyError: ``engine`` is not the plan's configuration (another model, prompt or
            context: its numbers would not explain the scores), or returns no features
            where a learned curve reads them.
        ScoringError: the model failed (what was kept before stays).
    """
    _check_engine(study, engine, plan.config, plan.curves)
    reading = learned_reading(plan.curves)
    fits = {code_id: curve.params_hash() for code_id, curve in plan.curves.items()}
    started = time.monotonic()
    stored = tokens = 0
    batch: list[Evidence] = []
    found = explain(engine, plan.pairs, progress=progress, cancel=cancel, reading=reading)
    for evidence in found:
        batch.append(evidence)
        tokens += evidence.variants_tokens
        if len(batch) >= 16:
            stored += study.evidence.store(plan.kept_id, batch, fits=fits)
            batch = []
    stored += study.evidence.store(plan.kept_id, batch, fits=fits)
    return ExplainRun(
        config_id=plan.kept_id,
        stored=stored,
        variants=plan.variants,
        seconds=time.monotonic() - started,
        tokens=tokens,
    )


@dataclass(frozen=True)
class Measured:
    """What :func:`measure_pairs` kept, and the learned curves it read them through."""

    evidence: tuple[Evidence, ...]
    curves: Mapping[str, LearnedCurve]


def measure_pairs(
    study: Study,
    engine: ScoringEngine,
    config_id: int,
    pairs: Sequence[Pair],
    *,
    known: Mapping[str, LearnedCurve] | None = None,
    cancel: threading.Event | None = None,
) -> Measured:
    """Measure a few pairs' evidence for configuration ``config_id`` (learned or not)
    and keep it: the app's background measurement. ``known``: learned curves fitted
    before (the app's own refits), taken while they are the ones kept.

    Raises:
        StudyError: as :func:`explain_study`; and a learned code whose decisions changed
            since it was learned.
        ScoringError: the model failed.
    """
    config, learned_id = measuring_config(study, config_id)
    curves = _curves(study, learned_id, {p.code.id for p in pairs}, known)
    _check_engine(study, engine, config, curves)
    fits = {code_id: curve.params_hash() for code_id, curve in curves.items()}
    found = tuple(explain(engine, pairs, cancel=cancel, reading=learned_reading(curves)))
    study.evidence.store(config_id, found, fits=fits)
    return Measured(found, curves)


def _check_engine(
    study: Study, engine: ScoringEngine, config: ConfigRow, curves: Mapping[str, LearnedCurve]
) -> None:
    """Refuse an engine whose numbers would not be the configuration's.

    Raises:
        StudyError: another model, prompt or context; or no features (or others) where
            a learned curve reads them.
    """
    if engine.config.key() != config.key:
        raise StudyError(
            f"the model loaded ({engine.config.model.describe()}, context "
            f"{engine.config.context}) is not the one configuration {config.id} was "
            f"scored with ({config.model.describe()}, context {config.context}); "
            "evidence must be measured with the scores' own model and prompt",
            path=study.path,
        )
    if any(c.inputs == INPUTS_FEATURES for c in curves.values()):
        kept = study.scores.feature_layout(config.id)
        if engine.feature_layout is None or engine.feature_layout != kept:
            raise StudyError(
                f"the learned curves read the model's features ({kept}), and the model "
                f"loaded returns {engine.feature_layout or 'none'}: explain a learned "
                "configuration with the model and backend it was scored with",
                path=study.path,
            )
