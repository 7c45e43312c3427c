"""Ordinal surprisal curves (METHOD.md section 1), pure numpy.

From the option log-probabilities of one prompt::

    s_k = -ln P(o_k | x)                 surprisal, nats
    m   = sum_k P(o_k | x)               on-scale mass (1 - m is off-scale)
    p_k = P(o_k | x) / m                 renormalised distribution
    H   = -sum_k p_k ln p_k              entropy; H / ln K is the normalised entropy
    mode = argmin_k s_k                  the curve's minimum, the model's pick
    E   = sum_k v_k p_k                  expected value over the option values v_k
    sd  = sqrt(sum_k p_k (v_k - E)^2)    spread
    confidence = max_k p_k               (or 1 - H / ln K)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Off-scale mass above which a curve is flagged: the prompt format is failing.
OFF_SCALE_WARNING = 0.5

#: Sparkline glyphs, lowest to tallest.
SPARK_BARS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Curve:
    """The surprisal curve of one item and everything derived from it.

    Attributes:
        surprisal: shape (K,), nats.
        probs: shape (K,), renormalised probabilities, summing to 1.
        on_scale_mass: ``m`` in [0, 1].
        entropy: nats.
        norm_entropy: entropy / ln K, in [0, 1].
        mode: index (0-based) of the lowest surprisal; ties go to the lower index.
        expected: expected option value.
        spread: standard deviation of the option value.
        confidence: ``max_k p_k``.
        off_scale: True when ``1 - m`` exceeds the warning threshold.
    """

    surprisal: FloatArray
    probs: FloatArray
    on_scale_mass: float
    entropy: float
    norm_entropy: float
    mode: int
    expected: float
    spread: float
    confidence: float
    off_scale: bool

    @property
    def off_scale_mass(self) -> float:
        return 1.0 - self.on_scale_mass

    def confidence_as(self, signal: str) -> float:
        """``pmax`` (default) or ``entropy`` (1 - normalised entropy)."""
        if signal == "pmax":
            return self.confidence
        if signal == "entropy":
            return 1.0 - self.norm_entropy
        raise ValueError(f"unknown confidence signal {signal!r}; use pmax or entropy")


def curve_from_logprobs(
    logprobs: Sequence[float] | FloatArray,
    values: Sequence[float] | None = None,
    *,
    off_scale_threshold: float = OFF_SCALE_WARNING,
) -> Curve:
    """Build a :class:`Curve` from pooled option log-probabilities (nats).

    Args:
        logprobs: shape (K,), ``ln P(o_k | x)``, K >= 2. ``-inf`` is allowed for an option
            of probability zero, but not for all of them.
        values: shape (K,), the options' values; defaults to 1..K.
        off_scale_threshold: flag the curve when ``1 - m`` exceeds this.

    Raises:
        ValueError: on a wrong shape, NaN, positive log-probabilities or zero total mass.
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.ndim != 1 or lp.shape[0] < 2:
        raise ValueError(f"logprobs must have shape (K,) with K >= 2, got {lp.shape}")
    if np.isnan(lp).any():
        raise ValueError("logprobs contain NaN")
    if (lp > 1e-6).any():
        raise ValueError("logprobs must be <= 0 (they are log-probabilities)")
    lp = np.minimum(lp, 0.0)
    k = lp.shape[0]
    v = np.arange(1, k + 1, dtype=np.float64) if values is None else np.asarray(values, float)
    if v.shape != lp.shape:
        raise ValueError(f"values must have shape {lp.shape}, got {v.shape}")
    top = lp.max()
    if not np.isfinite(top):
        raise ValueError("every option has probability zero")
    # log-sum-exp keeps tiny masses exact; renormalising in log space avoids underflow.
    log_mass = top + math.log(float(np.exp(lp - top).sum()))
    log_p = lp - log_mass
    probs = np.exp(log_p)
    probs /= probs.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(probs > 0, probs * log_p, 0.0)
    entropy = max(0.0, float(-terms.sum()))
    norm_entropy = min(1.0, entropy / math.log(k))
    mean = float((v * probs).sum())
    spread = math.sqrt(max(0.0, float((probs * (v - mean) ** 2).sum())))
    mass = min(1.0, math.exp(log_mass))
    return Curve(
        surprisal=-lp,
        probs=probs,
        on_scale_mass=mass,
        entropy=entropy,
        norm_entropy=norm_entropy,
        mode=int(np.argmin(-lp)),
        expected=mean,
        spread=spread,
        confidence=float(probs.max()),
        off_scale=(1.0 - mass) > off_scale_threshold,
    )


