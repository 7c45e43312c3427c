"""The learned curve's prediction from kept features: the same curve as its inputs give."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.learned import BLOCK, fit_curve, learning_inputs


def fitted(rng: np.random.Generator, width: int = 16):
    feats = rng.standard_normal((300, width)).astype(np.float16)
    logprobs = np.log(rng.dirichlet([1.0, 1.0], 300))
    inputs = learning_inputs(feats, logprobs)
    labels = (inputs[:, 0] + 0.5 * inputs[:, 1] > 0).astype(int).tolist()
    return fit_curve(inputs, labels, values=[0, 1], applies_from=1, zero_shot_columns=3)


def test_predict_from_features_equals_the_curve_of_the_whole_inputs() -> None:
    rng = np.random.default_rng(4)
    curve = fitted(rng)
    n = BLOCK + 123  # more than one block, the last one partial
    feats = rng.standard_normal((n, 16)).astype(np.float16)
    logprobs = np.log(rng.dirichlet([1.0, 1.0], n))
    whole = curve.log_probs(learning_inputs(feats, logprobs))
    predicted = curve.predict(feats, logprobs)
    assert predicted.shape == (n, 2)
    np.testing.assert_allclose(predicted, whole, atol=1e-5)
    np.testing.assert_allclose(np.exp(predicted).sum(axis=1), 1.0, atol=1e-9)
    one = curve.probs_of(feats[7], logprobs[7])
    np.testing.assert_allclose(one, np.exp(predicted[7]), atol=1e-5)


def test_predict_refuses_features_of_another_width() -> None:
    rng = np.random.default_rng(5)
    curve = fitted(rng)
    with pytest.raises(ValueError, match="features must have shape"):
        curve.predict(np.zeros((4, 15), dtype=np.float16), np.log(np.full((4, 2), 0.5)))


@pytest.mark.parametrize("k", [2, 4])
def test_a_fit_on_fewer_decisions_than_inputs_is_the_plain_fit(k: int) -> None:
    # The fit runs on the decisions' coordinates in the space their rows span (a fifth
    # of the work); it must give scikit-learn's own fit on the whole inputs.
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(k)
    n, width = 120, 400
    feats = rng.standard_normal((n, width)).astype(np.float16)
    logprobs = np.log(rng.dirichlet(np.ones(k), n))
    inputs = learning_inputs(feats, logprobs)
    signal = inputs[:, :width] @ rng.standard_normal(width) / 20
    labels = np.digitize(signal + rng.standard_normal(n), np.linspace(-1, 1, k - 1))
    curve = fit_curve(
        inputs, labels.tolist(), values=list(range(k)), applies_from=1, zero_shot_columns=k + 1
    )
    z = (np.asarray(inputs, dtype=np.float64) - curve.mean) / curve.scale
    plain = LogisticRegression(C=curve.penalty, max_iter=5000, tol=1e-10, class_weight="balanced")
    plain.fit(z, labels)
    np.testing.assert_allclose(np.exp(curve.log_probs(inputs)), plain.predict_proba(z), atol=2e-4)
