"""Findings: how often each code applies, overall and by group (METHOD.md section 4).

:func:`study_findings` estimates, per code (and per group of a response column with
``by``), the prevalence of "applies" three ways:

* the blind random audit alone (the chosen coder's blind decisions on the audit sample;
  Wilson score interval);
* prediction-powered inference (PPI++ with power tuning, :func:`screening.prevalence.ppi_mean`),
  with the model's pick on every pair of one scoring configuration as the prediction and
  the audit decisions as the labels; beside it the same with the model's probability of
  applying as the prediction;
* the plain count of final codes (the coder's decision where there is one, else the
  model's pick), which is *descriptive*, not an estimate, once model picks are among it.

On a scale of more than two points the mean value and the share of each point are
estimated the same way. Groups are compared by the difference of their estimates
(:func:`screening.prevalence.difference`). :func:`co_occurrence` counts how often two
codes apply together on the final codes; :func:`coded_responses` lists the responses a
code applies to, with notes and memos (a coding report).

What is estimated is the prevalence among the responses of the audit's draw: responses
added later (a new wave) are not in the audit sample and are left out, with a note.
Audit decisions made under an earlier definition of their code are left out too.

All reading of the study happens in the ``_read_*`` functions at the top; the rest works
on the DataFrames they return.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from codebooks.errors import Remedy
from codebooks.model import Code, Scale
from screening.prevalence import (
    MIN_SIDE,
    NORMAL_SIDE,
    Difference,
    Estimate,
    audit_mean,
    audit_proportion,
    difference,
    ppi_mean,
)
from study.analysis._coder_choice import CoderChoice, choose_coder
from study.audit.sample import AuditSample
from study.errors import StudyError
from study.exchange.frames import long_frame
from study.iteration.revisions import read_versions, stale_pairs
from study.labels import config_label, resolve_config
from study.queries.pairs import pair_scale
from study.queries.records import blind_decisions, response_records
from study.store import Study

#: Below this many audit decisions a code (or group) gets no prediction-powered interval:
#: its normal approximation is not to be trusted (the audit-only Wilson interval stays).
MIN_AUDIT = 20
#: A ``by`` column with more distinct values than this is refused (offer ``top``).
MAX_GROUPS = 30
#: The group of responses without a value in the ``by`` column.
MISSING = "(missing)"
#: The group the values past ``top`` are pooled into.
OTHER = "(other)"

# -- reading the study --------------------------------------------------------------------


def _read_config(study: Study, config: int | str | None) -> tuple[int | None, str]:
    """The configuration's id (None when nothing is scored) and its label."""
    config_id = resolve_config(study, config)
    if config_id is None:
        return None, ""
    return config_id, config_label(study.scores.config_row(config_id))


def _read_audit(study: Study) -> AuditSample | None:
    return study.audit.sample()


def _read_pairs(study: Study, config_id: int | None, coder: str | None) -> pd.DataFrame:
    """Every (response, current code) pair with the model's score and the final value."""
    frame = long_frame(study, config_id=config_id, coder=coder)
    return frame[~frame["archived"].to_numpy(dtype=bool)].reset_index(drop=True)


def _read_responses(study: Study) -> pd.DataFrame:
    """One row per response: ``response_id``, ``text``, ``wave`` and its attributes."""
    with study.snapshot() as conn:
        records = response_records(conn)
    frame = pd.DataFrame(
        {
            "response_id": [r[0] for r in records],
            "text": [r[1] for r in records],
            "wave": [r[3] for r in records],
        }
    )
    attrs = pd.DataFrame.from_records([r[2] for r in records], index=frame.index)
    attrs = attrs[[c for c in attrs.columns if c not in frame.columns]]
    return pd.concat([frame, attrs], axis=1)


def _read_blind(study: Study) -> pd.DataFrame:
    """Every blind human decision: ``response_id, code_id, coder, value, stale``.

    ``stale``: made under a codebook version in which the code's definition differed
    from the current one.
    """
    with study.snapshot() as conn:
        rows = blind_decisions(conn)
        versions = read_versions(conn, path=study.path)
    hashes: dict[int, dict[str, str]] = {
        v.version: {c.id: c.content_hash() for c in v.codebook.codes} for v in versions
    }
    codable = set(study.index.codable_keys)
    records = []
    for rid, cid, who, value, version in rows:
        if int(cid) not in codable:
            continue
        code = study.index.code_at(cid)
        then = hashes.get(int(version), {}) if version is not None else {}
        stale = version is not None and then.get(code.id) not in (None, code.content_hash())
        records.append((study.index.response_id(rid), code.id, str(who), int(value), stale))
    return pd.DataFrame.from_records(
        records, columns=["response_id", "code_id", "coder", "value", "stale"]
    )


def _read_stale_scores(study: Study, config_id: int | None) -> dict[str, int]:
    """code id -> pairs whose score was computed from another text of the code or response."""
    if config_id is None:
        return {}
    with study.snapshot() as conn:
        pairs = stale_pairs(conn, study.index, config_id)
    out: dict[str, int] = {}
    for pair in pairs:
        out[pair.code.id] = out.get(pair.code.id, 0) + 1
    return out


