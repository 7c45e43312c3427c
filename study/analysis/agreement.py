"""Inter-coder reliability over a study: which coders, which units, per code and pooled.

:func:`study_agreement` gathers the decisions of the chosen coders (the model's picks
under the active scoring configuration may join as the coder ``model``), builds each
code's units (response x code pairs rated by two or more of them, or by every one of
them) and hands them to :func:`screening.reliability.reliability` for percent agreement,
Cohen's kappa and Krippendorff's alpha with bootstrap intervals. The pooled row treats
all codes as one set of units and resamples whole responses. No model scores are needed
unless the model is a coder.

Errors are :class:`AgreementError`, a :class:`~study.errors.StudyError` whose ``problem``
says which case it is, so a caller can add its own hint without reading the message.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from codebooks.errors import Remedy
from screening.reliability import Bootstrap, Estimate, Reliability, reliability
from study.errors import SCORE, StudyError
from study.rows import CONSENSUS

if TYPE_CHECKING:
    from codebooks.model import Scale
    from study.store import Study

__all__ = [
    "MODEL",
    "POOLED",
    "REMEDIES",
    "UNITS",
    "AgreementError",
    "AgreementReport",
    "CodeAgreement",
    "agreement_hint",
    "agreement_remedies",
    "describe_estimate",
    "safe",
    "study_agreement",
]

#: Which units count: rated by two or more of the coders, or by every one of them.
UNITS = ("all", "shared")
Units = Literal["all", "shared"]
#: The name under which the model's picks join as a coder.
MODEL = "model"
#: The name of the row of all codes pooled.
POOLED = "All codes"

Problem = Literal[
    "units",
    "repeated_coder",
    "too_few_coders",
    "unknown_coder",
    "no_scores",
    "unknown_code",
    "no_shared_units",
]


class AgreementError(StudyError):
    """Agreement cannot be computed as asked.

    Attributes:
        problem: Which case: ``"too_few_coders"`` (the study or the choice has fewer than
            two), ``"unknown_coder"``, ``"repeated_coder"``, ``"no_scores"`` (the model
            asked for on a study without scores), ``"unknown_code"``,
            ``"no_shared_units"`` or ``"units"`` (neither ``all`` nor ``shared``).
        coders: The coders asked for (or found), for a caller's hint.
    """

    def __init__(
        self,
        message: str,
        *,
        problem: Problem,
        coders: Sequence[str] = (),
        path: str | Path | None = None,
        remedy: Remedy | tuple[Remedy, ...] | None = None,
    ) -> None:
        self.problem: Problem = problem
        self.coders = tuple(coders)
        super().__init__(message, path=path, remedy=remedy)


#: What would help with an agreement error, by its problem.
REMEDIES: dict[str, tuple[Remedy, ...]] = {
    "too_few_coders": (
        Remedy("import-codes", "import another coder's codes"),
        Remedy(
            "retry",
            "compare a coder with the model",
            {"coders": "NAME,model"},
        ),
    ),
    "no_shared_units": (Remedy("retry", "count every unit anyone coded", {"units": "all"}),),
}


def agreement_remedies(
    exc: AgreementError, *, chosen: bool, units: str = "all"
) -> tuple[Remedy, ...]:
    """What would help with ``exc``, or nothing: none for too few coders the caller chose
    itself, and counting every unit only after ``shared`` units of three or more
    coders."""
    if exc.problem == "too_few_coders" and chosen:
        return ()
    if exc.problem == "no_shared_units" and not (units == "shared" and len(exc.coders) > 2):
        return ()
    return REMEDIES.get(exc.problem, ())


def agreement_hint(exc: AgreementError, *, chosen: bool, units: str = "all") -> str:
    """:func:`agreement_remedies` in plain words, as a parenthesis to put after the
    message (``""`` for none): for a report, which is read rather than acted on."""
    remedies = agreement_remedies(exc, chosen=chosen, units=units)
    return f" ({', or '.join(r.words for r in remedies)})" if remedies else ""


#: The embeddings, overrides and isolates, which reorder the rest of a line.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def safe(text: object) -> str:
    """Text with control characters and bidirectional overrides shown as escapes
    (``\\x1b``, ``\\u202e``), never obeyed."""
    return "".join(
        repr(ch)[1:-1]
        if unicodedata.category(ch) == "Cc"
        else f"\\u{ord(ch):04x}"
        if ch in BIDI_CONTROLS
        else ch
        for ch in str(text)
    )


def describe_estimate(e: Estimate | None, *, percent: bool = False) -> str:
    """``0.81 [0.70, 0.90]``, ``80.0% [...]``, ``undefined`` or ``-`` (not computed)."""
    if e is None:
        return "-"
    if e.value is None:
        return "undefined"
    spec = ".1%" if percent else ".2f"
    if e.low is None or e.high is None:
        return format(e.value, spec)
    return f"{e.value:{spec}} [{e.low:{spec}}, {e.high:{spec}}]"


@dataclass(frozen=True)
class CodeAgreement:
    """One row of the report: a code (or all codes pooled) and its coefficients.

    Attributes:
        code: The code's name, or :data:`POOLED`.
        scale: The scale and the level used, e.g. ``"1-5, ordinal"``.
        result: The coefficients with their intervals.
        applies: Per coder, the share of their ratings that say the code applies
            (None for a coder without ratings here).
    """

    code: str
    scale: str
    result: Reliability
    applies: tuple[float | None, ...]

    def notes(self) -> tuple[str, ...]:
        """Why a coefficient is undefined, resamples left out, the kappa paradox."""
        r = self.result
        out = []
        thin: dict[int, list[str]] = {}
        for name, e in (("kappa", r.kappa), ("alpha", r.alpha)):
            if e is None:
                continue
            if e.value is None:
                out.append(f"{name} undefined: {e.reason}")
            elif e.low is None and e.reason:
                out.append(f"{name}: {e.reason}")
            elif e.undefined_resamples:
                thin.setdefault(e.undefined_resamples, []).append(name)
        out += [
            f"{' and '.join(names)} undefined in {count} of {r.bootstrap.resamples} resamples "
            "(left out of the interval)"
            for count, names in thin.items()
        ]
        if r.percent.value is None and r.percent.reason:
            out.append(f"agreement undefined: {r.percent.reason}")
        if r.paradox:
            out.append(r.paradox)
        return tuple(safe(n) for n in out)

    def to_dict(self, coders: Sequence[str]) -> dict[str, Any]:
        return {
            "code": self.code,
            "scale": self.scale,
            "applies": dict(zip(coders, self.applies, strict=True)),
            **self.result.to_dict(),
        }


@dataclass(frozen=True)
class AgreementReport:
    """The agreement of a set of coders over a study's codes.

    Attributes:
        study: The study file's name.
        coders: The coders compared, in order (``model`` for the model's picks).
        units: ``"all"`` or ``"shared"``.
        pooled: All codes as one set of units; None with a single code listed.
        per_code: One row per code with shared units, in codebook order.
        bootstrap: How the intervals were made.
        notes: What a reader of the numbers should know.
    """

    study: str
    coders: tuple[str, ...]
    units: str
    pooled: CodeAgreement | None
    per_code: tuple[CodeAgreement, ...]
    bootstrap: Bootstrap
    notes: tuple[str, ...]

    @property
    def rows(self) -> tuple[CodeAgreement, ...]:
        """The pooled row (if any) first, then each code's."""
        return ((self.pooled,) if self.pooled else ()) + self.per_code

    def caption(self) -> str:
        """One line for under a table in a methods section."""
        b = self.bootstrap
        coders = ", ".join(safe(c) for c in self.coders)
        kappa = (
            "Cohen's kappa unweighted on two-option scales, quadratic-weighted on ordinal scales; "
            if len(self.coders) == 2
            else "Cohen's kappa not reported (more than two coders); "
        )
        return (
            f"Agreement of {coders} on {safe(self.study)}, units = response x code pairs rated "
            f"by {'all' if self.units == 'shared' else 'two or more'} of them. {kappa}"
            f"Krippendorff's alpha nominal on two-option scales, ordinal on longer ones. "
            f"Brackets: 95% percentile bootstrap intervals over units (pooled row: over "
            f"responses), {b.resamples:,} resamples, seed {b.seed}. Applies: share of each "
            f"coder's decisions at or above the scale's applies-from value."
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values, the caption included."""
        return {
            "study": self.study,
            "coders": list(self.coders),
            "units": self.units,
            "bootstrap": self.bootstrap.to_dict(),
            "pooled": None if self.pooled is None else self.pooled.to_dict(self.coders),
            "per_code": [r.to_dict(self.coders) for r in self.per_code],
            "notes": list(self.notes),
            "caption": self.caption(),
        }


def _decisions(study: Study, coders: Sequence[str] | None) -> tuple[pd.DataFrame, list[str]]:
    """Every decision (response, code, coder, value), with the model's picks as a coder."""
    human_only = coders is None or MODEL not in coders
    config_id = None if human_only else study.scores.active_config_id()
    frame = study.queries.annotated_pairs(config_id)
    if not len(frame):
        return frame, []
    people = sorted(set(frame["coder"]))
    if not human_only and MODEL not in people:
        if config_id is None:
            raise AgreementError(
                "the model cannot be a coder: the study has no scores yet; score it first",
                problem="no_scores",
                remedy=SCORE,
                coders=people,
                path=study.path,
            )
        frame = frame[frame["source"] == "human"]
        picks = frame[frame["scored"]].drop_duplicates(["response_id", "code_id"])
        model = picks.assign(coder=MODEL, value=picks["pick"].astype(int))
        frame = pd.concat([frame, model], ignore_index=True)
    return frame, people


def _choose(study: Study, coders: Sequence[str] | None, people: list[str]) -> list[str]:
    """The coders to compare: ``coders`` checked against the study's, or every coder but
    the consensus coder (it settles the others' disagreements: comparing it with them
    measures the reconciliation, not the coding)."""
    offer = ", ".join(safe(p) for p in people) or "none"
    if coders is None:
        named = " (the consensus coder only when named)" if CONSENSUS in people else ""
        people = [p for p in people if p != CONSENSUS]
        if len(people) < 2:
            raise AgreementError(
                f"agreement needs decisions by two or more coders; coders in this study: "
                f"{offer}{named}",
                problem="too_few_coders",
                coders=people,
                path=study.path,
            )
        return people
    chosen = list(coders)
    unknown = [c for c in chosen if c not in people and c != MODEL]
    if unknown:
        listed = ", ".join("'" + safe(c) + "'" for c in unknown)
        raise AgreementError(
            f"no decisions by coder {listed}; "
            f"coders in this study: {offer} (and 'model' for the model's picks)",
            problem="unknown_coder",
            coders=chosen,
            path=study.path,
        )
    if len(chosen) < 2:
        raise AgreementError(
            f"agreement needs two or more coders, got {len(chosen)}; coders in this study: {offer}",
            problem="too_few_coders",
            coders=chosen,
            path=study.path,
        )
    return chosen


def study_agreement(
    study: Study,
    *,
    coders: Sequence[str] | None = None,
    code: str | None = None,
    units: str = "all",
    seed: int = 0,
    resamples: int = 1000,
) -> AgreementReport:
    """Agreement of ``coders`` per code and pooled over codes.

    By default every coder but the consensus coder is compared. Delegated decisions (the
    model's picks under a coder's name) are never a coder's ratings; the report's notes
    say what was left out and what was included.

    Args:
        study: An open study.
        coders: The coders to compare; :data:`MODEL` is the model's pick under the
            active scoring configuration (decisions that accepted a pick are left out).
        code: Only this code (name or id).
        units: ``"all"``: pairs rated by two or more of the coders; ``"shared"``: by
            every one of them.
        seed: Seed of the bootstrap.
        resamples: Bootstrap resamples for the intervals.

    Raises:
        AgreementError: fewer than two coders, an unknown or repeated coder, an unknown
            code, the model asked for on a study without scores, or no unit rated by
            two or more of the coders.
    """
    if units not in UNITS:
        raise AgreementError(
            f"units must be 'all' or 'shared', not {units!r}", problem="units", path=study.path
        )
    if coders is not None and len(set(coders)) != len(coders):
        raise AgreementError(
            f"a coder is named twice: {', '.join(map(safe, coders))}",
            problem="repeated_coder",
            coders=coders,
            path=study.path,
        )
    frame, people = _decisions(study, coders)
    chosen = _choose(study, coders, people)
    notes = []
    if coders is None and CONSENSUS in people:
        notes.append(
            f"the {CONSENSUS} coder is left out (it settles the others' disagreements); "
            "name it among the coders to compare it"
        )
    if len(frame):
        # A delegated decision is the model's pick filed under a coder's name: comparing
        # it with anyone measures the model, not that coder.
        delegated = frame["source"] == "delegated"
        counted = frame[delegated & frame["coder"].isin(chosen)]
        if len(counted):
            by = ", ".join(
                f"{safe(c)} {n}" for c, n in counted["coder"].value_counts().sort_index().items()
            )
            notes.append(
                f"{len(counted)} delegated decision(s) (the model's picks filed under a "
                f"coder's name: {by}) are left out; each coder is compared on their own "
                "decisions"
            )
        frame = frame[~delegated]
        taken = frame[(frame["source"] == "model") & frame["coder"].isin(chosen)]
        if MODEL not in chosen and len(taken):
            by = ", ".join(
                f"{safe(c)} {n}" for c, n in taken["coder"].value_counts().sort_index().items()
            )
            notes.append(f"decisions that accepted the model's pick are included ({by})")
    codebook = study.codebook
    codes = list(codebook.codable)
    if code is not None:
        try:
            codes = [codebook.code(code)]
        except ValueError:
            names = ", ".join(safe(c.name) for c in codebook.codable)
            raise AgreementError(
                f"no code {safe(code)!r} in this study; codes: {names}",
                problem="unknown_code",
                coders=chosen,
                path=study.path,
            ) from None
    if MODEL in chosen and MODEL not in people:
        accepted = int(np.sum(frame["source"] == "model")) if len(frame) else 0
        notes.append(
            "the model's picks are from the active scoring configuration; "
            "decisions that accepted the model's pick, and delegated ones, are left out"
            + (f" ({accepted})" if accepted else "")
        )
    frame = frame[frame["coder"].isin(chosen)] if len(frame) else frame
    spec = Bootstrap(resamples, seed, 0.95)
    rows: list[CodeAgreement] = []
    pooled_parts: list[tuple[Any, Any, Scale]] = []
    skipped = []
    for c in codes:
        scale = codebook.scale_for(c)
        mine = frame[frame["code_id"] == c.id] if len(frame) else frame
        matrix, responses = _matrix(mine, chosen, units)
        if matrix.shape[1] == 0:
            skipped.append(c.name)
            continue
        pooled_parts.append((matrix, responses, scale))
        rows.append(_row(c.name, matrix, scale, chosen, seed, resamples))
    if not rows or all(r.result.n_units == 0 for r in rows):
        raise AgreementError(
            f"no shared units: no pair was rated by "
            f"{'every one' if units == 'shared' else 'two or more'} of "
            f"{', '.join(safe(c) for c in chosen)}"
            + (f" on code {safe(codes[0].name)!r}" if code is not None else ""),
            problem="no_shared_units",
            coders=chosen,
            path=study.path,
        )
    if skipped and code is None:
        notes.append(f"{len(skipped)} code(s) without shared decisions are not listed")
    pooled = None
    if len(rows) > 1:
        pooled = _pooled(pooled_parts, chosen, seed, resamples)
        spec = Bootstrap(resamples, seed, 0.95, "units (pooled row: responses)")
        notes.append(
            "the pooled row resamples whole responses, since a response's codes are not "
            "independent units"
        )
    return AgreementReport(
        study=study.path.name,
        coders=tuple(chosen),
        units=units,
        pooled=pooled,
        per_code=tuple(rows),
        bootstrap=spec,
        notes=tuple(notes),
    )


def _matrix(frame: pd.DataFrame, coders: Sequence[str], units: str) -> tuple[Any, Any]:
    """Shape (n_coders, n_responses) of one code's values (nan missing), and the responses."""
    if not len(frame):
        return np.zeros((len(coders), 0)), np.zeros(0, dtype=object)
    wide = frame.pivot_table(
        index="response_id", columns="coder", values="value", aggfunc="last"
    ).reindex(columns=list(coders))
    rated = wide.notna().sum(axis=1)
    keep = rated == len(coders) if units == "shared" else rated >= 2
    wide = wide[keep]
    return wide.to_numpy(dtype=float).T, wide.index.to_numpy(dtype=object)


def _scale_kind(scale: Scale) -> tuple[Literal["nominal", "ordinal"], Any]:
    return ("nominal", None) if scale.k == 2 else ("ordinal", "quadratic")


def _applies(
    result: Reliability, scale_values: Sequence[int], threshold: int
) -> tuple[float | None, ...]:
    """Per coder, the share of their ratings that say the code applies."""
    out: list[float | None] = []
    for shares in result.prevalence:
        if shares is None:
            out.append(None)
            continue
        out.append(sum(s for s, v in zip(shares, scale_values, strict=True) if v >= threshold))
    return tuple(out)


def _row(
    name: str, matrix: Any, scale: Scale, coders: Sequence[str], seed: int, resamples: int
) -> CodeAgreement:
    level, weights = _scale_kind(scale)
    result = reliability(
        matrix,
        coders=list(coders),
        level=level,
        weights=weights,
        labels=list(scale.values),
        names=list(scale.labels),
        resamples=resamples,
        seed=seed,
    )
    return CodeAgreement(
        code=name,
        scale=f"{scale.name}, {level}",
        result=result,
        applies=_applies(result, scale.values, scale.threshold),
    )


def _pooled(
    parts: list[tuple[Any, Any, Scale]], coders: Sequence[str], seed: int, resamples: int
) -> CodeAgreement:
    """All codes as one set of units; codes on different scales are reduced to applies."""
    scales = {p[2].values for p in parts}
    same = len(scales) == 1
    matrices, clusters = [], []
    for matrix, responses, scale in parts:
        if not same:
            matrix = np.where(np.isnan(matrix), np.nan, matrix >= scale.threshold).astype(float)
        matrices.append(matrix)
        clusters.append(responses.astype(str))
    data = np.concatenate(matrices, axis=1)
    level: Literal["nominal", "ordinal"]
    if same:
        scale = parts[0][2]
        level, weights = _scale_kind(scale)
        labels, names = list(scale.values), list(scale.labels)
        described = f"{scale.name}, {level}"
    else:
        level, weights, labels = "nominal", None, [0, 1]
        names = ["does not apply", "applies"]
        described = "applies / does not apply, nominal"
    result = reliability(
        data,
        coders=list(coders),
        level=level,
        weights=weights,
        labels=labels,
        names=names,
        clusters=np.concatenate(clusters),
        resamples=resamples,
        seed=seed,
    )
    applies = (
        _applies(result, parts[0][2].values, parts[0][2].threshold)
        if same
        else tuple(None if s is None else s[1] for s in result.prevalence)
    )
    return CodeAgreement(code=POOLED, scale=described, result=result, applies=applies)
