"""``codecurve agreement`` from the command line, on studies with no scores at all.

Two coders' codes are imported with ``import-codes``; bad input is one clear line,
exit 1 (2 for usage errors), and the study as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from study import Study
from tests.factories import rename_coders
from tui.cli import main

CODEBOOK = """\
name: Working life
scale: 1-5
codes:
  - name: Pay
    definition: Money matters.
  - name: Hours
    definition: Time at work.
  - name: Praise
    definition: Thanks given.
    scale: binary
"""

N = 40


def _values(seed: int) -> dict[str, list[int]]:
    rng = np.random.default_rng(seed)
    return {
        "Pay": rng.integers(1, 6, N).tolist(),
        "Hours": rng.integers(1, 6, N).tolist(),
        "Praise": rng.integers(0, 2, N).tolist(),
    }


def _perturb(values: dict[str, list[int]], seed: int) -> dict[str, list[int]]:
    rng = np.random.default_rng(seed)
    out = {}
    for code, column in values.items():
        top = 1 if code == "Praise" else 5
        low = 0 if code == "Praise" else 1
        out[code] = [int(rng.integers(low, top + 1)) if rng.random() < 0.3 else v for v in column]
    return out


def _write_codes(path: Path, values: dict[str, list[int]], rows: range) -> None:
    lines = ["respondent,Pay,Hours,Praise"]
    for i in rows:
        praise = "yes" if values["Praise"][i] else "no"
        lines.append(f"r{i},{values['Pay'][i]},{values['Hours'][i]},{praise}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def study(tmp_path: Path) -> dict[str, object]:
    responses = tmp_path / "answers.csv"
    responses.write_text(
        "respondent,answer\n" + "".join(f"r{i},answer number {i}\n" for i in range(N)),
        encoding="utf-8",
    )
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "s.codecurve"
    argv = ["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]
    assert main(argv) == 0
    ann = _values(1)
    bob = _perturb(ann, 2)
    _write_codes(tmp_path / "ann.csv", ann, range(N))
    _write_codes(tmp_path / "bob.csv", bob, range(10, N))  # bob coded 30 of the 40
    for coder in ("ann", "bob"):
        rc = main(["import-codes", str(path), str(tmp_path / f"{coder}.csv"), "--coder", coder])
        assert rc == 0
    return {"path": path, "ann": ann, "bob": bob, "tmp": tmp_path}


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("codecurve: error: "), err
    assert "Traceback" not in err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def agreement_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    assert main(["agreement", str(path), "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_agreement_without_scores_matches_scikit_learn(
    study: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path = study["path"]
    assert isinstance(path, Path)
    with Study.open(path, read_only=True) as opened:
        assert opened.scores.active_config_id() is None
    payload = agreement_json(path, capsys, "--resamples", "200", "--seed", "7")
    assert payload["coders"] == ["ann", "bob"]
    assert payload["bootstrap"]["resamples"] == 200
    assert payload["bootstrap"]["seed"] == 7
    rows = {row["code"]: row for row in payload["per_code"]}
    assert list(rows) == ["Pay", "Hours", "Praise"]
    ann, bob = study["ann"], study["bob"]
    assert isinstance(ann, dict)
    assert isinstance(bob, dict)
    for code, weights in (("Pay", "quadratic"), ("Hours", "quadratic"), ("Praise", None)):
        row = rows[code]
        assert row["n_units"] == 30
        a, b = ann[code][10:], bob[code][10:]
        expected = cohen_kappa_score(a, b, weights=weights)
        assert row["kappa"]["value"] == pytest.approx(expected)
        assert row["kappa"]["low"] <= row["kappa"]["value"] <= row["kappa"]["high"]
        assert row["kappa_weights"] == (weights or "none")
        assert row["alpha_level"] == ("nominal" if code == "Praise" else "ordinal")
        assert row["percent"]["value"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
        assert row["applies"]["bob"] == pytest.approx(
            np.mean(np.array(b) >= (1 if code == "Praise" else 4))
        )
    pooled = payload["pooled"]
    assert pooled["code"] == "All codes"
    assert pooled["n_units"] == 90
    assert pooled["bootstrap"]["over"] == "clusters"
    # The same seed gives the same intervals.
    assert agreement_json(path, capsys, "--resamples", "200", "--seed", "7") == payload


def test_markdown_table_with_caption(
    study: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path = study["path"]
    capsys.readouterr()
    assert main(["agreement", str(path), "--format", "markdown", "--resamples", "300"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("| Code | Scale | Units | Agreement | Cohen's kappa |")
    assert lines[2].startswith("| All codes |")
    assert any(line.startswith("| Praise | binary, nominal | 30 |") for line in lines)
    caption = next(line for line in lines if line.startswith("*Table:"))
    assert "percentile bootstrap" in caption
    assert "300 resamples, seed 0" in caption


def test_table_output_and_one_code(
    study: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path = study["path"]
    capsys.readouterr()
    assert main(["agreement", str(path), "--code", "pay", "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "Pay" in out
    assert "Hours" not in out
    assert "All codes" not in out


def test_shared_units_and_three_coders(
    study: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path, tmp = study["path"], study["tmp"]
    assert isinstance(path, Path)
    assert isinstance(tmp, Path)
    cy = _perturb(_values(1), 3)
    _write_codes(tmp / "cy.csv", cy, range(20))
    assert main(["import-codes", str(path), str(tmp / "cy.csv"), "--coder", "cy"]) == 0
    every = agreement_json(path, capsys, "--resamples", "50", "--code", "Pay")
    shared = agreement_json(path, capsys, "--resamples", "50", "--units", "shared", "--code", "Pay")
    # all: ann+bob 10..39, ann+cy 0..19 -> 40 units; shared: 10..19 only.
    assert every["per_code"][0]["n_units"] == 40
    assert shared["per_code"][0]["n_units"] == 10
    assert every["per_code"][0]["kappa"] is None
    assert every["per_code"][0]["alpha"]["value"] is not None
    two = agreement_json(path, capsys, "--resamples", "50", "--coders", "ann,cy")
    assert two["per_code"][0]["n_units"] == 20


def test_one_category_is_marked_undefined_not_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "a.csv"
    responses.write_text("id,text\n1,a\n2,b\n3,c\n", encoding="utf-8")
    book = tmp_path / "c.yaml"
    book.write_text("name: x\nscale: binary\ncodes:\n  - name: Pay\n", encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(book)]) == 0
    for coder in ("ann", "bob"):
        codes = tmp_path / f"{coder}.csv"
        codes.write_text("id,Pay\n1,no\n2,no\n3,no\n", encoding="utf-8")
        assert main(["import-codes", str(path), str(codes), "--coder", coder]) == 0
    capsys.readouterr()
    for fmt in ("table", "markdown", "json"):
        assert main(["agreement", str(path), "--format", fmt, "--resamples", "20"]) == 0
        out = capsys.readouterr().out
        assert "nan" not in out.lower().replace("nana", "")
        assert "undefined" in out
        assert "single" in out


def test_control_characters_in_names_are_neutralised(
    study: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path, tmp = study["path"], study["tmp"]
    assert isinstance(path, Path)
    assert isinstance(tmp, Path)
    _write_codes(tmp / "evil.csv", _values(1), range(5))
    evil = "ev\x1b[31mil"
    # Deciding refuses such a name, in words:
    assert main(["import-codes", str(path), str(tmp / "evil.csv"), "--coder", evil]) == 1
    assert "control characters" in capsys.readouterr().err
    # A study file may hold one all the same (written by hand, or by an older release).
    assert main(["import-codes", str(path), str(tmp / "evil.csv"), "--coder", "evil"]) == 0
    rename_coders(path, {"evil": evil})
    for fmt in ("table", "markdown", "json"):
        capsys.readouterr()
        coders = f"ann,{evil}"
        assert main(["agreement", str(path), "--coders", coders, "--format", fmt]) == 0
        out = capsys.readouterr().out
        if fmt != "json":
            assert "\x1b" not in out
            assert "\\x1b" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--coders", "ann"], "two or more coders"),
        (["--coders", "ann,zed"], "no decisions by coder 'zed'; coders in this study: ann, bob"),
        (["--coders", "ann,ann"], "named twice"),
        (["--coders", "ann,z\x1b[2Jq"], "no decisions by coder 'z\\x1b[2Jq'"),
        (["--coders", "ann,model"], "no scores yet"),
        (["--code", "Bonus"], "no code 'Bonus'"),
    ],
)
def test_bad_input_is_one_line_and_leaves_the_study_unchanged(
    study: dict[str, object], capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    path = study["path"]
    assert isinstance(path, Path)
    before = digest(path)
    capsys.readouterr()
    assert main(["agreement", str(path), *argv]) == 1
    assert expected in one_error_line(capsys.readouterr().err)
    assert digest(path) == before


def test_no_shared_units_and_a_single_coder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "a.csv"
    responses.write_text("id,text\n1,a\n2,b\n3,c\n4,d\n", encoding="utf-8")
    book = tmp_path / "c.yaml"
    book.write_text("name: x\nscale: binary\ncodes:\n  - name: Pay\n", encoding="utf-8")
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(book)]) == 0
    (tmp_path / "ann.csv").write_text("id,Pay\n1,no\n2,yes\n", encoding="utf-8")
    (tmp_path / "bob.csv").write_text("id,Pay\n3,no\n4,yes\n", encoding="utf-8")
    assert main(["import-codes", str(path), str(tmp_path / "ann.csv"), "--coder", "ann"]) == 0
    capsys.readouterr()
    assert main(["agreement", str(path)]) == 1
    assert "two or more coders; coders in this study: ann" in one_error_line(
        capsys.readouterr().err
    )
    assert main(["import-codes", str(path), str(tmp_path / "bob.csv"), "--coder", "bob"]) == 0
    capsys.readouterr()
    assert main(["agreement", str(path)]) == 1
    assert "no shared units" in one_error_line(capsys.readouterr().err)


def test_usage_errors_exit_2(study: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    path = study["path"]
    for argv in (["--resamples", "0"], ["--resamples", "x"], ["--format", "html"], ["--seed", "a"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["agreement", str(path), *argv])
        assert exit_info.value.code == 2
    capsys.readouterr()
    assert main(["agreement", str(Path(str(path)).with_name("missing.codecurve"))]) == 1
    assert "no such study" in one_error_line(capsys.readouterr().err)


def _scored_study(path: Path) -> Path:
    """20 responses scored on one code; the model's pick is 5 on r0-r9 and 1 on r10-r19."""
    from codebooks.model import LIKERT_5, Code, Codebook
    from scoring.backend import ModelIdentity
    from scoring.curves import curve_from_logprobs
    from scoring.score import Score, ScoreConfig
    from study import ResponseTable

    config = ScoreConfig(
        model=ModelIdentity("fake:agree", "r1", "float32", "cpu", "fake"),
        template_id="test-v1",
        template_hash="t0",
        context="definition",
        scale=LIKERT_5,
    )
    book = Codebook(name="A", codes=(Code("pay", "Pay", definition="Money."),))
    texts = {f"r{i}": f"response {i}" for i in range(20)}
    opened = Study.create(path, responses=ResponseTable.from_texts(texts), codebook=book)
    config_id = opened.scores.ensure_config(config)
    high = np.log([0.02, 0.02, 0.02, 0.04, 0.90])
    low = np.log([0.90, 0.04, 0.02, 0.02, 0.02])
    opened.scores.store(
        config_id,
        [
            Score(
                response_id=f"r{i}",
                code_id="pay",
                config_key=config.key(),
                scale=LIKERT_5,
                curve=curve_from_logprobs(high if i < 10 else low, LIKERT_5.values),
                token_ids=tuple(((k,),) for k in range(5)),
                missing=(False,) * 5,
                prompt="p",
                prompt_hash="h",
                text_hash="t",
                code_hash="c",
            )
            for i in range(20)
        ],
    )
    # ana: agrees with the model on r0-r7 and r10-r17, says 3 on r8, r9, r18, r19.
    values = [5] * 8 + [3, 3] + [1] * 8 + [3, 3]
    opened.decisions.import_decisions(
        [(f"r{i}", "pay", v) for i, v in enumerate(values)], coder="ana"
    )
    # bob accepted the model's pick on r0 (left out when the model is a coder).
    opened.decisions.record("r0", "pay", 5, coder="bob", source="model", config_id=config_id)
    opened.decisions.record("r1", "pay", 4, coder="bob")
    opened.close()
    return path


