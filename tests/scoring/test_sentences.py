"""Sentences of survey text: spans into the original, robust to how people write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.sentences import MAX_SENTENCE_CHARS, bounded, split_sentences, without


def texts(text: str, **kw: int) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text, **kw)]


def test_no_is_a_word_not_an_abbreviation():
    assert texts("I said no. Then they left") == ["I said no.", "Then they left"]


def test_plain_prose():
    assert texts("The staff were kind. Parking was awful! Would I come back? Yes.") == [
        "The staff were kind.",
        "Parking was awful!",
        "Would I come back?",
        "Yes.",
    ]


def test_no_final_punctuation_and_lower_case_starts():
    assert texts("waited 4 hours. nobody told us anything") == [
        "waited 4 hours.",
        "nobody told us anything",
    ]


def test_line_breaks_end_sentences():
    assert texts("too much paperwork\nnot enough staff\r\n\r\nbut the team is great") == [
        "too much paperwork",
        "not enough staff",
        "but the team is great",
    ]


def test_bullets_and_numbers_are_not_part_of_the_sentence():
    text = "Problems:\n- long waits\n* rude receptionist\n• no parking\n1. cold food\n2) noise"
    assert texts(text) == [
        "Problems:",
        "long waits",
        "rude receptionist",
        "no parking",
        "cold food",
        "noise",
    ]


def test_a_minus_sign_is_no_bullet():
    assert texts("-5 degrees in the ward") == ["-5 degrees in the ward"]


def test_abbreviations_initials_and_decimals_do_not_end_a_sentence():
    text = "Dr. Smith saw me, e.g. at 3.30 pm with J. Brown etc. and it was fine. Thanks"
    assert texts(text) == [
        "Dr. Smith saw me, e.g. at 3.30 pm with J. Brown etc. and it was fine.",
        "Thanks",
    ]


def test_ellipses_quotes_and_brackets():
    assert texts('He said "go home!" Then left... (It was late.) OK') == [
        'He said "go home!"',
        "Then left...",
        "(It was late.)",
        "OK",
    ]


def test_offsets_point_into_the_original_text():
    text = "  First one.   Second\n\n  - third  "
    spans = split_sentences(text)
    assert spans == [(2, 12), (15, 21), (27, 32)]
    assert [text[a:b] for a, b in spans] == ["First one.", "Second", "third"]


def test_no_words_no_sentences():
    assert split_sentences("") == []
    assert split_sentences("  \n --- \n ... ") == []
    assert texts("ok") == ["ok"]


def test_a_long_sentence_is_cut_at_its_clauses():
    clause = "the nurses were stretched thin on every shift we saw"
    text = f"{clause}; {clause}, but {clause}, {clause}, and {clause}"
    pieces = texts(text, max_chars=120)
    assert all(len(p) <= 120 for p in pieces)
    assert len(pieces) >= 3
    assert pieces[0] == f"{clause};"  # the semicolon first
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")


def test_a_long_sentence_without_commas_is_cut_at_spaces():
    text = " ".join(["word"] * 200)
    pieces = texts(text, max_chars=100)
    assert all(len(p) <= 100 for p in pieces)
    assert " ".join(pieces) == text


def test_one_unbroken_word_stays_whole():
    assert texts("x" * 500) == ["x" * 500]


def test_max_chars_is_checked():
    with pytest.raises(ValueError, match="at least 20"):
        split_sentences("a", max_chars=5)


def test_bounded_keeps_the_longest_in_text_order():
    spans = [(0, 5), (6, 30), (31, 33), (34, 60), (61, 70)]
    assert bounded(spans, 2) == [(6, 30), (34, 60)]
    assert bounded(spans, 10) == spans
    with pytest.raises(ValueError, match="at least 1"):
        bounded(spans, 0)


def test_five_thousand_sentences_are_bounded():
    text = " ".join(f"Point {i} was {'long ' * (i % 7)}here." for i in range(5000))
    spans = split_sentences(text)
    assert len(spans) == 5000
    kept = bounded(spans)
    assert len(kept) == 40
    assert kept == sorted(kept)


def test_without_joins_the_two_sides():
    text = "One. Two. Three."
    assert without(text, (5, 9)) == "One. Three."
    assert without(text, (0, 4)) == "Two. Three."
    assert without(text, (10, 16)) == "One. Two."
    lines = "a\n- b\nc"
    assert without(lines, (4, 5)) == "a\n-\nc"  # a line's sentence leaves its line break


@given(st.text(alphabet=st.sampled_from(list("ab .!?,;:\n-*1)\"'")), max_size=400))
def test_spans_are_ordered_trimmed_and_inside(text):
    spans = split_sentences(text, max_chars=40)
    last = 0
    for start, end in spans:
        assert last <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip()
        assert any(ch.isalnum() for ch in piece)
        last = end


@given(st.lists(st.sampled_from(["word", "staff,", "but", "slow;", "and"]), max_size=300))
def test_pieces_fit_when_they_can(words):
    text = " ".join(words)
    for start, end in split_sentences(text):
        assert end - start <= MAX_SENTENCE_CHARS
