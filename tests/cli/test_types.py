"""The argparse types every command shares (tui.commands.types)."""

from __future__ import annotations

import argparse

import pytest

from tui.commands import UsageError
from tui.commands.types import (
    coder_names,
    device_name,
    parse_cut,
    positive_int,
    prompt_tokens,
    resamples,
    seed,
    unit_interval,
    whole_number,
)


@pytest.mark.parametrize(
    ("parse", "text", "words"),
    [
        (positive_int, "0", "must be at least 1, not 0"),
        (positive_int, "x", "'x' is not a whole number"),
        (resamples, "0", "must be between 1 and 100000, not 0"),
        (whole_number(10, 20), "21", "must be between 10 and 20, not 21"),
        (seed, "-1", "must lie in [0, 2^63), not -1"),
        (seed, str(2**63), "must lie in [0, 2^63)"),
        (unit_interval, "1", "strictly between 0 and 1"),
        (unit_interval, "a", "expected a number"),
        (device_name, "tpu", "is not a device"),
        (prompt_tokens, "10", "at least 64 tokens"),
    ],
)
def test_a_bad_value_is_a_usage_error_that_says_why(parse: object, text: str, words: str) -> None:
    assert callable(parse)
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        parse(text)
    assert words in str(caught.value)


def test_good_values() -> None:
    assert positive_int("3") == 3
    assert resamples("100000") == 100_000
    assert seed("0") == 0
    assert unit_interval("0.05") == pytest.approx(0.05)
    assert device_name(" CUDA:1 ") == "cuda:1"
    assert prompt_tokens("model") is None
    assert prompt_tokens("512") == 512
    assert coder_names(" ana, ,ben ") == ["ana", "ben"]
    assert parse_cut("Median") == "median"
    assert parse_cut("0.7") == pytest.approx(0.7)


@pytest.mark.parametrize(("text", "words"), [("high", "--cut must be"), ("1.5", "[0, 1]")])
def test_a_bad_cut_names_the_option(text: str, words: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_cut(text)
    assert words in str(caught.value)
