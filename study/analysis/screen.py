"""Apply the validity screen to a study: the coder's decisions against the model's picks.

This is the one place that turns a study's annotated pairs into screening input; the
``screen`` command and the app's panel both call :func:`screen_study`.

* ``correct`` compares the model's pick with the coder's decision of the same pair:
  ``applies`` (default; both reduced to applies / does not apply at the scale's
  ``applies_from``), ``exact`` or ``within1``.
* confidence is ``pmax`` (default) or ``entropy`` (1 - normalised entropy).
* Decisions accepted from the model (``source == "model"``) are left out: an accepted
  pick agrees with itself by construction and is no evidence about the model.
* Codes on different scales are screened per scale and pooled from the concatenated
  correctness and confidence.
* The confidence cut (METHOD.md section 2) is by default scale-aware: halfway between
  chance and certainty, high when ``(p_max - 1/K) / (1 - 1/K) >= 0.5``, i.e. p_max
  >= (K + 1) / 2K: 0.75 on a yes/no code, 0.6 on 1-5, 5/9 on 1-9 (for the entropy
  signal, 1 - H / ln K >= 0.5). Each code is cut at its own K, and the pool item by
  item. ``cut`` may instead be a fixed number or ``"median"``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from screening import (
    ScreeningWarning,
    VRSReport,
    cohen_kappa,
    decisions_agree,
    krippendorff_alpha,
    percent_agreement,
    screen_coded,
    screen_report,
)
from screening.advice import Advice, advise
from screening.apply import AgreementMode, ConfidenceKind
from screening.headline import TIER_GLOSS, Headline, pattern
from screening.sampling import pool_tables
from screening.story import Story, story
from screening.tiers import screen_table
from study.analysis._coder_choice import CoderChoice, choose_coder
from study.analysis._headlines import study_headlines
from study.analysis._remaining import remaining_pairs
from study.errors import DRAW_AUDIT, SCORE, NoBlindDecisionsError, StudyError
from study.labels import backend_name, config_label, off_scale_warning, resolve_config
from study.store import Study

Cut = float | Literal["median", "scale"]
#: The cut's names on the command line and in the panel.
SCALE_CUT: Literal["scale"] = "scale"


def scale_cut(n_options: int, confidence: ConfidenceKind = "pmax") -> float:
    """The scale-aware cut: halfway between chance (1/K) and certainty.

    Returns:
        ``(K + 1) / 2K`` for p_max (0.75 for K = 2, 0.6 for K = 5, 5/9 for K = 9);
        0.5 for ``1 - normalised entropy``, which is already 0 at chance.
    """
    if n_options < 2:
        raise ValueError(f"a scale has at least 2 options, not {n_options}")
    return 0.5 if confidence == "entropy" else (n_options + 1) / (2 * n_options)


def describe_cut(cut: Cut, confidence: ConfidenceKind = "pmax") -> str:
    """The cut in words, for a report's header: ``"scale-aware (p_max >= 0.75 on
    2 options, ...)"``, ``"sample median"`` or ``">= 0.600"``."""
    if cut == SCALE_CUT:
        signal = "p_max" if confidence == "pmax" else "1 - H/ln K"
        return f"scale-aware: halfway between chance and certainty ({signal} >= (K+1)/2K)"
    if cut == "median":
        return "the sample median"
    return f"fixed, >= {float(cut):.3f}"


#: Which decisions a screen uses: the blind decisions on the audit sample, or all.
Sample = Literal["audit", "all"]

#: What a screen on decisions other than the blind audit sample must say.
NOT_RANDOM = (
    "these decisions are not a random sample (they follow the order the coder chose) and "
    "may not describe the pairs nobody coded; draw a blind audit sample "
    "and screen it"
)


@dataclass(frozen=True)
class Agreement:
    """Agreement between two raters on the same pairs (model vs coder, or coder vs coder)."""

    between: tuple[str, str]
    n: int
    percent: float
    kappa: float
    kappa_quadratic: float
    alpha_nominal: float
    alpha_ordinal: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "between": list(self.between),
            "n": self.n,
            **{
                k: (None if np.isnan(v) else v)
                for k, v in (
                    ("percent", self.percent),
                    ("kappa", self.kappa),
                    ("kappa_quadratic", self.kappa_quadratic),
                    ("alpha_nominal", self.alpha_nominal),
                    ("alpha_ordinal", self.alpha_ordinal),
                )
            },
        }


