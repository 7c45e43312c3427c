"""The scroll range of the line-API views, with and without Textual's private update."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.scroll_view import ScrollView

from tui.widgets.scrolling import set_virtual_size


class Lines(ScrollView):
    DEFAULT_CSS = "Lines { height: 10; }"


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Lines()


@pytest.mark.parametrize("private_api", [True, False])
async def test_set_virtual_size_sets_the_scroll_range(
    monkeypatch: pytest.MonkeyPatch, private_api: bool
) -> None:
    if not private_api:  # a Textual release without Widget._scroll_update
        monkeypatch.setattr("tui.widgets.scrolling.SCROLL_UPDATE", "_no_such_method")
    app = Host()
    async with app.run_test(size=(40, 20)) as pilot:
        view = app.query_one(Lines)
        assert set_virtual_size(view, Size(30, 100)) is True
        await pilot.pause()
        assert view.virtual_size == Size(30, 100)
        assert view.max_scroll_y == 100 - view.scrollable_content_region.height
        assert set_virtual_size(view, Size(30, 100)) is False