def _read_scales(study: Study, config_id: int | None) -> dict[str, Scale]:
    return {code.id: pair_scale(study, config_id, code) for code in study.codebook.codable}


def _read_codes(study: Study) -> tuple[Code, ...]:
    return study.codebook.codable


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlainCount:
    """The count of final codes: descriptive, not an estimate, when model picks are in it.

    Attributes:
        applies: Pairs whose final value applies.
        valued: Pairs with a final value (decided or scored).
        share: ``applies / valued`` (nan when nothing has a value).
        sources: Final values by where they come from: ``human``, ``accepted``,
            ``delegated``, ``model`` (unreviewed picks).
    """

    applies: int
    valued: int
    share: float
    sources: Mapping[str, int]

    @property
    def descriptive(self) -> bool:
        """Whether any final value is the model's (then this is no estimate)."""
        return any(self.sources.get(k, 0) for k in ("accepted", "delegated", "model"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "applies": self.applies,
            "valued": self.valued,
            "share": None if math.isnan(self.share) else self.share,
            "sources": dict(self.sources),
            "descriptive": self.descriptive,
        }


@dataclass(frozen=True)
class PointShare:
    """One point of an ordinal scale: the share of pairs at that value."""

    value: int
    label: str
    audit: Estimate
    ppi: Estimate
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "label": self.label,
            "audit": self.audit.to_dict(),
            "ppi": self.ppi.to_dict(),
            "count": self.count,
        }


@dataclass(frozen=True)
class CodeFinding:
    """One code's prevalence in one group (``group`` None: all responses).

    Attributes:
        code_id: The code.
        code_name: Its name.
        group: The group's value of the ``by`` column, or None.
        pairs: Pairs (responses) in the estimate's population.
        audit_pairs: Pairs of the audit sample among them.
        labelled: Blind audit decisions used as labels.
        audit: The audit-only estimate (Wilson).
        ppi: The prediction-powered estimate with the model's pick as prediction.
        ppi_probability: The same with the model's probability of applying.
        count: The plain count of final codes.
        mean: Ordinal scales: (audit, PPI) estimates of the mean value.
        points: Ordinal scales: the share of each point.
        sentence: What a results section can quote.
        notes: Cautions and refusals, one line each.
        exact: Every pair has a final value decided by a person: the count is the
            figure itself, exactly, and needs no interval.
    """

    code_id: str
    code_name: str
    group: str | None
    pairs: int
    audit_pairs: int
    labelled: int
    audit: Estimate
    ppi: Estimate
    ppi_probability: Estimate
    count: PlainCount
    mean: tuple[Estimate, Estimate] | None = None
    points: tuple[PointShare, ...] = ()
    sentence: str = ""
    notes: tuple[str, ...] = ()
    exact: bool = False

    @property
    def best(self) -> Estimate:
        """The estimate to report: PPI where it has an interval, else the audit alone."""
        return self.ppi if self.ppi.ok else self.audit

    def to_dict(self) -> dict[str, Any]:
        return {
            "code_id": self.code_id,
            "code_name": self.code_name,
            "group": self.group,
            "pairs": self.pairs,
            "audit_pairs": self.audit_pairs,
            "labelled": self.labelled,
            "audit": self.audit.to_dict(),
            "ppi": self.ppi.to_dict(),
            "ppi_probability": self.ppi_probability.to_dict(),
            "count": self.count.to_dict(),
            "mean": None
            if self.mean is None
            else {"audit": self.mean[0].to_dict(), "ppi": self.mean[1].to_dict()},
            "points": [p.to_dict() for p in self.points],
            "sentence": self.sentence,
            "notes": list(self.notes),
            "exact": self.exact,
        }


@dataclass(frozen=True)
class GroupDifference:
    """A code's prevalence in one group minus another (or minus all other responses)."""

    code_id: str
    code_name: str
    group: str
    versus: str
    ppi: Difference
    audit: Difference

    def to_dict(self) -> dict[str, Any]:
        return {
            "code_id": self.code_id,
            "code_name": self.code_name,
            "group": self.group,
            "versus": self.versus,
            "ppi": self.ppi.to_dict(),
            "audit": self.audit.to_dict(),
        }


