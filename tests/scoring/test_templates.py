"""Prompt templates: layout, context levels, hashing and the options they score."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codebooks.model import BINARY, LIKERT_5, LIKERT_9, Code, Codebook
from scoring import FakeBackend, ScoringError
from scoring.templates import BASE_V1, CHAT_V1, TEMPLATES, get_template

CODE = Code(
    "pay",
    "Pay",
    definition="Salary and benefits.",
    inclusion="Wages, bonuses.",
    exclusion="Prices of products.",
    examples=("I earn too little.",),
)
BOOK = Codebook(name="t", codes=(CODE,), question='Does "{code}" apply to this answer?')


def test_templates_are_versioned_and_hashed() -> None:
    assert set(TEMPLATES) == {"chat-v1", "base-v1"}
    assert len({t.hash for t in TEMPLATES.values()}) == 2
    assert CHAT_V1.hash == replace(CHAT_V1).hash
    assert replace(CHAT_V1, intro="Rate it.").hash != CHAT_V1.hash
    assert len(CHAT_V1.hash) == 16


def test_context_levels() -> None:
    none = BASE_V1.user_text(BOOK, CODE, "x", "none")
    definition = BASE_V1.user_text(BOOK, CODE, "x", "definition")
    full = BASE_V1.user_text(BOOK, CODE, "x", "full")
    assert "Code: Pay" in none
    assert "Salary" not in none
    assert "Definition: Salary and benefits." in definition
    assert "Wages" not in definition
    for part in ("Salary", "Apply it when: Wages", "Do not apply it when: Prices", "I earn"):
        assert part in full
    with pytest.raises(ScoringError, match="context level"):
        BASE_V1.user_text(BOOK, CODE, "x", "all")


def test_question_anchors_and_the_answer_rule() -> None:
    text = BASE_V1.user_text(BOOK, CODE, "x", "definition")
    assert 'Does "Pay" apply to this answer?' in text
    assert "1 = does not apply at all" in text
    assert "5 = fully applies" in text
    assert "Answer with only one of 1, 2, 3, 4 or 5" in text
    binary = replace(BOOK, scale=BINARY)
    assert "only one of No or Yes" in BASE_V1.user_text(binary, CODE, "x", "none")
    nine = BASE_V1.user_text(replace(BOOK, scale=LIKERT_9), CODE, "x", "none")
    assert "9 = fully applies" in nine
    assert "2 = " not in nine  # only anchored points are described


def test_the_response_comes_last_so_prompts_of_a_code_share_a_prefix() -> None:
    backend = FakeBackend()
    a = BASE_V1.render(backend, BOOK, CODE, "first answer", "full")
    b = BASE_V1.render(backend, BOOK, CODE, "another one entirely", "full")
    common = len(a) - len("first answer\nAnswer:")
    assert a[:common] == b[:common]
    assert a.endswith("Response: first answer\nAnswer:")
    chat = CHAT_V1.render(FakeBackend(chat=True), BOOK, CODE, "first answer", "full")
    assert chat.startswith("<|system|>")
    assert chat.endswith("Response:\nfirst answer\n<|assistant|>\n")


def test_options_pooled_and_strict() -> None:
    assert BASE_V1.options(LIKERT_5, strict=False)[2] == ("3", " 3")
    assert BASE_V1.options(LIKERT_5, strict=True)[2] == (" 3",)
    assert CHAT_V1.options(LIKERT_5, strict=True)[2] == ("3",)
    assert CHAT_V1.options(BINARY, strict=False)[1] == ("Yes", " Yes", "yes", " yes")
    assert BASE_V1.options(BINARY, strict=True) == [(" No",), (" Yes",)]


def test_default_template_follows_the_backend() -> None:
    assert get_template(None, FakeBackend()) is BASE_V1
    assert get_template(None, FakeBackend(chat=True)) is CHAT_V1
    assert get_template("base-v1", FakeBackend(chat=True)) is BASE_V1
    with pytest.raises(ScoringError, match="needs a chat model"):
        get_template(CHAT_V1, FakeBackend())
