"""What the model's picks are worth, in figures and words, before any tier.

The screen's tier (METHOD.md section 2) judges only the *pattern* of the model's
confidence against its correctness: "Valid" means no pathological response pattern was
found, not that the model is any good. A model that answers No to every pair can pass
it. So every group screened (a code, or all codes pooled) opens with a
:class:`Headline`: how often the model agrees with the coder, Cohen's kappa with its
interval, the AUROC of confidence for correctness, the share of each pick, and plain
words when the model is constant or no better than chance.

Figures are on applies / does not apply (the scale's ``applies_from``), the screen's
default agreement. Kappa's 95% interval uses the large-sample standard error of Fleiss,
Cohen and Everitt (1969), so that it costs nothing after each decision; a constant rater
has kappa 0 with a zero-width interval.

:data:`PATTERN` renames the tiers wherever a user reads them; what may be said of a
group, tier and figures together, is decided in :mod:`screening.story`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from screening.errors import ScreeningWarning

__all__ = [
    "PATTERN",
    "TIER_GLOSS",
    "Headline",
    "KappaInterval",
    "kappa_interval",
    "left_to_code",
    "make_headline",
    "pattern",
]

#: The tier as users read it: a statement about the response pattern, not the model.
PATTERN: dict[str, str] = {
    "Valid": "no pathology found",
    "Indeterminate": "possible pathology, unsettled",
    "Invalid": "pathological",
    "Insufficient data": "not judged yet, too few decisions",
}

#: The gloss of the VRS table's tier row, and of the ``tier`` in JSON.
TIER_GLOSS = (
    "the screen's tier judges only the pattern of confidence against correctness "
    "(Valid: no pathological response pattern found); it is not a verdict on the model: "
    "read agreement, kappa and AUROC for that"
)

#: Below this many pairs a kappa whose interval reaches 0 is not yet called "chance".
MIN_FOR_CHANCE = 30

Z95 = 1.959963984540054


def pattern(tier: str) -> str:
    """The tier in words: ``"no pathology found"`` for Valid, and so on."""
    return PATTERN.get(tier, tier)


@dataclass(frozen=True)
class KappaInterval:
    """Cohen's kappa with its 95% interval (nan where undefined)."""

    value: float
    low: float
    high: float

    def text(self, digits: int = 2) -> str:
        """``"0.61 [0.45, 0.77]"`` or ``"n/a"``."""
        if math.isnan(self.value):
            return "n/a"
        f = f".{digits}f"
        return f"{self.value:{f}} [{self.low:{f}}, {self.high:{f}}]"


def kappa_interval(first: npt.ArrayLike, second: npt.ArrayLike) -> KappaInterval:
    """Unweighted Cohen's kappa of two raters with its large-sample 95% interval.

    The variance is that of Fleiss, Cohen and Everitt (1969), for kappa not assumed 0:
    ``(A + B - C) / (n (1 - p_e)^2)`` with ``A = sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2``,
    ``B = (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2``, ``C = (k - p_e (1 - k))^2``.
    The interval is clipped to [-1, 1].

    Returns:
        nan throughout when there is no pair or chance agreement is 1 (both raters gave
        the same single value).
    """
    a = np.asarray(first)
    b = np.asarray(second)
    nan = KappaInterval(math.nan, math.nan, math.nan)
    n = int(a.size)
    if n == 0 or b.size != n:
        return nan
    cats, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = cats.size
    table = np.zeros((k, k))
    np.add.at(table, (codes[:n], codes[n:]), 1.0)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po = float(np.trace(p))
    pe = float(rows @ cols)
    if pe >= 1.0 - 1e-12:
        return nan
    kappa = (po - pe) / (1.0 - pe)
    diag = np.diag(p)
    big_a = float(np.sum(diag * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2))
    off = p.copy()
    np.fill_diagonal(off, 0.0)
    big_b = (1.0 - kappa) ** 2 * float(np.sum(off * (cols[:, None] + rows[None, :]) ** 2))
    big_c = (kappa - pe * (1.0 - kappa)) ** 2
    var = (big_a + big_b - big_c) / (n * (1.0 - pe) ** 2)
    # Rounding leaves a constant rater's zero variance a hair off zero: call it zero.
    half = Z95 * math.sqrt(var) if var > 1e-12 else 0.0
    return KappaInterval(kappa, max(-1.0, kappa - half), min(1.0, kappa + half))


