"""The app's styles live in ``tui/codecurve.tcss``; only widgets meant for reuse keep their own.

Textual ranks an app's CSS above every widget's ``DEFAULT_CSS``, whatever the selectors,
so a screen's inline rule that meets a rule of the ``.tcss`` file silently loses (a
dialog's ``width: 90`` under ``.dialog { width: 76 }``). One file, one ranking.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import tui
from tui.app import CodecurveApp

#: Widgets meant for use outside this app: their own look (component classes, an
#: intrinsic height) travels with them.
REUSABLE = {
    "tui.widgets.curve.CurveChart",
    "tui.widgets.keys.KeyBar",
    "tui.widgets.queue.PairQueue",
    "tui.widgets.response_list.ResponseList",
    "tui.widgets.status.StatusLine",
}


def _classes_with_default_css() -> set[str]:
    found: set[str] = set()
    for module_info in pkgutil.walk_packages(tui.__path__, prefix="tui."):
        if module_info.name.endswith(".__main__"):  # runs the command line
            continue
        module = importlib.import_module(module_info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "DEFAULT_CSS" in cls.__dict__:
                found.add(f"{cls.__module__}.{cls.__qualname__}")
    return found


def test_only_reusable_widgets_carry_their_own_css() -> None:
    assert _classes_with_default_css() == REUSABLE


def test_no_screen_carries_its_own_css() -> None:
    assert not {name for name in _classes_with_default_css() if name.startswith("tui.screens.")}


def test_the_app_reads_one_style_file() -> None:
    assert Path(str(CodecurveApp.CSS_PATH)).name == "codecurve.tcss"
    assert "CSS" not in CodecurveApp.__dict__
