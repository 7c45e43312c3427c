"""What a careless or hostile user tried: nothing lost, one clear line, the right exit status.

Every test checks the message, the exit status, and that the files involved are as they
were (bytes and modification time). Read-only and full file systems are real ones,
mounted in a private mount namespace (``unshare``) when the system allows it; the same
errors are also raised at the seam, which works everywhere.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from study import Study
from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]

CODEBOOK = """\
name: Working life
scale: 1-5
codes:
  - name: Pay
    definition: Money matters.
  - name: Team
    definition: Colleagues.
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    responses = tmp_path / "answers.csv"
    responses.write_text(
        "id,text\nr1,Too many hours.\nr2,The pay is fine.\nr3,Great colleagues.\n",
        encoding="utf-8",
    )
    codebook = tmp_path / "codes.yaml"
    codebook.write_text(CODEBOOK, encoding="utf-8")
    return {"responses": responses, "codebook": codebook, "study": tmp_path / "s.codecurve"}


@pytest.fixture
def study(files: dict[str, Path]) -> Path:
    args = ["new", str(files["study"]), "--responses", str(files["responses"])]
    assert main([*args, "--codebook", str(files["codebook"])]) == 0
    with Study.open(files["study"]) as opened:
        opened.decisions.import_decisions([("r1", "pay", 4), ("r2", "pay", 2)], coder="Alice")
    return files["study"]