def _share(count: int, n: int) -> str:
    return f"{count / n:.0%}" if n else "n/a"


@dataclass(frozen=True)
class Headline:
    """One group's figures and the sentence they make.

    Attributes:
        name: The code's name, or None for all codes pooled.
        n: Pairs compared (the coder's decisions on scored pairs).
        agreement: Share of them where model and coder agree on applies / not.
        kappa: Cohen's kappa of the two on applies / not, with its interval.
        auroc: AUROC of the model's confidence for being right (nan: no error or no
            right answer yet).
        model_picks: ``(label, count)`` of the model's picks, in scale order.
        coder_picks: ``(label, count)`` of the coder's decisions, in scale order.
        constant: The model's only answer when it gave one answer to every pair
            (``"No"``, or ``"does not apply"`` pooled), else None.
        coder_constant: The coder's only answer, likewise.
        at_chance: Kappa's interval reaches 0 or below on at least
            :data:`MIN_FOR_CHANCE` pairs, and the model is not constant.
    """

    name: str | None
    n: int
    agreement: float
    kappa: KappaInterval
    auroc: float
    model_picks: tuple[tuple[str, int], ...]
    coder_picks: tuple[tuple[str, int], ...]
    constant: str | None
    coder_constant: str | None
    at_chance: bool

    @property
    def adds_nothing(self) -> bool:
        """The model's picks carry nothing about this group (constant, or at chance)."""
        return self.n > 0 and (self.constant is not None or self.at_chance)

    def _of(self) -> str:
        return "across all codes" if self.name is None else "of this code"

    def sentence(self) -> str:
        """The headline in words (no final full stop)."""
        n, of = self.n, self._of()
        pairs = "pair" if n == 1 else "pairs"
        if n == 0:
            return "no decision on a scored pair yet: nothing to compare the model with"
        if self.constant is not None and self.coder_constant == self.constant:
            return (
                f"{_answered('you and the model', self.constant)} all {n} {pairs} {of}: "
                "nothing yet shows whether the model can tell the cases apart"
            )
        if self.constant is not None:
            return (
                f"{_answered('the model', self.constant)} all {n} {pairs} {of}: "
                "it adds nothing here"
            )
        if self.coder_constant is not None:
            return (
                f"{_answered('you', self.coder_constant)} all {n} {pairs} {of}, so kappa "
                f"cannot judge the model yet (it agrees on {self.agreement:.0%})"
            )
        if self.at_chance:
            return (
                f"the model's agreement with you is not better than chance (kappa "
                f"{self.kappa.text()} on {n} {pairs}): so far it adds nothing here"
            )
        return (
            f"the model agrees with you on {self.agreement:.0%} of {n} {pairs}, "
            f"kappa {self.kappa.text()}"
        )

    def figures(self) -> str:
        """Agreement and the share of each pick, on one line (kappa and AUROC go with
        the response pattern: :func:`pattern_line`)."""
        if self.n == 0:
            return "no pairs yet"
        model = ", ".join(f"{label} {_share(c, self.n)}" for label, c in self.model_picks)
        coder = ", ".join(f"{label} {_share(c, self.n)}" for label, c in self.coder_picks)
        return f"agreement {self.agreement:.0%} on {self.n} · model: {model} · you: {coder}"

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return {
            "code": self.name,
            "n": self.n,
            "sentence": self.sentence(),
            "agreement": num(self.agreement),
            "kappa": num(self.kappa.value),
            "kappa_ci": [num(self.kappa.low), num(self.kappa.high)],
            "auroc": num(self.auroc),
            "model_picks": dict(self.model_picks),
            "coder_picks": dict(self.coder_picks),
            "constant": self.constant,
            "at_chance": self.at_chance,
            "adds_nothing": self.adds_nothing,
        }


