"""Write a study's report: the HTML file, and each figure and table as its own files.

Nothing is left half-written: the HTML goes to a temporary file beside its target and
is renamed over it (:func:`codebooks.files.write_atomic`); the figures and tables are
written into a temporary folder beside the figures folder, then moved into it.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import study.report._content as content
import study.report._html as html
from codebooks.files import write_atomic
from study.errors import StudyError
from study.report._data import ReportData
from study.report._figure import Figure


@dataclass(frozen=True)
class ReportWritten:
    """What :func:`write_report` wrote.

    Attributes:
        path: The HTML file (None when only figures were asked for).
        files: The figure and table files, in the figures folder.
    """

    path: Path | None
    files: tuple[Path, ...] = ()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codecurve")
    except PackageNotFoundError:
        return "0+unknown"


def render_html(
    data: ReportData,
    *,
    written_at: datetime | None = None,
    svg: Callable[[Figure], str] | None = None,
    processes: int | None = None,
) -> str:
    """The report as one HTML document (``svg`` draws a figure; by default, matplotlib,
    in ``processes`` processes: :func:`study.report._parallel.draw_all`)."""
    at = (written_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    name = data.sections["study"]["name"]
    sections = content.sections(data)
    if svg is None:
        from study.report._draw import svg_text
        from study.report._parallel import draw_all

        figures = [f for s in sections for f in s.figures]
        drawn = dict(
            zip(
                [f.name for f in figures],
                draw_all(figures, svg_text, processes=processes),
                strict=True,
            )
        )

        def svg(figure: Figure) -> str:
            return drawn[figure.name]

    return html.document(
        f"Study report: {name}",
        f"Written by codecurve {_version()} on {at}. Every number below is what "
        "codecurve's commands print for this study in their JSON format.",
        sections,
        svg,
    )


def table_csv(table: content.Table) -> str:
    """A table as CSV text (a header row, then its rows)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow(["" if c is None else _neutral(str(c)) for c in row])
    return out.getvalue()


def _neutral(cell: str) -> str:
    """A cell a spreadsheet will not read as a formula.

    A leading ``+`` before a digit (a signed figure such as ``+0.129, p = 0.002``) is
    dropped: the number reads the same, and the cell needs no guard that would stay in
    it as a stray ``'``. Other formula starts are guarded with ``'``.
    """
    if cell[:1] == "+" and cell[1:2].isdigit():
        cell = cell[1:]
    return "'" + cell if cell[:1] in ("=", "+", "@", "\t", "\r") else cell


def write_report(
    data: ReportData,
    path: Path | None,
    *,
    figures: Path | None = None,
    protect: tuple[Path, ...] = (),
    processes: int | None = None,
) -> ReportWritten:
    """Write the HTML report to ``path`` and, with ``figures``, each figure as SVG and
    PNG (300 dpi) and each table as CSV into that folder (made if missing).

    The figures are drawn by ``processes`` processes (by default one per core for a
    report of many figures: :func:`study.report._parallel.default_processes`).

    The figures are drawn once: into a temporary folder beside ``figures``, whose SVG
    files the HTML then inlines; the HTML is written, then the files are moved into
    ``figures``. A failure on the way leaves neither.

    Raises:
        StudyError: a file cannot be written (nothing half-written is left).
    """
    if figures is None:
        if path is not None:
            _write_html(path, render_html(data, processes=processes), protect)
        return ReportWritten(path=path)
    parent = figures.parent
    if not parent.is_dir():
        raise StudyError(f"folder {parent} does not exist", path=figures)
    if figures.exists() and not figures.is_dir():
        raise StudyError("is a file, not a folder", path=figures)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{figures.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise StudyError(f"cannot write in {parent}: {exc.strerror or exc}", path=figures) from None
    try:
        written = _stage(data, staging, processes)
        if path is not None:
            svgs = {p.stem: p for p in written if p.suffix == ".svg"}

            def staged(figure: Figure) -> str:
                from study.report._draw import inline

                return inline(svgs[figure.name].read_text(encoding="utf-8"))

            _write_html(path, render_html(data, svg=staged), protect)
        if not figures.exists():
            os.replace(staging, figures)
        else:
            for p in written:
                os.replace(p, figures / p.name)
        return ReportWritten(path=path, files=tuple(figures / p.name for p in written))
    except OSError as exc:
        raise StudyError(
            f"cannot write the figures ({exc.strerror or exc}); nothing was written",
            path=figures,
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_html(path: Path, text: str, protect: tuple[Path, ...]) -> None:
    write_atomic(path, text.encode("utf-8"), protect=protect, error=StudyError)


def _stage(data: ReportData, folder: Path, processes: int | None) -> list[Path]:
    """Each figure as ``NAME.svg`` and ``NAME.png``, each table as ``NAME.csv``."""
    from study.report._draw import save_in
    from study.report._parallel import draw_all

    written: list[Path] = []
    for paths in draw_all(content.figures(data), partial(save_in, folder), processes=processes):
        written += paths
    for table in content.tables(data):
        target = folder / f"{table.name}.csv"
        target.write_text(table_csv(table), encoding="utf-8")
        written.append(target)
    return written
