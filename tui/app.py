"""The review app: :class:`CodecurveApp` and the :func:`make_app` factory.

The app opens at once on the cached scores; the model loads in a background thread.
Slow work runs in thread workers that report only by messages (:mod:`tui.messages`);
one :meth:`CodecurveApp.on_worker_state_changed` turns a failed worker into a visible
error, and the app stays usable for manual coding.

Threads and the study: the app has one handle on the study, its coder's session (a
second session of the same coder is refused), and that handle is safe to share between
threads (``study.Study`` serialises calls). Other coders' sessions write the same study
at once; :class:`~tui.live.Live` notices their commits every half second and the app
shows them (:meth:`CodecurveApp.follow_team`). The scoring worker uses the app's handle
and runs the same loop as ``codecurve score`` (:func:`study.score_run.score_study`),
handing it the worker's cancellation event (checked between batches) and a progress
callback that posts a coalescing :class:`~tui.messages.ScoringProgressed`; the queue
reloads the page on screen when that message arrives. Export runs in a thread worker too.

Screens never call the app: they post :class:`~tui.messages.AnnotationSaved` and the
like, bind app-wide keys to the app's actions (``app.score``), and the app tells the
screens under the active one with :class:`~tui.messages.StudyChanged`.

The app keeps the screens, the workers and what the coder is told, and holds the
collaborators that keep the state behind them: :class:`~tui.scorer.Scorer` (the model
and the scoring runs), :class:`~tui.iterating.Iteration` (editing a code with
``E``, choosing the configuration with ``C``, the panel's comparison of configurations)
and :class:`~tui.session.ReviewSession` (the coder's decisions), :class:`~tui.evidence.EvidenceBook`
(which sentence moved the model, read for the pairs the coder reads and measured in a
thread worker where none is kept), :class:`~tui.live.Live`
(the other sessions' commits), :class:`~tui.learning.Learner` (when the coder's curves are
refitted on their decisions: every :data:`~tui.learning.REFIT_EVERY` decisions of a code,
and on ``L``; the refit runs in a thread worker while the coder goes on deciding, and the
queue then follows the learned curves). Export (``e``) collects
its options in :class:`~tui.screens.export.ExportScreen` and is written by
:func:`tui.screens.export.write_export` in a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import (
    Worker,
    WorkerCancelled,
    WorkerFailed,
    WorkerState,
    get_current_worker,
)

from codebooks.errors import CodecurveError
from scoring.errors import ScoringCancelled
from study import ScoreProgress, active_context, config_label, score_study
from study.errors import StudyError, StudyLockedError
from study.rows import Context
from study.scores import is_learned
from tui.collector import IdleCollector
from tui.estimate import estimate_text
from tui.evidence import EvidenceBook
from tui.iterating import Iteration
from tui.keymap import bindings, key, rebind
from tui.learning import (
    Learned,
    Learner,
    Request,
    learned_on,
    learned_text,
    needs_text,
    run_request,
)
from tui.live import INTERVAL as LIVE_INTERVAL
from tui.live import Live
from tui.messages import (
    AnnotationSaved,
    ComparisonReady,
    DelegationPlanned,
    EvidenceMeasured,
    ExportFinished,
    LearningFinished,
    ModelLoaded,
    Progress,
    ReportFinished,
    ReportRequested,
    ScoringFinished,
    ScoringProgressed,
    ScoringStarted,
    ScreeningCutChanged,
    ScreeningFilterRequested,
    ScreeningShown,
    ScreeningUpdated,
    StudyChanged,
)
from tui.plans import plan_for
from tui.remedies import said
from tui.scorer import BackendFactory, Run, Scorer
from tui.screens.review import ReviewScreen
from tui.session import ReviewSession, default_coder
from tui.text import printable
from tui.verdicts import ScreeningSummary, summarise_study

if TYPE_CHECKING:
    from scoring.engine import ScoringEngine
    from scoring.learned import LearnedCurve
    from scoring.score import Pair
    from study import Study
    from study.analysis import Comparison
    from tui.screens.code_editor import CodeEdit
    from tui.screens.export import ExportOptions

log = logging.getLogger(__name__)

#: Seconds after the last decision before the screening panel is recomputed.
SCREENING_DELAY = 0.25

#: The same while the panel is hidden (only the status line's agreement shows it): a
#: screening in a worker takes the interpreter from the keys for tens of milliseconds,
#: so it waits for a pause in the keys (each key puts it off again).
HIDDEN_SCREENING_DELAY = 1.5

#: Seconds without a key before a refit that came due by itself starts: its fit takes
#: the interpreter, and its writes the study's write turn, from the keys that follow
#: (each key puts it off again; ``L`` starts one at once).
LEARNING_PAUSE = 1.5


class CodecurveApp(App[None]):
    """Entropy-ordered, keyboard-driven review of a study."""

    CSS_PATH = Path(__file__).with_name("codecurve.tcss")
    TITLE = "codecurve"

    BINDINGS: ClassVar[list[BindingType]] = bindings("app.theme")

    def __init__(
        self,
        study: Study,
        *,
        backend_factory: BackendFactory | None = None,
        coder: str | None = None,
        score_on_open: bool = False,
        context: Context | None = None,
        batch_size: int | None = None,
        close_study: bool = False,
        keys: Mapping[str, str] | None = None,
        export_folder: Path | None = None,
        measure_evidence: bool = True,
    ) -> None:
        """
        Args:
            study: The open study (the app writes decisions to it).
            backend_factory: Loads the scoring model (in a worker); None: no scoring.
            coder: The coder's id (default: the OS user name).
            score_on_open: Score pending pairs as soon as the model is loaded.
            context: The prompt's context level (METHOD.md section 1); default: the
                active configuration's, so that the app opens on the scores there are.
            batch_size: Pairs per scoring batch (default: the backend's own).
            close_study: Close the study when the app exits (the CLI's own study).
            keys: Keys the user rebound, by action id (:func:`tui.keyconfig.load_keys`).
            export_folder: Exports go into this folder only, and are then delivered to
                the coder's browser (the served app: :mod:`tui.serve`); None: anywhere.
            measure_evidence: Measure which sentence moved the model for the pairs the
                coder reads, where none is kept, once the model is loaded (False: only
                what ``codecurve explain`` kept is shown; tests that count the model's
                calls).
        """
        # The modules imported so far live as long as the process: out of the
        # collector's scans before Textual builds the app (see tui.collector).
        IdleCollector.freeze()
        super().__init__()
        self.study = study
        self.session = ReviewSession(study, coder=coder)
        self.scorer = Scorer(backend_factory, load=self.load_model, run=self._run_scoring)
        self.evidence = EvidenceBook(
            study, self.session, self.scorer, run=self.measure_evidence, measure=measure_evidence
        )
        self.iteration = Iteration(study, self.session)
        self.live = Live(study, self.session)
        self.learner = Learner(study, self.session, run=self.learn_curves)
        self._score_on_open = score_on_open
        self._prompt_context: Context = context or active_context(study)
        #: The confidence cut of the screening panel ("scale", "median" or a number).
        self.screening_cut: float | str = "scale"
        self._batch_size = batch_size
        self._close_study = close_study
        self._screening_timer: Any = None
        self._screening_delay = SCREENING_DELAY
        self._learning_timer: Any = None
        self._learning_due: list[Request] = []
        self._last_key = -math.inf  # time.monotonic() of the last key
        self.screening_summary: ScreeningSummary | None = None
        self.scoring_runs = 0
        self._collector = IdleCollector()
        #: The keys the user rebound, by action id (the help and the palette show them).
        self.rebound_keys: dict[str, str] = dict(keys or {})
        self.set_keymap(self.rebound_keys)
        rebind(self.rebound_keys)
        self.export_folder = export_folder
        #: The last notification's words and until when it shows (see :meth:`notify`).
        self._last_notice: tuple[tuple[str, str, str], float] | None = None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Textual's notification, but not the same words again while they still show
        (a key pressed again at the end of a list): toasts do not pile up. An error
        always shows (each failed save is told)."""
        now = time.monotonic()
        shown = self._last_notice
        if (
            severity != "error"
            and shown is not None
            and shown[0] == (message, title, severity)
            and now < shown[1]
        ):
            return
        self._last_notice = (
            (message, title, severity),
            now + (timeout if timeout is not None else self.NOTIFICATION_TIMEOUT),
        )
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

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
        message may arrive then, before its widgets are mounted or after they are
        removed)."""
        for screen in self.screen_stack:
            if isinstance(screen, ReviewScreen) and screen.is_mounted and screen.composed:
                return screen
        return None

    @property
    def scoring(self) -> bool:
        """Whether a scoring run is going."""
        return self.scorer.scoring

    @property
    def stale_keys(self) -> frozenset[tuple[str, str]]:
        """Pairs whose shown score was computed from an older text (drawn greyed)."""
        return self.iteration.stale_keys

    @property
    def comparison(self) -> Comparison | None:
        """The comparison of configurations the screening panel shows, if any."""
        return self.iteration.comparison

    # -- life cycle --------------------------------------------------------------------

    async def on_mount(self) -> None:
        # Everything loaded so far (textual, pandas, the study's index) lives as long as
        # the app: keep it out of the collector's scans, and again what the first paint
        # loads; full collections run while the coder pauses, not on a random key.
        self._collector.start()
        await self.push_screen(
            ReviewScreen(self.session, learning=self.learner, evidence=self.evidence)
        )
        if self.scorer.has_model:
            self.show_model_state(self.review, "loading model…")
            self.scorer.load(score=self._score_on_open)
        else:
            self.show_model_state(self.review, "no model")
        self.refresh_screening(delay=0.0)
        if self.session.config_id is not None:  # where each code's learning stands
            self.call_after_refresh(self.learner.request, Request(None, learn=False))
        self.call_after_refresh(self._collector.freeze)
        self.set_interval(0.5, self._collector.tick)
        self.set_interval(LIVE_INTERVAL, self.follow_team)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseEvent):
            self._collector.input()
            if isinstance(event, events.Key):
                self.call_after_refresh(self._collector.after_key)
                self._last_key = time.monotonic()  # a screening waits for a pause
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
        rebind({})

    @staticmethod
    async def _settle(worker: Worker[Any]) -> None:
        """Wait for ``worker`` to end, however it ends."""
        with contextlib.suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()

    # -- model and scoring -------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="model", name="load-model")
    def load_model(self, backend_factory: BackendFactory) -> None:
        """Load the backend, build the engine and register its configuration."""
        from scoring.engine import ScoringEngine

        backend = backend_factory()
        engine = ScoringEngine(
            backend,
            self.session.codebook,
            context=self._prompt_context,
            batch_size=self._batch_size,
        )
        # Registered, not activated: the study's active configuration changes only once
        # something is scored with this one (score_study activates it).
        config_id = self.study.scores.ensure_config(engine.config, activate=False)
        self.post_message(ModelLoaded(engine, config_id, backend.identity.describe()))

    @on(ModelLoaded)
    def _model_loaded(self, message: ModelLoaded) -> None:
        self.scorer.model_loaded(message.engine, message.config_id)
        review = self.live_review
        if review is None:
            return
        shown = self.session.config_id
        # Curves learned on this model's scores are shown: the queue stays on them.
        stays = shown is not None and learned_on(self.study, shown, message.config_id)
        if message.config_id != shown and not stays:
            if shown is not None and self.study.scores.scored_count(shown) > 0:
                # Never leave the coder on an empty configuration: keep showing the
                # scores there are until something is scored with the new one.
                new = config_label(self.study.scores.config_row(message.config_id))
                self.notify(
                    f"A new configuration starts: {new}. Its pairs are scored when you "
                    f"press {key('review.score')}; until then you see "
                    f"{config_label(self.study.scores.config_row(shown))}.",
                    title="New configuration",
                    severity="warning",
                    timeout=12,
                )
            else:
                self.show_config(message.config_id)
        self.show_model_state(review)
        self.resume_scoring()
        self.evidence.resume()  # the pairs the coder read while the model loaded

    def start_scoring(self) -> None:
        """Score the pending pairs (loading the model first if needed)."""
        started = self.scorer.start()
        if started is Run.BUSY:
            self.notify(f"Already scoring; {key('review.cancel')} cancels.", timeout=2)
        elif started is Run.NO_MODEL:
            self.notify("No model is configured: start with --model to score.", severity="warning")
        elif started in (Run.LOADING, Run.WAITING):
            if started is Run.LOADING and (review := self.live_review) is not None:
                self.show_model_state(review, "loading model…")
            self.notify("Loading the model; scoring starts when it is ready.", timeout=3)

    def resume_scoring(self) -> None:
        """Start the run or the rescoring that waited for the model or for a run."""
        self.scorer.resume(self.study.codebook)

    def action_score(self) -> None:
        self.start_scoring()

    def _run_scoring(self, engine: ScoringEngine, activate: bool) -> None:
        """Start a scoring run; a measurement of evidence gives the engine up after its
        batch (the run waits for its turn)."""
        self.workers.cancel_group(self, "evidence")
        self.score_pending(engine, activate)

    @work(thread=True, exclusive=True, exit_on_error=False, group="scoring", name="score")
    def score_pending(self, engine: ScoringEngine, activate: bool = True) -> None:
        """Run :func:`study.score_run.score_study`: it stores batch by batch and stops
        between batches once the worker is cancelled (``activate``: make the engine's
        configuration the active one)."""
        worker = get_current_worker()
        stored = pending = 0

        def started(config_id: int, to_score: int) -> None:
            nonlocal pending
            pending = to_score
            # The speed so far, read here: the run may store its own before the
            # message is handled, and the estimate is of what is about to happen.
            rate = self.study.scores.measured_rate(config_id) if to_score else None
            self.post_message(ScoringStarted(to_score, config_id, rate))

        def progressed(progress: ScoreProgress) -> None:
            nonlocal stored
            stored = progress.stored
            batch = progress.batch
            self.post_message(
                ScoringProgressed(Progress(batch.done, batch.total, batch.rate, batch.eta))
            )

        try:
            with self.scorer.turn:
                run = score_study(
                    self.study,
                    engine,
                    started=started,
                    progress=progressed,
                    cancel=worker.cancelled_event,
                    activate=activate,
                )
        except ScoringCancelled:
            self.post_message(ScoringFinished(stored, pending, cancelled=True))
            return
        self.post_message(ScoringFinished(run.stored, run.pending, cancelled=worker.is_cancelled))

    # -- evidence: which sentence moved the model ---------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="evidence", name="explain")
    def measure_evidence(
        self,
        engine: ScoringEngine,
        config_id: int,
        pairs: list[Pair],
        known: Mapping[str, LearnedCurve],
    ) -> None:
        """Measure which sentence of each pair moved the configuration's curve and keep
        it in the study (:func:`study.analysis._evidence.measure_pairs`: a learned
        configuration through its learned curves, ``known`` those of the app's refits);
        stops after a batch once cancelled (a scoring run wants the engine). A learned
        curve that the coder's decisions no longer give waits for the next refit."""
        from study.analysis import measure_pairs

        worker = get_current_worker()
        try:
            with self.scorer.turn:
                measured = measure_pairs(
                    self.study, engine, config_id, pairs, known=known, cancel=worker.cancelled_event
                )
        except StudyError as error:
            log.info("evidence of configuration %s waits: %s", config_id, error)
            self.post_message(EvidenceMeasured(config_id, (), waiting=True))
            return
        self.post_message(EvidenceMeasured(config_id, measured.evidence, curves=measured.curves))

    @on(EvidenceMeasured)
    def _evidence_measured(self, message: EvidenceMeasured) -> None:
        pairs = self.evidence.measured(
            message.config_id, message.evidence, curves=message.curves, waiting=message.waiting
        )
        if (review := self.live_review) is not None:
            review.evidence_arrived(pairs)

    def cancel_scoring(self) -> bool:
        """Ask the scoring worker to stop after its batch; False when none is running."""
        running = [w for w in self.workers if w.group == "scoring" and w.is_running]
        for worker in running:
            worker.cancel()
        return bool(running)

    def action_cancel_scoring(self) -> None:
        if self.cancel_scoring():
            self.notify("Cancelling after this batch…", timeout=2)

    def config_state(self, state: str = "", *, blind: bool = False) -> str:
        """The status line's model part, short: the configuration shown (``#1 SmolLM2 ·
        full · likert``), the model's state ("loading model…", "no model") and, when the
        loaded model is another configuration, the one ``r`` scores with. ``blind``: a
        learned configuration without its name (under blind coding nothing says what a
        curve learned)."""
        shown = self.session.config_id
        if shown is None:
            parts = ["not scored"]
        else:
            row = self.study.scores.config_row(shown)
            learned = blind and is_learned(row)
            label = f"#{row.id} · {row.context} · {row.template_id}" if learned else None
            parts = [label or config_label(row)]
        if state:
            parts.append(state)
        loaded = self.scorer.loaded_config
        if loaded is not None and loaded != shown:
            parts.append(f"{key('review.score')} scores #{loaded}")
        return " · ".join(parts)

    def model_word(self) -> str:
        """The model's state in the status line's words, when it is not loaded."""
        if not self.scorer.has_model:
            return "no model"
        return "loading model…" if self.scorer.loading else ""

    def show_model_state(self, review: ReviewScreen, state: str = "") -> None:
        """Put the configuration shown and the model's ``state`` on the status line."""
        review.set_model_state(self.config_state(state), blind=self.config_state(state, blind=True))

    def show_config(self, config_id: int, *, follow: bool = False) -> None:
        """Show the scores of ``config_id`` (the queue, status and screening follow);
        ``follow``: the highlighted pair stays highlighted where the new order puts it."""
        self.session.config_id = config_id
        self.evidence.forget()
        if (review := self.live_review) is not None:
            review.show_source(self.session.source, follow=follow)
            review.update_status()
        self.update_stale()
        self.refresh_screening(delay=0.0)

    @on(ScoringStarted)
    def _scoring_started(self, message: ScoringStarted) -> None:
        if message.config_id != self.session.config_id and not self.scorer.rescoring:
            self.show_config(message.config_id)
            if (review := self.live_review) is not None:
                self.show_model_state(review)
        if (review := self.live_review) is not None:
            review.show_scoring(Progress(0, message.total, 0.0, float("nan")))
            review.scoring_started()
        if message.total:
            # What the run will cost, at the speed of the study's last run.
            said = estimate_text(message.total, message.rate, config_id=message.config_id)
            self.notify(f"Scoring: {said}. esc cancels.", timeout=6, markup=False)

    @on(ScoringProgressed)
    def _scoring_progressed(self, message: ScoringProgressed) -> None:
        review = self.live_review
        if review is None:
            return
        review.show_scoring(message.progress)
        if self.stale_keys:
            self.update_stale()
        review.reload_queue(follow=True)
        review.update_status()
        self._scores_stored(review)

    @on(ScoringFinished)
    def _scoring_finished(self, message: ScoringFinished) -> None:
        rescore = self.scorer.finished(cancelled=message.cancelled)
        self.scoring_runs += 1
        self.evidence.forget()  # rescored pairs' evidence no longer holds
        self.evidence.resume()
        review = self.live_review
        if review is None:
            return
        self.update_stale()
        if rescore:
            self.call_after_refresh(self.resume_scoring)
        review.show_scoring(None)
        review.reload_queue(follow=True)
        review.scoring_finished()
        review.update_status()
        self._scores_stored(review)
        if message.total == 0:
            self.notify("Every pair is scored.", timeout=2)
        elif message.cancelled:
            self.notify(f"Scoring cancelled: {message.done:,} of {message.total:,} pairs scored.")
        else:
            self.notify(f"Scored {message.done:,} pairs.", timeout=3)
        self.refresh_screening(delay=0.0)
        # The run made its configuration the active one: the coder's learned curves
        # are refitted on the new scores, and the queue follows them again.
        if (refit := self.learner.scores_changed()) is not None:
            self.refit_after_pause(refit)

    def _scores_stored(self, review: ReviewScreen) -> None:
        """Tell the screens opened over the review screen (the response list, the
        response view) that scores arrived: the one on top shows them now."""
        for screen in self.screen_stack[self.screen_stack.index(review) + 1 :]:
            screen.post_message(StudyChanged())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker becomes a visible error."""
        worker = event.worker
        if event.state != WorkerState.ERROR:
            if event.state == WorkerState.CANCELLED and worker.group == "scoring":
                self.scorer.stopped()
            elif event.state == WorkerState.CANCELLED and worker.group == "model":
                self.scorer.model_failed()
            elif event.state == WorkerState.CANCELLED and worker.group == "learning":
                self.learner.stopped(failed=False)
            elif event.state == WorkerState.CANCELLED and worker.group == "evidence":
                self.evidence.stopped(failed=False)
            return
        error = worker.error
        if isinstance(error, CodecurveError):  # said in the app, as its notification
            log.info("worker %s stopped: %s", worker.name, error)
        else:
            log.error("worker %s failed: %s", worker.name, error, exc_info=error)
        review = self.live_review
        if worker.group == "model":
            self.scorer.model_failed()
            if review is not None:
                self.show_model_state(review, "no model: manual coding")
            self.notify(
                f"The model could not be loaded: {printable(said(error))}. "
                "Manual coding still works.",
                title="Model unavailable",
                severity="error",
                timeout=12,
                markup=False,
            )
        elif worker.group == "scoring" and isinstance(error, StudyLockedError):
            self.scorer.stopped()  # another session scores: its scores arrive here
            if review is not None:
                review.show_scoring(None)
            self.notify(printable(said(error)), title="Scoring", timeout=10, markup=False)
        elif worker.group == "scoring":
            self.scorer.stopped()
            if review is not None:
                review.show_scoring(None)
                review.reload_queue()
            self.notify(
                f"Scoring stopped: {printable(said(error))}. "
                "Scores so far are kept; manual coding still works.",
                title="Scoring failed",
                severity="error",
                timeout=12,
                markup=False,
            )
        elif worker.group == "learning":
            request = self.learner.stopped(failed=True)
            if review is not None and review.composed:
                review.update_learning()
            if request is not None and not request.asked and self.model_hidden():
                return  # a refit by itself while the coder works blind: not shown
            again = (
                ""
                if request is not None and request.asked
                else (f" Refits wait until you press {key('review.learn')}.")
            )
            self.notify(
                f"Not learned: {printable(said(error))}. The queue keeps its order.{again}",
                title="Learning",
                severity="error",
                timeout=12,
                markup=False,
            )
        elif worker.group == "evidence":
            # Nothing the coder asked for: said once, and not tried again this session.
            self.evidence.stopped(failed=True)
            self.notify(
                f"Which sentence moved the model could not be measured: "
                f"{printable(said(error))}. Coding is not affected.",
                title="Evidence",
                severity="warning",
                timeout=8,
                markup=False,
            )
        elif worker.group in ("export", "report"):
            self.notify(
                f"{worker.group.capitalize()} failed: {printable(said(error))}",
                title=worker.group.capitalize(),
                severity="error",
                timeout=12,
                markup=False,
            )
        else:
            self.notify(
                printable(said(error)),
                title=f"{worker.name} failed",
                severity="error",
                timeout=10,
                markup=False,
            )

    # -- learning from the coder -------------------------------------------------------

    def action_learn(self) -> None:
        """Refit the highlighted pair's code's curve on the coder's decisions now (every
        code's when no pair is highlighted); the coder goes on deciding meanwhile."""
        if self.session.config_id is None:
            self.notify(
                f"Nothing is scored yet: press {key('review.score')} to score, then "
                f"{key('review.learn')} learns from your decisions.",
                timeout=4,
            )
            return
        review = self.live_review
        row = review.current_row if review is not None else None
        code_id = row.code_id if row is not None else None
        started = self.learner.request(Request(code_id, learn=True, asked=True))
        if self.model_hidden():
            return
        code = self.session.code(code_id) if code_id is not None else None
        what = printable(code.name, single_line=True) if code is not None else "every code"
        when = "now" if started else "after the refit under way"
        self.notify(f"Learning {what} from your decisions {when}…", timeout=3, markup=False)

    def model_hidden(self) -> bool:
        """Whether the coder works blind now (blind coding, or the queue walks a blind
        order): nothing is said then about what a curve learned."""
        review = self.live_review
        order = review.order if review is not None else "entropy"
        return self.session.hides_model(order)

    @work(thread=True, exclusive=True, exit_on_error=False, group="learning", name="learn")
    def learn_curves(self, request: Request) -> None:
        """Do a learning request (:func:`tui.learning.run_request`: seconds of fitting and
        rescoring, written in blocks a decision can slip between); a failure is told by the
        worker handler, and a code whose rescoring was cut short is refitted whole."""
        learned = run_request(
            self.study, coder=self.session.coder, request=request, memory=self.learner.memory
        )
        self.post_message(LearningFinished(learned))

    @on(LearningFinished)
    def _learning_finished(self, message: LearningFinished) -> None:
        learned = message.learned
        self.learner.finished(learned)
        if learned.config_id is not None and learned.curves:
            self.evidence.learned(learned.config_id, learned.curves)
        review = self.live_review
        if learned.activated and learned.config_id is not None:
            # The queue is sorted again by the learned curves' entropy; the coder's pair
            # stays highlighted, and their next decision goes on to the new top.
            self.show_config(learned.config_id, follow=True)
            if review is not None:
                self.show_model_state(review, self.model_word())
                review.learned_order()
                self._scores_stored(review)
        elif review is not None and review.composed:
            review.update_learning()
        if learned.request.asked:
            self._tell_learned(learned)

    def _tell_learned(self, learned: Learned) -> None:
        """What the refit the coder asked for did (nothing of it while they work blind)."""
        if self.model_hidden():
            self.notify(
                "Coding blind: the curve's figures stay hidden until blind coding is off.",
                timeout=4,
            )
            return
        code_id = learned.request.code_id
        state = learned.states.get(code_id) if code_id is not None else None
        code = self.session.code(code_id) if code_id is not None else None
        if state is not None and code is not None:
            scale = self.session.scale(code.id)
            if state.needs:
                full, _ = needs_text(code.name, scale, state.needs)
                self.notify(
                    f"{full}.", title="Not learned yet", severity="warning", timeout=6, markup=False
                )
            elif state.learned and learned.activated:
                full, _ = learned_text(code.name, scale, state)
                self.notify(f"{full}; the queue follows it now.", timeout=8, markup=False)
            return
        if learned.activated:
            count = len(learned.learned)
            self.notify(
                f"Learned {count} of {len(learned.states)} codes from your decisions; the "
                "queue follows them now (the status line says how, per code).",
                timeout=6,
            )
        else:
            self.notify(
                "No code has enough decisions of each value to learn yet.",
                title="Not learned yet",
                severity="warning",
                timeout=6,
            )

    # -- codebook iteration ------------------------------------------------------------

    def action_edit_code(self) -> None:
        """Open the highlighted pair's code in the editor."""
        from tui.screens.code_editor import CodeEditorScreen

        review = self.live_review
        row = review.current_row if review is not None else None
        if row is None:
            self.bell()
            return
        editor = CodeEditorScreen(self.study.codebook, row.code_id, planner=self.iteration.plan)
        self.push_screen(editor, self._code_edited)

    def action_add_code(self) -> None:
        """Add a code while reading (an inductive code): the editor, empty, with a name;
        recorded as the next codebook version, its pairs then scored."""
        from tui.screens.code_editor import CodeEditorScreen

        editor = CodeEditorScreen(self.study.codebook, None, planner=self.iteration.plan)
        self.push_screen(editor, self._code_edited)

    def _code_edited(self, edit: CodeEdit | None) -> None:
        """Record a confirmed edit as the next codebook version, then rescore its pairs."""
        if edit is None:
            return
        try:
            version = self.iteration.revise(edit)
        except CodecurveError as exc:
            self.notify(
                f"Not recorded: {printable(str(exc))}",
                title="Codebook",
                severity="error",
                timeout=12,
                markup=False,
            )
            return
        self.update_stale()
        if (review := self.live_review) is not None:
            review.clear_detail()
            review.codes_changed()
        self.notify(
            f"Recorded codebook version {version}: " + "; ".join(edit.lines),
            title="Codebook",
            timeout=6,
            markup=False,
        )
        if self.scorer.request_rescore(self.study.codebook) is Run.NO_MODEL:
            kept = (
                "the new code's pairs stay unscored"
                if edit.added
                else "the code's pairs keep their old (greyed) curves"
            )
            self.notify(
                f"No model is configured: {kept} until they are scored (start with "
                "--model, or run codecurve score).",
                severity="warning",
                timeout=8,
            )

    def update_stale(self) -> None:
        """Find the pairs shown with a score from an older text; the queue and the
        detail pane draw their curves greyed until the new score arrives."""
        if self.iteration.find_stale() and (review := self.live_review) is not None:
            review.set_stale(self.iteration.stale_keys)

    def action_choose_config(self) -> None:
        """Open the configuration picker."""
        from tui.screens.configs import ConfigPicker, config_choices

        choices = config_choices(self.study)
        if not choices:
            score = key("review.score")
            self.notify(f"No scoring configuration yet: press {score} to score.", timeout=4)
            return
        self.push_screen(ConfigPicker(choices), self._config_chosen)

    def _config_chosen(self, config_id: int | None) -> None:
        if config_id is None:
            return
        if self.iteration.activate(config_id):
            self.show_config(config_id)
        if (review := self.live_review) is not None:
            self.show_model_state(review)
        label = config_label(self.study.scores.config_row(config_id))
        self.notify(f"Active configuration: {label}", timeout=4, markup=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="comparison", name="compare")
    def compare_decisions(self) -> None:
        """Compare the scored configurations on the coder's decisions (the screening
        panel shows the highlighted code's rows); nothing when fewer than two."""
        self.post_message(ComparisonReady(*self.iteration.compare()))

    @on(ComparisonReady)
    def _comparison_ready(self, message: ComparisonReady) -> None:
        self.iteration.comparison = message.comparison
        if (review := self.live_review) is not None:
            review.show_comparison(message.comparison, message.note)

    # -- export ------------------------------------------------------------------------

    def action_export(self) -> None:
        """Open the export dialog; what it chooses is written in a worker."""
        from study.exchange import decision_coders
        from tui.screens.export import ExportScreen

        coders = decision_coders(self.study)
        if self.export_folder is not None:
            # Served: a file name in the coder's own folder (the server's paths are not
            # the coder's business), and the coder's own decisions or the reconciled ones.
            default = Path(f"{self.study.path.stem}-coded")
            screen = ExportScreen(default, coders=coders, own=self.session.coder)
        else:
            default = Path.cwd() / f"{self.study.path.stem}-coded"
            screen = ExportScreen(default, coders=coders)
        self.push_screen(screen, self._export_chosen)

    def _export_chosen(self, options: ExportOptions | None) -> None:
        if options is None:
            return
        folder = self.export_folder
        if folder is not None:
            target = options.path if options.path.is_absolute() else folder / options.path
            if target.resolve().parent != folder.resolve():
                self.notify(
                    "Exports are written into your own folder on the server and then "
                    "downloaded: give a file name only.",
                    severity="warning",
                    markup=False,
                )
                return
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self.notify(
                    f"Cannot create {printable(str(folder))}: {exc.strerror or exc}",
                    severity="error",
                    markup=False,
                )
                return
            options = replace(options, path=folder / target.name)
        self.export(options)

    @work(thread=True, exclusive=True, exit_on_error=False, group="export", name="export")
    def export(self, options: ExportOptions) -> None:
        """Write the export off the event loop (a failure is shown by the worker
        handler, and the coder can fix the path and retry)."""
        from tui.screens.export import write_export

        path = write_export(self.study, options)
        self.post_message(ExportFinished(path))

    @on(ExportFinished)
    def _export_finished(self, message: ExportFinished) -> None:
        shown = message.path.name if self.export_folder is not None else str(message.path)
        self.notify(f"Exported to {printable(shown)}", title="Export", timeout=8, markup=False)
        if self.export_folder is not None and self.is_web:
            self.deliver_binary(message.path, save_filename=message.path.name)

    # -- the study's report ------------------------------------------------------------

    def report_path(self) -> Path:
        """Where the app writes the study's report: beside the study, or in the exports
        folder of a served app (then it is downloaded to the browser)."""
        name = f"{self.study.path.stem}-report.html"
        if self.export_folder is not None:
            return self.export_folder / name
        return self.study.path.with_name(name)

    @on(ReportRequested)
    def _report_requested(self) -> None:
        self.notify("Writing the study's report…", title="Report", timeout=3)
        self.write_report(self.report_path())

    @work(thread=True, exclusive=True, exit_on_error=False, group="report", name="report")
    def write_report(self, path: Path) -> None:
        """Write the report off the event loop (a failure is shown by the worker handler)."""
        from study.report import ReportOptions, report_data, warm
        from study.report import write_report as write_files
        from tui.commands.outputs import check_output, recorded_sources
        from tui.commands.report import REPORT_SUFFIXES

        protect = {"study": self.study.path}
        if self.export_folder is not None:
            self.export_folder.mkdir(parents=True, exist_ok=True)
        check_output(path, protect=protect, kinds=REPORT_SUFFIXES, what="HTML report")
        warm(len(self.study.codes))
        data = report_data(self.study, ReportOptions(coder=self.session.coder))
        sources = tuple(recorded_sources(protect).values())
        write_files(data, path, protect=(self.study.path, *sources))
        self.post_message(ReportFinished(path))

    @on(ReportFinished)
    def _report_finished(self, message: ReportFinished) -> None:
        shown = message.path.name if self.export_folder is not None else str(message.path)
        self.notify(
            f"Report written to {printable(shown)}",
            title="Report",
            timeout=10,
            markup=False,
        )
        if self.export_folder is not None and self.is_web:
            self.deliver_binary(message.path, save_filename=message.path.name)

    # -- the team ----------------------------------------------------------------------

    def follow_team(self) -> None:
        """Show what other sessions committed since the last look (called on a timer:
        one cheap read while nobody else works)."""
        change = self.live.poll()
        if change is None:
            return
        self.learner.forget_sample()  # an audit drawn or extended there never counts
        review = self.live_review
        if change.config and (active := self.study.scores.active_config_id()) is not None:
            self.show_config(active)
            if review is not None:
                self.show_model_state(review)
        if change.structure:
            self.update_stale()
            self.notify(
                "Another session changed the codebook or the responses: the queue shows them now.",
                title="Team",
                timeout=6,
            )
        if change.blind:
            state = "on" if self.session.blind_coding else "off"
            self.notify(f"Your blind double coding was turned {state} elsewhere.")
        if review is not None and review.composed:
            if change.structure or change.blind:
                review.show_source(self.session.source)
                review.clear_detail()
            review.reload_queue(follow=True)
            review.update_status()
            for screen in self.screen_stack[self.screen_stack.index(review) + 1 :]:
                screen.post_message(StudyChanged())
        self.refresh_screening()

    # -- decisions and screening -------------------------------------------------------

    @on(AnnotationSaved)
    def _annotation_saved(self, message: AnnotationSaved) -> None:
        """A screen saved a change: the screens below it are out of date, and the
        screening is recomputed soon."""
        # The first screen is Textual's empty default one: a message to it would repaint
        # the whole terminal on every decision.
        for screen in self.screen_stack[1:-1]:
            screen.post_message(StudyChanged())
        review = self.live_review
        shown = review is not None and review.screening_shown
        self.refresh_screening(delay=SCREENING_DELAY if shown else HIDDEN_SCREENING_DELAY)
        if message.kind == "record":
            self._count_decision(message, review)

    def _count_decision(self, message: AnnotationSaved, review: ReviewScreen | None) -> None:
        """Count a decision towards its code's next refit (never an audit pair nor an
        accepted pick: they never teach the curve), and start the refit when it is due."""
        due = self.learner.decided(
            message.response_id, message.code_id, message.value, human=message.source == "human"
        )
        if review is not None and review.composed:
            review.update_learning()
        if due is not None and self.session.config_id is not None:
            self.refit_after_pause(due)

    def refit_after_pause(self, request: Request) -> None:
        """Start ``request`` once no key has come for :data:`LEARNING_PAUSE` seconds."""
        if request not in self._learning_due:
            self._learning_due.append(request)
        if self._learning_timer is None:
            self._learning_timer = self.set_timer(LEARNING_PAUSE, self._refit_due)

    def _refit_due(self) -> None:
        quiet = time.monotonic() - self._last_key
        if quiet < LEARNING_PAUSE:
            self._learning_timer = self.set_timer(LEARNING_PAUSE - quiet, self._refit_due)
            return
        self._learning_timer = None
        due, self._learning_due = self._learning_due, []
        for request in due:
            self.learner.request(request)

    @on(ScreeningShown)
    def _screening_shown(self) -> None:
        self.refresh_screening()

    def refresh_screening(self, *, delay: float = SCREENING_DELAY) -> None:
        """Recompute the screening panel after ``delay`` (decisions in a burst coalesce,
        and every key before it is due puts it off by ``delay`` again)."""
        if self._screening_timer is not None:
            self._screening_timer.stop()
            self._screening_timer = None
        if delay <= 0:
            self.call_after_refresh(self._start_screening)
        else:
            self._screening_delay = delay
            self._screening_timer = self.set_timer(delay, self._screening_due)

    def _screening_due(self) -> None:
        """The wait is over: screen now, unless the coder pressed a key within it; then
        wait on until ``delay`` has passed without one (the worker would take the
        interpreter from the keys that follow)."""
        self._screening_timer = None
        quiet = time.monotonic() - self._last_key
        if quiet < self._screening_delay:
            self._screening_timer = self.set_timer(
                self._screening_delay - quiet, self._screening_due
            )
            return
        self._start_screening()

    def _start_screening(self) -> None:
        self._screening_timer = None
        # The delegation plan and the comparison of configurations are only drawn in the
        # panel: while it is hidden they would cost every burst of decisions a thread's
        # work for nothing (showing the panel screens again at once).
        review = self.live_review
        shown = review is not None and review.screening_shown
        self.screen_decisions(self.session.config_id, plan=shown)
        if shown:
            self.compare_decisions()

    @work(thread=True, exclusive=True, exit_on_error=False, group="screening", name="screening")
    def screen_decisions(self, config_id: int | None, *, plan: bool = True) -> None:
        summary = summarise_study(self.study, config_id, self.session.coder, cut=self.screening_cut)
        self.post_message(ScreeningUpdated(summary))
        if plan:
            self.post_message(DelegationPlanned(*plan_for(self.study, self.session.coder)))

    @on(DelegationPlanned)
    def _delegation_planned(self, message: DelegationPlanned) -> None:
        if (review := self.live_review) is not None:
            review.show_plan(message.plan, message.note, message.audit)

    @on(ScreeningCutChanged)
    def _screening_cut_changed(self, message: ScreeningCutChanged) -> None:
        self.screening_cut = message.cut
        self.refresh_screening(delay=0.0)

    @on(ScreeningFilterRequested)
    def _screening_filter_requested(self, message: ScreeningFilterRequested) -> None:
        """The panel's next action: the undecided pairs of its code, in the queue's order
        (a review screen that handles the message itself stops it before it gets here)."""
        review = self.live_review
        if review is None:
            return
        review.show_undecided_of(message.code_id)

    @on(ScreeningUpdated)
    def _screening_updated(self, message: ScreeningUpdated) -> None:
        self.screening_summary = message.summary
        review = self.live_review
        if review is None:
            return
        review.show_screening(message.summary)
        review.set_agreement(message.summary.agreement)

    # -- commands ----------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's commands, then every key the screen offers that the help lists
        (the same texts, the keys the user rebound)."""
        from tui.screens.help import key_sections

        yield from super().get_system_commands(screen)
        if screen.is_modal:
            return
        for section in key_sections(screen):
            for item in section.items(self.rebound_keys):
                if item.action == "app.quit":  # Textual's own commands offer it
                    continue
                yield SystemCommand(
                    item.title,
                    f"{item.explanation} ({item.keys})",
                    _bound(section.node, item.action),
                )

    def action_help(self) -> None:
        """The keys of the screen on show, and how to read it."""
        from tui.screens.help import HelpScreen

        self.push_screen(HelpScreen.of(self.screen, self.rebound_keys))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"


def _bound(node: Widget | App[Any], action: str) -> Callable[[], Any]:
    async def run() -> None:
        await node.run_action(action)

    return run


def make_app(
    study: Study | str | Path,
    *,
    backend_factory: BackendFactory | None = None,
    coder: str | None = None,
    score_on_open: bool = False,
    context: Context | None = None,
    batch_size: int | None = None,
    close_study: bool | None = None,
    keys: Mapping[str, str] | None = None,
    export_folder: Path | None = None,
    measure_evidence: bool = True,
) -> CodecurveApp:
    """The app over a study object or path (a path is opened, and closed on exit).

    Tests inject a study and a ``FakeBackend`` factory; the CLI passes a path and the
    real backend's loader. ``close_study`` (default: only for a path) closes the study
    when the app exits. ``keys`` rebinds keys by action id (the CLI reads them from
    ``keys.toml``; tests pass them).
    """
    close = bool(close_study)
    if isinstance(study, (str, Path)):
        from study import Study as StudyClass

        coder = coder or default_coder()
        # The coder's session: a second one of the same coder is refused, naming this one.
        study = StudyClass.open(Path(study), coder=coder)
        close = close_study is None or close_study
    return CodecurveApp(
        study,
        backend_factory=backend_factory,
        coder=coder,
        score_on_open=score_on_open,
        context=context,
        batch_size=batch_size,
        close_study=close,
        keys=keys,
        export_folder=export_folder,
        measure_evidence=measure_evidence,
    )
