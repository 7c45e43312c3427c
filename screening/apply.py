"""Screening coded data: model decisions against the coder's, per code and pooled.

Everything here is still pure arrays; the study layer fetches them. One call screens
one scale (one set of option values); codes on different scales are screened in
separate calls (their pooled screen is then :func:`~screening.report.screen_report` on
the concatenated ``correct`` and ``confidence``).

Correctness (``agreement``):

- ``"applies"`` (default): both decisions reduced to applies / does not apply, a value
  applying when ``value >= applies_from``; the default ``applies_from`` is the first
  option value above the scale's midpoint (4 on 1-5, 6 on 1-9, 1 on 0/1 = No/Yes).
- ``"exact"``: the same option.
- ``"within1"``: options at most one scale step apart.

Confidence (``confidence``): ``"pmax"`` (default), the renormalised probability of the
model's mode, or ``"entropy"``, ``1 - H / ln K``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from screening.phase_b import DEFAULT_COVERAGES
from screening.report import VRSReport, screen_report
from screening.validation import BoolArray, FloatArray, as_1d, as_float_1d, same_length

__all__ = [
    "AgreementMode",
    "CodedScreening",
    "ConfidenceKind",
    "confidence_signal",
    "decisions_agree",
    "default_applies_from",
    "screen_coded",
]

AgreementMode = Literal["applies", "exact", "within1"]
ConfidenceKind = Literal["pmax", "entropy"]

SIGNAL_NAMES: dict[str, str] = {
    "pmax": "p_max (renormalised probability of the model's mode)",
    "entropy": "1 - normalised entropy of the renormalised distribution",
}
#: Rows of ``probabilities`` may be off 1 by this much (e.g. float32 storage).
PROBABILITY_TOLERANCE = 1e-4


def _scale(option_values: npt.ArrayLike) -> FloatArray:
    values = as_float_1d(option_values, "option_values")
    if values.size < 2:
        raise ValueError(f"option_values needs at least 2 options, got shape {values.shape}")
    if np.any(np.diff(values) <= 0):
        raise ValueError("option_values must be strictly increasing")
    return values


def default_applies_from(option_values: npt.ArrayLike) -> float:
    """The first option value strictly above the scale's midpoint.

    Args:
        option_values: Shape (n_options,), strictly increasing numeric option values.

    Returns:
        4 for 1..5, 6 for 1..9, 1 for 0/1 (No/Yes).
    """
    values = _scale(option_values)
    midpoint = (values[0] + values[-1]) / 2.0
    return float(values[values > midpoint][0])


def _positions(values: FloatArray, scale: FloatArray, name: str) -> npt.NDArray[np.intp]:
    pos = np.searchsorted(scale, values)
    inside = pos < scale.size
    valid = inside & (scale[np.minimum(pos, scale.size - 1)] == values)
    if not bool(np.all(valid)):
        bad = float(values[~valid][0])
        raise ValueError(
            f"{name} holds {bad!r}, which is not one of option_values {scale.tolist()}"
        )
    return pos


def decisions_agree(
    model_value: npt.ArrayLike,
    coder_value: npt.ArrayLike,
    *,
    option_values: npt.ArrayLike,
    agreement: AgreementMode = "applies",
    applies_from: float | None = None,
) -> BoolArray:
    """Per-item correctness of the model's decision against the coder's.

    Args:
        model_value: Shape (n_items,), the model's decision as an option value.
        coder_value: Shape (n_items,), the coder's decision as an option value.
        option_values: Shape (n_options,), strictly increasing.
        agreement: ``"applies"``, ``"exact"`` or ``"within1"``.
        applies_from: Cut for ``"applies"``; default :func:`default_applies_from`.

    Returns:
        Shape (n_items,), True where the decisions agree.

    Raises:
        ValueError: If a decision is not an option value (nan included), the shapes
            differ, or ``agreement`` is unknown.
    """
    scale = _scale(option_values)
    model = as_float_1d(model_value, "model_value")
    coder = as_float_1d(coder_value, "coder_value")
    same_length(model_value=model, coder_value=coder)
    pm = _positions(model, scale, "model_value")
    pc = _positions(coder, scale, "coder_value")
    if agreement == "applies":
        cut = default_applies_from(scale) if applies_from is None else float(applies_from)
        return np.asarray((model >= cut) == (coder >= cut), dtype=np.bool_)
    if agreement == "exact":
        return np.asarray(pm == pc, dtype=np.bool_)
    if agreement == "within1":
        return np.asarray(np.abs(pm - pc) <= 1, dtype=np.bool_)
    raise ValueError(f"agreement must be 'applies', 'exact' or 'within1', got {agreement!r}")


def confidence_signal(
    *,
    probabilities: npt.ArrayLike | None = None,
    p_max: npt.ArrayLike | None = None,
    normalised_entropy: npt.ArrayLike | None = None,
    kind: ConfidenceKind = "pmax",
) -> FloatArray:
    """The per-item confidence used for screening.

    Give either ``probabilities`` or the precomputed ``p_max`` / ``normalised_entropy``.

    Args:
        probabilities: Shape (n_items, n_options), renormalised on-scale distributions.
        p_max: Shape (n_items,), ``max_k p_k``.
        normalised_entropy: Shape (n_items,), ``H / ln K`` in [0, 1].
        kind: ``"pmax"`` or ``"entropy"`` (``1 - normalised_entropy``).

    Returns:
        Shape (n_items,), confidence in [0, 1].

    Raises:
        ValueError: If the needed input is missing, both kinds of input are given,
            shapes are wrong, or values leave [0, 1] / rows do not sum to 1.
    """
    if kind not in ("pmax", "entropy"):
        raise ValueError(f"kind must be 'pmax' or 'entropy', got {kind!r}")
    if probabilities is not None:
        if p_max is not None or normalised_entropy is not None:
            raise ValueError("give probabilities, or p_max / normalised_entropy, not both")
        probs = np.asarray(probabilities, dtype=np.float64)
        if probs.ndim != 2 or probs.shape[1] < 2:
            raise ValueError(
                f"probabilities must be 2-D of shape (n_items, n_options >= 2), got {probs.shape}"
            )
        if not np.all(np.isfinite(probs)) or np.any(probs < 0):
            raise ValueError("probabilities must be finite and non-negative")
        sums = probs.sum(axis=1)
        if np.any(np.abs(sums - 1.0) > PROBABILITY_TOLERANCE):
            raise ValueError("probabilities rows must sum to 1 (renormalised on-scale mass)")
        probs = probs / sums[:, None]
        if kind == "pmax":
            return np.asarray(probs.max(axis=1), dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(probs > 0, probs * np.log(probs), 0.0)
        entropy = -plogp.sum(axis=1) / np.log(probs.shape[1])
        return np.asarray(np.clip(1.0 - entropy, 0.0, 1.0), dtype=np.float64)
    source, name = (
        (p_max, "p_max") if kind == "pmax" else (normalised_entropy, "normalised_entropy")
    )
    if source is None:
        raise ValueError(f"confidence {kind!r} needs probabilities or {name}")
    values = as_float_1d(source, name)
    if values.size and (values.min() < 0.0 or values.max() > 1.0):
        raise ValueError(f"{name} must lie in [0, 1]")
    return values if kind == "pmax" else 1.0 - values


@dataclass(frozen=True)
class CodedScreening:
    """Screens of coded data, per code and pooled over codes.

    Attributes:
        pooled: The report over all screened items.
        per_code: One report per code, in order of first appearance; empty when no
            codes were given.
        n_screened: Items with both a model and a coder decision.
        n_excluded: Items left out because a decision is missing (nan).
        agreement: How correctness was decided.
        applies_from: The applies cut used (also reported for other modes).
        confidence: Which confidence signal was screened.
    """

    pooled: VRSReport
    per_code: Mapping[str, VRSReport]
    n_screened: int
    n_excluded: int
    agreement: AgreementMode
    applies_from: float
    confidence: ConfidenceKind

    def reports(self) -> list[VRSReport]:
        """Per-code reports followed by the pooled one."""
        return [*self.per_code.values(), self.pooled]


def screen_coded(
    model_value: npt.ArrayLike,
    coder_value: npt.ArrayLike,
    *,
    option_values: npt.ArrayLike,
    codes: npt.ArrayLike | None = None,
    probabilities: npt.ArrayLike | None = None,
    p_max: npt.ArrayLike | None = None,
    normalised_entropy: npt.ArrayLike | None = None,
    agreement: AgreementMode = "applies",
    applies_from: float | None = None,
    confidence: ConfidenceKind = "pmax",
    threshold: float | Literal["median"] = 0.5,
    with_phase_b: bool = False,
    coverages: Sequence[float] = DEFAULT_COVERAGES,
    source: str = "",
    dataset: str = "",
    confidence_level: float = 0.95,
) -> CodedScreening:
    """Screen the model's confidence against the coder's decisions.

    Items whose model or coder value is nan (not scored, not yet annotated) are left
    out and counted in ``n_excluded``. With ``threshold="median"`` the median is taken
    within each screened group (each code, and the pool). Phase B (if asked, and only
    for Valid / Indeterminate groups) adds Cohen's kappa between model and coder on the
    scale values, quadratic-weighted for scales of more than two options.

    Args:
        model_value: Shape (n_items,), the model's decision (its mode) as option value.
        coder_value: Shape (n_items,), the coder's decision as option value.
        option_values: Shape (n_options,), the scale's values, strictly increasing.
        codes: Shape (n_items,), the code of each item, or None for one group.
        probabilities: Shape (n_items, n_options), renormalised distributions.
        p_max: Shape (n_items,), instead of ``probabilities`` for ``"pmax"``.
        normalised_entropy: Shape (n_items,), instead of ``probabilities`` for
            ``"entropy"``.
        agreement: ``"applies"``, ``"exact"`` or ``"within1"``.
        applies_from: Cut for ``"applies"``; default above the scale's midpoint.
        confidence: ``"pmax"`` or ``"entropy"``.
        threshold: Binarisation cut, or ``"median"``.
        with_phase_b: Also compute phase-B metrics.
        coverages: Selective-accuracy coverages for phase B.
        source: Model id for the reports.
        dataset: Data set or study name for the reports.
        confidence_level: Coverage of all intervals.

    Returns:
        The per-code and pooled reports.

    Raises:
        ValueError: On malformed input: shapes that differ, decisions off the scale,
            confidence inputs missing or out of range.

    Warns:
        ScreeningWarning: For each group with degenerate data (see
            :func:`~screening.tiers.screen_table`).
    """
    scale = _scale(option_values)
    model = as_float_1d(model_value, "model_value", allow_nan=True)
    coder = as_float_1d(coder_value, "coder_value", allow_nan=True)
    conf = confidence_signal(
        probabilities=probabilities,
        p_max=p_max,
        normalised_entropy=normalised_entropy,
        kind=confidence,
    )
    arrays: dict[str, npt.NDArray[Any]] = {
        "model_value": model,
        "coder_value": coder,
        "confidence": conf,
    }
    labels: npt.NDArray[Any] | None = None
    if codes is not None:
        labels = as_1d(codes, "codes")
        arrays["codes"] = labels
    same_length(**arrays)
    cut = default_applies_from(scale) if applies_from is None else float(applies_from)

    keep = ~(np.isnan(model) | np.isnan(coder))
    model, coder, conf = model[keep], coder[keep], conf[keep]
    correct = decisions_agree(
        model, coder, option_values=scale, agreement=agreement, applies_from=cut
    )
    weights: Literal["quadratic"] | None = "quadratic" if scale.size > 2 else None

    def report(mask: BoolArray, code: str | None) -> VRSReport:
        return screen_report(
            correct[mask],
            conf[mask],
            threshold=threshold,
            source=source,
            dataset=dataset,
            code=code,
            confidence_signal=SIGNAL_NAMES[confidence],
            confidence_format="continuous, 0-1",
            with_phase_b=with_phase_b,
            coverages=coverages,
            model_decision=model[mask],
            coder_decision=coder[mask],
            labels=scale,
            weights=weights,
            confidence_level=confidence_level,
        )

    per_code: dict[str, VRSReport] = {}
    if labels is not None:
        kept_codes = labels[keep]
        names = [str(c) for c in kept_codes.tolist()]
        as_str = np.asarray(names, dtype=object)
        for name in dict.fromkeys(names):
            per_code[name] = report(as_str == name, name)
    pooled = report(np.ones(model.size, dtype=bool), None)
    return CodedScreening(
        pooled=pooled,
        per_code=per_code,
        n_screened=int(keep.sum()),
        n_excluded=int((~keep).sum()),
        agreement=agreement,
        applies_from=cut,
        confidence=confidence,
    )
