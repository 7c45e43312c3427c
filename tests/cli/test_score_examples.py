"""``codecurve score STUDY --context examples``: a coder's decided pairs in the prompt, as a
configuration of its own that ``compare --sample audit`` puts beside the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from study import Study
from tui.cli import main


@pytest.fixture
def study(tmp_path: Path) -> Path:
    lines = ["respondent,answer"] + [f"r{i},answer number {i}" for i in range(1, 21)]
    responses = tmp_path / "answers.csv"
    responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(
        "name: W\ncodes:\n  - name: Pay\n    definition: Money.\n  - name: Hours\n",
        encoding="utf-8",
    )
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    assert main(["score", str(path), "--model", "fake", "--context", "full"]) == 0
    assert main(["audit", str(path), "--per-code", "8", "--seed", "3"]) == 0
    return path


def decide(path: Path, coder: str = "ana") -> None:
    """The coder decides every pair: the audit blind, the rest in the queue."""
    with Study.open(path) as s:
        sample = s.audit.sample()
        assert sample is not None
        for j, code in enumerate(("pay", "hours")):
            for i, rid in enumerate(s.response_ids()):
                value = (i * 7 + j) % 5 + 1
                blind = sample.is_audit(rid, code)
                s.decisions.record(rid, code, value, coder=coder, blind=blind)


def configs(path: Path) -> list[tuple[int, str, str]]:
    with Study.open(path) as s:
        return [(r.id, r.context, r.examples_hash) for r in s.scores.configs()]


def test_scoring_with_examples_makes_a_configuration_that_compare_lists(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decide(study)
    capsys.readouterr()
    assert main(["score", str(study), "--model", "fake", "--context", "examples"]) == 0
    err = capsys.readouterr().err
    assert "examples from ana's decisions, up to 2 per value decided" in err
    assert "Pay: " in err
    assert "shown (values" in err
    assert "is not the active one" in err
    (full, examples) = configs(study)
    assert full[1] == "full"
    assert examples[1] == "examples"
    assert examples[2]
    with Study.open(study) as s:
        assert s.scores.active_config_id() == full[0]  # not activated unless asked
        assert s.scores.scored_count(examples[0]) == s.pair_count()
        sample = s.audit.sample()
        assert sample is not None
        kept = s.meta()[f"examples:{examples[2]}"]
        shown = {
            (e["response_id"], c["code_id"])
            for c in json.loads(kept)["codes"]
            for e in c["examples"]
        }
        assert shown
        assert not any(sample.is_audit(rid, code) for rid, code in shown)
    # The same decisions give the same configuration: nothing new on a second run.
    assert main(["score", str(study), "--model", "fake", "--context", "examples"]) == 0
    assert "stored 0 new scores" in capsys.readouterr().err
    assert len(configs(study)) == 2
    # K per value: another example set, another configuration.
    assert (
        main(["score", str(study), "--model", "fake", "--context", "examples", "--examples", "1"])
        == 0
    )
    assert len(configs(study)) == 3
    capsys.readouterr()
    assert (
        main(["compare", str(study), "--sample", "audit", "--format", "json", "--resamples", "20"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["sample"] == "audit"
    labels = [c["label"] for c in data["configs"]]
    assert sum("[examples]" in label for label in labels) == 2
    assert sum("[full]" in label for label in labels) == 1
    per_code = {(r["config_id"], r["code"]) for r in data["rows"]}
    assert {code for _, code in per_code} == {"pay", "hours", "All codes"}
    assert {cid for cid, _ in per_code} == {c[0] for c in configs(study)}
    assert main(["compare", str(study), "--sample", "audit", "--resamples", "20"]) == 0
    assert "[examples]" in capsys.readouterr().out


def test_an_activated_examples_configuration_resumes_with_its_examples(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decide(study)
    args = ["score", str(study), "--model", "fake", "--context", "examples", "--activate"]
    assert main(args) == 0
    (_, examples) = configs(study)
    with Study.open(study) as s:
        assert s.scores.active_config_id() == examples[0]
        # More decisions by another coder would ask for --coder; resuming does not ask.
        s.decisions.record("r1", "pay", 1, coder="ben")
    capsys.readouterr()
    assert main(["score", str(study), "--model", "fake"]) == 0
    err = capsys.readouterr().err
    assert f"resuming configuration {examples[0]} with its examples from ana's" in err
    assert len(configs(study)) == 2


def test_bad_input_is_one_clear_line(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["score", str(study), "--model", "fake", "--context", "examples"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("codecurve: error:")
    assert "no coder has decided anything" in err
    assert "Traceback" not in err
    with Study.open(study) as s:
        sample = s.audit.sample()
        assert sample is not None
        for rid in sample.pairs("pay"):
            s.decisions.record(rid, "pay", 2, coder="ana", blind=True)
    assert main(["score", str(study), "--model", "fake", "--context", "examples"]) == 1
    err = capsys.readouterr().err
    assert "audit pairs, which are never shown" in err
    decide(study, coder="ben")
    assert main(["score", str(study), "--model", "fake", "--context", "examples"]) == 1
    assert "--coder" in capsys.readouterr().err
    assert main(["score", str(study), "--model", "fake", "--examples", "3"]) == 2
    assert "--context examples" in capsys.readouterr().err
    assert (
        main(["score", str(study), "--model", "fake", "--context", "full", "--coder", "ben"]) == 2
    )
    capsys.readouterr()
    assert len(configs(study)) == 1  # nothing was added by a refused run
    assert (
        main(["score", str(study), "--model", "fake", "--context", "examples", "--coder", "ben"])
        == 0
    )
    assert len(configs(study)) == 2


def test_the_file_mode_has_no_decisions_to_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "r.csv"
    responses.write_text("id,text\na,hello\n", encoding="utf-8")
    codebook = tmp_path / "c.yaml"
    codebook.write_text("name: W\ncodes:\n  - name: Pay\n", encoding="utf-8")
    args = ["score", "--responses", str(responses), "--codebook", str(codebook)]
    assert main([*args, "--model", "fake", "--context", "examples"]) == 2
    assert "score a STUDY" in capsys.readouterr().err


def test_the_default_written_out_for_help_is_the_one_used() -> None:
    from study.analysis._examples import DEFAULT_PER_VALUE
    from tui.commands.score import DEFAULT_EXAMPLES

    assert DEFAULT_EXAMPLES == DEFAULT_PER_VALUE
