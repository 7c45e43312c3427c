"""Who is coding: the name written on every decision the app records.

A researcher expects their own name on their decisions, not the machine's login name
(``root`` in a container, a shared lab account). So the app is opened as:

1. ``--coder NAME`` when given (for this session only: it is not remembered, so that a
   second coder on the same account is never the first one by accident);
2. else the name remembered in ``coder.toml`` in the user's config folder (platformdirs'
   user config folder for codecurve, ``~/.config/codecurve`` on Linux;
   ``CODECURVE_CONFIG_DIR`` overrides it), one line ``name = "ana"``;
3. else the command asks once, at the terminal, before the app opens, listing the
   coders the study already has, and remembers the answer there.

The name is per user, not per study: the same researcher codes under one name in every
study. No textual here: the command line's ``--help`` must stay light.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from codebooks.errors import CodecurveError, InputError
from codebooks.files import write_atomic
from scoring.paths import config_dir

#: The file's name inside the config folder.
FILE_NAME = "coder.toml"


class CoderNameError(CodecurveError, ValueError):
    """A ``coder.toml`` that cannot be read or holds no usable name."""


def coder_path() -> Path:
    """Where the remembered coder name is kept."""
    return config_dir() / FILE_NAME


def check_name(name: str) -> str:
    """``name`` stripped, if it can name a coder: not empty, no control characters.

    Raises:
        InputError: otherwise.
    """
    name = name.strip()
    if not name:
        raise InputError("a coder's name cannot be empty")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        raise InputError("a coder's name cannot hold control characters")
    if len(name) > 200:
        raise InputError("a coder's name is at most 200 characters")
    return name


def remembered_coder(path: Path | None = None) -> str | None:
    """The name in ``coder.toml``, or None when there is no such file.

    Raises:
        CoderNameError: the file cannot be read or holds no usable ``name``.
    """
    path = coder_path() if path is None else path
    if not path.exists():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        name = data["name"]
        if not isinstance(name, str):
            raise TypeError("name is not text")
        return check_name(name)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise CoderNameError(
            f'{path}: cannot read the coder name ({exc}); write one line name = "YOUR NAME" '
            "or delete the file to be asked again"
        ) from None
    except InputError as exc:
        raise CoderNameError(f"{path}: {exc}") from None


def remember_coder(name: str, path: Path | None = None) -> Path:
    """Write ``name`` to ``coder.toml`` (atomically); the folder is made if needed."""
    path = coder_path() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    # A JSON string is a TOML basic string: quotes, backslashes and non-ASCII escaped.
    text = f"# Your name on the decisions you make in codecurve.\nname = {json.dumps(name)}\n"
    write_atomic(path, text.encode("utf-8"), error=CoderNameError)
    return path


def ask_coder(
    known: Sequence[str],
    *,
    ask: Callable[[str], str] | None = None,
    stream: TextIO | None = None,
) -> str:
    """Ask for the coder's name at the terminal (the study's ``known`` coders listed).

    Raises:
        InputError: an empty or unusable answer (nothing is remembered).
    """
    out = sys.stderr if stream is None else stream
    out.write(
        "Who is coding? Your name is written on every decision you make, and remembered "
        f"in {coder_path()} for next time (--coder NAME codes as someone else once).\n"
    )
    if known:
        out.write("This study's coders so far: " + ", ".join(known[:20]) + "\n")
    out.flush()
    try:
        answer = (input if ask is None else ask)("Your coder name: ")
    except EOFError:
        answer = ""
    return check_name(answer)


def resolve_coder(
    given: str | None,
    known: Sequence[str],
    *,
    ask: Callable[[str], str] | None = None,
    stream: TextIO | None = None,
) -> str:
    """The coder the app opens as (the order is in the module docstring).

    Raises:
        InputError: an unusable ``given`` name or answer.
        CoderNameError: an unreadable ``coder.toml``.
    """
    if given is not None:
        return check_name(given)
    remembered = remembered_coder()
    if remembered is not None:
        return remembered
    name = ask_coder(known, ask=ask, stream=stream)
    remember_coder(name)
    return name
