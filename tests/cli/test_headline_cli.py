"""The honest headline before any tier: a model that answers No to every pair is called
useless in words, in the CLI's text, its JSON and its Markdown, and no tier stands bare."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from codebooks.model import BINARY, Code, Codebook
from scoring.backend import ModelIdentity
from scoring.curves import curve_from_logprobs
from scoring.score import Score, ScoreConfig
from study import ResponseTable, Study
from tui.cli import main

CONFIG = ScoreConfig(
    model=ModelIdentity("fake:constant", "r1", "float32", "cpu", "fake"),
    template_id="t-v1",
    template_hash="t0",
    context="definition",
    scale=BINARY,
)
CODES = ("Pay", "Staff", "Wait", "Food", "Parking")
TIERS = ("Valid", "Invalid", "Indeterminate", "Insufficient data")


def constant_study(
    path: Path, *, n: int = 75, codes: tuple[str, ...] = CODES, coder: str = "ana", seed: int = 0
) -> Path:
    """``n`` responses x ``codes`` yes/no codes; the model answers No to every pair with a
    confidence between 0.55 and 0.97; ``coder`` decided every pair, Yes on about 16%."""
    rng = np.random.default_rng(seed)
    codebook = Codebook(
        name="Constant", scale=BINARY, codes=tuple(Code(c.lower(), c, definition=c) for c in codes)
    )
    texts = {f"r{i}": f"comment {i}" for i in range(n)}
    study = Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook)
    config_id = study.scores.ensure_config(CONFIG)
    scores, decisions = [], []
    for code in codes:
        for i in range(n):
            p = float(rng.uniform(0.55, 0.97))
            scores.append(
                Score(
                    response_id=f"r{i}",
                    code_id=code.lower(),
                    config_key=CONFIG.key(),
                    scale=BINARY,
                    curve=curve_from_logprobs(np.log([p, 1 - p]), BINARY.values),
                    token_ids=(((0,),), ((1,),)),
                    missing=(False, False),
                    prompt="p",
                    prompt_hash="h",
                    text_hash="t",
                    code_hash="c",
                )
            )
            decisions.append((f"r{i}", code.lower(), int(rng.random() < 0.16)))
    study.scores.store(config_id, scores)
    study.decisions.import_decisions(decisions, coder=coder)
    study.close()
    return path


def bare_tier(line: str) -> bool:
    """A line naming a tier without AUROC and kappa beside it (the VRS table's own tier
    row and the gloss of JSON aside)."""
    named = any(re.search(rf"\b{t}\b", line) for t in TIERS)
    return named and not ("AUROC" in line and "kappa" in line)


def test_a_constant_model_is_called_useless_in_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one printed line per line, for the check below
    path = constant_study(tmp_path / "c.codecurve")
    assert main(["screen", str(path)]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert flat.startswith(
        "The model answered No to all 375 pairs across all codes: it adds nothing here."
    )
    sentence = "the model answered No to all 75 pairs of this code: it adds nothing here."
    for code in CODES:
        assert f"{code}: {sentence}" in flat
    assert "Model: No 100%, Yes 0%".lower() in flat.lower()
    # The headline and every line above the VRS tables: never a bare tier.
    head = out.split("Validity report (VRS)")[0]
    for line in head.splitlines():
        assert not bare_tier(line), line
    assert "response pattern:" in head
    assert "kappa 0.00 [0.00, 0.00]" in head


def test_a_constant_model_is_called_useless_in_json_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = constant_study(tmp_path / "c.codecurve")
    assert main(["screen", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["headline"] == (
        "the model answered No to all 375 pairs across all codes: it adds nothing here"
    )
    pooled = out["headlines"]["pooled"]
    assert pooled["constant"] == "No"
    assert pooled["adds_nothing"] is True
    assert pooled["kappa"] == 0.0
    assert pooled["model_picks"] == {"No": 375, "Yes": 0}
    for code in CODES:
        one = out["headlines"]["per_code"][code]
        assert one["sentence"].endswith("of this code: it adds nothing here")
        # The seed's tier stays, with its pattern in words and the gloss.
        assert out["per_code"][code]["tier"] in TIERS
        assert out["per_code"][code]["pattern"]
    assert "not a verdict on the model" in out["tier_gloss"]
    assert main(["screen", str(path), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("**The model answered No to all 375 pairs across all codes")
    before_tables = md.split("## All codes pooled")[0]
    for line in before_tables.splitlines():
        assert not bare_tier(line), line


def test_compare_audit_and_delegate_never_show_a_bare_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = constant_study(tmp_path / "c.codecurve", n=60, codes=("Pay", "Staff"))
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "response pattern" in out
    assert not any(bare_tier(line) for line in out.splitlines())


def test_the_projects_provenance_names_no_bare_tier(tmp_path: Path) -> None:
    from study.refi import project_from_study

    path = constant_study(tmp_path / "c.codecurve", n=40, codes=("Pay", "Staff"))
    with Study.open(path, read_only=True) as study:
        project = project_from_study(study, coder="ana")
    text = next(n.text for n in project.notes if n.name == "codecurve provenance")
    line = next(x for x in text.splitlines() if x.startswith("screen tier against ana: "))
    assert "pooled: the model answered No to all 80 pairs across all codes: it adds nothing" in line
    assert "Pay: the model answered No to all 40 pairs of this code" in line
    assert "not a verdict on the model" in line
    for part in line.split("; "):
        if any(re.search(rf"\b{t}\b", part) for t in TIERS):
            assert "AUROC" in part, part
            assert "kappa" in part, part