@dataclass(frozen=True)
class Findings:
    """A study's findings: per code overall, per group, and the groups' differences."""

    study: str
    config_id: int | None
    config: str
    coder: str | None
    level: float
    by: str | None
    population: int
    codes: tuple[CodeFinding, ...]
    groups: tuple[CodeFinding, ...] = ()
    differences: tuple[GroupDifference, ...] = ()
    notes: tuple[str, ...] = ()
    method: str = ""
    #: Whose blind audit decisions, where taken by default among several ("" otherwise).
    coder_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "config_id": self.config_id,
            "config": self.config,
            "coder": self.coder,
            "coder_note": self.coder_note,
            "level": self.level,
            "by": self.by,
            "population": self.population,
            "method": self.method,
            "codes": [c.to_dict() for c in self.codes],
            "groups": [g.to_dict() for g in self.groups],
            "differences": [d.to_dict() for d in self.differences],
            "notes": list(self.notes),
        }

    def table(self) -> pd.DataFrame:
        """One row per code and group (overall first): the figures flattened."""
        rows = [
            {
                "code": f.code_name,
                "group": "(all)" if f.group is None else f.group,
                "pairs": f.pairs,
                "audit_n": f.labelled,
                "ppi": f.ppi.estimate,
                "ppi_lower": f.ppi.lower,
                "ppi_upper": f.ppi.upper,
                "ppi_lambda": f.ppi.lam,
                "ppi_interval": f.ppi.interval,
                "ppi_prob": f.ppi_probability.estimate,
                "ppi_prob_lower": f.ppi_probability.lower,
                "ppi_prob_upper": f.ppi_probability.upper,
                "audit": f.audit.estimate,
                "audit_lower": f.audit.lower,
                "audit_upper": f.audit.upper,
                "count_share": f.count.share,
                "count_applies": f.count.applies,
                "count_descriptive": f.count.descriptive,
                "count_exact": f.exact,
                "sentence": f.sentence,
                "notes": "; ".join(f.notes),
            }
            for f in (*self.codes, *self.groups)
        ]
        return pd.DataFrame(rows)

    def difference_table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "code": d.code_name,
                    "group": d.group,
                    "versus": d.versus,
                    "ppi_difference": d.ppi.estimate,
                    "ppi_lower": d.ppi.lower,
                    "ppi_upper": d.ppi.upper,
                    "audit_difference": d.audit.estimate,
                    "audit_lower": d.audit.lower,
                    "audit_upper": d.audit.upper,
                    "method": d.ppi.method,
                    "reason": d.ppi.reason,
                }
                for d in self.differences
            ]
        )


# -- estimating ---------------------------------------------------------------------------


@dataclass
class _Code:
    """What one code's estimates need, per pair of the population (arrays aligned)."""

    code: Code
    scale: Scale
    response_ids: np.ndarray[Any, Any]
    in_audit: np.ndarray[Any, Any]
    label: np.ndarray[Any, Any]  # the coder's blind audit value, nan where none
    pick: np.ndarray[Any, Any]  # the model's pick, nan where unscored
    p_applies: np.ndarray[Any, Any]
    final_applies: np.ndarray[Any, Any]  # 1/0, nan where no final value
    final_from: np.ndarray[Any, Any]
    stale: int = 0
    notes: list[str] = field(default_factory=list)


def _p_applies(probs: Sequence[Any], scale: Scale) -> np.ndarray[Any, Any]:
    mask = np.asarray([v >= scale.threshold for v in scale.values], dtype=bool)
    out = np.full(len(probs), np.nan)
    for i, p in enumerate(probs):
        if isinstance(p, list) and len(p) == len(mask):
            out[i] = float(np.asarray([np.nan if v is None else v for v in p], float)[mask].sum())
    return out


def _plain_count(final: np.ndarray[Any, Any], sources: np.ndarray[Any, Any]) -> PlainCount:
    valued = ~np.isnan(final)
    counts = {k: int(np.sum(sources[valued] == k)) for k in ("human", "accepted", "delegated")}
    counts["model"] = int(np.sum(sources[valued] == "model"))
    n = int(valued.sum())
    k = int(np.nansum(final))
    return PlainCount(k, n, k / n if n else math.nan, counts)


def _refused(reason: str, method: str, level: float, n: int = 0, big_n: int = 0) -> Estimate:
    nan = math.nan
    return Estimate(nan, nan, nan, nan, n, big_n, method, level=level, reason=reason)


