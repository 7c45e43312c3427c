"""The review app: :class:`CodecurveApp` and the :func:`make_app` factory.

The app opens at once on the cached scores; the model loads in a background thread.
Slow work runs in thread workers that report only by messages (:mod:`tui.messages`);
one :meth:`CodecurveApp.on_worker_state_changed` turns a failed worker into a visible
error, and the app stays usable for manual coding.

Threads and the study: a study has one writing handle per process (its lock refuses a
second), and that handle is safe to share between threads (``study.Study`` serialises
calls). The scoring worker therefore uses the app's handle: it lists the pending pairs,
runs ``engine.iter_batches`` and writes each batch with ``study.write_scores`` (one
transaction), then posts a coalescing :class:`~tui.messages.ScoringProgressed`; the
queue reloads the page on screen when that message arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import (
    Worker,
    WorkerCancelled,
    WorkerFailed,
    WorkerState,
    get_current_worker,
)

from tui.collector import IdleCollector
from tui.messages import (
    ModelLoaded,
    Progress,
    ScoringFinished,
    ScoringProgressed,
    ScoringStarted,
    ScreeningUpdated,
)
from tui.screens.review import ReviewScreen
from tui.session import ReviewSession
from tui.verdicts import ScreeningSummary, summarise_study

if TYPE_CHECKING:
    from scoring.backend import Backend
    from scoring.engine import ScoringEngine
    from study.store import Study
    from tui.screens.export import ExportOptions

log = logging.getLogger(__name__)

BackendFactory = Callable[[], "Backend"]

#: Seconds after the last decision before the screening panel is recomputed.
SCREENING_DELAY = 0.25


class CodecurveApp(App[None]):
    """Entropy-ordered, keyboard-driven review of a study."""

    CSS_PATH = Path(__file__).with_name("codecurve.tcss")
    TITLE = "codecurve"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "toggle_theme", "Light/dark", show=False, id="app.theme"),
    ]

    def __init__(
        self,
        study: Study,
        *,
        backend_factory: BackendFactory | None = None,
        coder: str | None = None,
        score_on_open: bool = False,
        context: str = "definition",
        batch_size: int | None = None,
        close_study: bool = False,
    ) -> None:
        """
        Args:
            study: The open study (the app writes decisions to it).
            backend_factory: Loads the scoring model (in a worker); None: no scoring.
            coder: The coder's id (default: the OS user name).
            score_on_open: Score pending pairs as soon as the model is loaded.
            context: The prompt's context level (METHOD.md section 1).
            batch_size: Pairs per scoring batch (default: the backend's own).
            close_study: Close the study when the app exits (the CLI's own study).
        """
        super().__init__()
        self.study = study
        self.session = ReviewSession(study, coder=coder)
        self._backend_factory = backend_factory
        self._score_on_open = score_on_open
        self._prompt_context = context
        self._batch_size = batch_size
        self._close_study = close_study
        self._engine: ScoringEngine | None = None
        self._engine_config_id: int | None = None
        self._score_requested = False
        self._scoring = False
        self._screening_timer: Any = None
        self.screening_summary: ScreeningSummary | None = None
        self.scoring_runs = 0
        self._collector = IdleCollector()

    # -- typed accessors ---------------------------------------------------------------

    @property
    def review(self) -> ReviewScreen:
        for screen in self.screen_stack:
            if isinstance(screen, ReviewScreen):
                return screen
        raise LookupError("the review screen is not open")

    @property
    def live_review(self) -> ReviewScreen | None:
        """The review screen, or None while the app starts or shuts down (a worker's
        message may arrive then)."""
        for screen in self.screen_stack:
            if isinstance(screen, ReviewScreen) and screen.is_mounted:
                return screen
        return None

    @property
    def scoring(self) -> bool:
        """Whether a scoring run is going."""
        return self._scoring

    # -- life cycle --------------------------------------------------------------------

    async def on_mount(self) -> None:
        await self.push_screen(ReviewScreen(self.session))
        if self._backend_factory is not None:
            self._score_requested = self._score_on_open
            self.review.set_model_state("loading model…")
            self.load_model()
        else:
            self.review.set_model_state("no model: manual coding")
        self.refresh_screening(delay=0.0)
        # Everything loaded so far (textual, pandas, the study's caches) lives as long as
        # the app: keep it out of the collector's scans, and run full collections while
        # the coder pauses instead of on a random key press.
        self.call_after_refresh(self._collector.start)
        self.set_interval(0.5, self._collector.tick)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseEvent):
            self._collector.input()
        await super().on_event(event)

    async def on_unmount(self) -> None:
        # A scoring batch in flight finishes (and is written) before the study closes;
        # a model still loading is not waited for long.
        busy = [w for w in self.workers if w.is_running]
        for worker in busy:
            worker.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(self._settle(w) for w in busy)), timeout=10)
        if self._close_study:
            self.study.close()
        self._collector.stop()

    @staticmethod
    async def _settle(worker: Worker[Any]) -> None:
        """Wait for ``worker`` to end, however it ends."""
        with contextlib.suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()

    # -- model and scoring -------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="model", name="load-model")
    def load_model(self) -> None:
        """Load the backend, build the engine and register its configuration."""
        from scoring.engine import ScoringEngine

        assert self._backend_factory is not None
        backend = self._backend_factory()
        engine = ScoringEngine(
            backend,
            self.session.codebook,
            context=self._prompt_context,
            batch_size=self._batch_size,
        )
        config_id = self.study.ensure_config(engine.config)
        self.post_message(ModelLoaded(engine, config_id, backend.identity.describe()))

    @on(ModelLoaded)
    def _model_loaded(self, message: ModelLoaded) -> None:
        self._engine = message.engine
        self._engine_config_id = message.config_id
        review = self.live_review
        if review is None:
            return
        if message.config_id != self.session.config_id:
            self.session.config_id = message.config_id
            review.pair_queue.set_source(self.session.source)
            review.update_status()
            self.refresh_screening(delay=0.0)
        review.set_model_state(message.description)
        if self._score_requested:
            self.start_scoring()

    def start_scoring(self) -> None:
        """Score the pending pairs (loading the model first if needed)."""
        if self._scoring:
            self.notify("Already scoring; esc cancels.", timeout=2)
            return
        if self._backend_factory is None:
            self.notify("No model is configured: start with --model to score.", severity="warning")
            return
        if self._engine is None or self._engine_config_id is None:
            self._score_requested = True
            if not any(w.group == "model" and w.is_running for w in self.workers):
                if (review := self.live_review) is not None:
                    review.set_model_state("loading model…")
                self.load_model()
            self.notify("Loading the model; scoring starts when it is ready.", timeout=3)
            return
        self._score_requested = False
        self._scoring = True
        self.score_pending(self._engine, self._engine_config_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="scoring", name="score")
    def score_pending(self, engine: ScoringEngine, config_id: int) -> None:
        """Score and write batch by batch; stop between batches when cancelled."""
        worker = get_current_worker()
        pairs = self.study.pending_pairs(config_id)
        total = len(pairs)
        self.post_message(ScoringStarted(total, config_id))
        done = 0
        cancelled = False
        if pairs:
            batches = engine.iter_batches(pairs)
            try:
                for batch in batches:
                    self.study.write_scores(config_id, batch.scores)
                    done = batch.done
                    self.post_message(
                        ScoringProgressed(Progress(batch.done, batch.total, batch.rate, batch.eta))
                    )
                    if worker.is_cancelled:
                        cancelled = True
                        break
            finally:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()
        self.post_message(ScoringFinished(done, total, cancelled=cancelled))

    def cancel_scoring(self) -> bool:
        """Ask the scoring worker to stop after its batch; False when none is running."""
        running = [w for w in self.workers if w.group == "scoring" and w.is_running]
        for worker in running:
            worker.cancel()
        return bool(running)

    @on(ScoringStarted)
    def _scoring_started(self, message: ScoringStarted) -> None:
        if (review := self.live_review) is not None:
            review.scoring_progress.progress = Progress(0, message.total, 0.0, float("nan"))

    @on(ScoringProgressed)
    def _scoring_progressed(self, message: ScoringProgressed) -> None:
        review = self.live_review
        if review is None:
            return
        review.scoring_progress.progress = message.progress
        review.pair_queue.reload(follow=True)
        review.update_status()

    @on(ScoringFinished)
    def _scoring_finished(self, message: ScoringFinished) -> None:
        self._scoring = False
        self.scoring_runs += 1
        review = self.live_review
        if review is None:
            return
        review.scoring_progress.progress = None
        review.pair_queue.reload(follow=True)
        review.update_status()
        if message.total == 0:
            self.notify("Every pair is scored.", timeout=2)
        elif message.cancelled:
            self.notify(f"Scoring cancelled: {message.done:,} of {message.total:,} pairs scored.")
        else:
            self.notify(f"Scored {message.done:,} pairs.", timeout=3)
        self.refresh_screening(delay=0.0)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker becomes a visible error."""
        worker = event.worker
        if event.state != WorkerState.ERROR:
            if event.state == WorkerState.CANCELLED and worker.group == "scoring":
                self._scoring = False
            return
        error = worker.error
        log.error("worker %s failed: %s", worker.name, error, exc_info=error)
        review = self.live_review
        if worker.group == "model":
            self._score_requested = False
            if review is not None:
                review.set_model_state("no model: manual coding")
            self.notify(
                f"The model could not be loaded: {error}. Manual coding still works.",
                title="Model unavailable",
                severity="error",
                timeout=12,
            )
        elif worker.group == "scoring":
            self._scoring = False
            if review is not None:
                review.scoring_progress.progress = None
                review.pair_queue.reload()
            self.notify(
                f"Scoring stopped: {error}. Scores so far are kept; manual coding still works.",
                title="Scoring failed",
                severity="error",
                timeout=12,
            )
        else:
            self.notify(str(error), title=f"{worker.name} failed", severity="error", timeout=10)

    # -- decisions and screening -------------------------------------------------------

    def decision_saved(
        self, response_id: str, code_id: str, value: int | None, *, undone: bool = False
    ) -> None:
        """Called by the screens after a decision is durable: refresh screening soon."""
        review = self.live_review
        if review is not None and self.screen is not review:
            review.stale = True
        self.refresh_screening()

    def refresh_screening(self, *, delay: float = SCREENING_DELAY) -> None:
        """Recompute the screening panel after ``delay`` (decisions in a burst coalesce)."""
        if self._screening_timer is not None:
            self._screening_timer.stop()
            self._screening_timer = None
        if delay <= 0:
            self.call_after_refresh(self._start_screening)
        else:
            self._screening_timer = self.set_timer(delay, self._start_screening)

    def _start_screening(self) -> None:
        self._screening_timer = None
        self.screen_decisions(self.session.config_id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="screening", name="screening")
    def screen_decisions(self, config_id: int | None) -> None:
        summary = summarise_study(self.study, config_id, self.session.coder)
        self.post_message(ScreeningUpdated(summary))

    @on(ScreeningUpdated)
    def _screening_updated(self, message: ScreeningUpdated) -> None:
        self.screening_summary = message.summary
        review = self.live_review
        if review is None:
            return
        review.screening.show(message.summary)
        review.set_agreement(message.summary.agreement)

    # -- export ------------------------------------------------------------------------

    def open_export(self) -> None:
        from tui.screens.export import ExportScreen

        default = Path.cwd() / f"{self.study.path.stem}-coded"
        self.push_screen(ExportScreen(default), self._export)

    def _export(self, options: ExportOptions | None) -> None:
        if options is None:
            return
        from study.export import export_study

        try:
            written = export_study(
                self.study, options.path, format=options.format, layout=options.layout
            )
        except Exception as exc:  # shown, never a crash: the coder can fix the path and retry
            self.notify(f"Export failed: {exc}", severity="error", timeout=10)
            return
        path = written if isinstance(written, (str, Path)) else options.path
        self.notify(f"Exported to {path}", title="Export", timeout=8)

    # -- commands ----------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, ReviewScreen):
            return
        review = screen
        for title, help_text, action in COMMANDS:
            yield SystemCommand(title, help_text, _bound(review, action))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"


COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("Accept the model's pick", "Record the model's pick for the highlighted pair (a)", "accept"),
    ("Does not apply", "Record the scale's lowest option (x)", "not_apply"),
    ("Skip", "Move to the next undecided pair (space)", "skip"),
    ("Undo", "Take back the last decision (u)", "undo"),
    ("Note", "Add or edit a note on the pair (n)", "note"),
    ("Open response", "Every code of the highlighted response (enter)", "open_response"),
    ("Cycle order", "Uncertainty, id, model's pick, confidence (o)", "cycle_order"),
    ("Filter", "By code and decision status (f)", "filter"),
    ("Search", "Response text (/)", "search"),
    ("Screening panel", "Can the model's confidence be trusted? (s)", "toggle_screening"),
    ("Export", "Write the coded data to a file (e)", "export"),
    ("Score pending pairs", "Run the model over unscored pairs (r)", "score"),
    ("Cancel scoring", "Stop after the running batch (esc)", "cancel"),
    ("Progress per code", "Decided / total for each code (p)", "progress"),
    ("Keys", "Every key and how to read the table (?)", "help"),
)


def _bound(screen: ReviewScreen, action: str) -> Callable[[], Any]:
    async def run() -> None:
        await screen.run_action(action)

    return run


def make_app(
    study: Study | str | Path,
    *,
    backend_factory: BackendFactory | None = None,
    coder: str | None = None,
    score_on_open: bool = False,
    context: str = "definition",
    batch_size: int | None = None,
    close_study: bool | None = None,
) -> CodecurveApp:
    """The app over a study object or path (a path is opened, and closed on exit).

    Tests inject a study and a ``FakeBackend`` factory; the CLI passes a path and the
    real backend's loader. ``close_study`` (default: only for a path) closes the study
    when the app exits.
    """
    close = bool(close_study)
    if isinstance(study, (str, Path)):
        from study.store import Study as StudyClass

        study = StudyClass.open(Path(study))
        close = close_study is None or close_study
    return CodecurveApp(
        study,
        backend_factory=backend_factory,
        coder=coder,
        score_on_open=score_on_open,
        context=context,
        batch_size=batch_size,
        close_study=close,
    )
