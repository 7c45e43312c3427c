"""The app's scoring state: the model, and whether a scoring run is going or waits.

:class:`Scorer` owns the backend factory that loads the model, the scoring engine once
it is loaded, and the state of the runs: a run going, a rescoring of an edited code's
pairs going, and a run waiting for the model or a rescoring waiting for the run in
progress. It starts work through two callables the app binds to its thread workers
(``load``: load the model; ``run``: score the pending pairs) and is told what became of
them (:meth:`Scorer.model_loaded`, :meth:`Scorer.finished`, :meth:`Scorer.stopped`,
:meth:`Scorer.model_failed`). It holds no widget and says nothing to the coder: what
each request did comes back as a :class:`Run`, for the app to tell.

The rules: one run at a time; ``r`` while a run goes is refused, an edit while one goes
waits for it (one rescoring, however many edits) and starts when it ends, unless the
coder cancelled it; either waits for the model, loaded once.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codebooks.model import Codebook
    from scoring.backend import Backend
    from scoring.engine import ScoringEngine

BackendFactory = Callable[[], "Backend"]

#: Starts loading the model from the factory (the app's model worker).
LoadModel = Callable[[BackendFactory], object]

#: Starts scoring the pending pairs with the engine; the flag: make the engine's
#: configuration the active one (the app's scoring worker).
RunScoring = Callable[["ScoringEngine", bool], object]


class Run(enum.Enum):
    """What a request to score did."""

    #: A run began.
    STARTED = "started"
    #: A run is going: a start is refused, a rescoring waits for the run.
    BUSY = "busy"
    #: The model began loading; the run starts once it is loaded.
    LOADING = "loading"
    #: The model is loading already; the run starts once it is loaded.
    WAITING = "waiting"
    #: No model is configured: nothing is scored.
    NO_MODEL = "no model"


class Scorer:
    """The model and the scoring runs of one app (see the module)."""

    def __init__(
        self, backend_factory: BackendFactory | None, *, load: LoadModel, run: RunScoring
    ) -> None:
        """
        Args:
            backend_factory: Loads the scoring model; None: no scoring.
            load: Starts loading the model (called at most once at a time).
            run: Starts a scoring run (called only while no run is going).
        """
        self.backend_factory = backend_factory
        self._load = load
        self._run = run
        #: The engine, once the model is loaded (rebuilt on an edited codebook).
        self.engine: ScoringEngine | None = None
        #: The configuration the loaded model scores with.
        self.loaded_config: int | None = None
        #: Held by the thread that uses the engine (a scoring run, a measurement of
        #: evidence): an engine scores one batch at a time.
        self.turn = threading.Lock()
        self._loading = False
        self._score_requested = False
        self._rescore_requested = False
        self._scoring = False
        self._rescoring = False

    @property
    def has_model(self) -> bool:
        """Whether a model is configured (loaded or not)."""
        return self.backend_factory is not None

    @property
    def loading(self) -> bool:
        """Whether the model is being loaded."""
        return self._loading

    @property
    def scoring(self) -> bool:
        """Whether a run is going (a rescoring too)."""
        return self._scoring

    @property
    def rescoring(self) -> bool:
        """Whether the run going rescores an edited code's pairs."""
        return self._rescoring

    @property
    def score_requested(self) -> bool:
        """Whether a run of the pending pairs waits for the model."""
        return self._score_requested

    @property
    def rescore_requested(self) -> bool:
        """Whether a rescoring of edited codes waits for the model or for a run."""
        return self._rescore_requested

    # -- requests ----------------------------------------------------------------------

    def load(self, *, score: bool = False) -> bool:
        """Start loading the model; ``score``: score the pending pairs once it is loaded.

        Returns:
            False when no model is configured (nothing loads).
        """
        if self.backend_factory is None:
            return False
        self._score_requested = score
        if not self._loading:
            self._loading = True
            self._load(self.backend_factory)
        return True

    def start(self) -> Run:
        """Score the pending pairs (loading the model first if needed)."""
        if self._scoring:
            return Run.BUSY
        if self.backend_factory is None:
            return Run.NO_MODEL
        if self.engine is None:
            self._score_requested = True
            return self._wait_for_model()
        self._score_requested = False
        self._scoring = True
        self._run(self.engine, True)
        return Run.STARTED

    def request_rescore(self, codebook: Codebook) -> Run:
        """``codebook`` is the study's new one: score the pairs whose code changed, with
        the new text, now or once the model is loaded and the run going has ended (the
        configuration stays as it is: an edit changes no configuration)."""
        if self.backend_factory is None:
            self._rescore_requested = False
            return Run.NO_MODEL
        self._rescore_requested = True
        return self._rescore(codebook)

    def resume(self, codebook: Codebook) -> Run | None:
        """Start what waits, if it can start now: the run of the pending pairs, else the
        rescoring (with ``codebook``, the study's own); None when nothing waits."""
        if self._score_requested:
            return self.start()
        if self._rescore_requested:
            return self._rescore(codebook)
        return None

    # -- what became of the work -------------------------------------------------------

    def model_loaded(self, engine: ScoringEngine, config_id: int) -> None:
        """The model is loaded: ``engine`` scores with configuration ``config_id``.
        (What waits starts on :meth:`resume`.)"""
        self._loading = False
        self.engine = engine
        self.loaded_config = config_id

    def model_failed(self) -> None:
        """The model could not be loaded (or its loading was cancelled): the run that
        waited for it is dropped; a later request loads it again."""
        self._loading = False
        self._score_requested = False

    def finished(self, *, cancelled: bool) -> bool:
        """A run ended (``cancelled``: the coder stopped it).

        Returns:
            Whether a rescoring waits to start now (:meth:`resume`); never after a
            cancelled run, which the coder stopped.
        """
        self._scoring = self._rescoring = False
        return self._rescore_requested and not cancelled

    def stopped(self) -> None:
        """The run's worker was cancelled or failed before it could say it finished."""
        self._scoring = self._rescoring = False

    # -- inside ------------------------------------------------------------------------

    def _wait_for_model(self) -> Run:
        if self._loading:
            return Run.WAITING
        assert self.backend_factory is not None
        self._loading = True
        self._load(self.backend_factory)
        return Run.LOADING

    def _rescore(self, codebook: Codebook) -> Run:
        if self._scoring:
            return Run.BUSY  # the run going ends first; finished() says to start this
        if self.engine is None:
            return self._wait_for_model()  # built on the new codebook
        self._rescore_requested = False
        engine = self._engine_for(codebook)
        self._scoring = self._rescoring = True
        self._run(engine, False)
        return Run.STARTED

    def _engine_for(self, codebook: Codebook) -> ScoringEngine:
        """The loaded engine, rebuilt on ``codebook`` when its own is another."""
        from scoring.engine import ScoringEngine

        engine = self.engine
        assert engine is not None
        if engine.codebook.content_hash() == codebook.content_hash():
            return engine
        self.engine = ScoringEngine(
            engine.backend,
            codebook,
            context=engine.context,
            strict=engine.strict,
            batch_size=engine.batch_size,
            template=engine.template,
            max_prompt_tokens=engine.max_prompt_tokens,
            batch_tokens=engine.batch_tokens,
        )
        return self.engine