def _estimate(
    data: _Code,
    rows: np.ndarray[Any, Any],
    *,
    group: str | None,
    level: float,
    scored_reason: str,
    context: str,
) -> CodeFinding:
    """The finding for the pairs ``rows`` (a boolean mask) of one code."""
    scale = data.scale
    label = data.label[rows]
    labelled = ~np.isnan(label)
    pick = data.pick[rows]
    prob = data.p_applies[rows]
    n = int(labelled.sum())
    notes: list[str] = []
    y_value = label[labelled]
    y = np.asarray([scale.applies(int(v)) for v in y_value], dtype=float)
    audit = audit_proportion(y, level=level)
    count = _plain_count(data.final_applies[rows], data.final_from[rows])
    audit_pairs = int(data.in_audit[rows].sum())
    if audit_pairs > n:
        notes.append(
            f"{audit_pairs - n} of the {audit_pairs} audit pairs have no blind decision yet"
            " (skipping hard ones would bias the audit)"
        )
    unscored = int(np.isnan(pick).sum())
    reason = scored_reason
    if not reason and unscored:
        reason = (
            f"{unscored} of {int(rows.sum())} pairs have no score under the configuration: "
            "the model's prediction is needed on every pair"
        )
    if not reason and n < MIN_AUDIT:
        reason = f"the audit has {n} decision(s) here, fewer than {MIN_AUDIT} for an interval"
    picks_applies = np.asarray(
        [scale.applies(int(v)) if not math.isnan(v) else False for v in pick], dtype=float
    )
    if reason:
        ppi = _refused(reason, "PPI++", level, n, int(rows.sum()) - n)
        ppi_prob = _refused(reason, "PPI++ (probability)", level, n, int(rows.sum()) - n)
    else:
        ppi = ppi_mean(
            y, picks_applies[labelled], picks_applies[~labelled], level=level, binary=True
        )
        if np.isnan(prob).any():
            ppi_prob = _refused("the model's probabilities are missing", "PPI++", level)
        else:
            ppi_prob = ppi_mean(y, prob[labelled], prob[~labelled], level=level, binary=True)
            ppi_prob = _renamed(ppi_prob, "PPI++ (probability)")
    if not audit.ok and not n:
        notes.append("no blind audit decisions here")
    notes.extend(e.note for e in (ppi, audit) if e.note)
    mean = None
    points: tuple[PointShare, ...] = ()
    if len(scale.values) > 2:
        mean_audit = audit_mean(y_value, level=level)
        mean_ppi = (
            _refused(reason, "PPI++", level)
            if reason
            else ppi_mean(y_value, pick[labelled], pick[~labelled], level=level)
        )
        mean = (mean_audit, mean_ppi)
        shares = []
        for option in scale.options:
            yk = (y_value == option.value).astype(float)
            fk = (pick == option.value).astype(float)
            shares.append(
                PointShare(
                    value=option.value,
                    label=option.label,
                    audit=audit_proportion(yk, level=level),
                    ppi=_refused(reason, "PPI++", level)
                    if reason
                    else ppi_mean(yk, fk[labelled], fk[~labelled], level=level, binary=True),
                    count=int(np.sum(pick == option.value)),
                )
            )
        points = tuple(shares)
    finding = CodeFinding(
        code_id=data.code.id,
        code_name=data.code.name,
        group=group,
        pairs=int(rows.sum()),
        audit_pairs=audit_pairs,
        labelled=n,
        audit=audit,
        ppi=ppi,
        ppi_probability=ppi_prob,
        count=count,
        mean=mean,
        points=points,
        notes=tuple(notes),
        exact=_decided_by_people(count, int(rows.sum())),
    )
    return _with_sentence(finding, context)


def _decided_by_people(count: PlainCount, pairs: int) -> bool:
    """Whether a person decided every pair: the count is then exact (a census)."""
    return pairs > 0 and count.valued == pairs and count.sources.get("human", 0) == pairs


def _renamed(estimate: Estimate, method: str) -> Estimate:
    return replace(estimate, method=method)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _interval(e: Estimate) -> str:
    return f"{round(100 * e.level)}% CI {_pct(e.lower)} to {_pct(e.upper)}"


def _with_sentence(finding: CodeFinding, context: str) -> CodeFinding:
    where = "" if finding.group is None else f" in {finding.group}"
    ppi, audit = finding.ppi, finding.audit
    count = finding.count
    if finding.exact:
        text = (
            f"{finding.code_name} applies to exactly {count.applies} of the "
            f"{finding.pairs:,} responses{where} ({_pct(count.share)}): a person decided "
            "every one, so this is a count, not an estimate, and needs no interval"
        )
        return replace(finding, sentence=text + ".")
    if ppi.ok:
        text = (
            f"{finding.code_name} applies to an estimated {_pct(ppi.estimate)} of the "
            f"{finding.pairs:,} responses{where} ({_interval(ppi)}, {ppi.why or 'normal'}; "
            f"prediction-powered inference (PPI++, lambda = {ppi.lam:.2f}) combining "
            f"{context} on all {finding.pairs:,} responses with {finding.labelled} blind "
            "random audit decisions)"
        )
        if ppi.lam < 0.05:
            text += (
                "; the model's picks add next to nothing here (lambda near 0), so this is "
                "in effect the audit alone"
            )
        if audit.ok:
            text += (
                f"; the audit alone gives {_pct(audit.estimate)} (Wilson {_interval(audit)}, "
                f"n = {audit.n})"
            )
    elif audit.ok:
        text = (
            f"{finding.code_name} applies to {_pct(audit.estimate)} of {audit.n} blind "
            f"random audit decisions{where} (Wilson {_interval(audit)}), of "
            f"{finding.pairs:,} responses; no prediction-powered estimate: {ppi.reason}"
        )
    else:
        text = f"No estimate for {finding.code_name}{where}: {audit.reason or ppi.reason}"
    if count.valued and count.descriptive:
        model = count.valued - count.sources.get("human", 0)
        text += (
            f". Counting final codes gives {_pct(count.share)} ({count.applies} of "
            f"{count.valued}, {model} of them the model's); that count is descriptive, "
            "not an estimate"
        )
    return replace(finding, sentence=text + ".")


# -- grouping -----------------------------------------------------------------------------


