"""Blind coding hides the response columns that hold codes: the columns another coder's
decisions came from, read in the response view (``v``), are other coders' decisions."""

from __future__ import annotations

import csv
from pathlib import Path

from study.audit._code_columns import code_columns
from study.audit.blind import set_blind_coding
from study.exchange._code_import import import_codes
from study.intake.responses import read_responses
from study.store import Study
from tests.factories import synthetic_config, synthetic_scores
from tests.tui.test_response_mode import YES_NO, settle
from tui.app import make_app
from tui.screens.response import ResponseScreen

COLUMNS = ("id", "text", "question", "label", "coder2_label", "lena")


def survey(tmp_path: Path) -> Path:
    """A survey export that carries two coders' codes beside the text, as studies are
    made from: ``label`` and ``coder2_label``, and ``lena``'s codes in a column of her
    name (imported from, so recorded)."""
    path = tmp_path / "survey.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for i in range(1, 7):
            out.writerow(
                (
                    f"r{i}",
                    f"Comment {i}: the nurses were kind",
                    "What was good?",
                    "Staff attitude;Waiting",
                    "NA",
                    "Cleanliness",
                )
            )
    study = Study.create(tmp_path / "s.codecurve", responses=read_responses(path), codebook=YES_NO)
    config = synthetic_config(YES_NO)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    import_codes(study, path, coder="gold", codes_column="label")
    import_codes(study, path, coder="lena", codes_column="lena")
    study.close()
    return tmp_path / "s.codecurve"


def test_the_columns_that_hold_codes(tmp_path: Path) -> None:
    with Study.open(survey(tmp_path)) as study:
        names = ["question", "label", "coder2_label", "lena", "site", "Waiting"]
        assert code_columns(study, names) == ["label", "coder2_label", "lena", "Waiting"]


async def test_blind_coding_hides_the_code_columns_in_the_response_view(tmp_path: Path) -> None:
    path = survey(tmp_path)
    for blind in (True, False):
        study = Study.open(path)
        set_blind_coding(study, blind, coder="ana")
        app = make_app(study, coder="ana", close_study=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("v")
            await settle(pilot)
            assert isinstance(app.screen, ResponseScreen)
            attrs = str(app.screen.query_one("#response-attrs").render())
            assert "question: What was good?" in attrs
            if blind:
                for value in ("Staff attitude;Waiting", "NA", "Cleanliness"):
                    assert value not in attrs
                assert "label:" not in attrs
                assert "hidden while you code blind" in attrs
                assert "label, coder2_label, lena" in attrs
            else:
                assert "label: Staff attitude;Waiting" in attrs
                assert "lena: Cleanliness" in attrs
                assert "hidden" not in attrs
