"""The app's loop of learning from the coder: when to refit, and what to say about it.

The coder's decisions teach each code a curve of its own
(:func:`study.analysis._learning.learn`, docs/method.md, "Learning from the coder"), under
a learned configuration that becomes the study's active one, so that the queue's
uncertainty order follows what the coder has decided so far. :class:`Learner` is the
app's collaborator for it, as :class:`~tui.scorer.Scorer` is for scoring: it counts the
coder's new decisions of each code and says when one is due for a refit (every
:data:`REFIT_EVERY`, or as soon as a code has its first decisions of each value), keeps
one refit going at a time (what is asked meanwhile waits for it) and knows where each
code stands, for the status line (:meth:`Learner.status`). It starts the work through a
callable the app binds to its thread worker, which runs :func:`run_request` and reports
back by message; it holds no widget and says nothing to the coder. (The app starts a
refit that came due by itself once the keys pause, as it does the screening.)

What never counts towards a refit: an audit pair (the audit stays a random sample the
learned curve never saw: it never teaches it), a pick accepted from the model, a note or
an undo. A study not scored yet has nothing to learn on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from scoring.learned import MIN_PER_VALUE, LearnedCurve
from study.errors import StudyError

if TYPE_CHECKING:
    from codebooks.model import Scale
    from study import Study
    from study.analysis import ReadMemory
    from study.audit import AuditSample
    from tui.session import ReviewSession

#: New decisions of a code, by the coder in this app, after which its curve is refitted.
REFIT_EVERY = 20


@dataclass(frozen=True)
class CodeState:
    """Where one code's learning stands for the coder.

    Attributes:
        code_id: The code.
        counts: Decisions of each scale value: those the curve learned from when
            ``learned``, else the coder's decisions that may teach it so far.
        needs: How many more decisions of each value it needs (empty: enough).
        learned: Its curve is fitted under the coder's learned configuration.
        cv_auroc: Cross-validated AUROC of "applies" on the coder's decisions (not the
            audit's); None when not learned (or not defined).
    """

    code_id: str
    counts: Mapping[int, int]
    needs: Mapping[int, int] = field(default_factory=dict)
    learned: bool = False
    cv_auroc: float | None = None

    def with_decision(self, value: int, values: tuple[int, ...]) -> CodeState:
        """One more decision of ``value`` (a code not learned yet; its needs follow)."""
        counts = dict(self.counts)
        counts[value] = counts.get(value, 0) + 1
        return replace(self, counts=counts, needs=_needs(counts, values))


@dataclass(frozen=True)
class Request:
    """A piece of learning work.

    Attributes:
        code_id: The code to refit; None: every code.
        learn: Refit; False: only read where each code stands.
        asked: The coder asked for it (the key): tell them what came of it.
    """

    code_id: str | None = None
    learn: bool = True
    asked: bool = False


@dataclass(frozen=True)
class Learned:
    """What a request did.

    Attributes:
        request: The request.
        config_id: The coder's learned configuration on the configuration shown, if it
            exists.
        activated: Curves were refitted now, and the learned configuration is the active
            one (False when no code had enough decisions of each value, or only read).
        states: Where each code it looked at stands now.
        learned: The codes whose curve was fitted now.
        sample: The study's audit sample, read again (its pairs never count).
        notes: What learning said besides (features missing, say).
        seconds: How long it took.
        curves: The curves fitted now, by code id (the evidence of the learned
            configuration is measured through them; the study keeps none).
    """

    request: Request
    config_id: int | None
    states: Mapping[str, CodeState]
    activated: bool = False
    learned: tuple[str, ...] = ()
    sample: AuditSample | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    curves: Mapping[str, LearnedCurve] = field(default_factory=dict)


#: Starts the work of a request (the app's learning worker).
RunLearning = Callable[[Request], object]


class Learner:
    """When the coder's curves are refitted, and where each code's learning stands."""

    def __init__(
        self, study: Study, session: ReviewSession, *, run: RunLearning, every: int = REFIT_EVERY
    ) -> None:
        """
        Args:
            study: The study.
            session: The coder's session (its coder, codebook and shown configuration).
            run: Starts a request's work (called only while none is going).
            every: New decisions of a code between two refits of it.
        """
        self.study = study
        self.session = session
        self._run = run
        self.every = every
        #: Where each code stands, once read (by code id).
        self.states: dict[str, CodeState] = {}
        #: The coder's learned configuration, once known.
        self.config_id: int | None = None
        #: The request being worked on, if any.
        self.running: Request | None = None
        #: A refit failed by itself: no more refits by themselves until the coder asks
        #: for one (the key) or new scores arrive (one notification, not one a decision).
        self.paused = False
        self._waiting: list[Request] = []
        self._new: dict[str, int] = {}
        self._sample: AuditSample | None = None
        self._sample_read = False
        from study.analysis import ReadMemory

        #: The last code a refit read, features and all, for the next refit of it (the
        #: worker's only: one request is worked on at a time).
        self.memory: ReadMemory = ReadMemory()

    # -- requests ----------------------------------------------------------------------

    def request(self, request: Request) -> bool:
        """Start ``request`` now, or once the one going has finished; whether it started
        now. A refit of a code starts its count of new decisions again."""
        if request.learn:
            if request.code_id is None:
                self._new.clear()
            else:
                self._new.pop(request.code_id, None)
            if request.asked:
                self.paused = False
        if self.running is not None:
            if request not in self._waiting:
                self._waiting.append(request)
            return False
        self.running = request
        self._run(request)
        return True

    def decided(
        self, response_id: str, code_id: str, value: int | None, *, human: bool
    ) -> Request | None:
        """The coder saved a decision: the refit it makes due, if any.

        A decision counts when it is the coder's own (``human``: not an accepted pick)
        on a pair outside the audit sample; a code is due every :attr:`every` such
        decisions, and as soon as it has enough of each value to be learned at all.
        """
        if value is None or not code_id or not human or self._is_audit(response_id, code_id):
            return None
        new = self._new.get(code_id, 0) + 1
        self._new[code_id] = new
        state = self.states.get(code_id)
        ready_now = False
        if state is not None and not state.learned:
            was_short = bool(state.needs)
            state = state.with_decision(value, self.session.scale(code_id).values)
            self.states[code_id] = state
            ready_now = was_short and not state.needs
        if self.paused or not (new >= self.every or ready_now):
            return None
        return Request(code_id, learn=True)

    def new_decisions(self, code_id: str) -> int:
        """The coder's decisions of the code counted since its last refit."""
        return self._new.get(code_id, 0)

    def scores_changed(self) -> Request | None:
        """New scores arrived (a scoring run ended): the refit that brings the learned
        configuration up to date, when the coder has one (a refit by itself may work
        again: scoring recaptures missing features)."""
        self.paused = False
        self._sample_read = False
        if self.config_id is None:
            return None
        return Request(None, learn=True)

    def finished(self, learned: Learned) -> None:
        """The work of a request ended: keep what it found, and start the next request
        waiting, if any."""
        self.states.update(learned.states)
        if learned.config_id is not None:
            self.config_id = learned.config_id
        self._sample, self._sample_read = learned.sample, True
        self._next()

    def stopped(self, *, failed: bool) -> Request | None:
        """The work failed (``failed``: the next request waiting starts now; a refit that
        failed by itself pauses the others) or was cancelled (the app is closing: none
        starts); the request it was on."""
        request = self.running
        if not failed:
            self._waiting.clear()
        elif request is not None and request.learn and not request.asked:
            self.paused = True
            self._waiting = [r for r in self._waiting if r.asked or not r.learn]
        self._next()
        return request

    def forget_sample(self) -> None:
        """The study changed elsewhere (an audit drawn or extended): read it again."""
        self._sample_read = False

    # -- in words ----------------------------------------------------------------------

    def shows_learned(self) -> bool:
        """Whether the queue shows the coder's learned configuration."""
        return self.config_id is not None and self.config_id == self.session.config_id

    def status(self, code_id: str | None) -> tuple[str, str]:
        """What the status line says about the code ``code_id``'s curve, in full and
        short: what it learned from with its cross-validated AUROC (never the audit's),
        or how many more decisions of which value it needs once the coder has begun on
        the code; ``("", "")`` when there is nothing to say (not read yet, no decision of
        the code yet, or a learned curve the queue does not show)."""
        if code_id is None:
            return "", ""
        state = self.states.get(code_id)
        code = self.session.code(code_id)
        if state is None or code is None:
            return "", ""
        scale = self.session.scale(code_id)
        if state.learned:
            return learned_text(code.name, scale, state) if self.shows_learned() else ("", "")
        if state.needs and any(state.counts.values()):
            return needs_text(code.name, scale, state.needs)
        return "", ""

    # -- inside ------------------------------------------------------------------------

    def _next(self) -> None:
        self.running = None
        if self._waiting:
            self.running = self._waiting.pop(0)
            self._run(self.running)

    def _is_audit(self, response_id: str, code_id: str) -> bool:
        if not self._sample_read:
            try:
                self._sample = self.study.audit.sample()
            except StudyError:
                self._sample = None
            self._sample_read = True
        return self._sample is not None and self._sample.is_audit(response_id, code_id)


