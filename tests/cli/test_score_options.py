"""``codecurve score``: resuming keeps the configuration being scored, and the prompt
budget, the download opt-in and the rate shown on long prompts reach the engine."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import scoring.engine
from scoring.engine import BatchResult
from study import Study
from tui.cli import main
from tui.commands import score as score_command
from tui.commands import score_output

CODEBOOK = """\
name: Test codes
scale: binary
codes:
  - name: Pay
    definition: Salary and benefits.
  - name: Team
    definition: Colleagues and teamwork.
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    responses = tmp_path / "responses.csv"
    responses.write_text("id,text\na1,The pay is low.\na2,Great colleagues.\n", encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    return path


def test_score_without_context_resumes_the_active_configuration(study: Path) -> None:
    assert main(["score", str(study), "--context", "full", "--model", "fake"]) == 0
    assert main(["score", str(study), "--model", "fake"]) == 0  # resume: no new configuration
    with Study.open(study, read_only=True) as s:
        contexts = [row.context for row in s.scores.configs()]
        active = s.scores.active_config_id()
        assert active is not None
        assert contexts == ["full"]
        assert s.scores.config_row(active).context == "full"


def test_the_prompt_budget_reaches_the_engine(study: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int | None] = []
    original = scoring.engine.ScoringEngine.__init__

    def spy(self: scoring.engine.ScoringEngine, *args: object, **kwargs: object) -> None:
        seen.append(kwargs.get("max_prompt_tokens"))  # type: ignore[arg-type]
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scoring.engine.ScoringEngine, "__init__", spy)
    assert main(["score", str(study), "--model", "fake", "--max-prompt-tokens", "512"]) == 0
    assert main(["score", str(study), "--model", "fake", "--max-prompt-tokens", "model"]) == 0
    assert main(["score", str(study), "--model", "fake"]) == 0
    assert seen == [512, None, scoring.engine.DEFAULT_PROMPT_TOKENS]


@pytest.mark.parametrize("bad", ["10", "lots", "-5"])
def test_a_bad_prompt_budget_is_a_usage_error(
    study: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["score", str(study), "--model", "fake", "--max-prompt-tokens", bad])
    assert exc.value.code == 2
    assert "--max-prompt-tokens" in capsys.readouterr().err


def test_the_command_lines_default_budget_is_the_engines() -> None:
    assert score_command.DEFAULT_PROMPT_TOKENS == scoring.engine.DEFAULT_PROMPT_TOKENS


def test_allow_download_is_passed_to_the_loader(
    study: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scoring

    calls: list[bool] = []
    original = scoring.load_backend

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(bool(kwargs.get("allow_download")))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scoring, "load_backend", spy)
    assert main(["score", str(study), "--model", "fake"]) == 0
    assert main(["score", str(study), "--model", "fake", "--allow-download"]) == 0
    assert calls == [False, True]


def test_backend_gpu_layers_and_threads_reach_the_loader(
    study: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scoring
    from scoring.loading import BACKENDS

    seen: list[tuple[object, object, object]] = []
    original = scoring.load_backend

    def spy(*args: object, **kwargs: object) -> object:
        seen.append((kwargs.get("backend"), kwargs.get("gpu_layers"), kwargs.get("threads")))
        return original("fake")

    monkeypatch.setattr(scoring, "load_backend", spy)
    for backend in BACKENDS:  # the command line offers exactly the loader's backends
        args = ["score", str(study), "--backend", backend, "--gpu-layers", "0", "--threads", "1"]
        assert main(args) == 0
    assert main(["score", str(study)]) == 0
    assert seen == [("llama.cpp", 0, 1), ("transformers", 0, 1), (None, None, None)]
    with pytest.raises(SystemExit):
        main(["score", str(study), "--backend", "vllm"])


def _batch(rate: float, token_rate: float) -> BatchResult:
    return BatchResult(
        scores=[], done=1, total=4, elapsed=1.0, rate=rate, eta=1.0, token_rate=token_rate
    )


def test_long_prompts_show_tokens_per_second_not_zero_pairs() -> None:
    slow = score_output.rate(_batch(0.04, 350.0))
    assert "tokens/s" in slow
    assert "0.0 pairs/s" not in slow
    assert score_output.rate(_batch(12.0, 900.0)) == ", 12.0 pairs/s"
    assert score_output.rate(_batch(0.0, 0.0)) == ""


def test_the_eta_reads_as_hours_minutes_and_seconds() -> None:
    assert score_output.eta(_batch(1.0, 0.0)) == ", eta 0:00:01"
    long = BatchResult(scores=[], done=1, total=9, elapsed=1.0, rate=0.1, eta=3725.4)
    assert score_output.eta(long) == ", eta 1:02:05"
    unknown = BatchResult(scores=[], done=0, total=9, elapsed=0.0, rate=0.0, eta=math.nan)
    assert score_output.eta(unknown) == ""


def test_scoring_a_study_shows_the_time_left(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["score", str(study), "--model", "fake", "--batch-size", "1"]) == 0
    err = capsys.readouterr().err
    steps = re.findall(r"scored (\d+)/(\d+)[^\r\n]*?, eta (\d+):(\d\d):(\d\d)", err)
    assert len(steps) == 4, err  # two responses x two codes, one pair a batch
    assert steps[-1][:2] == ("4", "4")
    assert steps[-1][2:] == ("0", "00", "00")  # done: nothing left