def _groups(
    responses: pd.DataFrame, by: str, *, top: int | None
) -> tuple[pd.Series[Any], list[str]]:
    """Each response's group label and the groups in order (largest first)."""
    columns = [c for c in responses.columns if c not in ("response_id", "text")]
    if by not in columns:
        raise StudyError(f"no response column {by!r}; columns: {', '.join(columns) or '(none)'}")
    values = responses[by].map(lambda v: MISSING if v is None or v == "" or v != v else str(v))
    sizes = values.value_counts(sort=True)
    ordered = [str(v) for v in sizes.index]
    if top is not None:
        if top < 1:
            raise StudyError(f"the largest groups kept are at least 1, not {top}")
        keep = set(ordered[:top])
        values = values.where(values.isin(keep), OTHER)
        ordered = [*ordered[:top], *([OTHER] if len(ordered) > top else [])]
    elif len(ordered) > MAX_GROUPS:
        largest = ", ".join(f"{v} ({sizes[v]})" for v in ordered[:5])
        raise StudyError(
            f"column {by!r} has {len(ordered)} distinct values, too many groups to estimate "
            f"(at most {MAX_GROUPS}); the largest are {largest}; keep the largest "
            "groups only (the rest pooled as '(other)')",
            remedy=Remedy("retry", "keep the largest groups only", {"top": "N"}),
        )
    if by == "wave":
        ordered = sorted(ordered, key=lambda v: (not v.isdigit(), int(v) if v.isdigit() else 0))
    return values, ordered


def _choose_coder(
    blind: pd.DataFrame, coder: str | None, sample: AuditSample | None
) -> CoderChoice:
    """Whose blind audit decisions are the labels: ``coder``, or the one with the most."""
    if sample is None or not len(blind):
        return CoderChoice(coder)
    on_audit = blind[
        [sample.is_audit(r, c) for r, c in zip(blind["response_id"], blind["code_id"], strict=True)]
    ]
    counts = on_audit["coder"].value_counts()
    coders = sorted(counts.index)
    if coder is not None and coders and coder not in coders:
        raise StudyError(
            f"no blind audit decisions by coder {coder!r}; coders: {', '.join(coders)}"
        )
    return choose_coder({c: int(counts[c]) for c in coders}, coder, counted="blind audit decisions")


def _resolve_code(codes: Sequence[Code], code: str) -> Code:
    for c in codes:
        if code in (c.id, c.name) or code.casefold() == c.name.casefold():
            return c
    raise StudyError(f"no code {code!r}; codes: {', '.join(c.name for c in codes)}")


