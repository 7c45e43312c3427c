"""The app on a study of several survey questions: the queue and the response view list
a code only on the answers to its questions (issue 35, 9)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from codebooks.model import BINARY, Code, Codebook
from study.intake.responses import Response, ResponseTable
from study.store import Study
from tests.factories import synthetic_config, synthetic_scores
from tui.app import make_app
from tui.screens.response import ResponseScreen
from tui.widgets.queue import PairQueue

BOOK = Codebook(
    name="Feedback",
    codes=(
        Code("kind", "Kind staff", questions=("good",)),
        Code("wait", "Waiting", questions=("better",)),
        Code("tone", "Negative tone"),
    ),
    scale=BINARY,
    question_column="question_id",
)


def two_question_study(path: Path) -> Study:
    """Three answers to ``good`` (r1, r3, r5) and three to ``better`` (r2, r4, r6)."""
    responses = tuple(
        Response(f"r{i}", f"comment {i}", {"question_id": "good" if i % 2 else "better"})
        for i in range(1, 7)
    )
    table = ResponseTable(responses=responses, attribute_columns=("question_id",))
    study = Study.create(path, responses=table, codebook=BOOK)
    config = synthetic_config(BOOK)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    return study


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_the_queue_and_the_response_view_follow_the_questions(tmp_path: Path) -> None:
    study = two_question_study(tmp_path / "s.codecurve")
    asked = {r.id: r.attrs["question_id"] for r in study.responses()}
    app = make_app(study, coder="tester", close_study=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        queue = app.screen.query_one(PairQueue)
        # 3 + 3 + 6 pairs, not 6 x 3.
        assert queue.total == 12
        rows = [queue.row_at(i) for i in range(queue.total)]
        assert all(row is not None for row in rows)
        for row in rows:
            assert row is not None
            code = BOOK.code(row.code_id)
            assert not code.questions or asked[row.response_id] in code.questions
        await pilot.press("v")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResponseScreen)
        shown = {r.code_id for r in screen.rows}
        expected = {"kind", "tone"} if asked[screen.response_id] == "good" else {"wait", "tone"}
        assert shown == expected
        # y, n on the response's two codes decide exactly those pairs.
        await pilot.press("y", "n")
        await settle(pilot)
        decided = {r.code_id for r in screen.rows if r.decision is not None}
        assert decided == expected
