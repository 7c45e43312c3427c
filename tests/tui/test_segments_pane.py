"""The detail pane highlights the segments a QDA program coded, and lists them."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from study.refi import (
    Coding,
    Project,
    ProjectCode,
    TextSource,
    User,
    create_from_project,
    write_qdpx,
)
from tests.tui.waiting import settle
from tui.app import make_app
from tui.source import Query
from tui.widgets.detail import SEGMENT_STYLE, response_text

TEXT = "Waited three hours\x1b; staff were rude."


def test_segments_are_highlighted_on_the_text_not_its_stand_ins() -> None:
    shown = response_text(TEXT, segments=((0, 6), (21, 26)))
    assert isinstance(shown, Text)
    marked = [shown.plain[s.start : s.end] for s in shown.spans if s.style == SEGMENT_STYLE]
    # The ESC before them is drawn as one stand-in: the marks still fall on the words.
    assert marked == ["Waited", "staff"]
    assert "Coded segments (2): 0-6 “Waited”; 21-26 “staff”" in shown.plain


async def test_the_pane_shows_the_segments_of_the_decision(tmp_path: Path) -> None:
    coding = Coding("g1", "s1", "k1", 21, 26, "u1")
    project = Project(
        "qda",
        users=(User("u1", "ana"),),
        codes=(ProjectCode("k1", "Staff"),),
        sources=(TextSource("src", "c1", TEXT, codings=(coding,)),),
    )
    study, _ = create_from_project(
        tmp_path / "s.codecurve", write_qdpx(project, tmp_path / "p.qdpx")
    )
    with study:
        app = make_app(study, coder="ana")
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            app.review.set_query(Query(order="id"))
            await pilot.pause()
            assert "Coded segments (1): 21-26 “staff”" in app.review.detail.plain_text
