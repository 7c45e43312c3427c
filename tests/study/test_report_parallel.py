"""Figures drawn by several processes: the same files as drawn by one, and a failure in
a worker is raised here as it was raised there."""

from __future__ import annotations

import errno
import multiprocessing
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

import study.report._content as content
from study import Study
from study.report._data import ReportData, ReportOptions, report_data
from study.report._figure import Figure
from study.report._files import render_html, write_report
from study.report._parallel import draw_all, warm
from tests.study.test_audit import code_audit_blind, code_second_coder, simulated_study


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    path, truth = simulated_study(tmp_path_factory.mktemp("p") / "p.codecurve", n=400, seed=6)
    with Study.open(path) as study:
        study.audit.draw(per_code=120, seed=3)
        code_audit_blind(study, truth)
        code_second_coder(study, truth, per_code=60, flip=0.2, seed=2)
        return report_data(study, ReportOptions(coder="ana"))


def test_several_processes_write_what_one_writes(data: ReportData, tmp_path: Path) -> None:
    files = {}
    for processes in (1, 3):
        folder = tmp_path / f"by-{processes}"
        folder.mkdir()
        written = write_report(data, None, figures=folder / "f", processes=processes)
        files[processes] = {p.name: p.read_bytes() for p in written.files}
    assert files[1].keys() == files[3].keys()
    assert any(name.endswith(".png") for name in files[1])
    for name, body in files[1].items():
        assert files[3][name] == body, name
    at = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    one = render_html(data, written_at=at, processes=1)
    assert render_html(data, written_at=at, processes=3) == one
    warm(codes=10)  # the workers alone draw, forked from a started forkserver
    assert render_html(data, written_at=at, processes=2) == one


def fail_in_a_worker(figure: Figure, flag: Path) -> str:
    """A worker's figure fails with a full disk; this process's waits until it has."""
    if multiprocessing.parent_process() is not None:
        flag.touch()
        raise OSError(errno.ENOSPC, "No space left on device")
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return figure.name


def test_a_failure_in_a_worker_is_raised_here(data: ReportData, tmp_path: Path) -> None:
    from functools import partial

    figures = content.figures(data)
    flag = tmp_path / "failed"
    with pytest.raises(OSError, match="No space left on device"):
        draw_all(figures, partial(fail_in_a_worker, flag=flag), processes=2)
    assert flag.exists()


class NoWorkers:
    """A pool whose workers cannot start (no process left to the user, say)."""

    def __init__(self, **_: object) -> None:
        pass

    def __enter__(self) -> NoWorkers:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def submit(self, *_: object, **__: object) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")


def test_without_workers_this_process_draws_them_all(
    data: ReportData, monkeypatch: pytest.MonkeyPatch
) -> None:
    import study.report._parallel as parallel

    figures = content.figures(data)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", NoWorkers)
    assert draw_all(figures, name_of, processes=2) == [f.name for f in figures]


def name_of(figure: Figure) -> str:
    return figure.name
