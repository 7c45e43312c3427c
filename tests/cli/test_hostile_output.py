"""A hostile study through every command: no raw control or bidirectional character out.

The study's texts, ids, attribute values, code names, definitions, notes and coders'
names carry C0 and C1 controls, ESC sequences (a title, a screen clear, OSC 52 to the
clipboard) and the bidirectional overrides and isolates (U+202E, U+2066). Every command
and output format is run over it, those that print a table and those that refuse with a
message alike; the bytes on stdout and stderr carry none of them raw.
"""

from __future__ import annotations

import contextlib
import csv
import re
from pathlib import Path

import pytest

from study import Study
from tests.factories import rename_coders
from tui.cli import main

#: C0 and C1 controls (tab and line feed aside), DEL, lone surrogates, and the
#: bidirectional embeddings, overrides and isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

INJECTED = "\x1b]0;pwned\x07\x1b]52;c;aGVsbG8=\x07\x1b[2J\x9b31m \u202eevil\u2066x\u2069 \x85end"

#: The first coder: the command line quotes this name back (no space: one argument).
ANA = f"ana{INJECTED}".replace(" ", "_")

CODEBOOK = f"""\
name: "Hostile {INJECTED.encode("unicode_escape").decode()}"
scale: 1-5
codes:
  - name: "Pay \\e[31m[bold]red[/bold] \\u202eyap"
    definition: "Salary\\a and benefits \\e]52;c;aGk=\\a."
  - name: "Team \\u2066mates\\u2069 \\x9b2J"
    definition: "Colleagues \\e[2J."
"""


def write_responses(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text", "group"])
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    rows = [
        (f"r{i}\x1b[7m\u202e", f"text {i} {INJECTED}", f"g{i % 2}\x1b]0;t\x07\u2066")
        for i in range(12)
    ]
    responses = write_responses(folder / "answers.csv", rows)
    more = write_responses(
        folder / "more.csv", [(f"n{i}\u202e\x1b[2J", f"new {INJECTED}", "g\x9b") for i in range(3)]
    )
    codebook = folder / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    revised = folder / "revised.yaml"
    revised.write_text(
        CODEBOOK.replace("Colleagues", "Coworkers \\u202eand\\e[5m friends"), encoding="utf-8"
    )
    codes = folder / "codes.csv"
    with codes.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "codes"])
        writer.writerow([rows[0][0], "Unknown \u202ecode\x1b[2J"])
    path = folder / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    assert main(["score", str(path), "--model", "fake"]) == 0
    assert main(["score", str(path), "--model", "fake", "--context", "none"]) == 0
    assert main(["audit", str(path), "--size", "8"]) == 0
    with Study.open(path) as study:
        ids = study.response_ids()
        code_ids = [c.id for c in study.codebook.codable]
        # Coders' names are checked when they decide; a hostile file holds them anyway
        # (written below straight into the file, as an attacker would).
        for n, coder in enumerate(PLAIN_CODERS):
            study.decisions.import_decisions(
                [(r, c, 1 + (i * 3 + n) % 5) for i, r in enumerate(ids) for c in code_ids],
                coder=coder,
            )
            study.decisions.set_note(ids[0], code_ids[0], f"note {INJECTED}", coder=coder)
            study.decisions.set_memo(ids[1], f"memo {INJECTED}", coder=coder)
    rename_coders(path, dict(zip(PLAIN_CODERS, (ANA, "ben\u202e\x1b[1m"), strict=True)))
    return {
        "study": path,
        "responses": responses,
        "more": more,
        "codebook": codebook,
        "revised": revised,
        "codes": codes,
        "folder": folder,
    }


#: The names the fixture decides under, renamed in the file afterwards.
PLAIN_CODERS = ("plainana", "plainben")