def learned_text(name: str, scale: Scale, state: CodeState) -> tuple[str, str]:
    """``"Waiting: learned from 60 decisions (No 41, Yes 19), CV AUROC 0.84 (not the
    audit's)"`` and its short form."""
    total = sum(state.counts.values())
    counts = ", ".join(
        f"{scale.label_of(value)} {state.counts.get(value, 0)}" for value in scale.values
    )
    auroc = "n/a" if state.cv_auroc is None else f"{state.cv_auroc:.2f}"
    full = (
        f"{name}: learned from {total:,} {_plural(total, 'decision')} ({counts}), "
        f"CV AUROC {auroc} (not the audit's)"
    )
    return full, f"{name}: CV AUROC {auroc} (not the audit's)"


def needs_text(name: str, scale: Scale, needs: Mapping[int, int]) -> tuple[str, str]:
    """``"Waiting: 3 more Yes decisions to learn"`` (the largest need first) and its
    short form."""
    ordered = sorted(needs.items(), key=lambda item: (-item[1], scale.values.index(item[0])))
    parts = [f"{more} more {scale.label_of(value)}" for value, more in ordered]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    word = _plural(sum(needs.values()), "decision")
    return f"{name}: {listed} {word} to learn", f"{name}: {listed} to learn"


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def _needs(counts: Mapping[int, int], values: tuple[int, ...]) -> dict[int, int]:
    return {v: MIN_PER_VALUE - counts.get(v, 0) for v in values if counts.get(v, 0) < MIN_PER_VALUE}


