"""Builders and synthetic data shared by the tests and the benchmarks.

Fixtures live in the ``conftest.py`` files and call these; tests import from here, never
from a ``conftest``. One synthetic score generator: :func:`synthetic_score` draws a
pair's curve from a hash of its ids, so a score never depends on which other pairs are
pending; :func:`synthetic_scores` and :func:`iter_synthetic_scores` apply it to a study.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codebooks.model import BINARY, LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Pair, Score, ScoreConfig
from study.intake.responses import ResponseTable
from study.store import Study

# -- scores -------------------------------------------------------------------------------

IDENTITY = ModelIdentity(
    name="fake:test", revision="r1", dtype="float32", device="cpu", backend="fake"
)
FAKE_MODEL = ModelIdentity("synthetic", "0", "float32", "cpu", "fake")


def synthetic_score(pair: Pair, config: ScoreConfig) -> Score:
    """A deterministic score whose curve depends on the pair's ids alone."""
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


def iter_synthetic_scores(
    study: Study, config: ScoreConfig, *, limit: int | None = None
) -> Iterator[Score]:
    """:func:`synthetic_score` for the study's first ``limit`` pending pairs (default all)."""
    config_id = study.scores.ensure_config(config)
    for pair in study.scores.pending_pairs(config_id)[:limit]:
        yield synthetic_score(pair, config)


def synthetic_scores(study: Study, config: ScoreConfig, *, limit: int | None = None) -> list[Score]:
    """:func:`iter_synthetic_scores` as a list."""
    return list(iter_synthetic_scores(study, config, limit=limit))


# -- the study tests' small study ---------------------------------------------------------


def working_life() -> Codebook:
    """Four codes: a group, two Likert codes under or beside it, and a binary one."""
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


def four_responses() -> ResponseTable:
    """Ids out of natural order and a formula-like text (for the export's escaping)."""
    return ResponseTable.from_texts(
        {
            "r10": "Too many hours and no overtime pay.",
            "r2": "My colleagues are great.",
            "r1": '=HYPERLINK("http://x") the pay is bad',
            "r3": "Nothing to add.",
        }
    )


def likert_config() -> ScoreConfig:
    """A configuration of the fake model on the 5-point scale."""
    return ScoreConfig(
        model=IDENTITY,
        template_id="test-v1",
        template_hash="t0",
        context="definition",
        scale=LIKERT_5,
    )


# -- the NHS patient feedback data --------------------------------------------------------


def shared_data() -> Path:
    """The labelled data sets: ``CODECURVE_SHARED_DATA`` (the test run sets it), else
    ``../shared/data`` beside the checkout, wherever it lies (a benchmark imports this
    module without the tests' conftest)."""
    if "CODECURVE_SHARED_DATA" in os.environ:
        return Path(os.environ["CODECURVE_SHARED_DATA"])
    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    return beside if beside.is_dir() else Path("/work/shared/data")


NHS_RESPONSES = shared_data() / "nhs_patient_feedback.csv"
NHS_CODEBOOK = shared_data() / "nhs_patient_feedback_codebook.csv"


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


# -- the app tests' work survey -----------------------------------------------------------

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


def synthetic_config(codebook: Codebook = CODEBOOK) -> ScoreConfig:
    """A configuration of the synthetic model on the codebook's scale."""
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
        config_id = study.scores.ensure_config(config)
        limit = None if scored is True else int(scored)
        study.scores.store(config_id, synthetic_scores(study, config, limit=limit))
    return study


# -- the vLLM integration tests -----------------------------------------------------------


@dataclass(frozen=True)
class VllmServer:
    """A running vLLM server, as the ``vllm_server`` fixture yields it."""

    url: str
    name: str
    model_dir: Path
    log: Path
    pid: int
    started_in: float


def rename_coders(path: Path, names: dict[str, str]) -> None:
    """Give coders other names in every table of the study file that names a coder.

    Deciding refuses a coder's name with control characters; a hostile or hand-edited
    file holds one all the same, and this writes it there as an attacker would.
    """
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        with conn:
            for table in tables:
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                if "coder" in columns:
                    for old, new in names.items():
                        conn.execute(f"UPDATE {table} SET coder = ? WHERE coder = ?", (new, old))
    finally:
        conn.close()
