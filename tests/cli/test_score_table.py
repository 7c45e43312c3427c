"""The headless ``score`` table keeps its pick, p and H/lnK columns on a narrow terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main

CODEBOOK = """\
name: Survey
scale: 1-5
codes:
  - name: Working conditions and the physical environment
    definition: Heat, noise, space.
"""


@pytest.mark.parametrize("width", [80, 140])
def test_pick_p_and_entropy_survive_a_narrow_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    responses = tmp_path / "r.csv"
    long_text = "The rota changes every week and nobody tells us until the night before " * 3
    responses.write_text(f"id,text\nresponse-0001,{long_text}\n", encoding="utf-8")
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    assert (
        main(
            ["score", "--responses", str(responses), "--codebook", str(codebook), "--model", "fake"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "pick" in line)
    for column in ("pick", "p ", "H/lnK", "curve"):
        assert column in header, header
    row = lines[lines.index(header) + 1]
    assert row.startswith("response-0001"), row
    assert all(len(line) <= width for line in lines)
    # a probability and a normalised entropy, both as 0.xx, are on the row
    assert sum(part.startswith(("0.", "1.")) for part in row.split()) >= 2, row
    assert ("rota" in row) == (width >= 100)
