"""Studies for the app's tests: real SQLite studies with synthetic, deterministic scores."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig
from study.responses import ResponseTable
from study.store import Study

WORDS = [
    "the",
    "workload",
    "is",
    "heavy",
    "and",
    "my",
    "manager",
    "never",
    "listens",
    "to",
    "the",
    "team",
    "about",
    "pay",
    "or",
    "hours",
    "colleagues",
    "are",
    "supportive",
    "but",
    "the",
    "office",
    "is",
    "noisy",
    "and",
    "training",
    "was",
    "short",
]

CODEBOOK = Codebook(
    name="Work survey",
    codes=(
        Code(
            "workload",
            "Workload",
            "Mentions of how much work there is.",
            "Too much or too little work.",
        ),
        Code("pay", "Pay", "Mentions of salary, wages or benefits."),
        Code(
            "team",
            "Team support",
            "How colleagues help each other.",
            scale=LIKERT_5,
        ),
    ),
    scale=BINARY,
)

FAKE_MODEL = ModelIdentity("synthetic", "0", "float32", "cpu", "fake")


def synthetic_config(codebook: Codebook = CODEBOOK) -> ScoreConfig:
    return ScoreConfig(
        model=FAKE_MODEL,
        template_id="synthetic-v1",
        template_hash="0",
        context="definition",
        scale=codebook.scale,
    )


def texts(n: int, seed: int = 7, words: tuple[int, int] = (6, 30)) -> dict[str, str]:
    """``n`` responses of ``words`` (at least, at most) random survey words."""
    rng = random.Random(seed)
    return {f"r{i + 1}": " ".join(rng.choices(WORDS, k=rng.randint(*words))) for i in range(n)}


def synthetic_scores(
    study: Study, config: ScoreConfig, *, seed: int = 11, limit: int | None = None
) -> list[Score]:
    """A score for every pending pair; entropies spread over [0, 1] deterministically."""
    return list(iter_synthetic_scores(study, config, seed=seed, limit=limit))


def iter_synthetic_scores(
    study: Study, config: ScoreConfig, *, seed: int = 11, limit: int | None = None
) -> Iterator[Score]:
    """:func:`synthetic_scores` one at a time (a big study need not hold them all)."""
    rng = random.Random(seed)
    codebook = study.codebook
    config_id = study.ensure_config(config)
    for pair in study.pending_pairs(config_id)[:limit]:
        scale = codebook.scale_for(pair.code)
        logits = [rng.gauss(0.0, 2.5) for _ in range(scale.k)]
        top = max(logits)
        mass = rng.uniform(0.6, 0.99)
        norm = math.log(sum(math.exp(x - top) for x in logits)) + top
        logprobs = [x - norm + math.log(mass) for x in logits]
        curve = curve_from_logprobs(logprobs, scale.values)
        yield Score(
            response_id=pair.response_id,
            code_id=pair.code.id,
            config_key=config.key(),
            scale=scale,
            curve=curve,
            token_ids=tuple(((i + 1,),) for i in range(scale.k)),
            missing=(False,) * scale.k,
            prompt="",
            prompt_hash="0",
            text_hash="0",
            code_hash="0",
        )


def build_study(
    path: Path,
    *,
    n: int = 30,
    codebook: Codebook = CODEBOOK,
    scored: bool | int = True,
    seed: int = 7,
) -> Study:
    """A study of ``n`` responses; ``scored`` True scores every pair, an int that many."""
    study = Study.create(
        path, responses=ResponseTable.from_texts(texts(n, seed)), codebook=codebook
    )
    if scored:
        config = synthetic_config(codebook)
        config_id = study.ensure_config(config)
        limit = None if scored is True else int(scored)
        study.write_scores(config_id, synthetic_scores(study, config, limit=limit))
    return study


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Study]:
    s = build_study(tmp_path / "work.codecurve")
    yield s
    if not s.closed:
        s.close()


@pytest.fixture(autouse=True)
def _data_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECURVE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("USER", "tester")
