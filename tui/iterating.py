"""Codebook iteration in the app: edit a code, choose a configuration, compare them.

A mixin of :class:`tui.app.CodecurveApp` (which provides the study, the session, the
model and the scoring worker):

* ``E`` opens the highlighted pair's code in :class:`~tui.screens.code_editor.CodeEditorScreen`;
  a confirmed edit is recorded as the next codebook version
  (:meth:`study.iteration.versions.Versions.revise`, exactly like ``codecurve codebook
  --revise``) and the pairs of the changed code are scored again in the background by
  the app's scoring worker (:func:`study.score_run.score_study` with an engine built on
  the new codebook, ``activate=False``). Until their new score arrives those pairs are
  drawn greyed (:func:`study.iteration.revisions.stale_pairs`).
* ``C`` opens :class:`~tui.screens.configs.ConfigPicker`; the chosen configuration
  becomes the study's active one and the queue, the status line and the panel follow.
* With two or more scored configurations the screening panel shows their comparison
  (:func:`study.analysis.compare.compare_configs`) for the code chosen in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from codebooks.errors import CodecurveError
from study.scores.labels import config_label
from tui.messages import ComparisonReady
from tui.text import printable

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App

    from codebooks.model import Codebook
    from scoring.backend import Backend
    from scoring.engine import ScoringEngine
    from study.analysis.compare import Comparison
    from study.store import Study
    from tui.screens.code_editor import CodeEdit
    from tui.screens.review import ReviewScreen
    from tui.session import ReviewSession

    _Base = App[None]
else:
    _Base = object

#: Bootstrap resamples of the panel's comparison of configurations (the CLI's: 1000).
COMPARE_RESAMPLES = 200


class IterationActions(_Base):
    """Editing codes, choosing configurations and comparing them (see the module)."""

    if TYPE_CHECKING:
        study: Study
        session: ReviewSession
        stale_keys: frozenset[tuple[str, str]]
        comparison: Comparison | None
        _backend_factory: Callable[[], Backend] | None
        _engine: ScoringEngine | None
        _scoring: bool
        _rescoring: bool
        _rescore_requested: bool

        @property
        def live_review(self) -> ReviewScreen | None: ...
        def load_model(self) -> object: ...
        def score_pending(self, engine: ScoringEngine, activate: bool = True) -> object: ...
        def config_state(self, state: str = "") -> str: ...
        def _show_config(self, config_id: int) -> None: ...

    def action_edit_code(self) -> None:
        """Open the highlighted pair's code in the editor."""
        from tui.screens.code_editor import CodeEditorScreen

        review = self.live_review
        row = review.pair_queue.current if review is not None else None
        if row is None:
            self.bell()
            return
        study = self.study

        def plan(codebook: Codebook) -> list[str]:
            return study.versions.plan_revision(codebook).lines()

        self.push_screen(
            CodeEditorScreen(study.codebook, row.code_id, planner=plan), self._code_edited
        )

    def _code_edited(self, edit: CodeEdit | None) -> None:
        """Record a confirmed edit as the next codebook version, then rescore its pairs."""
        if edit is None:
            return
        try:
            version = self.study.versions.revise(
                edit.codebook, source=f"app: edited code {edit.code_id}"
            )
        except CodecurveError as exc:
            self.notify(
                f"Not recorded: {printable(str(exc))}",
                title="Codebook",
                severity="error",
                timeout=12,
                markup=False,
            )
            return
        self.session.set_codebook(self.study.codebook)
        self.update_stale()
        if (review := self.live_review) is not None:
            review.detail.show(None, None, None)
            review.pair_queue.reload()
        self.notify(
            f"Recorded codebook version {version}: " + "; ".join(edit.lines),
            title="Codebook",
            timeout=6,
            markup=False,
        )
        self._rescore_requested = True
        self.rescore_edited()

    def rescore_edited(self) -> None:
        """Score the pairs whose code changed, with the new text, in the background
        (the configuration stays as it is: the edit changes no configuration)."""
        from scoring.engine import ScoringEngine

        if self._backend_factory is None:
            self._rescore_requested = False
            self.notify(
                "No model is configured: the code's pairs keep their old (greyed) curves "
                "until they are scored (start with --model, or run codecurve score).",
                severity="warning",
                timeout=8,
            )
            return
        if self._scoring:
            return  # the run in progress ends first; _scoring_finished starts this
        engine = self._engine
        if engine is None:
            if not any(w.group == "model" and w.is_running for w in self.workers):
                self.load_model()  # built on the session's (new) codebook
            return  # _model_loaded starts this
        self._rescore_requested = False
        if engine.codebook.content_hash() != self.study.codebook.content_hash():
            engine = ScoringEngine(
                engine.backend,
                self.study.codebook,
                context=engine.context,
                strict=engine.strict,
                batch_size=engine.batch_size,
                template=engine.template,
                max_prompt_tokens=engine.max_prompt_tokens,
                batch_tokens=engine.batch_tokens,
            )
            self._engine = engine
        self._scoring = self._rescoring = True
        self.score_pending(engine, activate=False)

    def update_stale(self) -> None:
        """Find the pairs shown with a score from an older text; the queue and the
        detail pane draw their curves greyed until the new score arrives."""
        from study.iteration.revisions import stale_pairs

        config_id = self.session.config_id
        keys: frozenset[tuple[str, str]] = frozenset()
        if config_id is not None:
            with self.study.snapshot() as conn:
                pairs = stale_pairs(conn, self.study.index, config_id)
            keys = frozenset((p.response_id, p.code.id) for p in pairs)
        if keys == self.stale_keys:
            return
        self.stale_keys = keys
        if (review := self.live_review) is not None:
            review.set_stale(keys)

    def action_choose_config(self) -> None:
        """Open the configuration picker."""
        from tui.screens.configs import ConfigPicker, config_choices

        choices = config_choices(self.study)
        if not choices:
            self.notify("No scoring configuration yet: press r to score.", timeout=4)
            return
        self.push_screen(ConfigPicker(choices), self._config_chosen)

    def _config_chosen(self, config_id: int | None) -> None:
        if config_id is None:
            return
        if config_id != self.study.scores.active_config_id():
            self.study.scores.set_active(config_id)
        if config_id != self.session.config_id:
            self._show_config(config_id)
        if (review := self.live_review) is not None:
            review.set_model_state(self.config_state())
        label = config_label(self.study.scores.config_row(config_id))
        self.notify(f"Active configuration: {label}", timeout=4, markup=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="comparison", name="compare")
    def compare_decisions(self) -> None:
        """Compare the scored configurations on the coder's decisions (the screening
        panel shows the highlighted code's rows); nothing when fewer than two."""
        from study.analysis.compare import compare_configs

        study = self.study
        scored = [c.id for c in study.scores.configs() if study.scores.scored_count(c.id) > 0]
        if len(scored) < 2:
            self.post_message(ComparisonReady(None))
            return
        try:
            comparison = compare_configs(
                study, coder=self.session.coder, config_ids=scored, resamples=COMPARE_RESAMPLES
            )
        except CodecurveError as exc:
            self.post_message(ComparisonReady(None, str(exc)))
            return
        self.post_message(ComparisonReady(comparison))

    def on_comparison_ready(self, message: ComparisonReady) -> None:
        self.comparison = message.comparison
        if (review := self.live_review) is not None:
            review.screening.show_comparison(message.comparison, message.note)