def test_model_as_a_coder_uses_the_same_kappa_as_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _scored_study(tmp_path / "m.codecurve")
    payload = agreement_json(path, capsys, "--coders", "ana,model", "--resamples", "100")
    row = payload["per_code"][0]
    model = [5] * 10 + [1] * 10
    ana = [5] * 8 + [3, 3] + [1] * 8 + [3, 3]
    assert row["n_units"] == 20
    assert row["percent"]["value"] == pytest.approx(0.8)
    assert row["kappa"]["value"] == pytest.approx(
        cohen_kappa_score(ana, model, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert any("accepted the model's pick" in n for n in payload["notes"])
    capsys.readouterr()
    assert main(["screen", str(path), "--coder", "ana", "--format", "json"]) == 0
    screen = json.loads(capsys.readouterr().out)
    first = screen["agreement"][0]
    assert first["between"] == ["model", "ana"]
    assert first["kappa_quadratic"] == pytest.approx(row["kappa"]["value"])
    assert first["percent"] == pytest.approx(row["percent"]["value"])
    # bob's accepted pick on r0 is not evidence about the model: only r1 pairs with it.
    three = agreement_json(path, capsys, "--coders", "ana,bob,model", "--resamples", "20")
    assert three["per_code"][0]["n_units"] == 20


def test_real_subprocess(study: dict[str, object]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tui.cli", "agreement", str(study["path"]), "--resamples", "50"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error", "COLUMNS": "200"},
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Agreement: ann, bob" in run.stdout
    assert run.stderr == ""