#: Every command and output format; {study}, {responses}... are the fixture's paths. Some
#: refuse (two coders and no --coder, an unknown code, a usage error): their messages
#: quote the hostile names and are checked the same way.
COMMANDS = [
    "audit {study}",
    "audit {study} --format json",
    f"audit {{study}} --coder {ANA}",
    "screen {study}",
    f"screen {{study}} --coder {ANA}",
    f"screen {{study}} --coder {ANA} --format markdown",
    f"screen {{study}} --coder {ANA} --format json",
    "screen {study} --code Nope\u202e\x1b[2J",
    "agreement {study}",
    "agreement {study} --format markdown",
    "agreement {study} --format json",
    "agreement {study} --coders ana,nobody\u202e",
    "delegate {study}",
    f"delegate {{study}} --coder {ANA}",
    f"delegate {{study}} --coder {ANA} --format json",
    "codebook {study}",
    "codebook {study} --revise {revised}",
    "compare {study}",
    f"compare {{study}} --coder {ANA}",
    f"compare {{study}} --coder {ANA} --format markdown",
    f"compare {{study}} --coder {ANA} --format json",
    f"compare {{study}} --coder {ANA} --sample audit --format json",
    f"findings {{study}} --coder {ANA}",
    f"findings {{study}} --coder {ANA} --format json",
    f"findings {{study}} --coder {ANA} --format markdown",
    f"findings {{study}} --coder {ANA} --by group",
    f"findings {{study}} --coder {ANA} --by group --format json",
    f"findings {{study}} --coder {ANA} --co-occurrence",
    f"findings {{study}} --coder {ANA} --co-occurrence --format json",
    f"findings {{study}} --coder {ANA} --code pay-31m-bold-red-bold-yap --list",
    f"findings {{study}} --coder {ANA} --code pay-31m-bold-red-bold-yap --list --format json",
    "findings {study} --coder nobody\u202e",
    f"export {{study}} --coder {ANA} -o {{folder}}/out.csv",
    "export {study} --all-coders -o {folder}/all.jsonl",
    f"export {{study}} --coder {ANA} --project {{folder}}/out.qdpx",
    "export {study} --codebook {folder}/book.yaml",
    "export {study} --coder nobody\u202e -o {folder}/x.csv",
    "import-codes {study} {codes} --coder carl\u202e\x1b[2J",
    "import-codes {study} {codes} --coder carl\u202e --skip-unknown",
    "add {study} --responses {more}",
    "add {study} --responses {responses} --update",
    "score --responses {responses} --codebook {codebook} --model fake",
    "new {folder}/again.codecurve --responses {responses} --codebook {codebook}",
    "new {study} --responses {responses} --codebook {codebook}",
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.replace(ANA, "ANA") for c in COMMANDS])
def test_no_command_prints_a_raw_control_or_override(
    hostile: dict[str, Path], command: str, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    argv = [part.format(**hostile) for part in command.split(" ")]
    capfdbinary.readouterr()
    with contextlib.suppress(SystemExit):  # a usage error: its message is checked too
        main(argv)
    out, err = capfdbinary.readouterr()
    for stream in (out, err):
        text = stream.decode("utf-8", "replace")
        assert b"\x1b" not in stream, text
        assert not UNSAFE.search(text), (UNSAFE.findall(text), text)
    assert b"Traceback" not in err


#: Data written to standard output: kept as it is down a pipe, shown safe on a terminal.
DATA_COMMANDS = [
    f"findings {{study}} --coder {ANA} --format csv",
    f"findings {{study}} --coder {ANA} --by group --format csv",
    f"findings {{study}} --coder {ANA} --co-occurrence --format csv",
    f"findings {{study}} --coder {ANA} --code pay-31m-bold-red-bold-yap --list --format csv",
    f"export {{study}} --coder {ANA} -o - --format csv",
    f"export {{study}} --coder {ANA} -o - --format jsonl",
]


def on_a_terminal(argv: list[str]) -> bytes:
    """What ``codecurve ARGV`` prints to a terminal (a pseudo-terminal), whole."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", *argv],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"},
        cwd=root,
    )
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed: all is read
            break
        if not chunk:
            break
        out.extend(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 0, out.decode("utf-8", "replace")
    return bytes(out)


@pytest.mark.parametrize(
    "command", DATA_COMMANDS, ids=[c.replace(ANA, "ANA") for c in DATA_COMMANDS]
)
def test_data_on_a_terminal_carries_no_raw_control(hostile: dict[str, Path], command: str) -> None:
    argv = [part.format(**hostile) for part in command.split(" ")]
    shown = on_a_terminal(argv)
    text = shown.decode("utf-8", "replace")
    assert text.count(",") >= 2 or "{" in text  # the data is there, made safe
    assert b"\x1b" not in shown, text
    assert not UNSAFE.search(text.replace("\r", "")), (UNSAFE.findall(text), text)


def test_data_down_a_pipe_is_kept_as_it_is(
    hostile: dict[str, Path], capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    command = DATA_COMMANDS[3]
    argv = [part.format(**hostile) for part in command.split(" ")]
    capfdbinary.readouterr()
    assert main(argv) == 0
    out, _ = capfdbinary.readouterr()
    assert INJECTED.encode() in out  # a cell's bytes, for the program that reads them
