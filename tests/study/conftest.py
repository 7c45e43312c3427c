"""Fixtures for the study tests: a small codebook, responses and synthetic scores."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from codebooks.model import Codebook
from scoring.score import Pair, Score, ScoreConfig
from study import ResponseTable, Study
from tests.factories import four_responses, likert_config, synthetic_score, working_life


@pytest.fixture
def codebook() -> Codebook:
    return working_life()


@pytest.fixture
def responses() -> ResponseTable:
    return four_responses()


@pytest.fixture
def config() -> ScoreConfig:
    return likert_config()


@pytest.fixture
def study(tmp_path: Path, responses: ResponseTable, codebook: Codebook) -> Iterator[Study]:
    s = Study.create(tmp_path / "s.codecurve", responses=responses, codebook=codebook)
    yield s
    s.close()


@pytest.fixture
def score_pairs() -> Callable[[Sequence[Pair], ScoreConfig], list[Score]]:
    def make(pairs: Sequence[Pair], config: ScoreConfig) -> list[Score]:
        return [synthetic_score(p, config) for p in pairs]

    return make
