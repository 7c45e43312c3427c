"""Export from the app: the dialog, the writing in a thread worker, the notification.

A mixin of :class:`tui.app.CodecurveApp` (which provides the study). ``e`` opens
:class:`~tui.screens.export.ExportScreen`; what it chooses is written by
:func:`tui.screens.export.write_export` in a worker, off the event loop, which posts
:class:`~tui.messages.ExportFinished` when done (a failure is shown by the app's worker
handler, and the coder can fix the path and retry).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work

from tui.messages import ExportFinished
from tui.text import printable

if TYPE_CHECKING:
    from textual.app import App

    from study.store import Study
    from tui.screens.export import ExportOptions

    _Base = App[None]
else:
    _Base = object


class ExportActions(_Base):
    """The app's export (see the module)."""

    if TYPE_CHECKING:
        study: Study

    def action_export(self) -> None:
        self.open_export()

    def open_export(self) -> None:
        from tui.screens.export import ExportScreen

        default = Path.cwd() / f"{self.study.path.stem}-coded"
        self.push_screen(ExportScreen(default), self._export_chosen)

    def _export_chosen(self, options: ExportOptions | None) -> None:
        if options is not None:
            self.export(options)

    @work(thread=True, exclusive=True, exit_on_error=False, group="export", name="export")
    def export(self, options: ExportOptions) -> None:
        """Write the export off the event loop."""
        from tui.screens.export import write_export

        path = write_export(self.study, options)
        self.post_message(ExportFinished(path))

    # Named, not decorated: Textual collects ``@on`` handlers of its own classes only.
    def on_export_finished(self, message: ExportFinished) -> None:
        self.notify(
            f"Exported to {printable(str(message.path))}", title="Export", timeout=8, markup=False
        )
