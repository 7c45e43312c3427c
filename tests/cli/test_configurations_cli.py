"""Configurations from the command line: the README's workflow screens the scored
decisions, ``--config`` chooses one, every error about one lists those that exist, and
honest exports (undecided wide cells empty unless ``--fill model``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from study.store import Study
from tui.cli import main

CODEBOOK = """\
name: Feedback
scale: binary
codes:
  - name: Timeliness
    definition: Waiting times, delays, being seen on time.
  - name: Staff
    definition: How staff treated the patient.
"""

N = 24


@pytest.fixture
def workflow(tmp_path: Path) -> Path:
    """The README's steps 1, 2 and 4, with the fake model in place of the embedded one."""
    responses = tmp_path / "answers.csv"
    responses.write_text(
        "id,text,question\n"
        + "".join(
            f"r{i},the wait was {i} hours and staff were kind,What was good?\n" for i in range(N)
        ),
        encoding="utf-8",
    )
    codebook = tmp_path / "codebook.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    path = tmp_path / "work.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    assert main(["score", str(path), "--context", "full", "--model", "fake"]) == 0
    coded = tmp_path / "coded_by_ben.csv"
    rows = ["id,Timeliness,Staff"] + [
        f"r{i},{'yes' if i % 3 else 'no'},{'yes' if i % 2 else 'no'}" for i in range(N // 2)
    ]
    coded.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["import-codes", str(path), str(coded), "--coder", "ben"]) == 0
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def screen_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    assert main(["screen", str(path), "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_readme_workflow_ends_with_a_screen_over_the_scored_decisions(
    workflow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = screen_json(workflow, capsys)
    assert payload["n_unscored"] == 0
    assert payload["pooled"]["n_items"] == N // 2 * 2
    assert "full" in payload["config"]["label"]
    assert payload["headline"]
    assert payload["next_action"]
    # A yes/no code is cut at p_max >= 0.75, stated as a p_max value.
    assert payload["per_code"]["Timeliness"]["binarisation_threshold"].startswith(">= 0.750")
    # The table says it in words first: what the model's picks are worth, then the
    # response pattern beside AUROC and kappa.
    assert main(["screen", str(workflow)]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    # What the picks are worth (agreement, kappa) comes before any tier and the table.
    pooled = flat.index("All codes: the model agrees with you on 46% of 24 pairs, kappa")
    assert pooled < flat.index("response pattern:") < flat.index("Validity report (VRS)")
    assert "AUROC" in out
    assert "Next: " in out
    assert "confident when wrong" in out


def test_screen_config_chooses_and_an_unknown_one_lists_those_that_exist(
    workflow: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Study.open(workflow, read_only=True) as study:
        active = study.scores.active_config_id()
        total = study.pair_count()
    payload = screen_json(workflow, capsys, "--config", str(active))
    assert payload["config"]["id"] == active
    capsys.readouterr()
    assert main(["screen", str(workflow), "--config", "9"]) == 1
    err = capsys.readouterr().err
    assert "no scoring configuration 9" in err
    assert f"#{active} fake (fake) · full" in err
    assert f"({total} of {total} scored, active)" in err
    assert "Traceback" not in err


def test_export_config_9_lists_the_configurations(
    workflow: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "coded.csv"
    assert main(["export", str(workflow), "-o", str(out), "--config", "9"]) == 1
    err = capsys.readouterr().err
    assert err.count("codecurve: error:") == 1
    assert "no scoring configuration 9" in err
    assert "fake (fake) · full" in err
    assert "scored" in err
    assert not out.exists()


def test_wide_export_leaves_undecided_cells_empty_unless_filled(
    workflow: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "wide.csv"
    assert main(["export", str(workflow), "-o", str(plain), "--layout", "wide"]) == 0
    rows = read_csv(plain)
    assert len(rows) == N
    coded, uncoded = rows[0], rows[-1]
    assert coded["Timeliness"] == "0"
    assert coded["Staff"] == "0"
    assert uncoded["Timeliness"] == ""
    assert uncoded["Staff"] == ""
    assert uncoded["Timeliness (confidence)"] != ""  # the model's score is still there
    assert "Timeliness (source)" not in coded

    filled = tmp_path / "filled.csv"
    argv = ["export", str(workflow), "-o", str(filled), "--layout", "wide", "--fill", "model"]
    assert main(argv) == 0
    rows = read_csv(filled)
    assert rows[-1]["Timeliness"] in ("0", "1")
    assert rows[-1]["Timeliness (source)"] == "model"
    assert rows[0]["Timeliness (source)"] == "human"

    capsys.readouterr()
    argv = ["export", str(workflow), "-o", str(tmp_path / "long.csv"), "--fill", "model"]
    assert main(argv) == 2
    assert "--fill is for the wide layout" in capsys.readouterr().err


def test_provenance_counts_values_by_source(workflow: Path) -> None:
    from study.exchange.frames import provenance, source_counts

    with Study.open(workflow, read_only=True) as study:
        counts = source_counts(study)
        info = provenance(study, layout="wide")
        filled = provenance(study, layout="wide", fill="model")
        long = provenance(study, layout="long")
        pairs = study.pair_count()
    assert counts == {"coder": N, "accepted": 0, "delegated": 0, "model": pairs - N, "none": 0}
    # The wide layout leaves the unreviewed cells empty: its provenance counts them so.
    assert info["values by source"] == (
        f"coder {N}, accepted 0, delegated 0, model 0, none {pairs - N}"
    )
    assert "empty where nobody decided" in info["wide cells"]
    assert filled["values by source"] == (
        f"coder {N}, accepted 0, delegated 0, model {pairs - N}, none 0"
    )
    assert long["values by source"] == filled["values by source"]


def test_new_warns_when_no_code_has_a_definition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = tmp_path / "a.csv"
    responses.write_text("id,text\n1,hello\n", encoding="utf-8")
    bare = tmp_path / "bare.yaml"
    bare.write_text("name: Bare\ncodes:\n  - name: Pay\n  - name: Team\n", encoding="utf-8")
    assert (
        main(
            [
                "new",
                str(tmp_path / "b.codecurve"),
                "--responses",
                str(responses),
                "--codebook",
                str(bare),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "warning: no code has a definition" in err
    assert "docs/codebooks.md" in err
    defined = tmp_path / "defined.yaml"
    defined.write_text(CODEBOOK, encoding="utf-8")
    assert (
        main(
            [
                "new",
                str(tmp_path / "d.codecurve"),
                "--responses",
                str(responses),
                "--codebook",
                str(defined),
            ]
        )
        == 0
    )
    assert "no code has a definition" not in capsys.readouterr().err


def test_screen_help_cites_the_docs_page(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["screen", "--help"])
    out = capsys.readouterr().out
    assert "docs/method.md" in out
    assert "METHOD.md" not in out.replace("docs/method.md", "")


def test_review_context_note_names_the_active_configuration(workflow: Path) -> None:
    from tui.launch import context_note

    assert context_note(workflow, "full") is None
    assert context_note(workflow, None) is None
    assert context_note(workflow, None, "fake") is None
    model_note = context_note(workflow, None, "Qwen/Qwen2.5-7B-Instruct")
    assert model_note is not None
    assert "--model Qwen/Qwen2.5-7B-Instruct starts a new configuration" in model_note
    note = context_note(workflow, "definition")
    assert note is not None
    assert "starts a new configuration" in note
    assert "fake (fake) · full" in note


def test_export_to_standard_output(
    workflow: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["export", str(workflow), "-o", "-", "--format", "jsonl"]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in out.splitlines()]
    file_rows = tmp_path / "rows.jsonl"
    assert main(["export", str(workflow), "-o", str(file_rows)]) == 0
    assert rows == [json.loads(line) for line in file_rows.read_text("utf-8").splitlines()]
    assert main(["export", str(workflow), "-o", "-", "--format", "csv", "--layout", "wide"]) == 0
    wide = list(csv.DictReader(capsys.readouterr().out.lstrip("\ufeff").splitlines()))
    assert len(wide) == len({r["response_id"] for r in rows})
    # Standard output needs a text format; nothing is written anywhere when refused.
    assert main(["export", str(workflow), "-o", "-"]) == 2
    assert "--format csv or jsonl" in capsys.readouterr().err
    assert main(["export", str(workflow), "-o", "-", "--format", "xlsx"]) == 2
    after = sorted(p.name for p in tmp_path.iterdir())
    assert after == sorted([*before, "rows.jsonl", "rows.jsonl-metadata.json"])