# -- the work, in the app's worker thread ---------------------------------------------------


def run_request(
    study: Study, *, coder: str, request: Request, memory: ReadMemory | None = None
) -> Learned:
    """Do ``request``: read where the codes stand and, when it asks to learn and a code
    has enough decisions of each value, refit with :func:`~study.analysis._learning.learn`
    (the learned configuration made the active one). Slow (seconds): call it in a worker.
    ``memory`` keeps the last code read for the next refit (:attr:`Learner.memory`).

    The first refit, one of every code, and one after new scores (a wave, a new code)
    refit every code, so that the learned configuration has a curve for every scored pair
    (a code not ready keeps its zero-shot curve there); the others refit the code asked
    for. Nothing is learned while no code asked for has enough decisions of each value.

    Raises:
        StudyError: nothing is scored yet (when asked to learn), the study is read-only,
            features are missing (scoring again recaptures them).
        LearningError: the code cannot be learned after all.
    """
    from study.analysis import base_config, fits, learn, learned_config_id

    started = time.perf_counter()
    sample = study.audit.sample()
    codes = [c.id for c in study.codebook.codable]
    if request.code_id is not None:
        codes = [request.code_id] if request.code_id in codes else []
    try:
        base = base_config(study, None)
    except StudyError:
        if request.learn:
            raise
        return Learned(request, None, {}, sample=sample)
    learned_id = learned_config_id(study, base.id, coder)
    fitted = {row.code_id: row for row in fits(study, learned_id)} if learned_id else {}
    decided = {code_id: _decided_state(study, code_id, coder) for code_id in codes}
    states = dict(decided)
    for code_id in codes:
        fit = fitted.get(code_id)
        if fit is not None and fit.learned:
            states[code_id] = CodeState(code_id, dict(fit.counts), {}, True, fit.cv_auroc)
    if not request.learn or all(state.needs for state in decided.values()):
        return Learned(request, learned_id, states, sample=sample, seconds=_since(started))
    whole = (
        learned_id is None
        or request.code_id is None
        or study.scores.scored_count(learned_id) < study.scores.scored_count(base.id)
    )
    run = learn(
        study,
        coder=coder,
        code=None if whole else request.code_id,
        config_id=base.id,
        memory=memory,
        # The coder's own curves are shown in their session (the app's show_config), not
        # made the study's active configuration: another coder's open session, and its
        # queue, stay as they are.
        activate=False,
    )
    for code in run.codes:
        states[code.code_id] = CodeState(
            code.code_id, dict(code.counts), dict(code.needs), code.learned, code.cv_auroc
        )
    return Learned(
        request,
        run.config_id,
        states,
        activated=True,
        learned=tuple(c.code_id for c in run.codes if c.learned),
        sample=sample,
        notes=run.notes,
        seconds=_since(started),
        curves={c.code_id: c.curve for c in run.codes if c.curve is not None},
    )


def _decided_state(study: Study, code_id: str, coder: str) -> CodeState:
    """A code's state from the coder's decisions that may teach it (not learned)."""
    from study.analysis import training_decisions

    code = study.codebook.code(code_id)
    values = study.codebook.scale_for(code).values
    chosen, _ = training_decisions(study, code, coder)
    counts = dict.fromkeys(values, 0)
    for value in chosen.values():
        counts[value] = counts.get(value, 0) + 1
    return CodeState(code_id, counts, _needs(counts, values))


def _since(started: float) -> float:
    return time.perf_counter() - started


def learned_on(study: Study, shown: int, base: int) -> bool:
    """Whether configuration ``shown`` is a learned one fitted on configuration ``base``
    (the app stays on it when the model of ``base`` loads)."""
    from study.scores import is_learned

    row = study.scores.config_row(shown)
    return is_learned(row) and row.model.revision == study.scores.config_row(base).key