def sparkline(surprisal: Sequence[float] | FloatArray) -> str:
    """One glyph per option; low surprisal is a tall bar (the model's preference).

    Heights are the renormalised probabilities, scaled so the top option is the full bar;
    an option without a finite surprisal is the lowest bar. Plain Python: the review app
    draws one per row on every repaint, and a scale has a handful of options.
    """
    values = [float(x) for x in surprisal]
    finite = [x for x in values if math.isfinite(x)]
    if not finite:
        return "·" * len(values)
    low = min(finite)
    top = len(SPARK_BARS) - 1
    return "".join(
        SPARK_BARS[min(top, max(0, round(math.exp(low - x) * top)))]
        if math.isfinite(x)
        else SPARK_BARS[0]
        for x in values
    )


@dataclass(frozen=True)
class CurveTable:
    """The curves of many items at once, as :func:`curve_from_logprobs` computes each:
    arrays with one row per item (shape (n, K) or (n,))."""

    surprisal: FloatArray
    probs: FloatArray
    on_scale_mass: FloatArray
    entropy: FloatArray
    norm_entropy: FloatArray
    mode: npt.NDArray[np.int64]
    expected: FloatArray
    spread: FloatArray
    confidence: FloatArray
    off_scale: npt.NDArray[np.bool_]

    def take(self, rows: npt.ArrayLike) -> CurveTable:
        """The table of the items at ``rows`` (indices), in that order."""
        index = np.asarray(rows, dtype=np.int64)
        return CurveTable(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def curve_table(
    logprobs: npt.ArrayLike,
    values: Sequence[float] | None = None,
    *,
    off_scale_threshold: float = OFF_SCALE_WARNING,
) -> CurveTable:
    """:func:`curve_from_logprobs` of every row of ``logprobs`` (shape (n, K)), vectorised:
    a learned configuration rescores a code of 100,000 pairs at once.

    Raises:
        ValueError: a wrong shape, NaN, positive log-probabilities, or a row whose every
            option has probability zero.
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.ndim != 2 or lp.shape[1] < 2:
        raise ValueError(f"logprobs must have shape (n, K) with K >= 2, got {lp.shape}")
    if np.isnan(lp).any():
        raise ValueError("logprobs contain NaN")
    if (lp > 1e-6).any():
        raise ValueError("logprobs must be <= 0 (they are log-probabilities)")
    lp = np.minimum(lp, 0.0)
    n, k = lp.shape
    v = np.arange(1, k + 1, dtype=np.float64) if values is None else np.asarray(values, float)
    top = lp.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
    if not np.isfinite(top).all():
        raise ValueError("every option has probability zero")
    log_mass = top + np.log(np.exp(lp - top).sum(axis=1, keepdims=True))
    log_p = lp - log_mass
    probs = np.exp(log_p)
    probs /= probs.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(probs > 0, probs * log_p, 0.0)
    entropy = np.maximum(0.0, -terms.sum(axis=1))
    mean = probs @ v
    spread = np.sqrt(np.maximum(0.0, (probs * (v[None, :] - mean[:, None]) ** 2).sum(axis=1)))
    mass = np.minimum(1.0, np.exp(log_mass[:, 0]))
    return CurveTable(
        surprisal=-lp,
        probs=probs,
        on_scale_mass=mass,
        entropy=entropy,
        norm_entropy=np.minimum(1.0, entropy / math.log(k)),
        mode=np.argmin(-lp, axis=1).astype(np.int64),
        expected=mean,
        spread=spread,
        confidence=probs.max(axis=1),
        off_scale=(1.0 - mass) > off_scale_threshold,
    )
