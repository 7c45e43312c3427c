"""Evidence on the embedded model: the variants' numbers are the model's own, as if each
variant were a response scored alone (batching and prefix reuse change nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import Pair, ScoringEngine
from scoring.evidence import applies_probability, explain
from scoring.sentences import without

pytestmark = pytest.mark.model

TEXT = "The food was cold. The nurse shouted at me and was very rude to my family. I parked outside"


def test_effects_are_the_models_numbers_for_each_variant(embedded_backend: Any) -> None:
    code = Code("staff", "Staff attitude", definition="How staff treat patients.", scale=BINARY)
    codebook = Codebook(name="T", codes=(code,), question='Does "{code}" apply?')
    engine = ScoringEngine(embedded_backend, codebook, batch_size=8)
    [evidence] = explain(engine, [Pair("r1", TEXT, code)])
    assert len(evidence.sentences) == 3
    alone = ScoringEngine(embedded_backend, codebook, batch_size=1)
    whole = alone.score([Pair("w", TEXT, code)])[0]
    assert evidence.applies == pytest.approx(
        applies_probability(whole.curve.probs, whole.scale), abs=1e-4
    )
    for sentence in evidence.sentences:
        variant = without(TEXT, (sentence.start, sentence.end))
        score = alone.score([Pair("v", variant, code)])[0]
        p = applies_probability(score.curve.probs, score.scale)
        assert sentence.applies_without == pytest.approx(p, abs=1e-4)
        assert sentence.applies_effect == pytest.approx(evidence.applies - p, abs=1e-4)
    # Leaving text out moves a real model: the effects are not all zero.
    assert max(abs(s.applies_effect) for s in evidence.sentences) > 1e-3
