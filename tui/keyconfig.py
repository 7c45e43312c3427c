"""The keys a user rebinds: ``keys.toml`` in the config folder, checked before the app opens.

::

    [keys]
    "review.note" = "m"
    "review.undo" = ["u", "ctrl+z"]     # or "u,ctrl+z"

Each name is an action id of :mod:`tui.keymap` (the help screen lists the actions, the
README the ids); each key a Textual key: a character (``m``, ``?``, ``]``), a key name
(``enter``, ``escape``, ``pageup``, ``f5``, ``question_mark``) with optional modifiers
(``ctrl+z``, ``shift+tab``). The folder is platformdirs' user config folder for
codecurve (``~/.config/codecurve`` on Linux); ``CODECURVE_CONFIG_DIR`` overrides it.

A name that is no action, a key that is no key, or two actions on one key where both
work at once (one screen, its widget with focus and the app) is a :class:`KeyConfigError`
naming the file: the command line says it in one line and the app does not open.
"""

from __future__ import annotations

import difflib
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from textual.keys import KEY_NAME_REPLACEMENTS, REPLACED_KEYS, Keys, key_to_character

from codebooks.errors import CodecurveError
from scoring.paths import config_dir
from tui.keymap import REGISTRY, RESERVED, Action, declared

#: The file's name inside the config folder.
FILE_NAME = "keys.toml"

#: Modifiers a key may carry (``ctrl+z``).
MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")

_NAMED_KEYS = frozenset(key.value for key in Keys) | {"space"}


class KeyConfigError(CodecurveError, ValueError):
    """A ``keys.toml`` that cannot be read, names no action, or binds a key twice."""


def keys_path() -> Path:
    """Where the keys are read from: ``keys.toml`` in the user's config folder."""
    return config_dir() / FILE_NAME


def normalize_key(text: str) -> str:
    """A key as Textual names it (``"?"`` -> ``"question_mark"``, ``"Ctrl+Z"`` ->
    ``"ctrl+z"``); ValueError when it is no key."""
    text = text.strip()
    if not text:
        raise ValueError("an empty key")
    if len(text) == 1:
        return _character_key(text)
    *named, base = text.split("+")
    modifiers = [m.strip().lower() for m in named]
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown or not base.strip():
        raise ValueError(f"{text!r} is not a key (modifiers: {', '.join(MODIFIERS)})")
    base = base.strip()
    if len(base) == 1:
        name = _character_key(base if not modifiers else base.lower())
    else:
        name = base.lower()
        known = name in _NAMED_KEYS or key_to_character(REPLACED_KEYS.get(name, name))
        if not known:
            raise ValueError(f"{text!r} is not a key (a character, or a name like enter, f5)")
    return "+".join([*modifiers, name])


def _character_key(character: str) -> str:
    if character.isalnum():
        return character
    if not character.isprintable():
        raise ValueError(f"{character!r} is not a key")
    name = unicodedata.name(character, "").lower().replace("-", "_").replace(" ", "_")
    if not name:
        raise ValueError(f"{character!r} is not a key")
    return KEY_NAME_REPLACEMENTS.get(name, name)


@dataclass(frozen=True)
class Scope:
    """Keys that work at once: a screen's, the app's (not past a dialog) and those of
    one widget in it with focus.

    Attributes:
        name: Where, in words ("the queue").
        actions: Their actions.
    """

    name: str
    actions: tuple[Action, ...]


