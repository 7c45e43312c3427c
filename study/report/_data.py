"""What a study report says, gathered from the study's analysis wing.

Every section is the JSON-ready dict of the function the matching command prints with
``--format json``: the screen is :func:`study.analysis.screen.screen_study` with phase B
(``codecurve screen --phase-b``), the delegation :func:`plan_delegation` (``codecurve
delegate``), the agreement :func:`study_agreement` (``codecurve agreement``), the
comparison :func:`compare_configs` (``codecurve compare``). A section that cannot be
made says why and what to do, in the words the command would print (:attr:`ReportData.
missing`). Beside them: the study's ledger, the audit's progress, a confusion matrix of
the model against the reference coder per code (on the pairs the screen used), each
code's entropies and a few example curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from codebooks.errors import CodecurveError
from screening.story import vrs_rows as told_rows
from study.analysis.agreement import MODEL, AgreementError, agreement_hint, study_agreement
from study.analysis.compare import compare_configs
from study.analysis.delegation_plan import plan_delegation
from study.analysis.findings import study_findings
from study.analysis.screen import StudyScreening, blind_audit_rows, screen_study
from study.labels import config_label
from study.log.delegations import guarantee_sentences
from study.queries.score_curves import code_entropies, surprisal_curves
from study.scores.learned import is_learned
from study.store import Study

if TYPE_CHECKING:
    import pandas as pd

#: The report's sections, in the order a reader meets them.
SECTIONS = (
    "study",
    "audit",
    "screen",
    "delegation",
    "agreement",
    "confusion",
    "entropy",
    "curves",
    "comparison",
)

#: The name of the group of all codes pooled.
POOLED = "All codes"

#: What to do when a study has no audit sample (the audit section's words).
NO_AUDIT = "the study has no audit sample; draw one and code it blind"
#: What to do when a study has no scores.
NO_SCORES = "the study has no scores yet; score it first"


@dataclass(frozen=True)
class ReportOptions:
    """How the report's analyses are run (each the matching command's default)."""

    coder: str | None = None
    config_id: int | None = None
    max_error: float = 0.05
    level: float = 0.95
    with_model: bool = False
    #: The coders the inter-coder reliability compares (None: every coder).
    coders: tuple[str, ...] | None = None
    resamples: int = 1000
    seed: int = 0
    examples: int = 3


@dataclass(frozen=True)
class ReportData:
    """The report's content as JSON-ready values, one entry per section.

    Attributes:
        sections: Section name -> its dict (absent when the section is missing).
        missing: Section name -> what to do to fill it.
        options: How it was made.
        vrs_rows: Per group (:data:`POOLED` and each code's name), the VRS table's rows
            as ``codecurve screen`` prints them.
    """

    sections: Mapping[str, dict[str, Any]]
    missing: Mapping[str, str]
    options: ReportOptions = field(default_factory=ReportOptions)
    vrs_rows: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any] | None:
        return self.sections.get(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sections": dict(self.sections),
            "missing": dict(self.missing),
        }


def _message(exc: CodecurveError) -> str:
    return exc.message


class _Pairs:
    """One report's reads of ``study.queries.annotated_pairs``: each (configuration,
    coder) read once, for every section that needs it."""

    def __init__(self, study: Study) -> None:
        self._study = study
        self._read: dict[tuple[int, str | None], pd.DataFrame] = {}

    def of(self, config_id: int, coder: str | None = None) -> pd.DataFrame:
        key = (config_id, coder)
        if key not in self._read:
            self._read[key] = self._study.queries.annotated_pairs(config_id, coder=coder)
        return self._read[key]


def report_data(study: Study, options: ReportOptions | None = None) -> ReportData:
    """Gather every section of ``study``'s report; a section that cannot be made is
    listed in ``missing`` with what to do, never raised."""
    opts = options or ReportOptions()
    sections: dict[str, dict[str, Any]] = {"study": _overview(study)}
    missing: dict[str, str] = {}
    vrs_rows: dict[str, tuple[tuple[str, str], ...]] = {}
    audit = _audit(study, opts.coder)
    if audit is None:
        missing["audit"] = NO_AUDIT
    else:
        sections["audit"] = audit
    config_id = opts.config_id if opts.config_id is not None else study.scores.active_config_id()
    screened: StudyScreening | None = None
    pairs = _Pairs(study)
    if config_id is None:
        for name in ("screen", "delegation", "confusion", "entropy", "curves"):
            missing[name] = NO_SCORES
    else:
        try:
            screened = screen_study(
                study, config_id, coder=opts.coder, phase_b=True, pairs=pairs.of(config_id)
            ).labelled()
        except CodecurveError as exc:
            missing["screen"] = missing["confusion"] = _message(exc)
        if screened is not None:
            sections["screen"] = screened.to_dict()
            # As the story of each group tells them (the tier never bare, no phase B
            # where the model adds nothing), as the terminal and the panel show them.
            vrs_rows[POOLED] = tuple(told_rows(screened.pooled.rows(), screened.headline(None)))
            vrs_rows.update(
                {
                    n: tuple(
                        told_rows(
                            r.rows(remaining=screened.remaining.get(n)),
                            screened.headline(n),
                            remaining=screened.remaining.get(n),
                            unscored=screened.unscored.get(n, 0),
                        )
                    )
                    for n, r in screened.per_code.items()
                }
            )
            sections["confusion"] = _confusion(study, screened, pairs.of(config_id, screened.coder))
        try:
            plan = plan_delegation(
                study,
                max_error=opts.max_error,
                level=opts.level,
                coder=opts.coder,
                config_id=config_id,
                # The audit's screen is the one just made (the same options): not twice.
                screened=screened if screened is not None and screened.sample == "audit" else None,
                pairs=(
                    pairs.of(config_id, screened.coder)
                    if screened is not None and screened.sample == "audit"
                    else None
                ),
            )
            sections["delegation"] = plan.to_dict()
        except CodecurveError as exc:
            missing["delegation"] = _message(exc)
        if screened is not None and study.audit.sample() is not None:
            try:
                sections["findings"] = study_findings(
                    study, coder=screened.coder, config=config_id
                ).to_dict()
            except CodecurveError as exc:
                missing["findings"] = _message(exc)
        entropies, curves = _curves(study, config_id, opts.examples)
        if entropies["codes"]:
            sections["entropy"] = entropies
            sections["curves"] = curves
        else:
            missing["entropy"] = missing["curves"] = NO_SCORES
        evidence = _evidence(study, config_id, opts.examples)
        if evidence is not None:  # nothing said where none was measured
            sections["evidence"] = evidence
    coders = None if opts.coders is None else [c for c in opts.coders if c != MODEL]
    if opts.with_model:
        people = coders or [c for c in study.decisions.coders() if c != MODEL]
        coders = [*people, MODEL]
    try:
        agreement = study_agreement(study, coders=coders, resamples=opts.resamples, seed=opts.seed)
        sections["agreement"] = agreement.to_dict()
    except AgreementError as exc:
        missing["agreement"] = exc.message + agreement_hint(exc, chosen=coders is not None)
    configs = study.scores.configs()
    if len(configs) >= 2:
        try:
            comparison = compare_configs(
                study, coder=opts.coder, resamples=opts.resamples, seed=opts.seed
            )
            sections["comparison"] = comparison.to_dict()
        except CodecurveError as exc:
            missing["comparison"] = _message(exc)
    return ReportData(sections=sections, missing=missing, options=opts, vrs_rows=vrs_rows)


def _overview(study: Study) -> dict[str, Any]:
    """Responses, codes, waves, coders, configurations, codebook version, the ledger."""
    active = study.scores.active_config_id()
    configs = [
        {
            "id": row.id,
            "label": config_label(row),
            "active": row.id == active,
            "model": row.model.name,
            "revision": row.model.revision,
            "dtype": row.model.dtype,
            "device": row.model.device,
            "backend": row.model.backend,
            "template": row.template_id,
            "template_hash": row.template_hash,
            "context": row.context,
            "scale": row.scale.name,
            "key": row.key,
            "scored": study.scores.scored_count(row.id),
            "created_at": row.created_at,
        }
        for row in study.scores.configs()
    ]
    codebook = study.codebook
    return {
        "name": study.path.name,
        "responses": study.response_count(),
        "codes": [
            {"id": c.id, "name": c.name, "scale": codebook.scale_for(c).name}
            for c in codebook.codable
        ],
        "codebook": codebook.name,
        "codebook_version": study.versions.current(),
        "codebook_hash": codebook.content_hash(),
        "waves": [
            {"wave": w.wave, "source": w.source, "responses": w.count, "at": w.at}
            for w in study.versions.waves()
        ],
        "coders": list(study.decisions.coders()),
        "configurations": configs,
        # The delegations applied (not undone): code id -> its guarantee sentence.
        "delegations": guarantee_sentences(study),
    }


def _audit(study: Study, coder: str | None) -> dict[str, Any] | None:
    """The audit sample's design and progress (``codecurve audit --format json``'s)."""
    sample = study.audit.sample()
    if sample is None:
        return None
    progress = study.audit.progress(coder=coder)
    rows = []
    for code in study.codes:
        p = progress.get(code.id)
        if p is None:
            continue
        decided = p.progress.coded + p.unblind
        rows.append(
            {
                "code_id": code.id,
                "code": code.name,
                "size": p.progress.size,
                "coded": p.progress.coded,
                "skipped": p.progress.skipped,
                "remaining": p.progress.remaining,
                "unblind": p.unblind,
                "blind_share": None if not decided else p.progress.coded / decided,
            }
        )
    return {
        "seed": sample.seed,
        "population": sample.population,
        "drawn_at": sample.drawn_at,
        "draws": list(sample.draws),
        "codes": rows,
    }


def _confusion(study: Study, screened: StudyScreening, frame: pd.DataFrame) -> dict[str, Any]:
    """Per code, the reference coder's decision (rows) against the model's pick (columns),
    on the pairs the screen used (``frame``: the screen's configuration's annotated pairs
    by its coder)."""
    if len(frame):
        frame = frame[(frame["source"] == "human") & frame["scored"].astype(bool)]
    if screened.sample == "audit" and len(frame):
        frame = blind_audit_rows(study, frame, screened.coder)
    out: dict[str, Any] = {}
    for code in study.codebook.codable:
        scale = study.codebook.scale_for(code)
        mine = frame[frame["code_id"] == code.id] if len(frame) else frame
        at = {v: i for i, v in enumerate(scale.values)}
        matrix = np.zeros((scale.k, scale.k), dtype=int)
        for value, pick in zip(mine["value"], mine["pick"], strict=True) if len(mine) else ():
            if int(value) in at and int(pick) in at:
                matrix[at[int(value)], at[int(pick)]] += 1
        out[code.name] = {
            "code_id": code.id,
            "labels": list(scale.labels),
            "values": list(scale.values),
            "rows": "reference coder",
            "columns": "model",
            "counts": matrix.tolist(),
            "n": int(matrix.sum()),
        }
    return {"coder": screened.coder, "sample": screened.sample, "codes": out}


def _curves(study: Study, config_id: int, examples: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each code's entropy summary, and the lowest, median and highest entropy curves."""
    entropies = code_entropies(study, config_id)
    codes: dict[str, Any] = {}
    chosen: list[tuple[str, str, str]] = []
    for code_id, found in entropies.items():
        code = study.code(code_id)
        values = found.norm_entropy
        order = np.argsort(values, kind="stable")
        q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])
        codes[code.name] = {
            "code_id": code_id,
            "n": int(values.size),
            "mean": float(values.mean()),
            "quartiles": [float(x) for x in q],
            "histogram": _histogram(values),
        }
        picks = _example_positions(values.size, examples)
        for label, at in zip(_example_labels(len(picks)), picks, strict=True):
            chosen.append((code.name, label, found.response_ids[int(order[at])]))
    curves = surprisal_curves(
        study, config_id, [(rid, study.code(name).id) for name, _, rid in chosen]
    )
    examples_out: dict[str, list[dict[str, Any]]] = {}
    for name, label, rid in chosen:
        code = study.code(name)
        scale = study.codebook.scale_for(code)
        found = entropies[code.id]
        at = found.response_ids.index(rid)
        examples_out.setdefault(name, []).append(
            {
                "which": label,
                "response_id": rid,
                "text": study.response(rid).text,
                "norm_entropy": float(found.norm_entropy[at]),
                "labels": list(scale.labels),
                "surprisal": list(curves.get((rid, code.id), ())),
            }
        )
    return (
        {"config_id": config_id, "codes": codes},
        {"config_id": config_id, "codes": examples_out},
    )


