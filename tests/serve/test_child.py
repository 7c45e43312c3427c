"""The app process of a browser session, where the study will not open for its coder."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tui.serve import child


async def test_a_study_that_will_not_open_is_said_in_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(child, "notice", shown.append)
    damaged = tmp_path / "damaged.codecurve"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    assert child.main([str(damaged), "--coder", "ana", "--no-model"]) == 1
    assert len(shown) == 1
    assert "damaged.codecurve" in shown[0] or "not a" in shown[0]
    app = child.notice_app("the study is open for writing\x1b[31m")
    async with app.run_test() as pilot:
        text = str(app.query_one("#notice", Static).render())
        assert "cannot open the study for you" in text
        assert "open for writing" in text
        assert "\x1b" not in text  # control characters are made visible
        await pilot.press("x")
        await pilot.pause()
    assert app.return_code == 0


def test_the_exports_folder_lies_beside_the_study(study_path: Path) -> None:
    assert child.exports_folder(study_path) == study_path.with_name("harbourview-survey-exports")
    assert child.exports_folder(study_path, "ana") == (
        study_path.with_name("harbourview-survey-exports") / "ana"
    )