def study_findings(
    study: Study,
    *,
    by: str | None = None,
    coder: str | None = None,
    code: str | None = None,
    config: int | str | None = "active",
    level: float = 0.95,
    top: int | None = None,
) -> Findings:
    """Per code (and per group of ``by``), the prevalence of "applies" (module docstring).

    Args:
        study: An open study.
        by: A response column (an attribute of the responses, or ``wave``) to group by.
        coder: Whose blind audit decisions are the labels (by default the coder with
            the most, said in ``coder_note``); also whose decisions are the final codes.
        code: Only this code (id or name).
        config: The scoring configuration of the predictions (the active one by default).
        level: The intervals' confidence level.
        top: With ``by``: keep the ``top`` largest groups, the rest pooled as ``(other)``.

    Raises:
        StudyError: an unknown column, code, coder or configuration; a column with too
            many values; an ambiguous coder.
    """
    if not 0 < level < 1:
        raise StudyError(f"the confidence level must lie strictly between 0 and 1, not {level}")
    codes = _read_codes(study)
    if code is not None:
        codes = (_resolve_code(codes, code),)
    responses = _read_responses(study)
    group_of, group_names = (None, []) if by is None else _groups(responses, by, top=top)
    config_id, label = _read_config(study, config)
    sample = _read_audit(study)
    blind = _read_blind(study)
    choice = _choose_coder(blind, coder, sample)
    coder = choice.coder
    pairs = _read_pairs(study, config_id, coder)
    scales = _read_scales(study, config_id)
    notes: list[str] = []
    in_draw = np.ones(len(responses), dtype=bool)
    if sample is None:
        notes.append(
            "no audit sample: draw one and code it blind for estimates; "
            "only the plain count of final codes is shown"
        )
    else:
        drawn = set(sample.permutation)
        in_draw = responses["response_id"].isin(drawn).to_numpy(dtype=bool)
        left_out = int((~in_draw).sum())
        if left_out:
            waves = sorted(set(responses.loc[~in_draw, "wave"].astype(int)))
            notes.append(
                f"{left_out} response(s) (wave {', '.join(map(str, waves))}) were added after "
                "the audit was drawn and are not in it: the estimates describe the "
                f"{int(in_draw.sum())} responses of the draw; the new responses need an "
                "audit of their own"
            )
    if sample is not None and coder is None:
        notes.append(
            "no blind decisions on the audit sample yet: code it (the app's blind audit, "
            "or import a coder's codes) for estimates"
        )
    stale_scores = _read_stale_scores(study, config_id)
    scored_reason = "" if config_id is not None else "the study has no scores"
    if config_id is None:
        notes.append("no scores: score the study for prediction-powered estimates")
    context = (
        f"the picks of the model under configuration {label}" if label else "the model's picks"
    )
    population = responses[in_draw]
    pos = {r: i for i, r in enumerate(population["response_id"])}
    n_pop = len(population)
    mine = blind[blind["coder"] == coder] if coder is not None else blind.iloc[0:0]
    overall: list[CodeFinding] = []
    by_group: list[CodeFinding] = []
    diffs: list[GroupDifference] = []
    groups_array = None if group_of is None else group_of[in_draw].to_numpy(dtype=object)
    members = study.index.scoped_members()
    for c in codes:
        # A code scoped to survey questions is estimated over the responses it applies
        # to: its prevalence is among the answers to its own questions.
        ids, code_pos, code_n, code_groups = population["response_id"], pos, n_pop, groups_array
        if c.id in members:
            own = population["response_id"].isin(members[c.id]).to_numpy(dtype=bool)
            ids = population["response_id"][own]
            code_pos = {r: i for i, r in enumerate(ids)}
            code_n = len(ids)
            code_groups = None if groups_array is None else groups_array[own]
        data = _code_data(c, scales[c.id], pairs, ids, code_pos, code_n, sample, mine)
        every = np.ones(code_n, dtype=bool)
        finding = _estimate(
            data, every, group=None, level=level, scored_reason=scored_reason, context=context
        )
        if data.stale:
            finding = _noted(
                finding,
                f"{data.stale} blind audit decision(s) were made under an earlier definition "
                "of the code and are left out; code those pairs again",
            )
        if stale_scores.get(c.id):
            finding = _noted(
                finding,
                f"{stale_scores[c.id]} pair(s) were scored under an earlier text of the code "
                "or response: the estimate stays valid, but scoring the study again "
                "makes the model's picks answer the current question",
            )
        overall.append(finding)
        if code_groups is None:
            continue
        found: dict[str, CodeFinding] = {}
        names = group_names
        if c.id in members and group_of is not None:
            # Only the groups holding responses the code applies to (by question: its own).
            applies = responses["response_id"].isin(members[c.id]).to_numpy(dtype=bool)
            names = [n for n in group_names if bool((group_of[applies] == n).any())]
        for name in names:
            rows = code_groups == name
            if not rows.any():
                all_rows = int((group_of == name).sum()) if group_of is not None else 0
                found[name] = _empty_group(finding, name, all_rows, level)
                continue
            found[name] = _estimate(
                data, rows, group=name, level=level, scored_reason=scored_reason, context=context
            )
            if not found[name].labelled:
                found[name] = _noted(found[name], "no audit pairs in this group")
        by_group.extend(found.values())
        diffs.extend(_differences(data, code_groups, names, found, level, scored_reason, context))
    return Findings(
        study=study.path.name,
        config_id=config_id,
        config=label,
        coder=coder,
        level=level,
        by=by,
        population=n_pop,
        codes=tuple(overall),
        groups=tuple(by_group),
        differences=tuple(diffs),
        notes=tuple(notes),
        method=_method(level),
        coder_note=choice.note,
    )


def _method(level: float) -> str:
    return (
        f"Prevalence of each code with {round(100 * level)}% intervals: prediction-powered "
        "inference (PPI++ with power tuning; Angelopoulos et al. 2023) combining the "
        "model's pick on every response with the blind decisions on a simple random audit "
        "sample drawn independently of the scores. Its interval is the normal one (as the "
        f"authors' ppi_py) where the audit holds at least {NORMAL_SIDE} decisions each of "
        "applies and does not apply, and otherwise a score interval that takes the "
        "variance of the human decisions at each prevalence tested, as Wilson's interval "
        "does (with the model's predictions given no weight when a side has fewer than "
        f"{MIN_SIDE}); simulated coverage at least 0.935 for prevalences of 2-50% and "
        "audits of 30-500, where the normal interval alone fell to 0.42-0.93. Beside it "
        "the audit alone (Wilson score interval). Group differences: the difference of the "
        "estimates with the square-and-add interval (MOVER; Newcombe 1998, Zou and Donner "
        "2008) of the two groups' intervals (independent groups). A code a person decided "
        "on every response is reported as its exact count, with no interval. The count of "
        "final codes otherwise mixes the coder's and the model's values and is "
        "descriptive, not an estimate."
    )


def _noted(finding: CodeFinding, note: str) -> CodeFinding:
    return replace(finding, notes=(*finding.notes, note))


