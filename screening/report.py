"""The VRS (validity reporting) table: one screened group, ready to show or store.

:class:`VRSReport` holds every row METHOD.md lists (source, data set, N, accuracy,
confidence signal and format, binarisation threshold, the 2x2 table, TRIN, L, Fp,
RBS, r, tier, flagging reason, response style) plus optional phase-B metrics, and
renders them as Markdown, a JSON-safe dict, or a ``rich`` table.

:func:`screen_report` goes from per-item arrays to a report in one call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy.typing as npt

from screening.agreement import KappaWeights
from screening.indices import IndexEstimate, PointBiserial, Trin
from screening.phase_b import DEFAULT_COVERAGES, PhaseB, phase_b
from screening.table import Table2x2, binarise_confidence, contingency_table
from screening.tiers import ScreenResult, Tier, screen_table
from screening.validation import as_bool_1d, as_float_1d, same_length

if TYPE_CHECKING:
    from rich.table import Table as RichTable

__all__ = ["SCHEMA", "VRSReport", "screen_report"]

#: Identifies the layout of :meth:`VRSReport.to_dict`, for stored reports.
SCHEMA = "codecurve.vrs/1"
NOT_SPECIFIED = "[not specified]"
TIER_STYLES: dict[str, str] = {
    "Valid": "bold green",
    "Indeterminate": "bold yellow",
    "Invalid": "bold red",
    "Insufficient data": "bold blue",
}


def _num(value: float, fmt: str = ".3f") -> str:
    return "n/a" if math.isnan(value) else format(value, fmt)


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _p_text(p: float) -> str:
    if math.isnan(p):
        return "p n/a"
    return "p < .001" if p < 0.001 else f"p = {p:.3f}"


def _index_dict(index: IndexEstimate, status: str) -> dict[str, Any]:
    return {
        "value": _json_float(index.value),
        "ci_lower": _json_float(index.interval.lower),
        "ci_upper": _json_float(index.interval.upper),
        "n": index.n,
        "status": status,
    }


@dataclass(frozen=True)
class VRSReport:
    """Validity report of one screened group (a code, or all codes pooled).

    Attributes:
        screen: The stage-A screen (2x2 table, indices, tier, flags).
        source: The model (id and revision), the source of the confidence signal.
        dataset: The data set or study.
        code: The code screened, or None for a pooled or uncoded group.
        confidence_signal: What the confidence is, e.g. ``"p_max"``.
        confidence_format: Its format before binarisation, e.g. ``"continuous, 0-1"``.
        binarisation_threshold: The cut, e.g. ``">= 0.500 (fixed)"``.
        phase_b: Phase-B metrics, only for a Valid or Indeterminate screen.

    Raises:
        ValueError: If ``phase_b`` is given for an Invalid or Insufficient-data screen.
    """

    screen: ScreenResult
    source: str = ""
    dataset: str = ""
    code: str | None = None
    confidence_signal: str = ""
    confidence_format: str = ""
    binarisation_threshold: str = ""
    phase_b: PhaseB | None = None

    def __post_init__(self) -> None:
        if self.phase_b is not None and not self.screen.phase_b_allowed:
            raise ValueError(f"phase-B metrics must not be attached to a {self.tier} screen")

    # The VRS rows that are plain views of the screen.
    @property
    def table(self) -> Table2x2:
        """The 2x2 table."""
        return self.screen.table

    @property
    def n_items(self) -> int:
        """Items screened."""
        return self.table.n

    @property
    def n_correct(self) -> int:
        """Items where model and coder agree."""
        return self.table.n_correct

    @property
    def n_incorrect(self) -> int:
        """Items where model and coder disagree."""
        return self.table.n_incorrect

    @property
    def accuracy(self) -> float:
        """Share correct; nan for no items."""
        return self.table.accuracy

    @property
    def trin(self) -> Trin:
        """TRIN with direction and warning."""
        return self.screen.trin

    @property
    def l(self) -> IndexEstimate:  # noqa: E743 - the method's own name for the index
        """L with its Wilson interval."""
        return self.screen.l

    @property
    def fp(self) -> IndexEstimate:
        """Fp with its Wilson interval."""
        return self.screen.fp

    @property
    def rbs(self) -> IndexEstimate:
        """RBS with its Wald interval."""
        return self.screen.rbs

    @property
    def r(self) -> PointBiserial:
        """Point-biserial r with p and Fisher-z interval."""
        return self.screen.r

    @property
    def tier(self) -> Tier:
        """The tier."""
        return self.screen.tier

    @property
    def flagging_reason(self) -> str:
        """Reasons joined by ``"; "``, or ``"None"``."""
        return self.screen.flagging_reason

    @property
    def response_style(self) -> str:
        """Response style of a non-Valid judged result, else ``""``."""
        return self.screen.response_style

    def rows(self, *, remaining: int | None = None) -> list[tuple[str, str]]:
        """The report as (row label, formatted value) pairs, in VRS order; ``remaining``:
        the items the study has left, said beside each distance estimate above it."""
        s = self.screen
        t = self.table
        level = f"{s.confidence_level * 100:g}% CI"
        judged = "" if s.judged else " (not judged)"
        trin = (
            "n/a"
            if s.trin.direction is None
            else f"{s.trin.value:.3f} ({s.trin.direction})"
            + (" - structural warning" if s.trin.warning else "")
        )

        def prop(i: IndexEstimate, sign: str = "") -> str:
            fmt = sign + ".3f"
            lo, hi = i.interval
            return f"{_num(i.value, fmt)} [{_num(lo, fmt)}, {_num(hi, fmt)}]"

        r_lo, r_hi = s.r.interval
        rows = [
            ("Source (model)", self.source or NOT_SPECIFIED),
            ("Data set", self.dataset or NOT_SPECIFIED),
        ]
        if self.code is not None:
            rows.append(("Code", self.code))
        rows += [
            ("N items", str(t.n)),
            ("N correct / N incorrect", f"{t.n_correct} / {t.n_incorrect}"),
            ("Accuracy", _num(t.accuracy)),
            ("Confidence signal", self.confidence_signal or NOT_SPECIFIED),
            ("Confidence format", self.confidence_format or NOT_SPECIFIED),
            ("Binarisation threshold", self.binarisation_threshold or NOT_SPECIFIED),
            ("2x2 table", f"a={t.a}, b={t.b}, c={t.c}, d={t.d}"),
            ("TRIN", trin + judged),
            ("L", prop(s.l) + judged),
            ("Fp", prop(s.fp) + judged),
            ("RBS", prop(s.rbs, "+") + judged),
            (
                "r(confidence, correct)",
                f"{_num(s.r.r, '+.3f')}, {_p_text(s.r.p_value)}, "
                f"{level} [{_num(r_lo, '+.3f')}, {_num(r_hi, '+.3f')}]",
            ),
            ("Tier classification", s.tier),
            ("Flagging reason", s.flagging_reason),
            ("Response style", s.response_style or "None"),
        ]
        if s.tier == "Insufficient data":
            rows.append(
                ("Distance to a verdict", "; ".join(s.distance.describe(remaining=remaining)))
            )
        if not s.phase_b_allowed:
            rows.append(("Phase B", f"not shown: the screen is {s.tier}"))
        elif self.phase_b is not None:
            rows += _phase_b_rows(self.phase_b)
        return rows

    def to_markdown(self) -> str:
        """The report as a two-column Markdown table."""
        lines = ["| VRS row | Value |", "|---|---|"]
        for label, value in self.rows():
            cell = value.replace("|", r"\|")
            lines.append(f"| {label} | {cell} |")
        return "\n".join(lines) + "\n"

    def to_rich(self) -> RichTable:
        """The report as a ``rich.table.Table`` (tier coloured). Imports rich lazily."""
        from rich.table import Table
        from rich.text import Text

        title = "Validity report (VRS)" + (f": {self.code}" if self.code is not None else "")
        table = Table(title=title, show_header=True, header_style="bold")
        table.add_column("Row", style="dim", no_wrap=True)
        table.add_column("Value")
        for label, value in self.rows():
            style = TIER_STYLES.get(value, "") if label == "Tier classification" else ""
            table.add_row(label, Text(value, style=style))
        return table

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (nan -> None, tuples -> lists), layout ``SCHEMA``."""
        s = self.screen
        t = self.table
        d = s.distance
        return {
            "schema": SCHEMA,
            "source": self.source,
            "dataset": self.dataset,
            "code": self.code,
            "n_items": t.n,
            "n_correct": t.n_correct,
            "n_incorrect": t.n_incorrect,
            "accuracy": _json_float(t.accuracy),
            "confidence_signal": self.confidence_signal,
            "confidence_format": self.confidence_format,
            "binarisation_threshold": self.binarisation_threshold,
            "table": t.cells(),
            "confidence_level": s.confidence_level,
            "trin": {
                "value": _json_float(s.trin.value),
                "direction": s.trin.direction,
                "warning": s.trin.warning,
            },
            "L": _index_dict(s.l, s.status("L")),
            "Fp": _index_dict(s.fp, s.status("Fp")),
            "RBS": _index_dict(s.rbs, s.status("RBS")),
            "r": {
                "value": _json_float(s.r.r),
                "p_value": _json_float(s.r.p_value),
                "ci_lower": _json_float(s.r.interval.lower),
                "ci_upper": _json_float(s.r.interval.upper),
            },
            "tier": s.tier,
            "flags": [{"index": f.index, "level": f.level, "reason": f.reason} for f in s.flags],
            "flagging_reason": s.flagging_reason,
            "response_style": s.response_style,
            "distance_to_verdict": {
                "shortfalls": [
                    {
                        "cell": x.cell,
                        "meaning": x.meaning,
                        "count": x.count,
                        "missing": x.missing,
                        "more_items": x.more_items,
                    }
                    for x in d.shortfalls
                ],
                "more_items": d.more_items,
                "n_incorrect": d.n_incorrect,
                "l_min_errors": d.l_min_errors,
                "l_wilson_min_errors": d.l_wilson_min_errors,
                "l_certifiable": d.l_certifiable,
                "more_items_for_l": d.more_items_for_l,
                "summary": list(d.describe()),
            },
            "phase_b": None if self.phase_b is None else _phase_b_dict(self.phase_b),
        }


