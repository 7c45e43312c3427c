"""Curves learned from the coder's decisions (METHOD.md section 5), numpy and scikit-learn.

The zero-shot curve is what the model says unprompted. A learned curve is a classifier
over the scale's points, fitted per code on the coder's decisions, whose inputs are what
the model computed for the pair in the scoring pass (its last layer's state at the
answer position and pooled over the response, :attr:`scoring.backend.Backend.feature_layout`)
and the zero-shot curve itself (its on-scale log-probabilities and its log on-scale
mass), so that with few decisions the prompt still counts. Its output is a probability
per scale point: a curve like any other, so surprisal, entropy, the sparkline and every
analysis apply unchanged.

The classifier is a multinomial logistic regression (two points: the ordinary binary
one) on standardised inputs, the zero-shot columns weighted up by
:data:`ZERO_SHOT_WEIGHT` so that the L2 penalty holds them back less than any one of the
many hidden-state columns. The scale's values are weighted to count alike (scikit-learn's
``class_weight="balanced"``): a code that applies to one response in fifteen otherwise
gets a curve whose minimum is "does not apply" everywhere, however well it ranks the
responses (measured on the NHS categories at 100 decisions: kappa 0.17 unweighted, 0.27
weighted, the same AUROC). Its probabilities are therefore calibrated to values that are
equally frequent, not to the code's prevalence; the audit's calibration figures (ECE,
Brier) say how far that moves them. The penalty ``C`` is chosen from :data:`PENALTIES`
by stratified cross-validation on the log loss weighted the same way (a proper scoring
rule: the chosen model is the best calibrated of the grid under those weights), and the
cross-validated AUROC of "applies" is reported beside it. It is *not* the audit's
figure: the decisions it is computed on were chosen by the queue, not at random.

With fewer decisions than inputs (the usual case: hundreds against a thousand) every fit
runs on the decisions' coordinates in the space their rows span: the same weights (the
penalty keeps nothing outside that space) for less work.

What goes in is the caller's business; the rule that keeps every guarantee (never an
audit pair, never a delegated or model-sourced decision) is kept by
:mod:`study.analysis._learning`, which chooses the decisions.

scikit-learn is imported when a curve is fitted, never by ``import scoring``; a fitted
:class:`LearnedCurve` predicts with numpy alone.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scoring.errors import ScoringError

FloatArray = npt.NDArray[np.float64]

#: Fewest decisions of each scale value a code needs before its curve is learned: the
#: cross-validation needs one of each value per fold.
MIN_PER_VALUE = 5

#: Folds of the cross-validation (fewer when a value has fewer decisions).
FOLDS = 5

#: The grid of inverse penalties ``C`` tried.
PENALTIES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)

#: How much the standardised zero-shot columns are scaled up: the penalty on their
#: weights is ``1 / ZERO_SHOT_WEIGHT**2`` of a hidden-state column's.
ZERO_SHOT_WEIGHT = 4.0

#: Rows per block of the prediction's product: a float32 block of 1,024 rows of a thousand
#: inputs stays in the cache while it is converted and multiplied (8,192 were 25% slower).
BLOCK = 1024

#: Log-probabilities below this are clipped (an option of probability zero).
LOG_FLOOR = -30.0

#: Inputs of a curve learned from the model's features and its zero-shot curve, or from
#: the zero-shot curve alone (a backend that returns no features: a server).
INPUTS_FEATURES = "features+zero-shot"
INPUTS_ZERO_SHOT = "zero-shot"


class LearningError(ScoringError, ValueError):
    """The decisions cannot teach a curve (too few of a value, one value only)."""


def zero_shot_inputs(logprobs: npt.ArrayLike) -> FloatArray:
    """The zero-shot curve as inputs: renormalised log-probabilities and the log mass.

    Args:
        logprobs: Shape (n, K), pooled ``ln P(option_k | prompt)`` (minus the surprisal).

    Returns:
        Shape (n, K + 1).
    """
    lp = np.maximum(np.asarray(logprobs, dtype=np.float64), LOG_FLOOR)
    if lp.ndim != 2:
        raise ValueError(f"logprobs must have shape (n, K), got {lp.shape}")
    top = lp.max(axis=1, keepdims=True)
    log_mass = top + np.log(np.exp(lp - top).sum(axis=1, keepdims=True))
    return np.hstack([lp - log_mass, log_mass])


def learning_inputs(
    features: npt.ArrayLike | None, logprobs: npt.ArrayLike
) -> npt.NDArray[np.float32]:
    """The classifier's inputs: the features (if any), then the zero-shot columns.

    Args:
        features: Shape (n, F) (float16 as stored) or None.
        logprobs: Shape (n, K), the zero-shot curve's log-probabilities.

    Returns:
        Shape (n, F + K + 1) or (n, K + 1), float32 (the features' precision is float16).
    """
    zero = zero_shot_inputs(logprobs).astype(np.float32)
    if features is None:
        return zero
    feats = np.asarray(features)
    if feats.ndim != 2 or feats.shape[0] != zero.shape[0]:
        raise ValueError(f"features must have shape (n, F) with n = {zero.shape[0]}")
    return np.hstack([feats.astype(np.float32), zero])


def shortfall(
    labels: Sequence[int], values: Sequence[int], *, minimum: int = MIN_PER_VALUE
) -> dict[int, int]:
    """How many more decisions of each value a code needs (values missing nothing left out)."""
    counts = Counter(int(v) for v in labels)
    return {int(v): minimum - counts[int(v)] for v in values if counts[int(v)] < minimum}


@dataclass(frozen=True)
class LearnedCurve:
    """One code's fitted classifier: standardisation, weights, and what it learned from.

    Attributes:
        values: The scale's values, the classes in scale order.
        zero_shot_columns: How many trailing input columns are the zero-shot curve's.
        mean: Shape (D,), the inputs' means on the training decisions.
        scale: Shape (D,), the divisors of the standardisation (zero-shot columns
            divided by :data:`ZERO_SHOT_WEIGHT` more).
        coef: Shape (K, D), one row per value.
        intercept: Shape (K,).
        penalty: The inverse penalty ``C`` chosen by cross-validation.
        counts: Decisions of each value it learned from.
        cv_auroc: Cross-validated AUROC of "applies" on those decisions (None when the
            decisions hold one side only); not an audit figure.
        inputs: :data:`INPUTS_FEATURES` or :data:`INPUTS_ZERO_SHOT`.
    """

    values: tuple[int, ...]
    zero_shot_columns: int
    mean: FloatArray = field(repr=False)
    scale: FloatArray = field(repr=False)
    coef: FloatArray = field(repr=False)
    intercept: FloatArray = field(repr=False)
    penalty: float
    counts: Mapping[int, int]
    cv_auroc: float | None
    inputs: str

    @property
    def n_decisions(self) -> int:
        return sum(self.counts.values())

    def log_probs(self, inputs: npt.ArrayLike) -> FloatArray:
        """Shape (n, K): the learned ``ln P(value_k | pair)`` of each pair (each row's
        probabilities sum to 1: a learned curve has no off-scale mass).

        The standardisation is folded into the weights, and the product runs in float32
        in blocks of rows: 100,000 pairs of 1,000 inputs take well under a second and
        never a float64 copy of the whole matrix.
        """
        x = np.asarray(inputs)
        if x.ndim != 2 or x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"inputs must have shape (n, {self.mean.shape[0]}), got {x.shape}")
        weights32, bias = self._folded()
        out = np.empty((x.shape[0], len(self.values)))
        for start in range(0, x.shape[0], BLOCK):
            block = np.asarray(x[start : start + BLOCK], dtype=np.float32)
            out[start : start + BLOCK] = block @ weights32
        return _normalised(out + bias)

    def _folded(self) -> tuple[npt.NDArray[np.float32], FloatArray]:
        """The weights with the standardisation folded in (shape (D, K), float32) and the
        bias (shape (K,))."""
        weights = (self.coef / self.scale).T  # (D, K)
        bias: FloatArray = self.intercept - self.mean @ weights
        return weights.astype(np.float32), bias

    def predict(
        self, features: npt.NDArray[np.float16] | None, logprobs: npt.ArrayLike
    ) -> FloatArray:
        """:meth:`log_probs` of every pair from its kept features (or None) and its
        zero-shot log-probabilities (shape (n, K)), a block of rows at a time: the inputs
        of a whole code are never built at once."""
        lp = np.asarray(logprobs, dtype=np.float64)
        if not len(lp):
            return np.zeros((0, len(self.values)))
        if features is None:
            return self.log_probs(learning_inputs(None, lp))
        feats = np.asarray(features)
        width = self.mean.shape[0] - self.zero_shot_columns
        if feats.ndim != 2 or feats.shape != (lp.shape[0], width):
            raise ValueError(
                f"features must have shape ({lp.shape[0]}, {width}), got {feats.shape}"
            )
        # The features' and the zero-shot columns' products summed: the same as
        # :meth:`log_probs` of their :func:`learning_inputs`, without building them.
        weights32, bias = self._folded()
        out = np.empty((lp.shape[0], len(self.values)))
        for start in range(0, lp.shape[0], BLOCK):
            stop = start + BLOCK
            zero = zero_shot_inputs(lp[start:stop]).astype(np.float32)
            out[start:stop] = (
                feats[start:stop].astype(np.float32) @ weights32[:width] + zero @ weights32[width:]
            )
        return _normalised(out + bias)

    def probs_of(
        self, features: npt.NDArray[np.float16] | None, logprobs: npt.ArrayLike
    ) -> FloatArray:
        """Shape (K,): the learned probabilities of one pair from what the engine
        returned for it (:attr:`Score.features <scoring.score.Score.features>`, shape
        (F,), and its zero-shot log-probabilities, shape (K,)), as :meth:`predict`
        computes them for kept scores. The features are read only by a curve learned
        from them (:data:`INPUTS_FEATURES`).

        Raises:
            ValueError: a curve learned from features and none given, or features of
                another width.
        """
        lp = np.asarray(logprobs, dtype=np.float64).reshape(1, -1)
        if self.inputs == INPUTS_FEATURES:
            if features is None:
                raise ValueError("this curve was learned from the model's features; none given")
            feats: npt.NDArray[np.float16] | None = np.asarray(features).reshape(1, -1)
        else:
            feats = None
        probs: FloatArray = np.exp(self.log_probs(learning_inputs(feats, lp))[0])
        return probs

    def params_hash(self) -> str:
        """A hash of the fitted parameters (rounded to 1e-9, so that two fits of the same
        decisions agree across BLAS builds) and of what they were fitted on."""
        digest = hashlib.sha256()
        digest.update(repr((self.values, self.zero_shot_columns, self.inputs)).encode())
        digest.update(repr(sorted(self.counts.items())).encode())
        digest.update(repr(self.penalty).encode())
        for array in (self.mean, self.scale, self.coef, self.intercept):
            digest.update(np.round(array, 9).astype("<f8").tobytes())
        return digest.hexdigest()[:16]


def _normalised(logits: FloatArray) -> FloatArray:
    """Log-probabilities from logits (shape (n, K)), floored at :data:`LOG_FLOOR`."""
    top = logits.max(axis=1, keepdims=True)
    result: FloatArray = logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))
    return np.maximum(result, LOG_FLOOR)


def fit_curve(
    inputs: npt.ArrayLike,
    labels: Sequence[int],
    *,
    values: Sequence[int],
    applies_from: int,
    zero_shot_columns: int,
    inputs_kind: str = INPUTS_FEATURES,
    minimum: int = MIN_PER_VALUE,
    penalty: float | None = None,
) -> LearnedCurve:
    """Fit one code's curve on the coder's decisions.

    Args:
        inputs: Shape (n, D), from :func:`learning_inputs`, in a fixed order (the same
            decisions in the same order give the same curve, to the last bit).
        labels: Shape (n,), the decided values.
        values: The scale's values, in scale order.
        applies_from: The lowest value that applies (for the AUROC of "applies").
        zero_shot_columns: How many trailing columns of ``inputs`` are the zero-shot
            curve's (weighted up, :data:`ZERO_SHOT_WEIGHT`).
        inputs_kind: What the inputs are, kept with the curve.
        minimum: Fewest decisions of each value.
        penalty: The inverse penalty ``C`` chosen before (a refit of a kept fit, whose
            parameters it reproduces): no cross-validation, and ``cv_auroc`` is None.

    Raises:
        LearningError: a value with fewer than ``minimum`` decisions (named, with how
            many more it needs), or a decided value that is not on the scale.
    """
    x = np.asarray(inputs, dtype=np.float64)
    y = np.asarray([int(v) for v in labels])
    scale_values = tuple(int(v) for v in values)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"inputs must have shape (n, D) with n = {y.shape[0]}, got {x.shape}")
    strange = sorted(set(y.tolist()) - set(scale_values))
    if strange:
        raise LearningError(f"decided values {strange} are not on the scale {scale_values}")
    missing = shortfall(y.tolist(), scale_values, minimum=minimum)
    if missing:
        raise LearningError(needs_text(missing, Counter(y.tolist())))
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    if zero_shot_columns:
        scale[-zero_shot_columns:] /= ZERO_SHOT_WEIGHT
    z = (x - mean) / scale
    classes = np.searchsorted(np.asarray(scale_values), y)
    counts = {v: int((y == v).sum()) for v in scale_values}
    folds = max(2, min(FOLDS, min(counts.values())))

    from threadpoolctl import threadpool_limits

    # One BLAS thread: hundreds of small fits, where thread start-up costs more than it
    # saves (and a neighbour's threads make it far worse).
    held_out: FloatArray | None = None
    with threadpool_limits(limits=1):
        basis, rows = _row_space(z)
        if penalty is None:
            penalty, held_out = _choose_penalty(rows, classes, folds=folds)
        model = _fit(rows, classes, penalty)
    k = len(scale_values)
    coef = np.asarray(model.coef_, dtype=np.float64)
    if basis is not None:
        coef = coef @ basis.T
    intercept = np.asarray(model.intercept_, dtype=np.float64)
    if k == 2:  # sklearn's binary form: one row for the second class against the first
        coef = np.vstack([np.zeros_like(coef[0]), coef[0]])
        intercept = np.array([0.0, intercept[0]])
    applies = np.asarray([v >= applies_from for v in scale_values])
    truth = applies[classes]
    cv_auroc = None
    if held_out is not None and truth.any() and not truth.all():
        from sklearn.metrics import roc_auc_score

        cv_auroc = float(roc_auc_score(truth, held_out[:, applies].sum(axis=1)))
    return LearnedCurve(
        values=scale_values,
        zero_shot_columns=zero_shot_columns,
        mean=mean,
        scale=scale,
        coef=coef,
        intercept=intercept,
        penalty=penalty,
        counts=counts,
        cv_auroc=cv_auroc,
        inputs=inputs_kind,
    )


def needs_text(missing: Mapping[int, int], counts: Mapping[int, int]) -> str:
    """``"needs 3 more decisions of value 1 and 5 more of 0"`` (the largest need first)."""
    parts = [
        f"{more} more of {value} (has {counts.get(value, 0)})"
        for value, more in sorted(missing.items(), key=lambda item: (-item[1], item[0]))
    ]
    return "needs " + ", ".join(parts) + f" (at least {MIN_PER_VALUE} decisions of each value)"


def _row_space(z: FloatArray) -> tuple[FloatArray | None, FloatArray]:
    """The decisions' inputs in an orthonormal basis of the space their rows span: with
    fewer decisions than inputs (hundreds against a thousand), the fit's weights lie in
    that space (the L2 penalty leaves nothing outside it), so fitting the coordinates
    (shape (n, n)) and mapping the weights back by the basis (shape (D, n)) is the same
    fit, the penalty unchanged, for a fifth of the work. None and ``z`` itself when
    there are not more inputs than decisions."""
    n, d = z.shape
    if d <= n:
        return None, z
    basis, upper = np.linalg.qr(z.T)  # z.T = basis @ upper
    return basis, np.ascontiguousarray(upper.T)


def _model(penalty: float, *, warm_start: bool = False) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(
        C=penalty, max_iter=5000, tol=1e-6, class_weight="balanced", warm_start=warm_start
    )


def _fit(z: FloatArray, classes: npt.NDArray[np.int_], penalty: float) -> Any:
    model = _model(penalty)
    model.fit(z, classes)
    return model


def _choose_penalty(
    z: FloatArray, classes: npt.NDArray[np.int_], *, folds: int
) -> tuple[float, FloatArray]:
    """The penalty of the lowest cross-validated log loss, and its held-out probabilities
    (shape (n, K)) for the AUROC."""
    from sklearn.model_selection import StratifiedKFold

    k = int(classes.max()) + 1
    # The log loss weighted as the fit is: every value counts as much as every other.
    weights = (len(classes) / (k * np.bincount(classes, minlength=k)))[classes]
    splits = list(StratifiedKFold(n_splits=folds, shuffle=True, random_state=0).split(z, classes))
    held_out = np.zeros((len(PENALTIES), z.shape[0], k))
    for train, test in splits:
        # Along the grid from the strongest penalty, each fit starting from the last
        # one's weights: the same optima for fewer iterations.
        model = _model(PENALTIES[0], warm_start=True)
        for j, penalty in enumerate(PENALTIES):
            model.set_params(C=penalty)
            model.fit(z[train], classes[train])
            held_out[j][np.ix_(test, model.classes_)] = model.predict_proba(z[test])
    best: tuple[float, float, FloatArray] | None = None
    for j, penalty in enumerate(PENALTIES):
        picked = held_out[j][np.arange(len(classes)), classes]
        loss = float((-np.log(np.clip(picked, 1e-12, 1.0)) * weights).sum() / weights.sum())
        if best is None or loss < best[0] - 1e-12:
            best = (loss, penalty, held_out[j])
    assert best is not None
    if not math.isfinite(best[0]):
        raise LearningError("the cross-validation of the learned curve did not converge")
    return best[1], best[2]
