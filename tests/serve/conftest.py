"""Fixtures of the served app's tests: a study with a distinctive name and texts."""

from __future__ import annotations

from pathlib import Path

import pytest

from study.store import Study
from tests.factories import build_study

#: Words of the study that must never reach a browser that is not signed in.
STUDY_NAME = "harbourview-survey"


@pytest.fixture
def study_path(tmp_path: Path) -> Path:
    path = tmp_path / f"{STUDY_NAME}.codecurve"
    build_study(path, n=12).close()
    return path


def study_words(path: Path) -> list[str]:
    """The study's name and its responses' texts: none may appear in a refusal."""
    with Study.open(path, read_only=True) as study:
        texts = [r.text for r in study.responses()]
        codes = [c.name for c in study.codes]
    return [STUDY_NAME, path.stem, *texts, *codes]
