"""A writer's reads run on connections of their own: a long read never holds up a write."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from study.errors import StudyError
from tests.factories import build_study


def test_a_read_in_progress_does_not_hold_up_a_decision(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=5)
    reading, release = threading.Event(), threading.Event()

    def long_read() -> None:  # a screening of a big study, still fetching
        with study.snapshot() as conn:
            conn.execute("SELECT COUNT(*) FROM scores").fetchone()
            reading.set()
            release.wait(30)

    reader = threading.Thread(target=long_read)
    reader.start()
    try:
        assert reading.wait(30)
        code = study.codebook.codable[0].id
        done = threading.Event()

        def decide() -> None:
            study.decisions.record("r1", code, 1, coder="ana")
            done.set()

        writer = threading.Thread(target=decide, daemon=True)
        writer.start()
        assert done.wait(10), "the decision waited for the read to finish"
        # The read still sees what it began with; a new read sees the decision.
        assert study.decisions.undo(coder="ana") is not None
    finally:
        release.set()
        reader.join(30)
        study.close()


def test_reads_inside_a_write_see_what_it_wrote(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=3)
    seen: dict[str, str] = {}

    def change_then_fail() -> None:
        with study.transaction() as conn:
            conn.execute("UPDATE meta SET value = 'changed' WHERE key = 'created_at'")
            seen.update(study.meta())
            raise RuntimeError("roll it back")

    with pytest.raises(RuntimeError):
        change_then_fail()
    assert seen["created_at"] == "changed"
    assert study.meta()["created_at"] != "changed"
    study.close()


def test_a_read_after_close_is_refused(tmp_path: Path) -> None:
    study = build_study(tmp_path / "s.codecurve", n=3)
    study.meta()
    study.close()
    with pytest.raises(StudyError):
        study.meta()
