"""Explaining a study's scored pairs: which sentence moved the model (``codecurve explain``).

:func:`plan_explain` chooses the pairs and says what they will cost; :func:`explain_study`
measures them (:func:`scoring.evidence.explain`) and keeps each chunk's evidence as it
is finished (``study.evidence``), so an interrupted run keeps what it measured and the
next run goes on from there.

Which configuration: evidence is measured by scoring variants of a response, which
needs the model. A learned configuration's curve is a classifier on the features the
model computed in the scoring pass and on the zero-shot curve; the classifier is refitted
from the decisions, not kept, so its curve for a variant would need the features of the
variant and a refit. Evidence of a learned configuration is therefore measured on its
base (the zero-shot curve the learned one was fitted on) and says so: it shows where the
*model* found the code, which is also what the learned curve reads through its inputs.

Which pairs: those of the chosen codes scored under the configuration, without valid
evidence, whose response has more than one sentence, the most likely to apply first
(the pairs where a coder looks for the quotation), at most ``limit`` of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scoring.evidence import Evidence, ExplainProgress, explain, variant_count
from scoring.score import Pair
from study.errors import StudyError
from study.rows import ConfigRow, ScoringRate

if TYPE_CHECKING:
    from scoring.engine import ScoringEngine
    from study.store import Study


@dataclass(frozen=True)
class ExplainPlan:
    """What an explanation run will do.

    Attributes:
        config: The configuration measured (the base of a learned one).
        learned_id: The learned configuration it stands for, or None.
        pairs: The pairs to measure, in the order measured.
        variants: Model passes they need (one per sentence measured, one per pair).
        single: Pairs left out because their response has one sentence or none.
        explained: Pairs of the chosen codes that have valid evidence already.
        rate: The study's measured scoring speed for the configuration, if any.
    """

    config: ConfigRow
    learned_id: int | None
    pairs: tuple[Pair, ...]
    variants: int
    single: int
    explained: int
    rate: ScoringRate | None

    @property
    def seconds(self) -> float | None:
        """The run's time at the measured speed (a variant costs about a pair: it is
        shorter, so this errs high), None without a measurement."""
        if self.rate is None or self.rate.rate <= 0:
            return None
        return self.variants / self.rate.rate


@dataclass(frozen=True)
class ExplainRun:
    """What :func:`explain_study` did: pairs measured and kept, variants scored."""

    config_id: int
    stored: int
    variants: int
    seconds: float
    tokens: int


def evidence_config(study: Study) -> tuple[ConfigRow, int | None]:
    """The configuration evidence is measured with: the active one, or its base when it
    is learned (see the module); and the learned one's id (None when not learned).

    Raises:
        StudyError: nothing scored yet.
    """
    from study.analysis.learning import base_config
    from study.scores.learned import is_learned

    chosen = study.scores.active_config_id()
    if chosen is None:
        raise StudyError(
            "nothing is scored yet: score the study first ('codecurve score STUDY'), then "
            "explain its scores",
            path=study.path,
        )
    row = study.scores.config_row(chosen)
    if not is_learned(row):
        return row, None
    return base_config(study, None), chosen


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
    if code is not None:  # by id or name; an unknown code is a StudyError naming it
        codes = [study.index.code_at(study.index.code_key(code)).id]
    else:
        codes = [c.id for c in study.index.codable_codes()]
    if study.scores.scored_count(config.id) == 0:
        raise StudyError(
            f"configuration {config.id} has no scores yet: score the study first "
            "('codecurve score STUDY')",
            path=study.path,
        )
    candidates = study.evidence.to_explain(config.id, codes)
    explained = sum(len(study.evidence.for_config(config.id, code_id=c)) for c in codes)
    chosen: list[Pair] = []
    single = variants = 0
    for pair, _p in candidates:
        count = variant_count(pair.text)
        if count == 0:
            single += 1
            continue
        if limit is not None and len(chosen) >= limit:
            continue
        chosen.append(pair)
        variants += count + 1
    return ExplainPlan(
        config=config,
        learned_id=learned_id,
        pairs=tuple(chosen),
        variants=variants,
        single=single,
        explained=explained,
        rate=study.scores.measured_rate(config.id),
    )


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
            context: its numbers would not explain the scores).
        ScoringError: the model failed (what was kept before stays).
    """
    if engine.config.key() != plan.config.key:
        raise StudyError(
            f"the model loaded ({engine.config.model.describe()}, context "
            f"{engine.config.context}) is not the one configuration {plan.config.id} was "
            f"scored with ({plan.config.model.describe()}, context {plan.config.context}); "
            "evidence must be measured with the scores' own model and prompt",
            path=study.path,
        )
    started = time.monotonic()
    stored = tokens = 0
    batch: list[Evidence] = []
    for evidence in explain(engine, plan.pairs, progress=progress, cancel=cancel):
        batch.append(evidence)
        tokens += evidence.variants_tokens
        if len(batch) >= 16:
            stored += study.evidence.store(plan.config.id, batch)
            batch = []
    stored += study.evidence.store(plan.config.id, batch)
    return ExplainRun(
        config_id=plan.config.id,
        stored=stored,
        variants=plan.variants,
        seconds=time.monotonic() - started,
        tokens=tokens,
    )
