"""The app process of one browser session: ``python -m tui.serve.child STUDY --coder NAME``.

Started by the server (:func:`tui.serve.web.app_command`) with a command line it fixed:
the study, the signed-in coder and the options ``codecurve serve`` was given. It runs the
review app under textual-serve's driver (the ``TEXTUAL_DRIVER`` of its environment). When
the study cannot be opened (another session of the same coder holds it, a damaged file)
the browser shows the reason in a small app of its own, which any key closes: no
traceback, and the browser is not left on a blank page.

The app ends with its browser tab (the server asks it to quit), and also when the
server itself is gone, however it ended.

Exports are written into the coder's own folder, ``STUDY-exports/CODER/`` beside the
study, and offered to the browser as a download: one coder's export never replaces
another's, and a served coder exports their own decisions (or the reconciled ones), not
every coder's.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from codebooks.errors import CodecurveError

if TYPE_CHECKING:
    from textual.app import App


def exports_folder(study: Path, coder: str | None = None) -> Path:
    """Where the served app writes exports: ``STUDY-exports`` beside the study, and in it
    a folder of each coder's own (:func:`coder_folder`)."""
    folder = study.with_name(f"{study.stem}-exports")
    return folder if coder is None else folder / coder_folder(coder)


def coder_folder(coder: str) -> str:
    """A folder name for ``coder``: the name where it is plain letters, digits, ``_``
    and ``-``; otherwise those with a hash of the name, so that two names never share a
    folder and no name leaves the exports folder (no ``/``, no ``..``)."""
    plain = re.sub(r"[^A-Za-z0-9_-]+", "_", coder)
    if plain == coder:
        return plain
    digest = hashlib.blake2b(coder.encode("utf-8"), digest_size=4).hexdigest()
    return f"{plain}-{digest}"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="codecurve-served-app")
    parser.add_argument("study", type=Path)
    parser.add_argument("--coder", required=True)
    parser.add_argument("--model")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--context")
    parser.add_argument("--batch-size", type=int)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    from tui.app import make_app
    from tui.keyconfig import load_keys
    from tui.launch import backend_factory, logs_off_the_terminal

    try:
        keys = load_keys()
        factory = None if args.no_model else backend_factory(args.model)
        app = make_app(
            args.study,
            backend_factory=factory,
            coder=args.coder,
            context=args.context,
            batch_size=args.batch_size,
            keys=keys,
            export_folder=exports_folder(args.study, args.coder),
        )
    except (CodecurveError, OSError, sqlite3.Error) as exc:
        notice(str(exc) or type(exc).__name__)
        return 1
    watch_server(app)
    with logs_off_the_terminal():
        app.run()
    return 0


def watch_server(app: App[None], *, interval: float = 1.0) -> threading.Thread:
    """End the app when the server that started it is gone (killed, even by SIGKILL):
    its process is then adopted by another parent. Every decision is already saved."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        with contextlib.suppress(Exception):
            app.call_from_thread(app.exit)
        time.sleep(10)
        os._exit(1)  # the app did not quit in time: nothing is unsaved

    thread = threading.Thread(target=watch, name="watch-server", daemon=True)
    thread.start()
    return thread


def notice(message: str) -> None:
    """Show ``message`` in the browser until a key is pressed."""
    notice_app(message).run()


def notice_app(message: str) -> App[None]:
    """The small app that says why the study did not open; any key closes it."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from tui.text import printable

    class Notice(App[None]):
        CSS = "Screen { align: center middle; } Static { width: 80%; padding: 1 2; }"

        def compose(self) -> ComposeResult:
            yield Static(
                f"codecurve cannot open the study for you:\n\n{printable(message)}\n\n"
                "Close this tab, or press any key.",
                markup=False,
                id="notice",
            )

        def on_key(self) -> None:
            self.exit()

    return Notice()


if __name__ == "__main__":
    raise SystemExit(main())
