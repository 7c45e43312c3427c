"""Evidence per pair, measured by leaving sentences out through the scoring engine."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, Pair, ScoringEngine
from scoring.backend import Backend, ModelIdentity, OptionLogprobs, OptionVariants
from scoring.engine import PAIR_OVERHEAD, pair_work
from scoring.evidence import (
    NONE_NO_SENTENCE,
    NONE_ONE_SENTENCE,
    ExplainProgress,
    applies_probability,
    explain,
    explain_work,
    sentence_spans,
    variant_count,
)


class KeywordBackend(Backend):
    """P(Yes) is high exactly when the response holds the word "rude"; the response is
    what follows the last "Response:" of the prompt."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity("keyword", "1", "float32", "cpu", "fake")

    def option_logprobs(
        self,
        prompts: Sequence[str],
        options: Sequence[OptionVariants],
        *,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[OptionLogprobs]:
        self.prompts.extend(prompts)
        out = []
        for prompt in prompts:
            yes = 0.9 if "rude" in prompt.lower().rsplit("response", 1)[-1] else 0.2
            lp = np.log(np.array([1 - yes, yes]))
            out.append(OptionLogprobs(lp, (((1,),), ((2,),)), np.zeros(2, bool), False, 10))
        return out


@pytest.fixture
def codebook() -> Codebook:
    return Codebook(
        name="T",
        codes=(Code("staff", "Staff attitude", definition="How staff behave.", scale=BINARY),),
        question='Does "{code}" apply?',
    )


TEXT = "The ward was clean. The receptionist was rude to my mother. Parking was fine."


def test_the_sentence_that_drives_the_model_is_the_top_one(codebook):
    backend = KeywordBackend()
    engine = ScoringEngine(backend, codebook, template="base-v1")
    [evidence] = list(explain(engine, [Pair("r1", TEXT, codebook.codes[0])]))
    assert evidence.total_sentences == 3
    assert [s.text(TEXT) for s in evidence.sentences] == [
        "The ward was clean.",
        "The receptionist was rude to my mother.",
        "Parking was fine.",
    ]
    top = evidence.top
    assert top is not None
    assert top.text(TEXT) == "The receptionist was rude to my mother."
    assert top.applies_effect == pytest.approx(0.7)
    assert top.applies_without == pytest.approx(0.2)
    assert evidence.applies == pytest.approx(0.9)
    others = [s for s in evidence.sentences if s is not top]
    assert all(s.applies_effect == pytest.approx(0.0) for s in others)
    # Binary scale: values 0 and 1, so the expected value moves with P(applies).
    assert top.expected_effect == pytest.approx(0.7)
    # The variants went through the engine's prompt: the code's prefix, the text cut.
    assert any("rude" not in p and "Parking was fine." in p for p in backend.prompts)
    assert all("Staff attitude" in p for p in backend.prompts)


def test_variants_share_the_pairs_prompt_and_batches(codebook):
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook, batch_size=8)
    code = codebook.codes[0]
    pairs = [Pair(f"r{i}", f"{TEXT} Visit {i} was slow.", code) for i in range(4)]
    scored = engine.score(pairs)
    calls = backend.calls
    out = list(explain(engine, pairs))
    assert [e.response_id for e in out] == ["r0", "r1", "r2", "r3"]
    # The pairs themselves were cache hits: only the 4 x 4 variants were computed, and
    # the four without "Visit i was slow." are one text, scored once. A pair's variants
    # (5 with itself) go to the backend together, never beside another's where two
    # families would not fit in a call of 8 (so a backend can share their openings).
    assert sum(len(b) for b in backend.batches[calls:]) == 13
    assert backend.calls - calls == 4
    for i, batch in enumerate(backend.batches[calls:]):
        visits = {v for prompt in batch for v in range(4) if f"Visit {v} was" in prompt}
        assert visits == {i}, batch
    for e, s in zip(out, scored, strict=True):
        assert e.applies == pytest.approx(applies_probability(s.curve.probs, s.scale))
        assert e.code_hash == s.code_hash
        assert len(e.sentences) == 4
        for sentence in e.sentences:
            assert sentence.applies_effect == pytest.approx(e.applies - sentence.applies_without)


def test_one_sentence_and_empty_responses_have_none(codebook):
    engine = ScoringEngine(FakeBackend(), codebook)
    code = codebook.codes[0]
    one, empty = explain(engine, [Pair("a", "Just one thing", code), Pair("b", " -- ", code)])
    assert (one.sentences, one.reason, one.top) == ((), NONE_ONE_SENTENCE, None)
    assert (empty.sentences, empty.reason) == ((), NONE_NO_SENTENCE)
    assert variant_count("Just one thing") == 0


def test_a_response_of_thousands_of_sentences_is_bounded(codebook):
    backend = FakeBackend()
    engine = ScoringEngine(backend, codebook, batch_size=64)
    text = " ".join(f"Point {i} {'and more ' * (i % 5)}." for i in range(5000))
    [evidence] = explain(engine, [Pair("big", text, codebook.codes[0])], limit=10)
    assert evidence.total_sentences == 5000
    assert len(evidence.sentences) == 10
    assert evidence.bounded
    assert sum(len(b) for b in backend.batches) == 11  # ten variants and the pair


def test_progress_and_cancel(codebook):
    engine = ScoringEngine(FakeBackend(), codebook, batch_size=2)
    code = codebook.codes[0]
    pairs = [Pair(f"r{i}", f"{TEXT} Extra {i}.", code) for i in range(3)]
    seen: list[ExplainProgress] = []
    out = list(explain(engine, pairs, progress=seen.append))
    assert len(out) == 3
    assert seen[-1].variants_done == seen[-1].variants_total == 15
    assert seen[-1].pairs_total == 3
    stop = threading.Event()

    def stop_now(_: ExplainProgress) -> None:
        stop.set()

    engine.clear_cache()
    assert list(explain(engine, pairs, progress=stop_now, cancel=stop)) == []


def test_explaining_costs_each_variant_its_text_after_the_sentence_it_leaves_out():
    text = "The wait was long. Staff were kind. Parking was fine."
    spans, _ = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == [
        "The wait was long.", "Staff were kind.", "Parking was fine.",
    ]  # fmt: skip
    # The pair, then each variant from the end of its sentence on, with the prompt's tail.
    after = [len(text) - b for _, b in spans]
    assert after[-1] == 0
    assert explain_work(text) == pair_work(text) + sum(a + PAIR_OVERHEAD for a in after)
    assert explain_work("One sentence only.") == 0.0
    assert explain_work(text, limit=1) < explain_work(text)