def _empty_group(overall: CodeFinding, name: str, size: int, level: float) -> CodeFinding:
    reason = f"its {size} response(s) were added after the audit was drawn"
    return CodeFinding(
        code_id=overall.code_id,
        code_name=overall.code_name,
        group=name,
        pairs=0,
        audit_pairs=0,
        labelled=0,
        audit=_refused(reason, "audit (Wilson)", level),
        ppi=_refused(reason, "PPI++", level),
        ppi_probability=_refused(reason, "PPI++ (probability)", level),
        count=PlainCount(0, 0, math.nan, {}),
        sentence=f"No estimate for {overall.code_name} in {name}: {reason}.",
        notes=(reason,),
    )


def _differences(
    data: _Code,
    groups: np.ndarray[Any, Any],
    names: list[str],
    found: Mapping[str, CodeFinding],
    level: float,
    scored_reason: str,
    context: str,
) -> list[GroupDifference]:
    """Two groups: the one difference; more: each group minus all other responses."""
    out = []
    if len(names) == 2:
        a, b = names
        out.append(
            GroupDifference(
                data.code.id,
                data.code.name,
                a,
                b,
                _ppi_difference(found[a], found[b]),
                difference(found[a].audit, found[b].audit),
            )
        )
        return out
    for name in names:
        rest = groups != name
        if not rest.any() or not (groups == name).any():
            continue
        others = _estimate(
            data, rest, group="rest", level=level, scored_reason=scored_reason, context=context
        )
        out.append(
            GroupDifference(
                data.code.id,
                data.code.name,
                name,
                "all other responses",
                _ppi_difference(found[name], others),
                difference(found[name].audit, others.audit),
            )
        )
    return out


def _ppi_difference(first: CodeFinding, second: CodeFinding) -> Difference:
    """PPI's difference of two groups; exact when people decided every pair of both."""
    if first.exact and second.exact:
        d = first.count.share - second.count.share
        return Difference(
            d,
            d,
            d,
            level=first.ppi.level,
            method="exact: a person decided every response of both groups (a count, no interval)",
        )
    return difference(first.ppi, second.ppi)


def _code_data(
    code: Code,
    scale: Scale,
    pairs: pd.DataFrame,
    population: pd.Series[Any],
    pos: Mapping[str, int],
    n_pop: int,
    sample: AuditSample | None,
    blind: pd.DataFrame,
) -> _Code:
    ours = pairs[pairs["code_id"] == code.id]
    ours = ours[ours["response_id"].isin(pos)]
    index = ours["response_id"].map(pos).to_numpy(dtype=int)
    pick = np.full(n_pop, np.nan)
    pick[index] = ours["model_pick"].astype("Float64").to_numpy("float64", na_value=np.nan)
    final = np.full(n_pop, np.nan)
    final[index] = ours["final_applies"].astype("Float64").to_numpy("float64", na_value=np.nan)
    sources = np.full(n_pop, "", dtype=object)
    sources[index] = ours["final_from"].fillna("").to_numpy(dtype=object)
    prob = np.full(n_pop, np.nan)
    prob[index] = _p_applies(ours["probs"].tolist(), scale)
    ids = population.to_numpy(dtype=object)
    in_audit = np.asarray(
        [sample is not None and sample.is_audit(r, code.id) for r in ids], dtype=bool
    )
    label = np.full(n_pop, np.nan)
    theirs = blind[(blind["code_id"] == code.id) & blind["response_id"].isin(pos)]
    stale = 0
    for rid, value, is_stale in zip(
        theirs["response_id"], theirs["value"], theirs["stale"], strict=True
    ):
        i = pos[rid]
        if not in_audit[i]:
            continue
        if is_stale:
            stale += 1
            continue
        label[i] = float(value)
    return _Code(code, scale, ids, in_audit, label, pick, prob, final, sources, stale=stale)


# -- co-occurrence and retrieval ------------------------------------------------------------


@dataclass(frozen=True)
class CoOccurrence:
    """How often codes apply together on the final codes.

    Attributes:
        codes: Code names, in codebook order.
        counts: ``counts[i][j]``: responses where both apply (the diagonal: where code i
            applies), among responses with a final value on both.
        jaccard: both / either.
        phi: The phi coefficient of the 2x2 table (nan where a margin is empty).
        sources: Final values by source (``human``, ``accepted``, ``delegated``, ``model``).
    """

    codes: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    jaccard: tuple[tuple[float, ...], ...]
    phi: tuple[tuple[float, ...], ...]
    sources: Mapping[str, int]

    def frame(self, what: str = "counts") -> pd.DataFrame:
        """``counts``, ``jaccard`` or ``phi`` as a code-by-code DataFrame."""
        values = {"counts": self.counts, "jaccard": self.jaccard, "phi": self.phi}[what]
        return pd.DataFrame(values, index=list(self.codes), columns=list(self.codes))

    def to_dict(self) -> dict[str, Any]:
        def plain(rows: tuple[tuple[float, ...], ...]) -> list[list[float | None]]:
            return [[None if math.isnan(v) else v for v in row] for row in rows]

        return {
            "codes": list(self.codes),
            "counts": [list(r) for r in self.counts],
            "jaccard": plain(self.jaccard),
            "phi": plain(self.phi),
            "sources": dict(self.sources),
        }