def _phase_b_rows(p: PhaseB) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if p.caveat:
        rows.append(("Phase B caveat", p.caveat))
    rows.append(("AUROC", _num(p.auroc)))
    rows.append(("Base accuracy", _num(p.base_accuracy)))
    rows.extend(
        (
            f"Selective accuracy at {pt.coverage:.0%}",
            f"{_num(pt.accuracy)} ({_num(pt.gain, '+.3f')}; n = {pt.n_kept})",
        )
        for pt in p.selective
    )
    rows += [("AURC", _num(p.aurc)), ("ECE", _num(p.ece)), ("Brier score", _num(p.brier))]
    if p.kappa is not None:
        rows.append((f"Cohen's kappa ({p.kappa_weights or 'unweighted'})", _num(p.kappa)))
    return rows


def _phase_b_dict(p: PhaseB) -> dict[str, Any]:
    return {
        "n_items": p.n_items,
        "base_accuracy": _json_float(p.base_accuracy),
        "auroc": _json_float(p.auroc),
        "selective": [
            {
                "coverage": pt.coverage,
                "n_kept": pt.n_kept,
                "accuracy": _json_float(pt.accuracy),
                "gain": _json_float(pt.gain),
            }
            for pt in p.selective
        ],
        "aurc": _json_float(p.aurc),
        "ece": _json_float(p.ece),
        "brier": _json_float(p.brier),
        "kappa": None if p.kappa is None else _json_float(p.kappa),
        "kappa_weights": p.kappa_weights,
        "caveat": p.caveat,
        "calibration": [b.to_dict() for b in p.calibration],
        "risk_coverage": [pt.to_dict() for pt in p.risk_coverage],
    }


