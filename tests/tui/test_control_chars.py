"""Text from files never reaches the terminal with control characters, nor as markup.

A response holding ``ESC ] 0 ; title BEL`` would set the terminal's title, ``ESC [ 2 J``
clear the screen, ``[bold]`` style what follows. Every text from a file is shown through
:func:`tui.text.printable`: in the queue and the detail pane (through Pilot), and in the
command line's tables and messages (``new``, the ``score`` table).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from study.intake.responses import ResponseTable
from study.store import Study
from tests.factories import CODEBOOK, rename_coders, synthetic_config, synthetic_scores
from tui.app import make_app
from tui.cli import main
from tui.text import cell_stable, markup_safe, middle_cut, one_line, plural, printable
from tui.widgets.detail import DetailPane
from tui.widgets.queue import PairQueue

#: Any C0 or C1 control character, DEL, or lone surrogate other than newline and tab,
#: and the bidirectional embeddings, overrides and isolates (they reorder what follows).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: The same on one line: an input field's value (newline and tab too).
UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

#: Sequences seen to do harm: a title, a screen clear, colours, a cursor move, CSI in
#: its one-byte C1 form, OSC 52 (clipboard), a bell, Rich markup.
HOSTILE = [
    "\x1b]0;pwned\x07 title set",
    "before\x1b[2Jafter clear",
    "\x1b[31mred\x1b[0m colour",
    "\x1b[10;10H moved",
    "\x9b31m C1 CSI",
    "\x1b]52;c;aGVsbG8=\x07 clipboard",
    "bell\x07\x07",
    "[bold red]markup[/] and [link=http://x]link[/link]",
    "nul\x00 and del\x7f and bs\x08\x08",
    "cr\roverwrites",
    "rtl \u202eevil\u202c text",
    "isolate \u2066\u2067left\u2069 and embed \u202a\u202b\u202c",
]

control_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\x1b", "\x9b", "\x07", "\x7f", "\r", "\x00", "\x85", "[", "]"]),
    ),
    min_size=1,
    max_size=40,
)


def test_printable_keeps_text_and_shows_controls() -> None:
    assert printable("plain text, ünïcode, 漢字 🙂") == "plain text, ünïcode, 漢字 🙂"
    assert printable("a\x1b[2Jb") == "a\u241b[2Jb"
    assert printable("x\x9by") == "x\\x9by"
    assert printable("del\x7f") == "del\u2421"
    assert printable("line\nnext\tcol") == "line\nnext\tcol"
    assert printable("line\nnext\tcol", single_line=True) == "line\u240anext\u2409col"
    assert one_line("  a \n\n b\x1b ") == "a b\u241b"
    assert printable("\udc80") == "\ufffd"


@given(control_text)
def test_printable_leaves_no_control_character(text: str) -> None:
    assert not UNSAFE.search(printable(text))
    assert not UNSAFE.search(one_line(text))
    assert "\n" not in one_line(text)


def test_markup_safe_escapes_markup_and_controls() -> None:
    from rich.text import Text

    title = markup_safe("[bold]id[/bold]\x1b[2J")
    shown = Text.from_markup(f"Response {title}")
    assert shown.plain == "Response [bold]id[/bold]\u241b[2J"
    assert not shown.spans


def test_the_command_line_loads_no_rich_for_help() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from tui.cli import build_parser; build_parser(); print('rich' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_cell_stable_splits_clusters_a_terminal_draws_narrower() -> None:
    assert cell_stable("plain 漢字 ش") == "plain 漢字 ش"
    assert cell_stable("👨\u200d👩\u200d👧") == "👨👩👧"
    assert cell_stable("👍🏽 ❤️") == "👍 ❤"
    assert cell_stable("🇫🇷 flag") == "FR flag"


def test_middle_cut_keeps_both_ends_of_a_long_id() -> None:
    assert middle_cut("NEAS S&C 2692 - Q1", 16) == "NEAS S&C…92 - Q1"
    assert middle_cut("NEAS S&C 2692 - Q2", 16) != middle_cut("NEAS S&C 2692 - Q1", 16)
    assert middle_cut("r12", 16) == "r12"
    assert middle_cut("abcdef", 3) == "abc"


@given(st.text(min_size=0, max_size=40), st.integers(min_value=0, max_value=30))
def test_middle_cut_never_exceeds_its_cells(text: str, cells: int) -> None:
    shown = middle_cut(cell_stable(printable(text, single_line=True)), cells)
    assert cell_len(shown) <= cells


@pytest.mark.parametrize("before", ["ß" * 30, "ﬁ" * 40, "x" * 30])
def test_a_searched_snippet_shows_its_match_even_where_folding_changes_lengths(
    before: str,
) -> None:
    from tui.widgets.queue_cells import snippet

    assert "hello" in snippet(f"{before} hello world", "HELLO")


def test_plural() -> None:
    assert plural(1, "response") == "1 response"
    assert plural(0, "response") == "0 responses"
    assert plural(1200, "pair") == "1,200 pairs"


def write_responses(folder: Path, texts: list[str]) -> Path:
    """A CSV of ``texts`` (ids carry control characters too); written as bytes."""
    import csv

    path = folder / "hostile.csv"
    with path.open("w", encoding="utf-8", newline="", errors="surrogatepass") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        for i, text in enumerate(texts):
            writer.writerow([f"r{i}\x1b[1m", text])
    return path


CODEBOOK_YAML = """\
name: Hostile
scale: 1-5
codes:
  - name: "Pay \\e[31m[bold]red[/bold]"
    definition: "Salary\\a and benefits."
