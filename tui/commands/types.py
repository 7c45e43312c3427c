"""The argparse types and vocabularies every command shares, defined once.

A type returns the parsed value or raises :class:`argparse.ArgumentTypeError`, which
argparse reports as a usage error (exit status 2). :func:`parse_cut` is checked after
parsing and raises :class:`~tui.commands.UsageError` (the same exit status), since its
message names the option.

Nothing heavy here: every parser is built on ``codecurve --help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, overload

from tui.commands import UsageError

if TYPE_CHECKING:
    from study.analysis import Cut


class StudyVocabulary(Sequence[str]):
    """A vocabulary of :mod:`study.rows` (``CONTEXTS``...) as argparse ``choices``.

    Read on first use (checking a value, writing ``--help``), so that building the
    parsers does not import the study package (about a second): ``codecurve --help``
    stays light, and the words are still defined once. Give the option a ``metavar``:
    without one argparse lists the choices while the parser is built.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def _words(self) -> tuple[str, ...]:
        from study import rows

        return tuple(getattr(rows, self.name))

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._words()[index]

    def __len__(self) -> int:
        return len(self._words())

    def __repr__(self) -> str:
        return f"StudyVocabulary({self.name!r})"


#: Prompt context levels (METHOD.md section 1): :data:`study.rows.CONTEXTS`.
CONTEXTS = StudyVocabulary("CONTEXTS")


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[low, high]`` (no upper bound if None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if high is not None and not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, not {value}")
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    return parse


#: A whole number of at least 1: ``--batch-size``, audit sizes.
positive_int = whole_number(1)

#: Bootstrap resamples for an interval.
resamples = whole_number(1, 100_000)


def seed(text: str) -> int:
    """An argparse type: a random seed, a whole number in [0, 2^63)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must lie in [0, 2^63), not {value}")
    return value


def unit_interval(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a level, an error rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, not {text}")
    return value


def device_name(text: str) -> str:
    """An argparse type: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    value = text.strip().lower()
    if value in ("cpu", "cuda", "mps") or (value.startswith("cuda:") and value[5:].isdigit()):
        return value
    raise argparse.ArgumentTypeError(f"{text!r} is not a device: use cpu, cuda, cuda:N or mps")


def prompt_tokens(text: str) -> int | None:
    """An argparse type: a number of tokens of at least 64, or ``model`` (None: the
    model's whole context)."""
    if text.strip().lower() == "model":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens or 'model', not {text!r}"
        ) from None
    if value < 64:
        raise argparse.ArgumentTypeError(f"a prompt needs at least 64 tokens, not {value}")
    return value


def coder_names(text: str) -> list[str]:
    """An argparse type: comma-separated coder names, blanks dropped."""
    return [c.strip() for c in text.split(",") if c.strip()]


def parse_cut(text: str) -> Cut:
    """``--cut``: ``scale``, ``median`` or a number in [0, 1].

    Raises:
        UsageError: anything else.
    """
    word = text.strip().lower()
    if word == "median":
        return "median"
    if word == "scale":
        return "scale"
    try:
        cut = float(text)
    except ValueError:
        raise UsageError(
            f"--cut must be 'scale', 'median' or a number in [0, 1], not {text!r}"
        ) from None
    if not 0.0 <= cut <= 1.0:
        raise UsageError(f"--cut must lie in [0, 1], not {cut}")
    return cut