def scopes() -> list[Scope]:
    """Every combination of keys that work at once in the app."""
    from tui.app import CodecurveApp
    from tui.screens.code_editor import CodeEditorScreen
    from tui.screens.configs import ConfigPicker
    from tui.screens.confirm import ConfirmScreen
    from tui.screens.disagreements import (
        CodersScreen,
        ConsensusValueScreen,
        DisagreementsScreen,
    )
    from tui.screens.export import ChoiceSet, ExportScreen
    from tui.screens.findings import FindingsScreen
    from tui.screens.help import HelpScreen
    from tui.screens.note import NoteScreen
    from tui.screens.progress import ProgressScreen
    from tui.screens.response import ResponseScreen
    from tui.screens.responses import ResponsesScreen
    from tui.screens.review import ReviewScreen
    from tui.widgets.detail import DetailPane
    from tui.widgets.queue import PairQueue
    from tui.widgets.response_list import ResponseList
    from tui.widgets.screening import ScreeningPanel

    screens: tuple[tuple[str, type, tuple[type, ...]], ...] = (
        ("the queue", ReviewScreen, (PairQueue, DetailPane, ScreeningPanel)),
        ("the response view", ResponseScreen, ()),
        ("the list of responses", ResponsesScreen, (ResponseList,)),
        ("the reconciliation view", DisagreementsScreen, ()),
        ("the consensus value dialog", ConsensusValueScreen, ()),
        ("the coders dialog", CodersScreen, ()),
        ("the export dialog", ExportScreen, (ChoiceSet,)),
        ("the code editor", CodeEditorScreen, ()),
        ("the configurations dialog", ConfigPicker, ()),
        ("the confirmation dialog", ConfirmScreen, ()),
        ("the note dialog", NoteScreen, ()),
        ("the progress dialog", ProgressScreen, ()),
        ("the findings", FindingsScreen, ()),
        ("the help", HelpScreen, ()),
    )
    app = tuple(declared(CodecurveApp))
    found: list[Scope] = []
    for name, screen, widgets in screens:
        own = tuple(declared(screen))
        if not _modal(screen):
            own += app
        found.append(Scope(name, own))
        found += [Scope(name, own + tuple(declared(w))) for w in widgets]
    return found


def _modal(screen: type) -> bool:
    from textual.screen import ModalScreen

    return issubclass(screen, ModalScreen)


def clashes(keys: Mapping[str, str]) -> list[str]:
    """What binds one key to two actions at once, with ``keys`` rebound (action id ->
    normalized keys, comma-separated); empty when nothing does."""
    found: list[str] = []
    for scope in scopes():
        owners: dict[str, list[str]] = {}
        for action in scope.actions:
            for key in keys.get(action.id, action.keys).split(","):
                owners.setdefault(normalize_key(key), []).append(action.id)
        for key, ids in owners.items():
            unique = list(dict.fromkeys(ids))
            message = None
            if len(unique) > 1:
                message = f"{key!r} is bound to both {' and '.join(unique)} in {scope.name}"
            elif key in RESERVED:
                message = f"{key!r} is Textual's key for {RESERVED[key]}"
            if message and message not in found:
                found.append(message)
    return found


def parse_keys(text: str, *, path: Path | None = None) -> dict[str, str]:
    """The rebound keys of a ``keys.toml`` text: action id -> normalized keys."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeyConfigError(f"not valid TOML: {exc}", path=path) from None
    other = sorted(set(data) - {"keys"})
    if other:
        raise KeyConfigError(
            f"unknown table or setting {other[0]!r}; rebound keys go under [keys]", path=path
        )
    table = data.get("keys", {})
    if not isinstance(table, dict):
        raise KeyConfigError("[keys] must be a table of action id = key", path=path)
    keys: dict[str, str] = {}
    for action_id, value in table.items():
        if action_id not in REGISTRY:
            close = difflib.get_close_matches(action_id, REGISTRY, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise KeyConfigError(f"unknown action {action_id!r}{hint}", path=path, where="keys")
        listed = value.split(",") if isinstance(value, str) else value
        if (
            not isinstance(listed, list)
            or not listed
            or not all(isinstance(k, str) for k in listed)
        ):
            raise KeyConfigError(
                f'{action_id}: a key or a list of keys, like "m" or ["m", "ctrl+n"]',
                path=path,
                where="keys",
            )
        try:
            normalized = [normalize_key(key) for key in listed]
        except ValueError as exc:
            raise KeyConfigError(f"{action_id}: {exc}", path=path, where="keys") from None
        keys[action_id] = ",".join(dict.fromkeys(normalized))
    problems = clashes(keys)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise KeyConfigError(problems[0] + more, path=path, where="keys")
    return keys


def load_keys(path: Path | None = None) -> dict[str, str]:
    """The keys rebound in ``path`` (default :func:`keys_path`); none when it is missing."""
    path = keys_path() if path is None else path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise KeyConfigError("not UTF-8 text", path=path) from None
    return parse_keys(text, path=path)
