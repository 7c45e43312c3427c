"""Worked examples in the prompt (context ``examples``): where they go, and what they change.

A code's examples come before the response, identically in every prompt of the code, so
the code's prompts keep one shared prefix; they are part of the configuration, whose key
changes with them, while every configuration without examples keeps its key.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring import FakeBackend, Pair, ScoringEngine, ScoringError
from scoring.score import ScoreConfig
from scoring.templates import (
    BASE_V1,
    CHAT_V1,
    EXAMPLES_INTRO,
    describe_examples,
    examples_hash,
)

PAY = Code(
    "pay",
    "Pay",
    definition="Salary and benefits.",
    inclusion="Wages, bonuses.",
    examples=("I earn too little.",),
)
TEAM = Code("team", "Team", definition="Colleagues and teamwork.")
BOOK = Codebook(name="t", codes=(PAY, TEAM), question='Does "{code}" apply to this answer?')

SHOWN = {
    "pay": (("The wages are   a joke.\nTruly.", "5"), ("Nice canteen.", "1")),
}


def _old_key(config: ScoreConfig) -> str:
    """The key as it was computed before examples existed."""
    blob = "\x1f".join(
        (
            config.model.key(),
            config.template_id,
            config.template_hash,
            config.context,
            repr(config.scale.to_dict()),
            str(config.strict),
        )
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_examples_come_after_the_answer_rule_and_before_the_response() -> None:
    text = BASE_V1.user_text(BOOK, PAY, "the response", "examples", examples=SHOWN["pay"])
    full = BASE_V1.user_text(BOOK, PAY, "the response", "full")
    block = describe_examples(SHOWN["pay"])
    assert block.splitlines() == [
        EXAMPLES_INTRO,
        'Response: "The wages are a joke. Truly." -> Answer: 5',
        'Response: "Nice canteen." -> Answer: 1',
    ]
    # Everything of `full`, with the examples inserted right before the response.
    head, response = full.rsplit("\n\n", 1)
    assert text == f"{head}\n\n{block}\n\n{response}"
    assert text.index("Answer with only one of") < text.index(EXAMPLES_INTRO)
    assert text.index(EXAMPLES_INTRO) < text.index("Response: the response")
    assert text.endswith("Response: the response")
    # A code without examples reads as at `full`.
    assert BASE_V1.user_text(BOOK, TEAM, "x", "examples") == BASE_V1.user_text(
        BOOK, TEAM, "x", "full"
    )
    assert describe_examples(()) == ""


def test_examples_are_shown_at_context_examples_only() -> None:
    with pytest.raises(ScoringError, match="context 'examples'"):
        BASE_V1.user_text(BOOK, PAY, "x", "full", examples=SHOWN["pay"])
    backend = FakeBackend()
    with pytest.raises(ScoringError, match="none were given"):
        ScoringEngine(backend, BOOK, context="examples")
    with pytest.raises(ScoringError, match="context 'examples', not 'full'"):
        ScoringEngine(backend, BOOK, context="full", examples=SHOWN)


@pytest.mark.parametrize("chat", [False, True])
def test_every_prompt_of_a_code_shows_the_same_examples_before_the_response(chat: bool) -> None:
    backend = FakeBackend(chat=chat)
    engine = ScoringEngine(backend, BOOK, context="examples", examples=SHOWN)
    assert engine.template is (CHAT_V1 if chat else BASE_V1)
    texts = ["short one", "a much longer response about the pay and the bonuses", "x"]
    pairs = [Pair(f"r{i}", t, c) for c in (PAY, TEAM) for i, t in enumerate(texts)]
    engine.score(pairs)
    prompts = [p for batch in backend.batches for p in batch]
    assert len(prompts) == len(pairs)
    for code in (PAY, TEAM):
        mine = [engine.prompt_for(p) for p in pairs if p.code is code]
        assert set(mine) <= set(prompts)
        # The prompts of a code differ only in the response: one shared prefix, which
        # holds the examples (or none, for a code without).
        heads = {p[: p.rindex(t)] for p, t in zip(mine, texts, strict=True)}
        assert len(heads) == 1
        (head,) = heads
        shown = 'Response: "The wages are a joke. Truly." -> Answer: 5'
        assert (shown in head) == (code is PAY)
        assert (EXAMPLES_INTRO in head) == (code is PAY)
        tails = {p[p.rindex(t) + len(t) :] for p, t in zip(mine, texts, strict=True)}
        assert len(tails) == 1  # and the response comes last, as ever
    # The engine renders through each code's frame (once per code), examples included.
    plain = ScoringEngine(FakeBackend(chat=chat), BOOK, context="full")
    assert engine.prompt_for(Pair("r", "x", TEAM)) == plain.prompt_for(Pair("r", "x", TEAM))
    assert engine.prompt_for(Pair("r", "x", PAY)) != plain.prompt_for(Pair("r", "x", PAY))


def test_the_examples_are_part_of_the_configuration() -> None:
    backend = FakeBackend()
    full = ScoringEngine(backend, BOOK, context="full")
    with_examples = ScoringEngine(backend, BOOK, context="examples", examples=SHOWN)
    again = ScoringEngine(backend, BOOK, context="examples", examples=dict(SHOWN))
    other = ScoringEngine(
        backend, BOOK, context="examples", examples={"pay": tuple(reversed(SHOWN["pay"]))}
    )
    assert full.config.examples_hash == ""
    assert with_examples.config.examples_hash == examples_hash(SHOWN)
    keys = {e.config.key() for e in (full, with_examples, other)}
    assert len(keys) == 3
    assert again.config.key() == with_examples.config.key()  # stable
    # A code given no examples counts as absent.
    assert examples_hash({**SHOWN, "team": ()}) == examples_hash(SHOWN)
    # The same prompt text as `full` for a code without examples, yet another score
    # identity: its scores never mix with the plain configuration's.
    pair = Pair("r1", "My colleagues are great.", TEAM)
    (a,) = full.score([pair])
    (b,) = with_examples.score([pair])
    assert a.prompt == b.prompt
    assert a.config_key != b.config_key
    assert b.config_key == with_examples.config.key()


def test_configurations_without_examples_keep_their_keys() -> None:
    for chat in (False, True):
        for context in ("none", "definition", "full"):
            for strict in (False, True):
                for book in (BOOK, replace(BOOK, scale=BINARY)):
                    config = ScoringEngine(
                        FakeBackend(chat=chat), book, context=context, strict=strict
                    ).config
                    assert config.key() == _old_key(config)
    config = ScoringEngine(FakeBackend(), BOOK, context="examples", examples=SHOWN).config
    assert config.key() != _old_key(config)
    assert config.key() != _old_key(replace(config, examples_hash=""))


def test_a_rescore_with_the_same_examples_comes_from_the_cache() -> None:
    backend = FakeBackend()
    engine = ScoringEngine(backend, BOOK, context="examples", examples=SHOWN)
    pairs = [Pair(f"r{i}", f"pay is low {i}", PAY) for i in range(4)]
    first = engine.score(pairs)
    calls = backend.calls
    assert engine.score(pairs) == first
    assert backend.calls == calls