def _evidence(study: Study, config_id: int, examples: int) -> dict[str, Any] | None:
    """Per code with evidence kept (``codecurve explain``), up to ``examples`` pairs
    most likely to apply whose top sentence raised P(applies): the response, where the
    sentence is and how far P(applies) falls without it. None when no code has one."""
    codes: dict[str, list[dict[str, Any]]] = {}
    for code in study.index.codable_codes():
        kept = [
            (e, top)
            for e in study.evidence.for_config(config_id, code_id=code.id)
            if (top := e.top) is not None and top.applies_effect > 0
        ]
        kept.sort(key=lambda item: (-item[0].applies, item[0].response_id))
        if kept[:examples]:
            codes[code.name] = [
                {
                    "response_id": e.response_id,
                    "text": study.response(e.response_id).text,
                    "applies": e.applies,
                    "start": top.start,
                    "end": top.end,
                    "applies_without": top.applies_without,
                    "effect": top.applies_effect,
                }
                for e, top in kept[:examples]
            ]
    if not codes:
        return None
    learned = is_learned(study.scores.config_row(config_id))
    return {"config_id": config_id, "learned": learned, "codes": codes}


#: Edges of the entropy histograms: ten bins of [0, 1].
ENTROPY_EDGES = tuple(float(x) for x in np.linspace(0.0, 1.0, 11))


def _histogram(values: np.ndarray[Any, Any]) -> dict[str, Sequence[float]]:
    counts, _ = np.histogram(np.clip(values, 0.0, 1.0), bins=np.asarray(ENTROPY_EDGES))
    return {"edges": list(ENTROPY_EDGES), "counts": [int(c) for c in counts]}


def _example_positions(n: int, examples: int) -> list[int]:
    """Ranks of the examples: the lowest, the median, the highest (fewer when n is small)."""
    if n == 0 or examples < 1:
        return []
    if examples == 1 or n == 1:
        return [n // 2]
    ranks = np.linspace(0, n - 1, min(examples, n)).round().astype(int)
    return sorted({int(r) for r in ranks})


def _example_labels(count: int) -> list[str]:
    if count == 1:
        return ["median entropy"]
    if count == 2:
        return ["lowest entropy", "highest entropy"]
    middle = (
        ["median entropy"] if count == 3 else [f"entropy rank {i}" for i in range(1, count - 1)]
    )
    return ["lowest entropy", *middle, "highest entropy"]
