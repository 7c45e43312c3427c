"""A remedy in the app: the key that takes the step, or plain words where none does."""

from __future__ import annotations

from codebooks.errors import Remedy
from study.errors import DRAW_AUDIT, NEW, SCORE, StudyError
from tui.keymap import key
from tui.remedies import in_words, key_for, said


def test_a_step_the_app_takes_is_its_key() -> None:
    assert key_for(SCORE) == key("review.score")
    assert in_words(SCORE) == f"press {key('review.score')} to score the study"
    assert in_words(Remedy("learn", "learn again")) == f"press {key('review.learn')} to learn again"


def test_a_step_the_app_has_no_key_for_is_plain_words() -> None:
    for remedy in (DRAW_AUDIT, NEW, Remedy("retry", "count every unit", {"units": "all"})):
        assert key_for(remedy) is None
        assert in_words(remedy) == remedy.words
        assert "--" not in in_words(remedy)


def test_the_app_says_an_error_with_its_keys() -> None:
    exc = StudyError("the study has no scores yet; score it first", remedy=(DRAW_AUDIT, SCORE))
    assert said(exc) == (
        f"the study has no scores yet; score it first; press {key('review.score')} to score "
        "the study"
    )
    assert said(StudyError("plain", remedy=NEW)) == "plain"
    assert said(ValueError("other")) == "other"