def snapshot(*paths: Path) -> dict[Path, tuple[bytes, int] | None]:
    """Bytes and modification time of each path (None: absent)."""
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None for p in paths}


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("codecurve: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a model is loaded: the check must come before any scoring."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded before the output was checked")

    monkeypatch.setattr("scoring.load_backend", refuse)


# -- items 1 and 2: never overwrite the study or an input -------------------------------


def test_export_refuses_to_overwrite_the_study(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(study)
    before = snapshot(study)
    capsys.readouterr()
    for argv in (
        ["export", str(study), "-o", str(study)],
        ["export", str(study), "-o", str(link)],
        ["export", str(study), "-o", str(tmp_path / "." / study.name), "--format", "csv"],
        ["export", str(study), "--codebook", str(study)],
    ):
        assert main(argv) == 1, argv
        assert "refusing to overwrite the study" in one_error_line(capsys.readouterr().err)
    assert snapshot(study) == before
    assert link.is_symlink()
    with Study.open(study, read_only=True) as opened:
        assert opened.decisions.count() == 2


def test_export_refuses_another_study(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.csv"
    shutil.copyfile(study, other)
    before = snapshot(other)
    capsys.readouterr()
    assert main(["export", str(study), "-o", str(other)]) == 1
    assert "refusing to overwrite a study" in one_error_line(capsys.readouterr().err)
    assert snapshot(other) == before


def test_no_output_replaces_a_file_the_study_was_made_from(
    study: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The responses file and the codebook a study was made from are its inputs: no
    report, export or findings table of it replaces them (a report written over the
    codebook was a codebook lost)."""
    inputs = (files["responses"], files["codebook"])
    before = snapshot(*inputs)
    capsys.readouterr()
    for argv, refused in (
        (["report", str(study), "-o", str(files["codebook"])], "codebook"),
        (["export", str(study), "--codebook", str(files["codebook"])], "codebook"),
        (["export", str(study), "-o", str(files["responses"])], "responses file"),
        (["findings", str(study), "-o", str(files["responses"])], "responses file"),
    ):
        assert main(argv) == 1, argv
        line = one_error_line(capsys.readouterr().err)
        assert f"refusing to overwrite the study's {refused}" in line, line
    assert snapshot(*inputs) == before


def test_no_output_replaces_a_file_of_another_kind(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.yaml"
    notes.write_text("a: 1\n", encoding="utf-8")
    sheet = tmp_path / "sheet.xlsx"
    sheet.write_bytes(b"PK not really a workbook")
    before = snapshot(notes, sheet)
    capsys.readouterr()
    for argv, what in (
        (
            ["report", str(study), "-o", str(notes)],
            "refusing to replace a .yaml file with the HTML",
        ),
        (["export", str(study), "-o", str(sheet), "--format", "csv"], "with the CSV dataset"),
    ):
        assert main(argv) == 1, argv
        assert what in one_error_line(capsys.readouterr().err)
    assert snapshot(notes, sheet) == before
    # An earlier report of the same kind is replaced as asked.
    old = tmp_path / "old.html"
    old.write_text("<p>old</p>", encoding="utf-8")
    assert main(["report", str(study), "-o", str(old)]) == 0
    assert "<p>old</p>" not in old.read_text(encoding="utf-8")


def test_score_refuses_to_overwrite_its_inputs(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], no_model: None
) -> None:
    responses, codebook = files["responses"], files["codebook"]
    link = tmp_path / "scores.csv"
    link.symlink_to(responses)
    before = snapshot(responses, codebook)
    for out in (responses, link, tmp_path / ".." / tmp_path.name / responses.name):
        argv = ["score", "--responses", str(responses), "--codebook", str(codebook)]
        assert main([*argv, "--model", "fake", "-o", str(out)]) == 1
        line = one_error_line(capsys.readouterr().err)
        assert f"refusing to overwrite the responses file {responses}" in line
    assert snapshot(responses, codebook) == before


def test_new_and_score_refuse_a_study_named_like_an_input(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], no_model: None
) -> None:
    responses, codebook = files["responses"], files["codebook"]
    before = snapshot(responses, codebook)
    sources = ["--responses", str(responses), "--codebook", str(codebook)]
    assert main(["new", str(responses), *sources, "--force"]) == 1
    assert "refusing to overwrite the responses file" in one_error_line(capsys.readouterr().err)
    assert main(["score", str(codebook), *sources, "--model", "fake"]) == 1
    assert "refusing to overwrite the codebook" in one_error_line(capsys.readouterr().err)
    assert snapshot(responses, codebook) == before


# -- item 6: an unknown coder -------------------------------------------------------------


@pytest.mark.parametrize(
    ("coder", "needles"),
    [
        ("nobody", ["no decisions by 'nobody'", "'Alice'"]),
        ("alice", ["no decisions by 'alice'", "did you mean 'Alice'?"]),
    ],
)
def test_export_of_an_unknown_coder_lists_the_coders(
    study: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    coder: str,
    needles: list[str],
) -> None:
    out = tmp_path / "coded.csv"
    before = snapshot(study)
    capsys.readouterr()
    assert main(["export", str(study), "-o", str(out), "--coder", coder]) == 1
    line = one_error_line(capsys.readouterr().err)
    for needle in needles:
        assert needle in line
    assert not out.exists()
    assert snapshot(study) == before
    assert main(["export", str(study), "-o", str(out), "--coder", "Alice"]) == 0


# -- items 8 and 9: file systems that refuse, checked before any work --------------------


def test_score_output_that_cannot_be_written_fails_before_scoring(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], no_model: None
) -> None:
    folder = tmp_path / "a-folder.csv"
    folder.mkdir()
    cases = {
        tmp_path / "missing" / "scores.csv": "does not exist",
        folder: "is a folder",
    }
    if Path("/dev/full").exists() and stat.S_ISCHR(Path("/dev/full").stat().st_mode):
        cases[Path("/dev/full")] = "not a regular file"
    for out, needle in cases.items():
        argv = ["score", "--responses", str(files["responses"]), "--codebook"]
        assert main([*argv, str(files["codebook"]), "--model", "fake", "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert needle in one_error_line(err), out
        assert "scoring" not in err
    assert stat.S_ISCHR(Path("/dev/full").stat().st_mode) or not Path("/dev/full").exists()
    assert not (tmp_path / "missing").exists()


def test_score_output_in_a_folder_that_refuses_files(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_model: None,
) -> None:
    import tempfile

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    out = tmp_path / "scores.csv"
    argv = ["score", "--responses", str(files["responses"]), "--codebook"]
    assert main([*argv, str(files["codebook"]), "--model", "fake", "-o", str(out)]) == 1
    assert "Read-only file system" in one_error_line(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.EROFS, "Read-only file system", "s.codecurve"),
        OSError(errno.ENOSPC, "No space left on device"),
        PermissionError(errno.EACCES, "Permission denied", "s.codecurve"),
        sqlite3.OperationalError("attempt to write a readonly database"),
        sqlite3.DatabaseError("database disk image is malformed"),
        ValueError("a hand-edited field"),
    ],
)
def test_os_and_sqlite_errors_are_one_line(
    study: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(Study, "open", fail)
    codes = tmp_path / "c.csv"
    codes.write_text("id,Pay\nr1,3\n", encoding="utf-8")
    capsys.readouterr()
    for argv in (
        ["score", str(study), "--model", "fake"],
        ["import-codes", str(study), str(codes), "--coder", "ann"],
        ["export", str(study), "-o", str(tmp_path / "x.csv")],
    ):
        assert main(argv) == 1
        line = one_error_line(capsys.readouterr().err)
        assert (getattr(error, "strerror", None) or str(error)) in line
        if isinstance(error, sqlite3.Error):  # SQLite's words name no file: the study is
            assert line.startswith(f"codecurve: error: {study}: "), line


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /tmp 2>/dev/null"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(
    not _unshare_works(), reason="no private mount namespace here (unshare -rm)"
)


def run_mounted(
    argv: list[str],
    *,
    read_only: Path | None = None,
    full: Path | None = None,
    fill: bool = False,
    size: str = "12k",
    copy: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the command line with ``read_only`` bound read-only and a tmpfs of ``size`` at
    ``full`` (``copy`` copied into it first), in a private mount namespace (nothing
    outside it sees the mounts)."""
    steps = []
    if read_only is not None:
        steps += [f"mount --bind '{read_only}' '{read_only}'",
                  f"mount -o remount,ro,bind '{read_only}'"]  # fmt: skip
    if full is not None:
        steps += [f"mount -t tmpfs -o size={size} tmpfs '{full}'"]
        if copy is not None:
            steps += [f"cp '{copy}' '{full}/'"]
        if fill:  # fails once the file system is full, which is the point
            steps += [f"{{ head -c 1048576 /dev/zero > '{full}/fill' 2>/dev/null || true; }}"]
    code = "import sys; from tui.cli import main; raise SystemExit(main(sys.argv[1:]))"
    quoted = " ".join(f"'{a}'" for a in argv)
    # The folders' contents as the command left them, seen inside the namespace, on stdout.
    listing = " ".join(f"'{p}'" for p in (read_only, full) if p is not None)
    steps.append(
        f"{{ '{sys.executable}' -c '{code}' {quoted}; rc=$?; ls -A {listing}; exit $rc; }}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("CODECURVE_DEBUG", None)
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", " && ".join(steps)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


@needs_mounts
def test_a_study_on_a_read_only_file_system(study: Path, tmp_path: Path) -> None:
    codes = tmp_path / "codes-in.csv"
    codes.write_text("id,Pay\nr3,3\n", encoding="utf-8")
    before = snapshot(study)
    for argv in (
        ["score", str(study), "--model", "fake"],
        ["import-codes", str(study), str(codes), "--coder", "ann"],
    ):
        proc = run_mounted(argv, read_only=tmp_path)
        assert proc.returncode == 1, proc.stderr
        line = one_error_line(proc.stderr)
        assert "read-only" in line.lower() or "readonly" in line.lower(), line
    assert snapshot(study) == before


@needs_mounts
def test_read_only_commands_work_on_a_read_only_location(study: Path, tmp_path: Path) -> None:
    place = tmp_path / "dvd"
    place.mkdir()
    moved = place / study.name
    study.rename(moved)
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(moved)
    for argv in (
        ["export", str(moved), "-o", str(out / "x.csv")],
        ["agreement", str(moved)],
        ["screen", str(moved)],
    ):
        proc = run_mounted(argv, read_only=place)
        assert "Traceback" not in proc.stderr
        if argv[0] == "export":
            assert proc.returncode == 0, proc.stderr
            assert "r1" in (out / "x.csv").read_text(encoding="utf-8")
        else:  # one coder, nothing scored: a clear refusal, not a failure to open
            assert "cannot open" not in proc.stderr
            assert "unable to open" not in proc.stderr
            assert "readonly" not in proc.stderr.lower(), proc.stderr
        # nothing was left beside the study (no -shm, no lock file)
        assert proc.stdout.split()[-1:] == [moved.name], proc.stdout
    assert snapshot(moved) == before


@needs_mounts
def test_new_into_a_read_only_or_full_place(files: dict[str, Path], tmp_path: Path) -> None:
    sources = ["--responses", str(files["responses"]), "--codebook", str(files["codebook"])]
    place = tmp_path / "place"
    place.mkdir()
    proc = run_mounted(["new", str(place / "s.codecurve"), *sources], read_only=place)
    assert proc.returncode == 1, proc.stderr
    assert "read-only" in one_error_line(proc.stderr).lower()
    assert proc.stdout.split() == []
    proc = run_mounted(["new", str(place / "s.codecurve"), *sources], full=place)
    assert proc.returncode == 1, proc.stderr
    one_error_line(proc.stderr)  # the words are the study writer's (SQLite's) own
    assert proc.stdout.split() == []  # nothing half-written left in the full folder
    assert list(place.iterdir()) == []


@needs_mounts
@pytest.mark.parametrize(
    ("how", "reason"), [("full", "No space left on device"), ("read-only", "Read-only file system")]
)
def test_score_output_on_a_full_or_read_only_file_system_fails_before_scoring(
    files: dict[str, Path], tmp_path: Path, how: str, reason: str
) -> None:
    place = tmp_path / "place"
    place.mkdir()
    sources = ["--responses", str(files["responses"]), "--codebook", str(files["codebook"])]
    argv = ["score", *sources, "--model", "fake", "-o", str(place / "scores.csv")]
    if how == "full":
        proc = run_mounted(argv, full=place, fill=True)
    else:
        proc = run_mounted(argv, read_only=place)
    assert proc.returncode == 1, proc.stderr
    assert reason in one_error_line(proc.stderr)
    assert "scoring" not in proc.stderr
    # no output, no temporary left beside it
    assert proc.stdout.split() == (["fill"] if how == "full" else [])


@needs_mounts
def test_a_study_on_a_full_disk_is_named_in_the_message(study: Path, tmp_path: Path) -> None:
    """Full before the lock file can be written, and full once the first batch is stored:
    each time one line naming the study, and the study as it was."""
    place = tmp_path / "place"
    place.mkdir()
    inside = place / study.name
    size = f"{study.stat().st_size // 1024 + 16}k"
    proc = run_mounted(["score", str(inside), "--model", "fake"], full=place, fill=True,
                       size=size, copy=study)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    line = one_error_line(proc.stderr)
    assert line.startswith(f"codecurve: error: {inside}: "), line
    # SQLite's words, or the lock file's, whichever meets the full disk first.
    assert "No space left on device" in line or "disk I/O error" in line, line


# -- item 18: messages that say what is true ----------------------------------------------


def test_score_does_not_suggest_a_force_it_lacks(
    study: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str], no_model: None
) -> None:
    before = snapshot(study)
    sources = ["--responses", str(files["responses"]), "--codebook", str(files["codebook"])]
    capsys.readouterr()
    assert main(["score", str(study), *sources, "--model", "fake"]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "--force" not in line
    assert f"codecurve score {study}" in line
    assert snapshot(study) == before


def test_one_response_is_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    responses = tmp_path / "one.csv"
    responses.write_text("id,text\nr1,Only one answer.\n", encoding="utf-8")
    codebook = tmp_path / "one.yaml"
    codebook.write_text("name: One\nscale: 1-5\ncodes:\n  - name: Pay\n", encoding="utf-8")
    sources = ["--responses", str(responses), "--codebook", str(codebook)]
    assert main(["new", str(tmp_path / "s.codecurve"), *sources]) == 0
    err = capsys.readouterr().err
    assert "1 response x 1 code (1 pair)" in err
    assert main(["score", *sources, "--model", "fake", "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err
    assert "scoring 1 response x 1 code = 1 pair " in err
    assert "wrote 1 row to" in err
    assert "1 responses" not in err
    assert "1 rows" not in err


# -- item 19: the app needs a terminal ----------------------------------------------------


def test_review_without_a_terminal_refuses_at_once(study: Path) -> None:
    before = snapshot(study)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "tui", "review", str(study), "--no-model"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "needs a terminal" in one_error_line(proc.stderr)
    assert snapshot(study) == before
    assert not study.with_name(study.name + ".lock").exists()
    # The lock is free: a writer gets in at once.
    with Study.open(study):
        pass


def test_review_creating_a_study_without_a_terminal_creates_nothing(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "made.codecurve"
    sources = ["--responses", str(files["responses"]), "--codebook", str(files["codebook"])]
    assert main(["review", *sources, "-s", str(target)]) == 1
    assert "needs a terminal" in one_error_line(capsys.readouterr().err)
    assert not target.exists()


# -- item 22 and issue 9: one exit status per kind of error -------------------------------


@pytest.mark.parametrize(
    ("argv", "status", "needle"),
    [
        ([], 2, None),
        (["frobnicate"], 2, "invalid choice"),
        (["score", "--batch-size", "0"], 2, "--batch-size"),
        (["score", "--batch-size", "many"], 2, "--batch-size"),
        (["review", "--batch-size", "-1"], 2, "--batch-size"),
        (["score", "--device", "tpu"], 2, "--device"),
        (["export", "{study}", "--layout", "\x1b]0;x\x07"], 2, "invalid choice"),
        (["export", "{study}", "--coder", "\x1b[2J", "-o", "x.csv"], 1, "no decisions by"),
        (["score", "--model", "fake"], 2, "--responses"),
        (["score", "--responses", "x.csv", "--codebook", "c.yaml", "--scale", "1-7"], 2, None),
        (["export", "{study}"], 2, "nothing to write"),
        (["export", "{study}", "--layout", "tall", "-o", "x.csv"], 2, "invalid choice"),
        (["export", "{study}", "--coder", "x"], 2, "nothing to write"),
        (["export", "{study}", "--coder", "x", "--codebook", "c.yaml"], 2, "add -o FILE"),
        (["screen", "{study}", "--cut", "2"], 2, "--cut"),
        (["import-codes", "{study}", "c.csv", "--coder", "a", "--separator", ""], 2, None),
        (["import-codes", "{study}", "c.csv", "--coder", "a", "--separator", " "], 2, None),
        (["review"], 2, "give a study"),
        (["export", "missing.codecurve", "-o", "x.csv"], 1, "no such study"),
        (["export", "{study}", "-o", "{study}"], 1, "refusing"),
        (["export", "{study}", "-o", "x.csv", "--coder", "zed"], 1, "no decisions by"),
        (["import-codes", "missing.codecurve", "c.csv", "--coder", "a"], 1, "no such study"),
        (["screen", "missing.codecurve"], 1, "no such study"),
    ],
)
def test_exit_status_scheme(
    study: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    status: int,
    needle: str | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(study)
    argv = [a.replace("{study}", str(study)) for a in argv]
    capsys.readouterr()
    code: int | str | None
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", err), err
    if needle is not None:
        assert needle in err
    assert snapshot(study) == before
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "many"])
def test_batch_size_is_checked_once_for_every_command(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """``score``, ``review`` and ``demo`` share one check: the same status and words."""
    messages = set()
    for command in ("score", "review", "demo"):
        with pytest.raises(SystemExit) as info:
            main([command, "--batch-size", value])
        assert info.value.code == 2
        err = capsys.readouterr().err
        messages.add(err.replace(f"codecurve {command}", "codecurve COMMAND"))
    assert len(messages) == 1, messages


@pytest.mark.parametrize("version", [-5, -1, -(2**31)])
def test_a_study_of_an_unknown_schema_version_is_refused_in_words(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], version: int
) -> None:
    con = sqlite3.connect(study)
    con.execute(f"PRAGMA user_version = {version}")
    con.close()
    before = snapshot(study)
    capsys.readouterr()
    for argv in (
        ["score", str(study), "--model", "fake"],
        ["screen", str(study)],
        ["export", str(study), "-o", str(tmp_path / "x.csv")],
    ):
        assert main(argv) == 1, argv
        line = one_error_line(capsys.readouterr().err)
        assert f"{study}: is marked as a codecurve study but has no schema version" in line
        assert f"user_version {version}" in line
        assert "unexpected" not in line
    assert snapshot(study) == before


@pytest.mark.parametrize("via_link", [False, True])
def test_export_to_standard_output_writes_no_metadata_into_dev(
    study: Path, tmp_path: Path, via_link: bool
) -> None:
    """``-o /dev/stdout`` redirected to a file: the data goes there, and no
    ``stdout-metadata.json`` is written into /dev (nor beside a link to it)."""
    target = Path("/dev/stdout")
    if via_link:
        target = tmp_path / "out.csv"
        target.symlink_to("/dev/stdout")
    stray = [Path("/dev/stdout-metadata.json"), tmp_path / "out.csv-metadata.json"]
    assert not any(p.exists() for p in stray)
    code = "import sys; from tui.cli import main; raise SystemExit(main(sys.argv[1:]))"
    redirected = tmp_path / "redirected.csv"
    with redirected.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-c", code, "export", str(study), "-o", str(target), "--format",
             "csv"],
            stdout=out, stderr=subprocess.PIPE, text=True, cwd=ROOT, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    try:
        assert proc.returncode == 0, proc.stderr
        assert "no provenance file beside a device or stream" in proc.stderr
        assert not any(p.exists() for p in stray)
        assert redirected.read_text(encoding="utf-8-sig").startswith('"response_id"')
    finally:
        for p in stray:
            p.unlink(missing_ok=True)
