"""A survey of three questions, each with its own codes, in one study: from ``new`` to the
report with the fake model (issue 35, 9). Pair counts, the audit and the findings are
per question; a code never has a pair on another question's answers."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from study import Study
from tui.cli import main

CODEBOOK = """\
name: Online exams
question_column: question_id
scale: binary
codes:
  - name: Privacy
    definition: worries about being watched or recorded
    questions: [q1]
  - name: Stress
    definition: the exam made them anxious
    questions: [q1, q2]
  - name: Technical problems
    definition: software, camera or connection failures
    questions: [q2]
  - name: Alternatives
    definition: another way to examine is proposed
    questions: [q3]
  - name: Negative tone
    definition: the answer is negative overall
"""

#: Answers per question: q1 about proctoring, q2 about problems, q3 about alternatives.
PER_QUESTION = {"q1": 30, "q2": 20, "q3": 10}


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def write_survey(folder: Path) -> tuple[Path, Path]:
    responses = folder / "answers.csv"
    with responses.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "question_id", "answer"])
        n = 0
        for question, count in PER_QUESTION.items():
            for i in range(count):
                n += 1
                writer.writerow([f"r{n}", question, f"answer {i} to {question}: camera worries"])
    codebook = folder / "codebook.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    return responses, codebook


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_three_questions_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    responses, codebook = write_survey(tmp_path)
    study = tmp_path / "exams.codecurve"
    assert (
        main(["new", str(study), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    )
    err = capsys.readouterr().err
    # Privacy 30 + Stress 50 + Technical 20 + Alternatives 10 + Negative tone 60.
    assert (
        "60 responses x 5 codes (170 pairs: each code only on the answers to its "
        "questions (3 questions of question_id))" in " ".join(err.split())
    )

    assert main(["score", str(study), "--model", "fake"]) == 0
    assert "170 of 170 pairs are scored" in capsys.readouterr().err

    assert main(["audit", str(study), "--draw", "--seed", "4"]) == 0
    with Study.open(study) as s:
        sample = s.audit.sample()
        assert sample is not None
        asked = {r.id: r.attrs["question_id"] for r in s.responses()}
        # Each code's default audit is its whole (small) population, of its questions only.
        assert dict(sample.sizes) == {
            "privacy": 30,
            "stress": 50,
            "technical-problems": 20,
            "alternatives": 10,
            "negative-tone": 60,
        }
        for code in s.codes:
            if code.questions:
                assert {asked[r] for r in sample.pairs(code.id)} == set(code.questions)
        queue = sample.queue()
    assert len(queue) == 170

    # Code the audit blind: a second file, one column per code, empty off its questions.
    truth = {
        (r, c): int(
            c == "negative-tone"
            or (
                (c, asked[r]) in {("privacy", "q1"), ("technical-problems", "q2")}
                and int(r[1:]) % 3 == 0
            )
        )
        for r, c in queue
    }
    coded = tmp_path / "coded.csv"
    with coded.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        names = {
            "privacy": "Privacy",
            "stress": "Stress",
            "technical-problems": "Technical problems",
            "alternatives": "Alternatives",
            "negative-tone": "Negative tone",
        }
        writer.writerow(["id", *names.values()])
        for r in asked:
            writer.writerow([r, *(truth.get((r, c), "") for c in names)])
    assert main(["import-codes", str(study), str(coded), "--coder", "ana"]) == 0
    capsys.readouterr()

    audit = cli_json(capsys, "audit", str(study))
    per_code = {c["code_id"]: c for c in audit["codes"]}
    assert {k: v["coded"] for k, v in per_code.items()} == {
        "privacy": 30,
        "stress": 50,
        "technical-problems": 20,
        "alternatives": 10,
        "negative-tone": 60,
    }

    findings = cli_json(capsys, "findings", str(study), "--by", "question_id")
    groups: dict[str, dict[str, int]] = {}
    for g in findings["groups"]:
        groups.setdefault(g["code_id"], {})[g["group"]] = g["pairs"]
    assert groups["privacy"] == {"q1": 30}
    assert groups["stress"] == {"q1": 30, "q2": 20}
    assert groups["technical-problems"] == {"q2": 20}
    assert groups["alternatives"] == {"q3": 10}
    assert groups["negative-tone"] == {"q1": 30, "q2": 20, "q3": 10}
    overall = {c["code_id"]: c for c in findings["codes"]}
    assert overall["privacy"]["pairs"] == 30
    assert overall["privacy"]["audit"]["estimate"] == pytest.approx(10 / 30)
    assert overall["technical-problems"]["audit"]["estimate"] == pytest.approx(
        6 / 20
    )  # r33, r36 ... r48

    screen = cli_json(capsys, "screen", str(study))
    assert screen["per_code"]["Privacy"]["n_items"] == 30
    assert screen["per_code"]["Alternatives"]["n_items"] == 10

    out = tmp_path / "coded-long.csv"
    assert main(["export", str(study), "-o", str(out)]) == 0
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 170

    report = tmp_path / "report.html"
    assert main(["report", str(study), "-o", str(report)]) == 0
    text = " ".join(re.sub(r"<[^>]+>", " ", report.read_text(encoding="utf-8")).split())
    assert "170 pairs were scored" in text
    # Each code's audit is of its own answers: all of Alternatives' 10 pairs, no more.
    assert "10 pairs of Alternatives" in text