"""


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(control_text.filter(lambda t: t.strip()), min_size=1, max_size=4))
def test_new_and_the_score_table_print_no_control_character(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    texts: list[str],
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    texts = [t.replace("\x00", "") or "x" for t in texts]
    responses = write_responses(folder, texts)
    codebook = folder / "codes.yaml"
    codebook.write_text(CODEBOOK_YAML, encoding="utf-8")
    capsys.readouterr()
    code = main(
        ["new", str(folder / "s.codecurve"), "--responses", str(responses), "--codebook",
         str(codebook)]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert not UNSAFE.search(out + err), out + err
    assert code in (0, 1)
    code = main(["score", "--responses", str(responses), "--codebook", str(codebook), "--model",
                 "fake"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    # stdout is the table; stderr holds messages and the progress bar (whose own cursor
    # codes are not from a file, and absent when stderr is not a terminal).
    assert not UNSAFE.search(out), out
    assert not UNSAFE.search(err), err
    if code == 0:
        assert "[bold]" in out or "red" in out  # the code's name, shown literally


def test_score_table_shows_markup_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = write_responses(tmp_path, [t.replace("\x00", "") for t in HOSTILE])
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK_YAML, encoding="utf-8")
    assert main(["score", "--responses", str(responses), "--codebook", str(codebook),
                 "--model", "fake"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert not UNSAFE.search(out)
    assert "[bold" in out  # the code name's markup is text, not style
    assert "\u241b" in out  # ESC shown as its picture


@pytest.fixture
def closing() -> Iterator[list[Study]]:
    """Studies to close after the test, whether it passed or not."""
    studies: list[Study] = []
    yield studies
    for study in studies:
        if not study.closed:
            study.close()


async def check_rendering(study: Study, *, moves: int = 40) -> set[str]:
    """Move through the queue; every line it draws, and the detail pane, is clean."""
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        queue = app.screen.query_one(PairQueue)
        detail = app.screen.query_one(DetailPane)
        width = queue.scrollable_content_region.width
        seen: set[str] = set()
        for _ in range(min(queue.total, moves)):
            for y in range(queue.scrollable_content_region.height):
                strip = queue.render_line(y)
                assert not UNSAFE.search(strip.text), repr(strip.text)
                assert strip.cell_length == width
            assert not UNSAFE.search(detail.plain_text.replace("\n", "")), detail.plain_text
            assert not UNSAFE.search(str(detail.border_title))
            seen.add(detail.plain_text)
            await pilot.press("j")
        return seen


def hostile_study(path: Path) -> Study:
    rng = random.Random(5)
    texts = list(HOSTILE)
    for _ in range(20):  # random control sequences mixed with letters and wide text
        pool = ["\x1b", "\x9b", "\x07", "[", "m", "2J", "a", "漢", "🙂", "\u202e", "ش", "\n"]
        texts.append("".join(rng.choices(pool, k=rng.randint(1, 30))))
    table = ResponseTable.from_texts({f"id{i}\x1b[7m": t for i, t in enumerate(texts)})
    study = Study.create(path, responses=table, codebook=CODEBOOK)
    config = synthetic_config(CODEBOOK)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    first = "id0\x1b[7m"
    study.decisions.set_note(first, "pay", "note \x1b[2J [bold]loud[/bold]", coder="tester")
    study.decisions.import_decisions([(first, "workload", 1)], coder="goldplain")
    rename_coders(path, {"goldplain": "gold\x1b]0;evil\x07"})
    return study


async def test_the_queue_and_detail_show_no_control_character(
    tmp_path: Path, closing: list[Study]
) -> None:
    study = hostile_study(tmp_path / "h.codecurve")
    closing.append(study)
    shown = "\n".join(await check_rendering(study, moves=10**6))  # every pair
    assert "note \u241b[2J [bold]loud[/bold]" in shown
    assert "gold\u241b]0;evil\u2407" in shown


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(control_text, min_size=1, max_size=4),
    raw=st.binary(min_size=1, max_size=40),
)
def test_fuzzed_responses_render_clean_in_the_app(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], raw: bytes
) -> None:
    """Random text and random bytes (decoded as a careless reader might) as responses."""
    texts = [*texts, raw.decode("utf-8", errors="replace"), raw.decode("latin-1")]
    table = ResponseTable.from_texts({f"{t[:8]}#{i}": t for i, t in enumerate(texts)})
    study = Study.create(
        tmp_path_factory.mktemp("app") / "f.codecurve", responses=table, codebook=CODEBOOK
    )
    try:
        config = synthetic_config(CODEBOOK)
        study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
        asyncio.run(check_rendering(study, moves=len(texts) * 3))
    finally:
        study.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.binary(min_size=1, max_size=60))
def test_random_bytes_through_new_and_score_print_nothing_raw(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], raw: bytes
) -> None:
    folder = tmp_path_factory.mktemp("bytes")
    responses = folder / "raw.csv"
    responses.write_bytes(b"id,text\nr1," + raw.replace(b"\n", b" ") + b"\nr2,fine\n")
    codebook = folder / "codes.yaml"
    codebook.write_text(CODEBOOK_YAML, encoding="utf-8")
    sources = ["--responses", str(responses), "--codebook", str(codebook)]
    capsys.readouterr()
    assert main(["new", str(folder / "s.codecurve"), *sources]) in (0, 1)
    assert main(["score", *sources, "--model", "fake"]) in (0, 1)
    out, err = capsys.readouterr()
    assert not UNSAFE.search(out + err), out + err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    [
        "漢字のテキストがここにあります。とても長い回答です。" * 3,
        "🙂👍🏽👨‍👩‍👧 emoji family and skin tones 🇫🇷 flags",
        "مرحبا بالعالم هذا نص عربي طويل جدا للاختبار",
        "a\u0301e\u0301 combining marks \u200b zero width",
    ],
)
async def test_wide_and_right_to_left_rows_keep_the_width(
    tmp_path: Path, text: str, closing: list[Study]
) -> None:
    table = ResponseTable.from_texts({"漢字id": text, "🙂": text[::-1], "plain": "plain text"})
    study = Study.create(tmp_path / "w.codecurve", responses=table, codebook=CODEBOOK)
    closing.append(study)
    config = synthetic_config(CODEBOOK)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    app = make_app(study, coder="tester")
    async with app.run_test(size=(90, 24)) as pilot:
        await pilot.pause()
        queue = app.screen.query_one(PairQueue)
        width = queue.scrollable_content_region.width
        for y in range(min(queue.total + 1, queue.scrollable_content_region.height)):
            strip = queue.render_line(y)
            assert strip.cell_length == width
            assert sum(cell_len(s.text) for s in strip) == width
            assert not re.search(
                "[\u200d\ufe0f\U0001f3fb-\U0001f3ff\U0001f1e6-\U0001f1ff]", strip.text
            )
        # Columns line up: the curve column starts at the same cell on every row.
        header = queue.render_line(0).text
        start = header.index("curve")
        for y in range(1, min(queue.total + 1, 6)):
            line = queue.render_line(y).text
            prefix_cells = 0
            for char in line:
                if prefix_cells >= start:
                    break
                prefix_cells += cell_len(char)
            assert prefix_cells == start, line


async def test_the_whole_review_screen_draws_no_control_character(
    tmp_path: Path, closing: list[Study]
) -> None:
    """What the compositor draws for the whole screen (every widget on it), moving down."""
    study = hostile_study(tmp_path / "s.codecurve")
    closing.append(study)
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        for _ in range(8):
            await pilot.pause()
            shot = app.export_screenshot()
            assert not UNSAFE.search(shot), UNSAFE.findall(shot)
            await pilot.press("j")


async def test_the_response_view_draws_no_control_character(
    tmp_path: Path, closing: list[Study]
) -> None:
    study = hostile_study(tmp_path / "r.codecurve")
    closing.append(study)
    app = make_app(study, coder="tester")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("enter")
        await pilot.pause()
        shot = app.export_screenshot()
        assert not UNSAFE.search(shot), UNSAFE.findall(shot)


# -- the editors ---------------------------------------------------------------------------

#: What a hostile project or codebook file put in a definition, a note and a coder's name.
INJECTED = "\x1b]0;pwned\x07\x1b]52;c;aGVsbG8=\x07\x1b[2J\x9b31m rtl \u202eevil\u2066x\u2069\tend"


def injected_study(path: Path) -> Study:
    from dataclasses import replace

    codes = tuple(
        replace(c, definition=f"{c.definition} {INJECTED}\nsecond line {INJECTED}")
        if c.id == "workload"
        else c
        for c in CODEBOOK.codes
    )
    codebook = replace(CODEBOOK, codes=codes)
    table = ResponseTable.from_texts({"r1": f"text {INJECTED}", "r2": "plain"})
    study = Study.create(path, responses=table, codebook=codebook)
    config = synthetic_config(codebook)
    study.scores.store(study.scores.ensure_config(config), synthetic_scores(study, config))
    study.decisions.set_note("r1", "workload", f"note {INJECTED}", coder="tester")
    study.decisions.set_note("r2", "workload", f"note {INJECTED}", coder="tester")
    return study


async def test_the_editors_start_with_no_control_character_and_save_untouched_text_as_is(
    tmp_path: Path, closing: list[Study]
) -> None:
    from textual.widgets import Input, TextArea

    from tests.tui.waiting import settle, wait_for
    from tui.screens.code_editor import CodeEditorScreen
    from tui.screens.disagreements import CodersScreen, ConsensusValueScreen
    from tui.screens.note import NoteScreen
    from tui.source import Query

    study = injected_study(tmp_path / "i.codecurve")
    closing.append(study)
    definition = next(c.definition for c in study.codebook.codes if c.id == "workload")
    app = make_app(study, coder="tester", close_study=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.review.set_query(Query(code_id="workload"))
        await settle(pilot)
        row = app.review.pair_queue.current
        assert row is not None

        await pilot.press("c")  # Note
        await wait_for(pilot, lambda: bool(app.screen.query("#note-input")))
        assert isinstance(app.screen, NoteScreen)
        value = app.screen.query_one("#note-input", Input).value
        assert value.startswith("note \u241b]0;pwned")
        assert not UNSAFE_LINE.search(value), repr(value)
        await pilot.press("enter")  # saved untouched: the stored note stays as it was
        await wait_for(pilot, lambda: not isinstance(app.screen, NoteScreen))
        await settle(pilot)
        assert (
            study.decisions.note(row.response_id, "workload", coder="tester") == f"note {INJECTED}"
        )

        await pilot.press("E")
        await wait_for(pilot, lambda: bool(app.screen.query("#edit-definition")))
        editor = app.screen
        assert isinstance(editor, CodeEditorScreen)
        texts = [area.text for area in editor.query(TextArea)]
        assert any("\u241b]52;c;" in t and "\\u202e" in t for t in texts)
        for text in texts:
            assert not UNSAFE.search(text), repr(text)
        await pilot.press("ctrl+s")  # untouched: nothing to record
        await wait_for(pilot, lambda: not isinstance(app.screen, CodeEditorScreen))
        assert study.versions.current() == 1
        assert next(c.definition for c in study.codebook.codes if c.id == "workload") == (
            definition
        )

        scale = study.codebook.scale_for(study.codebook.codes[1])
        app.push_screen(ConsensusValueScreen("r1", scale, f"why {INJECTED}"))
        await wait_for(pilot, lambda: bool(app.screen.query("#consensus-note")))
        value = app.screen.query_one("#consensus-note", Input).value
        assert not UNSAFE_LINE.search(value), repr(value)
        app.pop_screen()

        results: list[list[str] | None] = []
        coders = [f"ana{INJECTED}", "ben\u202e"]
        app.push_screen(CodersScreen(coders, coders), results.append)
        await wait_for(pilot, lambda: bool(app.screen.query("#coders")))
        value = app.screen.query_one("#coders", Input).value
        assert not UNSAFE_LINE.search(value), repr(value)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(results))
        assert results == [coders]  # untouched: the coders as they are named


def test_every_command_prints_no_control_character_nor_override(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Texts, ids, notes, codes and coders carry ESC sequences and U+202E; what every
    command writes (the bytes on stdout and stderr) carries neither."""
    responses = write_responses(tmp_path, [f"text {INJECTED}", "plain \u202eevil", "more"])
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(
        CODEBOOK_YAML + '  - name: "Team \\u202eevil\\e]52;c;aGk=\\a"\n'
        '    definition: "Colleagues \\e[2J."\n',
        encoding="utf-8",
    )
    path = tmp_path / "s.codecurve"
    assert main(["new", str(path), "--responses", str(responses), "--codebook", str(codebook)]) == 0
    with Study.open(path) as study:
        ids = study.response_ids()
        codes = [c.id for c in study.codebook.codable]
        for coder in ("anaplain", "benplain"):
            study.decisions.import_decisions([(r, c, 1) for r in ids for c in codes], coder=coder)
            study.decisions.set_note(ids[0], codes[0], f"note {INJECTED}", coder=coder)
    rename_coders(path, {"anaplain": f"ana{INJECTED}", "benplain": "ben\u202e"})
    assert main(["score", str(path), "--model", "fake"]) in (0, 1)
    commands = [
        ["audit", str(path), "--draw"],
        ["audit", str(path)],
        ["screen", str(path)],
        ["screen", str(path), "--json"],
        ["agreement", str(path)],
        ["agreement", str(path), "--json"],
        ["delegate", str(path)],
        ["codebook", str(path)],
        ["compare", str(path)],
        ["export", str(path), "-o", str(tmp_path / "out.csv")],  # two coders: refused
        ["export", str(path), "-o", str(tmp_path / "out.csv"), "--all-coders"],
        ["score", "--responses", str(responses), "--codebook", str(codebook), "--model", "fake"],
    ]
    capfdbinary.readouterr()
    ran = 0
    for command in commands:
        with contextlib.suppress(SystemExit):  # a usage error: its message is checked too
            ran += main(command) == 0
        out, err = capfdbinary.readouterr()
        for stream in (out, err):
            text = stream.decode("utf-8", "replace")
            assert b"\x1b" not in stream, (command, text)
            assert not UNSAFE.search(text), (command, text)
    # Some refuse this small study, saying why (no audit drawn, one configuration): their
    # messages were checked as well; the others printed their tables.
    assert ran >= 4
