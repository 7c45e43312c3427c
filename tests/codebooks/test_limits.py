"""A codebook file too large to be one is refused before it is read.

A gigabyte of NUL bytes named ``.csv``, ``.yaml``, ``.json`` or ``.qdc`` (and an endless
device) is refused by its size, under a memory limit well below what reading it whole
would take, with one clear message naming the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebooks.errors import CodebookError
from codebooks.files import MAX_CODEBOOK_BYTES
from codebooks.readers import load_codebook

ROOT = Path(__file__).resolve().parents[2]

#: Address space for the child: the interpreter, pandas and the study package fit; a
#: gigabyte file read whole (let alone parsed) does not.
LIMIT = 1024**3

SCRIPT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from tui.cli import main
codes = []
for book in sys.argv[3:]:
    codes.append(main(["new", sys.argv[1], "--responses", sys.argv[2], "--codebook", book]))
print(codes)
"""


def test_a_gigabyte_codebook_is_refused_under_a_memory_limit(tmp_path: Path) -> None:
    books = []
    for suffix in (".csv", ".yaml", ".json", ".qdc"):
        book = tmp_path / f"nul{suffix}"
        with book.open("wb") as fh:
            fh.truncate(1024**3)  # sparse: a gigabyte of NUL bytes, no disk used
        books.append(str(book))
    endless = tmp_path / "zero.yaml"
    endless.symlink_to("/dev/zero")
    books.append(str(endless))
    responses = tmp_path / "answers.csv"
    responses.write_text("id,text\nr1,hello\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(limit=LIMIT), str(tmp_path / "s.codecurve"),
         str(responses), *books],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([1] * len(books)), done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == len(books), done.stderr
    for name, line in zip(books, lines, strict=True):
        assert line == (
            f"codecurve: error: {name}: larger than 32 MB, too large for a codebook; "
            "is it the right file?"
        )
    assert not (tmp_path / "s.codecurve").exists()


def test_a_codebook_at_the_limit_is_read_and_one_byte_more_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MAX_CODEBOOK_BYTES == 32 * 1024 * 1024
    book = tmp_path / "codes.yaml"
    text = "name: Small\nscale: 1-5\ncodes:\n  - name: Pay\n    definition: Money.\n"
    book.write_text(text, encoding="utf-8")
    monkeypatch.setattr("codebooks.files.MAX_CODEBOOK_BYTES", len(text))
    assert load_codebook(book).codes[0].name == "Pay"
    monkeypatch.setattr("codebooks.files.MAX_CODEBOOK_BYTES", len(text) - 1)
    with pytest.raises(CodebookError, match="too large for a codebook"):
        load_codebook(book)