def co_occurrence(
    study: Study, *, coder: str | None = None, config: int | str | None = "active"
) -> CoOccurrence:
    """Code-by-code counts, Jaccard and phi on the final codes (the long export's
    ``final_applies``, under the configuration ``config``)."""
    config_id, _label = _read_config(study, config)
    pairs = _read_pairs(study, config_id, coder)
    codes = _read_codes(study)
    ids = [c.id for c in codes]
    wide = pairs.pivot(index="response_id", columns="code_id", values="final_applies")
    grid = wide.reindex(columns=ids).astype("Float64").to_numpy("float64", na_value=np.nan)
    valued = ~np.isnan(grid)
    ones = np.nan_to_num(grid) == 1.0
    k = len(ids)
    counts = np.zeros((k, k), dtype=int)
    jac = np.full((k, k), np.nan)
    phi = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(k):
            both_valued = valued[:, i] & valued[:, j]
            a, b = ones[both_valued, i], ones[both_valued, j]
            n11 = int(np.sum(a & b))
            n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
            n00 = int(np.sum(~a & ~b))
            counts[i, j] = n11
            either = n11 + n10 + n01
            jac[i, j] = n11 / either if either else math.nan
            denom = math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
            phi[i, j] = (n11 * n00 - n10 * n01) / denom if denom else math.nan
    sources = pairs["final_from"].fillna("none").value_counts().to_dict()
    return CoOccurrence(
        codes=tuple(c.name for c in codes),
        counts=tuple(tuple(int(v) for v in row) for row in counts),
        jaccard=tuple(tuple(float(v) for v in row) for row in jac),
        phi=tuple(tuple(float(v) for v in row) for row in phi),
        sources={str(k): int(v) for k, v in sources.items()},
    )


#: Columns of :func:`coded_responses`.
CODED_COLUMNS = ("response_id", "text", "value", "label", "source", "coder", "note", "memo")


def coded_responses(
    study: Study, code: str, *, coder: str | None = None, config: int | str | None = "active"
) -> pd.DataFrame:
    """The responses whose final value of ``code`` applies, with notes and memos.

    ``source`` is the long export's ``final_from`` (``human``, ``accepted``,
    ``delegated`` or ``model``).

    Raises:
        StudyError: an unknown code (the error lists the codes).
    """
    chosen = _resolve_code(_read_codes(study), code)
    config_id, _label = _read_config(study, config)
    pairs = _read_pairs(study, config_id, coder)
    responses = _read_responses(study)[["response_id", "text"]]
    ours = pairs[(pairs["code_id"] == chosen.id) & pairs["final_applies"].fillna(False)]
    ours = ours.merge(responses, on="response_id", how="left")
    return pd.DataFrame(
        {
            "response_id": ours["response_id"],
            "text": ours["text"],
            "value": ours["final"],
            "label": ours["final_label"],
            "source": ours["final_from"],
            "coder": ours["coder"],
            "note": ours["note"],
            "memo": ours["memo"],
        },
        columns=list(CODED_COLUMNS),
    ).reset_index(drop=True)


# -- writing ------------------------------------------------------------------------------


def findings_provenance(study: Study, findings: Findings | None = None) -> dict[str, str]:
    """The export's provenance with the method and each code's quotable sentence."""
    from study.exchange.frames import provenance

    info = provenance(study, config_id=findings.config_id if findings else "active")
    if findings is not None:
        info["findings method"] = findings.method
        info["findings coder"] = findings.coder or "(none)"
        info["findings level"] = str(findings.level)
        info["findings by"] = findings.by or "(all responses)"
        info["findings population"] = f"{findings.population} responses of the audit's draw"
        for i, note in enumerate(findings.notes, start=1):
            info[f"findings note {i}"] = note
        for f in (*findings.codes, *findings.groups):
            where = "" if f.group is None else f" [{f.group}]"
            info[f"sentence ({f.code_name}{where})"] = f.sentence
    return info


def write_table(frame: pd.DataFrame, path: str | Path, *, info: dict[str, str]) -> Path:
    """Write ``frame`` as CSV (with its provenance in ``<file>-metadata.json``) or XLSX
    (with a ``provenance`` sheet), by the file's suffix.

    Raises:
        StudyError: a suffix other than .csv or .xlsx, or a refused or unwritable target.
    """
    from codebooks.files import check_target
    from study.exchange.writers import (
        atomic_write,
        metadata_path,
        write_csv,
        write_metadata,
        write_xlsx,
    )

    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".xlsx"):
        raise StudyError(
            f"findings are written as .csv or .xlsx, not {suffix or 'no suffix'!r}", path=target
        )
    check_target(target, error=StudyError)
    if suffix == ".xlsx":
        return atomic_write(target, lambda tmp: write_xlsx(frame, tmp, info=info))
    written = atomic_write(target, lambda tmp: write_csv(frame, tmp))
    if target.is_file():
        atomic_write(
            metadata_path(target),
            lambda tmp: write_metadata(frame, tmp, table=target.name, format="csv", info=info),
            protect=(target,),
        )
    return written