@dataclass(frozen=True)
class StudyScreening:
    """A study's screen: pooled, per code, and the agreement figures."""

    pooled: VRSReport
    per_code: Mapping[str, VRSReport]
    coder: str | None
    n_decisions: int
    n_unscored: int
    agreements: tuple[Agreement, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    sample: Sample = "all"
    sample_note: str = NOT_RANDOM
    pooling: str = ""
    config_id: int | None = None
    config: str = ""
    cut: str = ""
    study_warning: str | None = None
    advice: Advice | None = None
    #: Code name -> the figures before any tier; None -> all codes pooled.
    headlines: Mapping[str | None, Headline] = field(default_factory=dict)
    #: Code name -> pairs the study has left to code for this screen.
    remaining: Mapping[str, int] = field(default_factory=dict)
    #: Code name -> the coder's decisions on pairs not scored yet (not in the screen).
    unscored: Mapping[str, int] = field(default_factory=dict)

    def headline(self, name: str | None) -> Headline | None:
        """The figures of one code (by name), or of all codes pooled (None)."""
        return self.headlines.get(name)

    def story(self, name: str | None) -> Story:
        """What one code's numbers (by name), or all codes' pooled (None), say."""
        report = self.pooled if name is None else self.per_code.get(name)
        tier = report.tier if report is not None else "Insufficient data"
        return story(tier, self.headline(name))

    #: Blind audit decisions left out: made under an older definition of their code.
    stale_evidence: int = 0
    #: Whose decisions, where the coder was taken by default among several ("" when
    #: named or the only one): said once, at the start.
    coder_note: str = ""

    def reports(self) -> list[VRSReport]:
        """The pooled report first, then one per code."""
        return [self.pooled, *self.per_code.values()]

    def to_dict(self) -> dict[str, Any]:
        """The screening as JSON-ready values (``codecurve screen --format json``)."""
        advice = self.advice
        return {
            "config": {"id": self.config_id, "label": self.config},
            "cut": self.cut,
            "headline": advice.headline if advice else None,
            "next_action": advice.action if advice else None,
            "study_warning": self.study_warning,
            "sample": self.sample,
            "sample_size": self.n_decisions - self.n_unscored,
            "sample_note": self.sample_note,
            "pooling": self.pooling,
            "coder": self.coder,
            "coder_note": self.coder_note,
            "n_decisions": self.n_decisions,
            "n_unscored": self.n_unscored,
            "headlines": {
                "pooled": h.to_dict() if (h := self.headline(None)) else None,
                "per_code": {
                    name: h.to_dict() for name, h in self.headlines.items() if name is not None
                },
            },
            "remaining": dict(self.remaining),
            "unscored": dict(self.unscored),
            "tier_gloss": TIER_GLOSS,
            "pooled": {
                **self.pooled.to_dict(),
                "pattern": pattern(self.pooled.tier),
                "story": self.story(None).to_dict(),
            },
            "per_code": {
                name: {
                    **r.to_dict(),
                    "pattern": pattern(r.tier),
                    "story": self.story(name).to_dict(),
                }
                for name, r in self.per_code.items()
            },
            "agreement": [a.to_dict() for a in self.agreements],
            "warnings": list(self.warnings),
            "stale_evidence": self.stale_evidence,
        }

    def labelled(self) -> StudyScreening:
        """The same screening with each report's data set saying which sample it used
        and its size, e.g. ``"survey; sample: blind random audit, 143 decisions"``."""
        n = self.n_decisions - self.n_unscored
        return replace(
            self,
            pooled=replace(self.pooled, dataset=sample_label(self.pooled.dataset, self.sample, n)),
            per_code={
                name: replace(r, dataset=sample_label(r.dataset, self.sample, r.n_items))
                for name, r in self.per_code.items()
            },
        )


#: An export's provenance screens at most this many coders (each one a screen).
MAX_SCREENED = 10


def screen_words(screened: StudyScreening) -> str:
    """The screen in an export's provenance: the figures first, each tier named as a
    response pattern with AUROC and kappa beside it (never a bare tier), and a model that
    adds nothing said so before anything else."""
    parts = []
    groups: list[tuple[str, str | None]] = [("pooled", None)]
    groups += [(name, name) for name in screened.per_code]
    for label, key in groups:
        told = screened.story(key)
        words = told.pattern_line(screened.headline(key))
        if told.adds_nothing:
            words = f"{told.headline}; {words}"
        parts.append(f"{label}: {words}")
    return "; ".join(parts) + " (the tier names a response pattern, not a verdict on the model)"


def screen_lines(study: Study, config_id: int | None, coder: str | None) -> list[str]:
    """``screen tier against <coder>: ...`` for the coder exported (every coder when
    None, up to :data:`MAX_SCREENED`), or why it was not computed; empty when nothing is
    scored. What every export's provenance says of the screen."""
    if config_id is None:
        return []
    lines = []
    for who in [coder] if coder is not None else study.decisions.coders()[:MAX_SCREENED]:
        try:
            screened = screen_study(study, config_id, coder=who)
        except (StudyError, ValueError) as exc:
            lines.append(f"screen tier against {who}: not computed ({exc})")
            continue
        lines.append(f"screen tier against {who}: " + screen_words(screened))
    return lines


def sample_label(dataset: str, sample: Sample, n: int) -> str:
    """A report's data set with the sample it used and its size."""
    if sample == "audit":
        return f"{dataset}; sample: blind random audit, {n} decisions"
    return f"{dataset}; sample: all decisions ({n}), not a random sample"


def screen_study(
    study: Study,
    config_id: int | None = None,
    *,
    code: str | None = None,
    coder: str | None = None,
    cut: Cut = SCALE_CUT,
    agreement: AgreementMode = "applies",
    confidence: ConfidenceKind = "pmax",
    phase_b: bool = False,
    sample: Sample | None = None,
    pairs: pd.DataFrame | None = None,
) -> StudyScreening:
    """Screen the model's confidence against one coder's decisions.

    By default (``sample=None``) the blind decisions on the audit sample are used when
    the study has an audit sample with at least one such decision, and every decision
    otherwise; ``sample`` chooses. A screen of all decisions says that they are not a
    random sample (:data:`NOT_RANDOM`). On the audit sample, codes coded to different
    sizes are pooled with weights N_h / n_h (:func:`screening.sampling.pool_tables`).

    Args:
        study: An open study.
        config_id: The scoring configuration; defaults to the study's active one.
        code: Screen only this code (id or name).
        coder: Whose decisions; by default the only coder's, or among several the one
            with the most blind audit decisions (said in ``coder_note``).
        cut: Binarisation of confidence: ``"scale"`` (default, each code's own
            scale-aware cut), a fixed cut in [0, 1] or ``"median"``.
        agreement: ``applies``, ``exact`` or ``within1``.
        confidence: ``pmax`` or ``entropy``.
        phase_b: Also compute phase B where the tier allows it.
        sample: ``audit``, ``all``, or None for the audit sample when it has decisions.
        pairs: ``study.queries.annotated_pairs(config_id)`` (every coder's), where the
            caller has read it already (it is read here otherwise).

    Raises:
        StudyError: no scores yet, an unknown configuration (the error lists those
            that exist), an unknown code or coder.
        NoBlindDecisionsError: ``sample="audit"`` without a blind audit decision.
    """
    config_id = resolve_config(study, config_id)
    if config_id is None:
        raise StudyError(
            "the study has no scores yet; score it first", path=study.path, remedy=SCORE
        )
    frame = study.queries.annotated_pairs(config_id) if pairs is None else pairs
    human = frame[frame["source"] == "human"] if len(frame) else frame
    coders = sorted(set(human["coder"])) if len(human) else []
    choice = screen_coder(study, human, coder)
    coder = choice.coder
    mine = human[human["coder"] == coder] if coder is not None else human
    code_ids = [c.id for c in study.codebook.codable]
    if code is not None:
        try:
            chosen = study.codebook.code(code)
        except ValueError as exc:
            raise StudyError(str(exc), path=study.path) from None
        mine = mine[mine["code_id"] == chosen.id]
        code_ids = [chosen.id]
    audit_rows = blind_audit_rows(study, mine, coder)
    stale = _stale_note(study, mine, coder)
    if sample == "audit" and not len(audit_rows):
        raise NoBlindDecisionsError(
            "no blind decisions on the audit sample yet"
            + ("" if study.audit.sample() else "; draw an audit sample first"),
            path=study.path,
            remedy=None if study.audit.sample() else DRAW_AUDIT,
        )
    chosen_sample: Sample = "audit" if sample != "all" and len(audit_rows) else "all"
    if chosen_sample == "audit":
        mine = audit_rows
    scored = mine[mine["scored"]] if len(mine) else mine
    source = _source(study, config_id)
    dataset = study.path.stem
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", ScreeningWarning)
        pooled, per_code = _screen_frame(
            scored,
            code_ids,
            names={c.id: c.name for c in study.codebook.codes},
            cut=cut,
            agreement=agreement,
            confidence=confidence,
            phase_b=phase_b,
            source=source,
            dataset=dataset,
        )
    caught = sorted({str(w.message) for w in record if issubclass(w.category, ScreeningWarning)})
    if stale[1] and chosen_sample == "audit":
        caught.append(stale[1])
    pooling = ""
    if chosen_sample == "audit" and len(per_code) > 1:
        # Each code's pairs: every response, or the answers to its questions when scoped.
        scope = study.index.scope
        pairs_of: dict[str, int] | int = (
            {c.name: scope.count(study.index.code_key(c.id)) for c in study.codes}
            if scope.scoped
            else study.response_count()
        )
        pooled, pooling = _weighted_pool(pooled, per_code, population=pairs_of)
    agreements = []
    if len(scored):
        agreements.append(
            _agreement(
                ("model", coder or "coder"),
                scored["pick"].to_numpy(float),
                scored["value"].to_numpy(float),
            )
        )
    if len(coders) >= 2:
        agreements.extend(_coder_agreements(human, coders, code_ids))
    names = {c.id: c.name for c in study.codebook.codes}
    headlines = study_headlines(study, config_id, scored, {c: names.get(c, c) for c in code_ids})
    # Calibration only where the group's story allows it (never for a model that adds
    # nothing): every surface then reads the same report.
    pooled = _as_told(pooled, headlines.get(None))
    per_code = {name: _as_told(r, headlines.get(name)) for name, r in per_code.items()}
    # The coder's decisions on pairs not scored yet (scoring still runs): not in the screen
    # now, in it once scored, so no verdict is called out of reach for want of them.
    waiting = mine[~mine["scored"].astype(bool)] if len(mine) else mine
    unscored = {
        names.get(str(c), str(c)): int(n)
        for c, n in (waiting["code_id"].value_counts().items() if len(waiting) else ())
    }
    everything = frame[frame["coder"] == coder] if coder is not None and len(frame) else frame
    remaining = remaining_pairs(
        study,
        everything,
        coder=coder,
        code_ids=code_ids,
        names=names,
        audit=chosen_sample == "audit",
    )
    return StudyScreening(
        pooled=pooled,
        per_code=per_code,
        coder=coder,
        n_decisions=len(mine),
        n_unscored=len(mine) - len(scored),
        agreements=tuple(agreements),
        warnings=tuple(caught),
        sample=chosen_sample,
        sample_note="" if chosen_sample == "audit" else NOT_RANDOM,
        pooling=pooling,
        config_id=config_id,
        config=config_label(study.scores.config_row(config_id)),
        cut=describe_cut(cut, confidence),
        study_warning=off_scale_warning(study, config_id),
        advice=advise(
            pooled,
            per_code,
            audit=chosen_sample == "audit",
            headlines=headlines,
            remaining=remaining,
            unscored=unscored,
        ),
        unscored=unscored,
        headlines=headlines,
        remaining=remaining,
        stale_evidence=stale[0] if chosen_sample == "audit" else 0,
        coder_note=choice.note,
    )


def screen_coder(study: Study, human: pd.DataFrame, coder: str | None) -> CoderChoice:
    """Whose decisions a screen uses: ``coder``, or by default the one with the most
    blind audit decisions (the most decisions where nobody has one), said in
    :attr:`CoderChoice.note` (:mod:`study.analysis._coder_choice`).

    Args:
        human: Human decisions on the configuration's pairs (``annotated_pairs`` rows).

    Raises:
        StudyError: a named coder with no decisions.
    """
    coders = sorted(set(human["coder"])) if len(human) else []
    if coder is not None and coder not in coders and coders:
        raise StudyError(
            f"no decisions by coder {coder!r}; coders: {', '.join(coders)}", path=study.path
        )
    audited = blind_audit_rows(study, human, None)
    if len(audited):
        counts = audited["coder"].value_counts()
        return choose_coder(
            {c: int(counts.get(c, 0)) for c in coders}, coder, counted="blind audit decisions"
        )
    decided = human["coder"].value_counts() if len(human) else None
    return choose_coder({c: int(decided[c]) for c in coders} if decided is not None else {}, coder)


def check_screen_coder(study: Study, coder: str | None, config_id: int | None = None) -> None:
    """Refuse now a named ``coder`` a screen of ``config_id`` (the active configuration
    by default) would refuse later: one with no decisions.

    Raises:
        StudyError: as :func:`screen_coder`.
    """
    config_id = resolve_config(study, config_id)
    if config_id is None or coder is None:
        return
    frame = study.queries.annotated_pairs(config_id)
    human = frame[frame["source"] == "human"] if len(frame) else frame
    screen_coder(study, human, coder)


def _as_told(report: VRSReport, headline: Headline | None) -> VRSReport:
    """``report`` without phase B where its group's story withholds it."""
    if report.phase_b is None or story(report.tier, headline).calibration:
        return report
    return replace(report, phase_b=None)


def _stale_note(study: Study, frame: pd.DataFrame, coder: str | None) -> tuple[int, str]:
    """How many blind audit decisions of ``frame`` judged an older definition of their
    code (left out of the screen), and the sentence that says so, per code."""
    sample = study.audit.sample()
    if sample is None or not len(frame):
        return 0, ""
    stale = study.audit.stale_pairs(coder=coder)
    if not stale:
        return 0, ""
    by_code: dict[str, int] = {}
    for r, c, w in zip(frame["response_id"], frame["code_id"], frame["coder"], strict=True):
        if sample.is_audit(r, c) and (r, c, w) in stale:
            by_code[c] = by_code.get(c, 0) + 1
    n = sum(by_code.values())
    if not n:
        return 0, ""
    names = {code.id: code.name for code in study.codebook.codes}
    listed = ", ".join(f"{names.get(c, c)} {k}" for c, k in by_code.items())
    return n, (
        f"{n} blind audit decision(s) were made under an older definition of their code "
        f"and are left out as stale evidence ({listed}); extend the audit over new "
        "responses for the changed code"
    )


def blind_audit_rows(study: Study, frame: pd.DataFrame, coder: str | None) -> pd.DataFrame:
    """The rows of ``frame`` that are blind decisions on the audit sample."""
    sample = study.audit.sample()
    if sample is None or not len(frame):
        return frame.iloc[0:0]
    blind = study.audit.blind_pairs(coder=coder)
    keep = [
        sample.is_audit(r, c) and (r, c, w) in blind
        for r, c, w in zip(frame["response_id"], frame["code_id"], frame["coder"], strict=True)
    ]
    return frame[np.asarray(keep, dtype=bool)]


def _weighted_pool(
    pooled: VRSReport, per_code: Mapping[str, VRSReport], *, population: Mapping[str, int] | int
) -> tuple[VRSReport, str]:
    """The pooled report of audit decisions, weighted where codes' sampling fractions differ."""
    tables = {name: report.table for name, report in per_code.items()}
    pool = pool_tables(tables, population=population)
    if pool.self_weighting:
        return pooled, (
            "codes pooled by summing their tables: every code has the same sampling fraction"
        )
    text = (
        "codes pooled with weights N/n (pairs per code over its audit decisions): the "
        f"table is the weighted shares times Kish's effective size {pool.n_effective:.1f} "
        f"(raw {pool.raw.n}); intervals ignore that a response's pairs go together"
    )
    return replace(pooled, screen=screen_table(pool.table), phase_b=None), text


def _source(study: Study, config_id: int) -> str:
    row = study.scores.config_row(config_id)
    return f"{row.model.name} ({backend_name(row)}; {row.template_id}, context {row.context})"


def _screen_frame(
    frame: pd.DataFrame,
    code_ids: list[str],
    *,
    names: Mapping[str, str],
    cut: Cut,
    agreement: AgreementMode,
    confidence: ConfidenceKind,
    phase_b: bool,
    source: str,
    dataset: str,
) -> tuple[VRSReport, dict[str, VRSReport]]:
    common: dict[str, Any] = {
        "agreement": agreement,
        "confidence": confidence,
        "with_phase_b": phase_b,
        "source": source,
        "dataset": dataset,
    }
    per_code: dict[str, VRSReport] = {}
    correct_parts: list[np.ndarray[Any, Any]] = []
    conf_parts: list[np.ndarray[Any, Any]] = []
    high_parts: list[np.ndarray[Any, Any]] = []
    groups = list(frame.groupby(frame["scale_values"].map(tuple), sort=False)) if len(frame) else []
    pooled: VRSReport | None = None
    for values, group in groups:
        option_values = np.asarray(values, dtype=float)
        probs = np.vstack(group["probs"].map(lambda p: np.asarray(p, float)).to_list())
        applies_from = float(group["applies_from"].iloc[0])
        threshold: float | Literal["median"] = (
            scale_cut(len(values), confidence) if cut == SCALE_CUT else cut
        )
        # p_max is the stored confidence: the one the delegation certifies on and the long
        # export writes, so that both recompute to the same pairs (max(probs) may differ
        # from it in the last place).
        p_max = group["p_max"].to_numpy(float)
        screened = screen_coded(
            group["pick"].to_numpy(float),
            group["value"].to_numpy(float),
            option_values=option_values,
            codes=group["code_id"].map(lambda c: names.get(c, c)).to_numpy(object),
            probabilities=None if confidence == "pmax" else probs,
            p_max=p_max if confidence == "pmax" else None,
            applies_from=applies_from,
            threshold=threshold,
            **common,
        )
        if cut == SCALE_CUT:
            text = (
                f">= {threshold:.3f} (scale-aware: halfway between chance "
                f"1/{len(values)} and certainty)"
            )
            screened_codes = {
                name: replace(report, binarisation_threshold=text)
                for name, report in screened.per_code.items()
            }
            per_code.update(screened_codes)
            if len(groups) == 1:
                pooled = replace(screened.pooled, binarisation_threshold=text)
        else:
            per_code.update(screened.per_code)
            if len(groups) == 1:
                pooled = screened.pooled
        correct_parts.append(
            decisions_agree(
                group["pick"].to_numpy(float),
                group["value"].to_numpy(float),
                option_values=option_values,
                agreement=agreement,
                applies_from=applies_from,
            )
        )
        conf = p_max if confidence == "pmax" else 1.0 - group["norm_entropy"].to_numpy(float)
        conf_parts.append(conf)
        if not isinstance(threshold, str):
            high_parts.append(conf >= threshold)
    if pooled is None:
        correct = np.concatenate(correct_parts) if correct_parts else np.zeros(0, bool)
        conf = np.concatenate(conf_parts) if conf_parts else np.zeros(0)
        scale_aware = cut == SCALE_CUT
        pooled = screen_report(
            correct,
            conf,
            threshold=0.5 if scale_aware else cut,  # type: ignore[arg-type]
            high=(np.concatenate(high_parts) if high_parts else np.zeros(0, bool))
            if scale_aware
            else None,
            threshold_text="scale-aware: each code's own cut, halfway between chance and certainty"
            if scale_aware
            else None,
            with_phase_b=phase_b,
            source=source,
            dataset=dataset,
            confidence_signal="p_max" if confidence == "pmax" else "1 - normalised entropy",
        )
    ordered = {
        names.get(c, c): per_code[names.get(c, c)] for c in code_ids if names.get(c, c) in per_code
    }
    return pooled, ordered


def _agreement(
    between: tuple[str, str], first: np.ndarray[Any, Any], second: np.ndarray[Any, Any]
) -> Agreement:
    nan = float("nan")
    if first.size == 0:
        return Agreement(between, 0, nan, nan, nan, nan, nan)
    labels = np.union1d(first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)
        kappa = cohen_kappa(first, second, labels=labels)
        quadratic = cohen_kappa(first, second, labels=labels, weights="quadratic")
        data = np.vstack([first, second])
        alpha_n = krippendorff_alpha(data, level="nominal", labels=labels)
        alpha_o = krippendorff_alpha(data, level="ordinal", labels=labels)
    return Agreement(
        between=between,
        n=int(first.size),
        percent=percent_agreement(first, second),
        kappa=kappa,
        kappa_quadratic=quadratic,
        alpha_nominal=alpha_n,
        alpha_ordinal=alpha_o,
    )


def _coder_agreements(
    frame: pd.DataFrame, coders: list[str], code_ids: list[str]
) -> list[Agreement]:
    frame = frame[frame["code_id"].isin(code_ids)]
    wide = frame.pivot_table(
        index=["response_id", "code_id"], columns="coder", values="value", aggfunc="last"
    )
    out = []
    for i, one in enumerate(coders):
        for other in coders[i + 1 :]:
            both = wide[[one, other]].dropna()
            out.append(
                _agreement((one, other), both[one].to_numpy(float), both[other].to_numpy(float))
            )
    return out
