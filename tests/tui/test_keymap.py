"""The keymap names every action once; keys.toml rebinds them, checked before the app opens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.factories import build_study
from tui.app import make_app
from tui.keyconfig import KeyConfigError, clashes, load_keys, parse_keys
from tui.keymap import ACTIONS, REGISTRY
from tui.screens.help import HelpScreen


async def settle(pilot: Pilot[None]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_every_action_id_is_named_once() -> None:
    ids = [action.id for action in ACTIONS]
    assert len(ids) == len(set(ids)) == len(REGISTRY)


def test_no_key_means_two_actions_at_once_by_default() -> None:
    assert clashes({}) == []


def test_note_and_no_are_one_key_everywhere() -> None:
    assert REGISTRY["review.note"].keys == "c"
    assert REGISTRY["decide.no"].keys == "n"


def test_an_unknown_action_is_named(tmp_path: Path) -> None:
    path = tmp_path / "keys.toml"
    path.write_text('[keys]\n"review.nope" = "m"\n', encoding="utf-8")
    with pytest.raises(KeyConfigError, match=re.escape("unknown action 'review.nope'")) as info:
        load_keys(path)
    assert str(path) in str(info.value)


def test_a_clash_is_named() -> None:
    clash = re.escape("'m' is bound to both review.note and response.memo")
    with pytest.raises(KeyConfigError, match=clash):
        parse_keys('[keys]\n"review.note" = "m"\n')


def test_a_malformed_key_is_named() -> None:
    with pytest.raises(KeyConfigError, match=re.escape("review.note: 'ctrl+nokey' is not a key")):
        parse_keys('[keys]\n"review.note" = "ctrl+nokey"\n')


async def test_a_rebound_key_shows_in_help_and_works(tmp_path: Path) -> None:
    keys = parse_keys('[keys]\n"review.note" = "z"\n')
    app = make_app(
        build_study(tmp_path / "s.codecurve", n=3), coder="t", close_study=True, keys=keys
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        texts = dict(app.screen.keys)
        assert texts["z"].startswith("Note:")
        assert "c" not in texts


async def test_a_rebound_key_is_named_in_help_hints_and_notifications(tmp_path: Path) -> None:
    """Words that name a key name the one the user bound, never the default."""
    keys = parse_keys(
        '[keys]\n"review.score" = "f5"\n"review.undo" = "z"\n"dialog.cancel" = "f9"\n'
    )
    study = build_study(tmp_path / "s.codecurve", n=3, scored=False)
    app = make_app(study, coder="t", close_study=True, keys=keys)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        # A hint: the detail pane of a pair not scored yet.
        assert "press f5 to score" in app.review.detail.plain_text
        assert "press r " not in app.review.detail.plain_text
        # A notification: no configuration to choose yet.
        await pilot.press("C")
        await settle(pilot)
        messages = [str(n.message) for n in app._notifications]
        assert any("press f5 to score" in m for m in messages), messages
        # A dialog's subtitle.
        await pilot.press("c")
        await settle(pilot)
        assert "f9 cancels" in str(app.screen.query_one("#note-dialog").border_subtitle)
        await pilot.press("f9")
        await settle(pilot)
        # The help: a key's own line and another key named inside a text.
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        texts = dict(app.screen.keys)
        assert texts["f5"].startswith("Score pending pairs")
        assert texts["z"].startswith("Undo")
        delegate = next(t for t in texts.values() if t.startswith("Delegate"))
        assert "z undoes" in delegate
        assert "u undoes" not in delegate
