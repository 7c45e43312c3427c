"""Which sentence moved the model, for the pairs the coder reads: :class:`EvidenceBook`.

The detail pane marks the sentence(s) whose absence lowers P(applies) most
(:mod:`scoring.evidence`). The book reads a pair's evidence from the study
(``study.evidence``) the first time a pane shows or renders it ahead, and keeps what it
read, so a key that shows a pair read ahead costs no query. A pair without evidence is
measured in the background once the model is loaded: :meth:`EvidenceBook.want` queues
it, and the book starts one measurement at a time through the callable the app binds
to its thread worker (``run``: measure these pairs with this engine, keep them under
this configuration); :meth:`EvidenceBook.measured` takes what came back.

Which configuration: the evidence of the configuration shown, learned or not; it is
measured only while the loaded model is that configuration's (a learned one's base:
else its numbers would not explain the scores shown) and no scoring run goes (the two
would share the engine). A learned configuration's variants are read through its
learned curves (:func:`study.analysis._evidence.measure_pairs`): the book keeps the
curves of the app's own refits (:meth:`EvidenceBook.learned`), so that they need not be
fitted again; while the coder's decisions differ from those a curve was fitted on (the
next refit is not due yet) the learned configuration cannot be measured, and the book
waits for the next refit. A pair the model has not scored,
a pair whose model answer is hidden (blind coding, the blind audit) and a pair measured
once this session are never measured (again): a pair measured on a text or definition
that changed since is read back as none, and is not measured in a loop.

The book holds no widget and says nothing to the coder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from textual.cache import LRUCache

from scoring.score import Pair
from tui.source import Row, is_hidden

if TYPE_CHECKING:
    from scoring.engine import ScoringEngine
    from scoring.evidence import Evidence
    from scoring.learned import LearnedCurve
    from study import Study
    from tui.scorer import Scorer
    from tui.session import ReviewSession

#: Starts measuring ``pairs`` with the engine, for and kept under the configuration id,
#: with the learned curves known (the app's evidence worker).
Measure = Callable[["ScoringEngine", int, list[Pair], "Mapping[str, LearnedCurve]"], object]

#: Pairs whose evidence (or its absence) the book keeps in memory.
KEPT = 512

#: Pairs measured by one run of the worker: the pair under the cursor and its
#: neighbours, so that a coder who moves on is not kept waiting behind a long queue.
PER_RUN = 3

_Key = tuple[int, str, str]


class EvidenceBook:
    """The evidence of the pairs the coder reads (see the module)."""

    def __init__(
        self,
        study: Study,
        session: ReviewSession,
        scorer: Scorer,
        *,
        run: Measure,
        measure: bool = True,
    ) -> None:
        """
        Args:
            run: Starts a measurement (the app's worker).
            measure: Whether to measure at all (False: only show what is kept).
        """
        self._study = study
        self._session = session
        self._scorer = scorer
        self._run = run
        self._read: LRUCache[_Key, Evidence | None] = LRUCache(KEPT)
        self._asked: set[_Key] = set()
        self._wanted: list[tuple[_Key, Pair]] = []
        self._running = False
        self._failed = False
        self._measure = measure
        self._engines: dict[int, int] = {}
        self._curves: dict[int, dict[str, LearnedCurve]] = {}
        self._waiting = False

    @property
    def running(self) -> bool:
        """Whether a measurement is going."""
        return self._running

    def config_id(self) -> int | None:
        """The configuration whose evidence is shown: the one shown."""
        return self._session.config_id

    def engine_config(self, config_id: int) -> int:
        """The configuration whose model measures ``config_id``'s evidence: itself, or
        its base when it is learned."""
        if config_id not in self._engines:
            from study.analysis import measuring_config

            self._engines[config_id] = measuring_config(self._study, config_id)[0].id
        return self._engines[config_id]

    def learned(self, config_id: int, curves: Mapping[str, LearnedCurve]) -> None:
        """A refit fitted ``curves`` (by code id) for the learned ``config_id``: they
        read its variants from now on, and its evidence can be measured again."""
        self._curves.setdefault(config_id, {}).update(curves)
        self._waiting = False

    def of(self, row: Row | None) -> Evidence | None:
        """``row``'s evidence (read once, then kept); None when it has none, or its model
        answer is hidden."""
        if row is None or is_hidden(row) or row.probs is None:
            return None
        config_id = self.config_id()
        if config_id is None:
            return None
        key = (config_id, row.response_id, row.code_id)
        if key in self._read:
            return self._read.get(key)
        found = self._study.evidence.get(config_id, row.response_id, row.code_id)
        self._read.set(key, found)
        return found

    def want(self, rows: Iterable[Row | None]) -> None:
        """Measure the evidence of ``rows`` that have none, in this order, replacing
        what was wanted before (the coder moved on), once the model can."""
        config_id = self.config_id()
        if config_id is None or self._failed or not self._measure:
            return
        wanted: list[tuple[_Key, Pair]] = []
        for row in rows:
            if row is None or is_hidden(row) or row.probs is None or self.of(row) is not None:
                continue
            key = (config_id, row.response_id, row.code_id)
            code = self._session.code(row.code_id)
            if key in self._asked or code is None:
                continue
            wanted.append((key, Pair(row.response_id, row.text, code)))
        self._wanted = wanted
        self.resume()

    def resume(self) -> bool:
        """Start measuring what is wanted, if the model can now (see the module); whether
        a measurement started."""
        config_id = self.config_id()
        scorer = self._scorer
        if (
            self._running
            or not self._wanted
            or config_id is None
            or self._waiting
            or scorer.engine is None
            or scorer.scoring
            or scorer.loaded_config != self.engine_config(config_id)
        ):
            return False
        chosen, self._wanted = self._wanted[:PER_RUN], self._wanted[PER_RUN:]
        self._asked.update(key for key, _ in chosen)
        self._running = True
        known = dict(self._curves.get(config_id, {}))
        self._run(scorer.engine, config_id, [pair for _, pair in chosen], known)
        return True

    def measured(
        self,
        config_id: int,
        found: Iterable[Evidence],
        *,
        curves: Mapping[str, LearnedCurve] | None = None,
        waiting: bool = False,
    ) -> set[tuple[str, str]]:
        """A measurement ended with ``found`` (kept in the study by the worker), read
        through the learned ``curves``: the pairs it measured, as (response id, code
        id). Start the next one. ``waiting``: the learned curves are not those the
        coder's decisions give now; nothing is measured until the next refit
        (:meth:`learned`) or :meth:`forget`."""
        self._running = False
        if curves:
            self._curves.setdefault(config_id, {}).update(curves)
        self._waiting = self._waiting or waiting
        keys = set()
        for evidence in found:
            pair = (evidence.response_id, evidence.code_id)
            key = (config_id, *pair)
            self._read.discard(key)  # (set keeps a value already there: None, read before)
            self._read.set(key, evidence)
            keys.add(pair)
        self.resume()
        return keys

    def stopped(self, *, failed: bool) -> None:
        """The measurement's worker was cancelled (a scoring run took the engine) or
        failed; after a failure nothing more is measured this session."""
        self._running = False
        self._failed = self._failed or failed

    def forget(self) -> None:
        """Read everything again, and measure again what is missing (scores changed: a
        rescoring, another configuration)."""
        self._read.clear()
        self._engines.clear()
        self._asked.clear()
        self._waiting = False
