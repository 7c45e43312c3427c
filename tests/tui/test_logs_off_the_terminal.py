"""While the app runs, nothing logged reaches the terminal it draws on."""

from __future__ import annotations

import logging

import pytest

from tui.launch import logs_off_the_terminal


def test_a_record_logged_while_the_app_runs_never_reaches_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    terminal = logging.StreamHandler()  # as the CLI's basicConfig sets up: to stderr
    root.addHandler(terminal)
    try:
        with logs_off_the_terminal():
            try:
                raise RuntimeError("boom")
            except RuntimeError as exc:
                logging.getLogger("tui.app").error("worker failed: %s", exc, exc_info=exc)
            logging.getLogger("elsewhere").warning("no handler of its own")
        out, err = capfd.readouterr()
        assert "boom" not in out + err
        assert "Traceback" not in out + err
        assert "no handler of its own" not in out + err
        # Put back as it was: after the app, the CLI logs to the terminal again.
        assert terminal in root.handlers
        assert logging.lastResort is not None
        logging.getLogger("tui.app").error("after the app")
        assert "after the app" in capfd.readouterr().err
    finally:
        root.removeHandler(terminal)