def _answered(who: str, label: str) -> str:
    """``"the model answered No to"``; ``"the model said the code does not apply to"``."""
    if label in ("applies", "does not apply"):
        return f"{who} said the code {label} to"
    return f"{who} answered {label} to"


def left_to_code(remaining: int, *, unscored: int = 0) -> str:
    """What the study has left for a distance to a verdict, in words (``unscored``: the
    coder's decisions on pairs not scored yet, which join the screen once scored)."""
    if remaining <= 0 and unscored > 0:
        return (
            f"every pair is coded, and {unscored:,} decisions wait for their scores: the "
            "screen sees them once they are scored"
        )
    if remaining <= 0:
        return "every pair is coded: no verdict can be reached in this study"
    return (
        f"the study has {remaining:,} pair{'s' if remaining != 1 else ''} left to code: "
        "an estimate above that cannot be reached here"
    )


def _counts(values: npt.NDArray[Any], labels: Mapping[float, str]) -> tuple[tuple[str, int], ...]:
    order = sorted(labels)
    counts = {v: int(np.sum(values == v)) for v in order}
    shown = [(labels[v], c) for v, c in counts.items() if c or len(order) <= 5]
    return tuple(shown)


def make_headline(
    name: str | None,
    *,
    picks: npt.ArrayLike,
    decisions: npt.ArrayLike,
    pick_applies: npt.ArrayLike,
    decision_applies: npt.ArrayLike,
    confidence: npt.ArrayLike,
    labels: Mapping[float, str] | None = None,
) -> Headline:
    """The headline of one group.

    Args:
        name: The code's name, or None for all codes pooled.
        picks: Shape (n,), the model's picks (scale values).
        decisions: Shape (n,), the coder's decisions on the same pairs.
        pick_applies: Shape (n,), bool: the pick says the code applies.
        decision_applies: Shape (n,), bool: the decision says it applies.
        confidence: Shape (n,), the model's confidence (p_max).
        labels: Scale value -> label, for one code's scale; None (pooled, or codes on
            different scales): the picks are counted as applies / does not apply.
    """
    pa = np.asarray(pick_applies, dtype=bool)
    da = np.asarray(decision_applies, dtype=bool)
    conf = np.asarray(confidence, dtype=float)
    n = int(pa.size)
    if labels is None:
        words = {0.0: "does not apply", 1.0: "applies"}
        model_values, coder_values = pa.astype(float), da.astype(float)
    else:
        words = dict(labels)
        model_values = np.asarray(picks, dtype=float)
        coder_values = np.asarray(decisions, dtype=float)
    model_picks = _counts(model_values, words)
    coder_picks = _counts(coder_values, words)
    correct = pa == da
    agreement = float(correct.mean()) if n else math.nan
    kappa = kappa_interval(pa, da)
    from screening.phase_b import auroc_score  # scipy: not on every import of this module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScreeningWarning)
        auroc = auroc_score(correct, conf) if n else math.nan

    def only(values: npt.NDArray[Any], applies: npt.NDArray[Any]) -> str | None:
        if not n:
            return None
        distinct = np.unique(values)
        if distinct.size == 1:
            return words.get(float(distinct[0]), str(distinct[0]))
        if np.all(applies) or not np.any(applies):
            return "applies" if np.all(applies) else "does not apply"
        return None

    constant = only(model_values, pa)
    coder_constant = only(coder_values, da)
    at_chance = (
        constant is None
        and coder_constant is None
        and n >= MIN_FOR_CHANCE
        and not math.isnan(kappa.low)
        and kappa.low <= 0.0
    )
    return Headline(
        name=name,
        n=n,
        agreement=agreement,
        kappa=kappa,
        auroc=auroc,
        model_picks=model_picks,
        coder_picks=coder_picks,
        constant=constant,
        coder_constant=coder_constant,
        at_chance=at_chance,
    )
