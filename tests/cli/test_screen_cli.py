"""``codecurve screen STUDY`` end to end, on studies whose 2x2 tables are known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from codebooks.model import LIKERT_5, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig
from study import ResponseTable, Study
from tui.cli import main

CONFIG = ScoreConfig(
    model=ModelIdentity("fake:screen", "r1", "float32", "cpu", "fake"),
    template_id="test-v1",
    template_hash="t0",
    context="definition",
    scale=LIKERT_5,
)
CODEBOOK = Codebook(
    name="Screen",
    codes=(Code("pay", "Pay", definition="Money."), Code("team", "Team", definition="People.")),
)
HIGH = np.log([0.02, 0.02, 0.02, 0.04, 0.90])  # picks 5 with p_max 0.90 (reversed: 1)
LOW = np.log([0.20, 0.15, 0.15, 0.15, 0.35])  # picks 5 with p_max 0.35 (< 0.5; reversed: 1)


def make_study(
    path: Path,
    cells: dict[str, tuple[int, int, int, int]],
    *,
    codebook: Codebook = CODEBOOK,
    constant: bool = False,
) -> Path:
    """A study where, per code, the coder's values give the 2x2 table (a, b, c, d) =
    (correct&high, incorrect&high, correct&low, incorrect&low). The model picks 5 on
    every other pair of each cell and 1 on the rest (the coder's value mirrored with
    it), so that it is no constant model: a model with one answer adds nothing, and no
    tier is given for it (:mod:`screening.story`); ``constant``: 5 on every pair."""
    plan: list[tuple[str, str, np.ndarray, int]] = []
    for code, (a, b, c, d) in cells.items():
        cell: list[tuple[str, str, np.ndarray, int]] = []
        cell += [(code, "hi", HIGH, 5)] * a + [(code, "hi", HIGH, 1)] * b
        cell += [(code, "lo", LOW, 5)] * c + [(code, "lo", LOW, 1)] * d
        plan += [
            (one, tag, logprobs[::-1], 6 - value)
            if i % 2 and not constant
            else (one, tag, logprobs, value)
            for i, (one, tag, logprobs, value) in enumerate(cell)
        ]
    n = max(sum(v) for v in cells.values())
    texts = {f"r{i}": f"response {i}" for i in range(n)}
    study = Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook)
    config_id = study.scores.ensure_config(CONFIG)
    counters = dict.fromkeys(cells, 0)
    scores = []
    decisions = []
    for code, _, logprobs, coder_value in plan:
        rid = f"r{counters[code]}"
        counters[code] += 1
        scores.append(
            Score(
                response_id=rid,
                code_id=code,
                config_key=CONFIG.key(),
                scale=LIKERT_5,
                curve=curve_from_logprobs(logprobs, LIKERT_5.values),
                token_ids=tuple(((i,),) for i in range(5)),
                missing=(False,) * 5,
                prompt="p",
                prompt_hash="h",
                text_hash="t",
                code_hash="c",
            )
        )
        decisions.append((rid, code, coder_value))
    study.scores.store(config_id, scores)
    study.decisions.import_decisions(decisions, coder="ana")
    study.close()
    return path


def screen_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["screen", str(path), "--format", "json", *extra]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def test_valid_table_is_reported_pooled_and_per_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Claude Haiku 4.5's table from METHOD.md -> Valid.
    path = make_study(tmp_path / "v.codecurve", {"pay": (385, 29, 82, 28)})
    out = screen_json(path, capsys, "--phase-b")
    pooled = out["pooled"]
    assert pooled["table"] == {"a": 385, "b": 29, "c": 82, "d": 28}
    assert pooled["tier"] == "Valid"
    assert pooled["phase_b"] is not None
    assert out["per_code"]["Pay"]["tier"] == "Valid"
    model_vs_coder = out["agreement"][0]
    assert model_vs_coder["between"] == ["model", "ana"]
    assert model_vs_coder["n"] == 524
    assert model_vs_coder["percent"] == pytest.approx((385 + 82) / 524)


def test_golden_table_is_invalid_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path / "g.codecurve", {"pay": (24, 71, 423, 6)})
    out = screen_json(path, capsys, "--phase-b")
    pooled = out["pooled"]
    assert pooled["tier"] == "Invalid"
    assert pooled["phase_b"] is None
    assert "Fp = 0.946 exceeds .50" in pooled["flagging_reason"]


def test_per_code_and_code_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_study(
        tmp_path / "two.codecurve", {"pay": (385, 29, 82, 28), "team": (491, 26, 3, 4)}
    )
    out = screen_json(path, capsys)
    assert out["per_code"]["Pay"]["tier"] == "Valid"
    assert out["per_code"]["Team"]["tier"] == "Insufficient data"
    assert out["pooled"]["table"] == {"a": 385 + 491, "b": 29 + 26, "c": 82 + 3, "d": 28 + 4}
    only = screen_json(path, capsys, "--code", "team")
    assert list(only["per_code"]) == ["Team"]
    assert only["pooled"]["tier"] == "Insufficient data"


def test_table_and_markdown_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_study(tmp_path / "f.codecurve", {"pay": (385, 29, 82, 28)})
    assert main(["screen", str(path), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    # The seed's tier name stays in the VRS table, glossed, with AUROC and kappa after it.
    tier_row = "| Tier classification (response pattern only, not a verdict on the model) | Valid |"
    assert tier_row in md
    after = md.split(tier_row, 1)[1].splitlines()
    assert after[1].startswith("| AUROC (confidence for being right) | 0.")
    assert after[2] == "| Kappa, model vs coder (applies / not) | 0.782 [0.729, 0.836] |"
    assert main(["screen", str(path)]) == 0
    table = capsys.readouterr().out
    assert "Valid" in table
    assert "a=385, b=29, c=82, d=28" in table


def test_median_cut_changes_the_binarisation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path / "m.codecurve", {"pay": (385, 29, 82, 28)})
    out = screen_json(path, capsys, "--cut", "median")
    # p_max takes two values (0.90, 0.35); the median is 0.90, so >= median is high.
    assert out["pooled"]["table"] == {"a": 385, "b": 29, "c": 82, "d": 28}
    assert "median" in out["pooled"]["binarisation_threshold"]


def test_several_coders_one_is_used_and_said_and_they_get_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path / "c.codecurve", {"pay": (10, 10, 10, 10)})
    with Study.open(path) as study:
        study.decisions.import_decisions(
            [(f"r{i}", "pay", 5 if i % 4 else 1) for i in range(30)], coder="ben"
        )
    assert main(["screen", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.strip() == (
        "Using the decisions of ana (40 decisions, the most); also coded: ben; another "
        "coder can be named (try --coder NAME)."
    )
    out = screen_json(path, capsys, "--coder", "ben")
    between = [tuple(a["between"]) for a in out["agreement"]]
    assert ("ana", "ben") in between


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cut", "high"], "--cut must be 'scale', 'median' or a number"),
        (["--cut", "1.5"], "--cut must lie in [0, 1]"),
        (["--agreement", "maybe"], "invalid choice"),
        (["--format", "pdf"], "invalid choice"),
        (["--code", "Nope"], "no code named 'Nope'"),
        (["--coder", "zed"], "no decisions by coder 'zed'"),
    ],
)
def test_bad_options_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    path = make_study(tmp_path / "b.codecurve", {"pay": (5, 5, 5, 5)})
    with pytest.raises(SystemExit) if "invalid choice" in needle else _nothing():
        code = main(["screen", str(path), *args])
        assert code == (2 if needle.startswith("--cut") else 1)
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_missing_study_and_unscored_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["screen", str(tmp_path / "none.codecurve")]) == 1
    assert "no such study file" in capsys.readouterr().err
    path = tmp_path / "empty.codecurve"
    Study.create(path, responses=ResponseTable.from_texts({"r1": "x"}), codebook=CODEBOOK).close()
    assert main(["screen", str(path)]) == 1
    assert "no scores yet" in capsys.readouterr().err


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> Literal[False]:
        return False


def test_decisions_on_unscored_pairs_are_counted_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_study(tmp_path / "u.codecurve", {"pay": (5, 5, 5, 5)})
    with Study.open(path) as study:
        study.decisions.import_decisions([("r0", "team", 3)], coder="ana")  # "team" is never scored
    capsys.readouterr()
    assert main(["screen", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 decision is on a pair not scored yet and was left out." in out
    with Study.open(path) as study:
        study.decisions.import_decisions([("r1", "team", 3)], coder="ana")
    assert main(["screen", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 decisions are on pairs not scored yet and were left out." in out


def test_code_names_with_markup_and_escapes_print_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = Codebook(
        name="Screen",
        codes=(
            Code("pay", "[bold]Pay\x1b]0;title\x07", definition="Money."),
            Code("team", "Team\x9b2J", definition="People."),
        ),
    )
    path = make_study(tmp_path / "h.codecurve", {"pay": (5, 5, 5, 5)}, codebook=hostile)
    for fmt in ("table", "markdown", "json"):
        assert main(["screen", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        for raw in ("\x1b", "\x07", "\x9b"):
            assert raw not in out, fmt
        if fmt != "json":
            assert "[bold]Pay\u241b]0;title\u2407" in out


def test_decisions_waiting_for_their_scores_are_named_not_called_out_of_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scoring still runs: every pair is decided, some are not scored yet. The screen
    names them and says they join it once scored, never that no verdict can be reached."""
    from tests.factories import build_study

    path = tmp_path / "w.codecurve"
    study = build_study(path, n=12, scored=20)
    ids = study.response_ids()
    items = [(r, c.id, 1) for r in ids for c in study.codes]
    study.decisions.import_decisions(items, coder="ana")
    study.close()
    for fmt in ("table", "markdown"):
        assert main(["screen", str(path), "--format", fmt]) == 0
        flat = " ".join(capsys.readouterr().out.split())
        assert "no verdict can be reached" not in flat
        assert "not scored yet" in flat
    data = screen_json(path, capsys)
    assert sum(data["unscored"].values()) == 16
    assert "not scored yet" in data["next_action"] or "not scored yet" in json.dumps(data)
