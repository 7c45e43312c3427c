"""Fixtures for the study tests: a small codebook, responses and synthetic scores."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Pair, Score, ScoreConfig
from study import ResponseTable, Study

IDENTITY = ModelIdentity(
    name="fake:test", revision="r1", dtype="float32", device="cpu", backend="fake"
)


@pytest.fixture
def codebook() -> Codebook:
    return Codebook(
        name="Working life",
        codes=(
            Code("pressures", "Pressures", codable=False),
            Code("workload", "Workload", definition="Too much work.", parent="pressures"),
            Code("pay", "Pay", definition="Money matters."),
            Code("team", "Team", definition="Colleagues.", scale=BINARY),
        ),
        scale=LIKERT_5,
    )


@pytest.fixture
def responses() -> ResponseTable:
    return ResponseTable.from_texts(
        {
            "r10": "Too many hours and no overtime pay.",
            "r2": "My colleagues are great.",
            "r1": '=HYPERLINK("http://x") the pay is bad',
            "r3": "Nothing to add.",
        }
    )


@pytest.fixture
def config() -> ScoreConfig:
    return ScoreConfig(
        model=IDENTITY,
        template_id="test-v1",
        template_hash="t0",
        context="definition",
        scale=LIKERT_5,
    )


@pytest.fixture
def study(tmp_path: Path, responses: ResponseTable, codebook: Codebook) -> Iterator[Study]:
    s = Study.create(tmp_path / "s.codecurve", responses=responses, codebook=codebook)
    yield s
    s.close()


def synthetic_score(pair: Pair, config: ScoreConfig, codebook: Codebook) -> Score:
    """A deterministic score whose curve depends on the pair's ids."""
    scale = pair.code.scale or config.scale
    seed = int(hashlib.sha256(f"{pair.response_id}/{pair.code.id}".encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=scale.k) * 2
    logprobs = logits - np.log(np.exp(logits).sum()) - 0.05
    curve = curve_from_logprobs(logprobs, scale.values)
    return Score(
        response_id=pair.response_id,
        code_id=pair.code.id,
        config_key=config.key(),
        scale=scale,
        curve=curve,
        token_ids=tuple(((i + 10,), (i + 100,)) for i in range(scale.k)),
        missing=(False,) * scale.k,
        prompt=f"{pair.code.name}: {pair.text}",
        prompt_hash="p" + str(seed),
        text_hash="t",
        code_hash=pair.code.content_hash(),
        truncated=False,
    )


@pytest.fixture
def score_pairs() -> Callable[[Sequence[Pair], ScoreConfig, Codebook], list[Score]]:
    def make(pairs: Sequence[Pair], config: ScoreConfig, codebook: Codebook) -> list[Score]:
        return [synthetic_score(p, config, codebook) for p in pairs]

    return make


NHS_RESPONSES = Path(os.environ["CODECURVE_SHARED_DATA"]) / "nhs_patient_feedback.csv"
NHS_CODEBOOK = Path(os.environ["CODECURVE_SHARED_DATA"]) / "nhs_patient_feedback_codebook.csv"


def nhs_codebook() -> Codebook:
    """The NHS framework (50 categories, binary) with its v7 groups as parent categories.

    Built with pandas: the file's columns (category, major_category_v7, count) are not
    a codebook table layout.
    """
    import pandas as pd

    from codebooks.mapping import slugify

    table = pd.read_csv(NHS_CODEBOOK)
    groups = sorted(set(table["major_category_v7"]) - {"(not in v7)"})
    codes = [Code(f"group-{slugify(g)}", f"{g} (group)", codable=False) for g in groups]
    for category, group in zip(table["category"], table["major_category_v7"], strict=True):
        parent = None if group == "(not in v7)" else f"group-{slugify(group)}"
        codes.append(Code(slugify(category), category, parent=parent))
    return Codebook(name="NHS patient experience (QDC v6)", codes=tuple(codes), scale=BINARY)
