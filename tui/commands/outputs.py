"""Checks on a command's output path, made before any work.

A command never overwrites one of its inputs or a study, and finds out that it cannot
write its output before it spends hours scoring, not after.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from codebooks.errors import InputError

#: The first bytes of every SQLite database (a study is one).
SQLITE_HEADER = b"SQLite format 3\x00"


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file (through links too); False if either is missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def is_study(path: Path) -> bool:
    """Whether ``path`` is an existing SQLite file (a study or another database)."""
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def refuse_inputs(path: Path, *, protect: Mapping[str, Path | None]) -> None:
    """Refuse ``path`` when it is one of the inputs in ``protect`` (a name for each).

    Raises:
        InputError: "refusing to overwrite the responses file ...".
    """
    for what, other in protect.items():
        if other is not None and same_file(path, other):
            raise InputError(f"refusing to overwrite the {what} {other} with the output")


def recorded_sources(protect: Mapping[str, Path | None]) -> dict[str, Path]:
    """The responses file (or project) and the codebook each protected study was made
    from, as the study records them (an output must not replace the files a study was
    made from)."""
    from codebooks.errors import CodecurveError
    from study import Study

    found: dict[str, Path] = {}
    for what, path in protect.items():
        if path is None or not is_study(path):
            continue
        try:
            with Study.open(path, read_only=True) as study:
                meta = study.meta()
        except (CodecurveError, OSError):
            continue
        source = meta.get("responses_source", "")
        if source:  # a study made from a REFI-QDA project records the project
            made_from = Path(source).suffix.lower() in (".qdpx", ".qde")
            found[f"{what}'s {'project' if made_from else 'responses file'}"] = Path(source)
        if meta.get("codebook_source"):
            found[f"{what}'s codebook"] = Path(meta["codebook_source"])
    return found


def check_output(
    path: Path,
    *,
    protect: Mapping[str, Path | None] = {},
    streams: bool = False,
    kinds: Sequence[str] = (),
    what: str = "output",
) -> None:
    """Fail now, with one clear line, if ``path`` cannot be written as an output file.

    Refused: one of the inputs in ``protect`` or the files the studies among them were
    made from; an existing file of another kind than the output's (``kinds``: the
    suffixes the output, named ``what``, may replace, e.g. ``(".html", ".htm")``: a
    report never replaces ``codebook.yaml``); an existing study; a folder; something
    that is not a regular file (a device, a pipe), unless ``streams`` lets a pipe or a
    character device such as ``/dev/stdout`` through (a quick command's output, whose
    failure to write comes at once; a long one learns of a full ``/dev/full`` only
    after its work); a missing folder; a folder where no file can be created (read-only,
    full, not permitted: tried with a real file, since permission bits do not stop root).

    Raises:
        InputError: Naming the path and the reason.
    """
    refuse_inputs(path, protect={**protect, **recorded_sources(protect)})
    if path.is_dir():
        raise InputError("is a folder; give a file name", path=path)
    if path.exists():
        mode = path.stat().st_mode
        if streams and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            return
        if not stat.S_ISREG(mode):
            raise InputError("is not a regular file (a device or a pipe); give a file", path=path)
        if is_study(path):
            raise InputError("refusing to overwrite a study (or another SQLite file)", path=path)
        suffix = path.suffix.lower()
        # /dev/stdout sent to a file is the caller's redirection, not a file to replace.
        stream = streams and path.parts[:2] == ("/", "dev")
        if kinds and suffix not in kinds and not stream:
            its = f"a {suffix} file" if suffix else "a file with no suffix"
            raise InputError(
                f"refusing to replace {its} with the {what}; give a name ending in {kinds[0]}",
                path=path,
            )
    check_folder(path)


def check_folder(path: Path) -> None:
    """Fail now if no file can be written beside ``path`` (a missing folder, a read-only
    or full file system, no permission): tried with a real file, as permission bits do
    not stop root.

    Raises:
        InputError: Naming the folder and the reason.
    """
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"folder {folder} does not exist", path=path)
    try:
        # A few kilobytes written and synced: a full disk refuses them, an empty file not.
        with tempfile.TemporaryFile(dir=folder, prefix=".codecurve-probe-") as probe:
            probe.write(b"\0" * 8192)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise InputError(f"cannot write in {folder}: {exc.strerror or exc}", path=path) from None