def screen_report(
    correct: npt.ArrayLike,
    confidence: npt.ArrayLike,
    *,
    threshold: float | Literal["median"] = 0.5,
    source: str = "",
    dataset: str = "",
    code: str | None = None,
    confidence_signal: str = "p_max",
    confidence_format: str = "continuous, 0-1",
    with_phase_b: bool = False,
    coverages: Sequence[float] = DEFAULT_COVERAGES,
    n_bins: int = 10,
    model_decision: npt.ArrayLike | None = None,
    coder_decision: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
    weights: KappaWeights = None,
    confidence_level: float = 0.95,
    high: npt.ArrayLike | None = None,
    threshold_text: str | None = None,
) -> VRSReport:
    """Binarise, screen and (if asked and allowed) add phase B, in one call.

    Args:
        correct: Shape (n_items,), bool or 0/1.
        confidence: Shape (n_items,), continuous confidence (in [0, 1] for phase B).
        threshold: Fixed cut or ``"median"``; ``>=`` the cut is high.
        source: Model id for the report.
        dataset: Data set for the report.
        code: Code screened, if any.
        confidence_signal: Name of the signal for the report.
        confidence_format: Format of the signal for the report.
        with_phase_b: Compute phase-B metrics (only attached for Valid/Indeterminate).
        coverages: Selective-accuracy coverages for phase B.
        n_bins: ECE bins for phase B.
        model_decision: Shape (n_items,), model decisions for phase-B kappa.
        coder_decision: Shape (n_items,), coder decisions for phase-B kappa.
        labels: Ordered categories for kappa.
        weights: Kappa weights.
        confidence_level: Coverage of all intervals.
        high: Shape (n_items,), a high/low split made by the caller (e.g. each item cut
            at its own scale's cut); ``threshold`` is then not used.
        threshold_text: The report's binarisation row, replacing the description of
            the cut (needed with ``high``).

    Returns:
        The report.

    Raises:
        ValueError: On malformed arrays (see :func:`~screening.table.contingency_table`).

    Warns:
        ScreeningWarning: On degenerate data (see :func:`~screening.tiers.screen_table`).
    """
    ok = as_bool_1d(correct, "correct")
    conf = as_float_1d(confidence, "confidence")
    same_length(correct=ok, confidence=conf)
    if high is None:
        split = binarise_confidence(conf, threshold=threshold)
        is_high, described = split.high, split.describe()
    else:
        is_high = as_bool_1d(high, "high")
        same_length(correct=ok, high=is_high)
        described = "per-item cut"
    result = screen_table(contingency_table(ok, is_high), confidence_level=confidence_level)
    metrics = None
    if with_phase_b:
        metrics = phase_b(
            result,
            ok,
            conf,
            coverages=coverages,
            n_bins=n_bins,
            model_decision=model_decision,
            coder_decision=coder_decision,
            labels=labels,
            weights=weights,
        )
    return VRSReport(
        screen=result,
        source=source,
        dataset=dataset,
        code=code,
        confidence_signal=confidence_signal,
        confidence_format=confidence_format,
        binarisation_threshold=threshold_text or described,
        phase_b=metrics,
    )
