"""The score-row format (study.exchange._score_rows): columns, CSV and JSONL, written
safely by the exports' writer."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from codebooks.model import Code
from scoring.score import Pair
from study.errors import StudyError
from study.exchange._score_rows import (
    ID_COLUMNS,
    IDENTITY_COLUMNS,
    SUMMARY_COLUMNS,
    columns,
    row_format,
    score_row,
    write_score_rows,
)
from tests.factories import CODEBOOK, synthetic_config, synthetic_score

CONFIG = synthetic_config()


def rows(*, with_prompt: bool) -> list[dict[str, object]]:
    out = []
    for code in CODEBOOK.codes:
        score = synthetic_score(Pair("r1", "=cmd|' /C calc'!A0", code), CONFIG)
        out.append(score_row(score, CONFIG, "=HYPERLINK(1)", with_prompt=with_prompt))
    return out


def test_a_row_holds_the_curve_and_the_identity() -> None:
    score = synthetic_score(Pair("r1", "some text", CODEBOOK.codes[2]), CONFIG)
    row = score_row(score, CONFIG, "Team support", with_prompt=True)
    assert row["code_name"] == "Team support"
    assert row["model_name"] == CONFIG.model.name
    assert row["template_id"] == CONFIG.template_id
    assert row["config_key"] == score.config_key
    assert row["prompt"] == score.prompt
    probs = [row[f"prob_{o.label}"] for o in score.scale.options]
    assert probs == pytest.approx(list(score.curve.probs))
    assert json.loads(str(row["option_token_ids"])) == [
        [list(v) for v in o] for o in score.token_ids
    ]
    assert "prompt" not in score_row(score, CONFIG, "Team support", with_prompt=False)


def test_columns_are_fixed_with_each_scales_options_in_order_of_first_use() -> None:
    names = columns(rows(with_prompt=False))
    assert names[: len(ID_COLUMNS)] == list(ID_COLUMNS)
    assert names[-len(IDENTITY_COLUMNS) :] == list(IDENTITY_COLUMNS)
    per_option = names[len(ID_COLUMNS) + len(SUMMARY_COLUMNS) : -len(IDENTITY_COLUMNS)]
    binary = [o.label for o in CODEBOOK.scale.options]
    assert per_option[: 2 * len(binary)] == [
        f"{kind}_{label}" for label in binary for kind in ("surprisal", "prob")
    ]
    assert len(per_option) == len(set(per_option))


def test_csv_neutralises_formulas_and_keeps_every_digit(tmp_path: Path) -> None:
    data = rows(with_prompt=False)
    target = tmp_path / "scores.csv"
    write_score_rows(target, "csv", data)
    with target.open(encoding="utf-8", newline="") as fh:
        back = list(csv.DictReader(fh))
    assert len(back) == len(data)
    assert back[0]["code_name"] == "'=HYPERLINK(1)"
    assert float(back[0]["expected"]) == data[0]["expected"]  # repr: no digit lost


def test_jsonl_writes_no_infinity(tmp_path: Path) -> None:
    data = rows(with_prompt=True)
    label = CODEBOOK.scale.options[0].label
    data[0] = {**data[0], f"surprisal_{label}": math.inf}
    target = tmp_path / "scores.jsonl"
    write_score_rows(target, "jsonl", data)
    back = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert back[0][f"surprisal_{label}"] is None
    assert back[0]["code_name"] == "=HYPERLINK(1)"  # JSON is not run by a spreadsheet
    assert isinstance(back[0]["option_token_ids"], list)
    assert back[1]["prompt"] == data[1]["prompt"]


def test_csv_writes_infinity_as_inf(tmp_path: Path) -> None:
    data = rows(with_prompt=False)
    label = CODEBOOK.scale.options[1].label
    data[0] = {**data[0], f"surprisal_{label}": -math.inf}
    target = tmp_path / "scores.csv"
    write_score_rows(target, "csv", data)
    with target.open(encoding="utf-8", newline="") as fh:
        first = next(csv.DictReader(fh))
    assert first[f"surprisal_{label}"] == "-inf"


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "scores.csv"
    target.write_text("old\n", encoding="utf-8")
    bad = rows(with_prompt=False)
    bad[0] = {**bad[0], "option_token_ids": np.int64(1)}  # not JSON text: the write fails
    with pytest.raises(TypeError):
        write_score_rows(target, "jsonl", bad)
    assert target.read_text(encoding="utf-8") == "old\n"


def test_a_folder_is_never_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "out.csv"
    folder.mkdir()
    with pytest.raises(StudyError):
        write_score_rows(folder, "csv", rows(with_prompt=False))
    assert folder.is_dir()


def test_the_format_comes_from_the_suffix(tmp_path: Path) -> None:
    assert row_format(tmp_path / "a.CSV") == "csv"
    assert row_format(tmp_path / "a.jsonl") == "jsonl"
    with pytest.raises(StudyError, match=r"name the output \.csv or \.jsonl"):
        row_format(tmp_path / "a.xlsx")


def test_a_code_of_its_own_scale_adds_its_columns() -> None:
    code = replace(CODEBOOK.codes[0], id="own", scale=CODEBOOK.codes[2].scale)
    assert isinstance(code, Code)
    score = synthetic_score(Pair("r2", "text", code), CONFIG)
    row = score_row(score, CONFIG, "Own", with_prompt=False)
    assert sum(k.startswith("prob_") for k in row) == code.scale.k  # type: ignore[union-attr]
