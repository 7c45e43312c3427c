"""The values a study hands out: decisions, events, configurations and queue rows, and
the check of a coder's name that every write and read by coder makes (:func:`check_coder`).

Frozen dataclasses, so they cross into the app and the exporters without copies.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Literal, cast, get_args

from codebooks.model import Scale
from scoring.backend import ModelIdentity
from scoring.score import CONTEXT_LEVELS, ScoreConfig
from study.errors import NAME_CODER, StudyError

#: ``source`` of a decision: the coder's own, or the model's pick accepted by the coder.
Source = Literal["human", "model"]
SOURCES: tuple[Source, ...] = get_args(Source)

#: ``status`` filters of the queue; ``disagreement``: pairs two coders (other than the
#: consensus coder) decided differently; ``review``: left for review (undecided, not in
#: the audit sample: what a delegation leaves to people).
Status = Literal["undecided", "human", "model", "decided", "disagreement", "review"]
STATUSES: tuple[Status, ...] = get_args(Status)

#: The coder whose decisions settle the other coders' disagreements.
CONSENSUS = "consensus"

#: Orders of the queue, in the order the app cycles through them. ``audit`` walks the
#: blind audit pairs in their random order; ``shared`` the pairs another coder decided,
#: in a seeded random order (blind double coding).
Order = Literal["entropy", "id", "pick", "confidence", "audit", "shared"]
ORDERS: tuple[Order, ...] = get_args(Order)

#: Orders of the responses, response by response (:mod:`study.response_queries`), in the
#: order the app cycles through them: the response whose least sure code is least sure
#: first, by id, the blind audit's responses in their random order.
ResponseOrder = Literal["entropy", "id", "audit"]
RESPONSE_ORDERS: tuple[ResponseOrder, ...] = get_args(ResponseOrder)

#: Layouts of an export: one row per pair, or one per response.
Layout = Literal["long", "wide"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)

#: A prompt's context level (METHOD.md section 1); the names are the scoring package's.
#: ``examples``: ``full`` and some of a coder's decided pairs per code (METHOD.md section 5).
Context = Literal["none", "definition", "full", "examples"]
CONTEXTS = cast(tuple[Context, ...], CONTEXT_LEVELS)


@dataclass(frozen=True)
class StudyUpdate:
    """What :meth:`study.store.Study.refresh` noticed: other sessions committed
    (``changed``), and among their changes one of the structure (``structure``: the
    codebook, the responses or the active configuration, now reloaded)."""

    changed: bool
    structure: bool


@dataclass(frozen=True)
class Decision:
    """A decision as recorded (or, from ``study.decisions.undo``, as taken back).

    Attributes:
        id: The event id that recorded it, increasing through the study's life.
        response_id: The response.
        code_id: The code.
        value: The scale value decided; ``None`` for a cleared decision or a note.
        source: ``human`` or ``model`` (the model's pick accepted); ``None`` when cleared.
        coder: Who decided.
        note: The pair's note after the event, if any.
        at: ISO 8601 UTC time of the event.
        kind: ``record``, ``clear``, ``note`` or ``import``.
    """

    id: int
    response_id: str
    code_id: str
    value: int | None
    source: str | None
    coder: str
    note: str | None
    at: str
    kind: str = "record"


@dataclass(frozen=True)
class Event:
    """One row of the append-only event log (the audit trail).

    ``prev_*`` hold the state the event replaced; ``undoes`` the event an undo reverted.
    """

    id: int
    at: str
    kind: str
    coder: str | None
    response_id: str | None
    code_id: str | None
    value: int | None
    source: str | None
    note: str | None
    config_id: int | None
    prev_value: int | None
    prev_source: str | None
    prev_note: str | None
    undoes: int | None
    detail: str | None


@dataclass(frozen=True)
class ScoringRate:
    """How fast an earlier run scored: what a new run's time is estimated from.

    Attributes:
        rate: Pairs scored per second (the run's pairs over its time, model loading
            left out).
        pairs: How many pairs that run scored.
        config_id: The configuration it scored (another one of the same model and
            device when this one has not run yet).
    """

    rate: float
    pairs: int
    config_id: int


@dataclass(frozen=True)
class ConfigRow:
    """A stored scoring configuration.

    ``examples_hash`` is :attr:`ScoreConfig.examples_hash` (empty but at context
    ``examples``): which worked examples its prompts showed.
    """

    id: int
    key: str
    model: ModelIdentity
    template_id: str
    template_hash: str
    context: str
    scale: Scale
    strict: bool
    created_at: str
    examples_hash: str = ""

    @property
    def config(self) -> ScoreConfig:
        return ScoreConfig(
            model=self.model,
            template_id=self.template_id,
            template_hash=self.template_hash,
            context=self.context,
            scale=self.scale,
            strict=self.strict,
            examples_hash=self.examples_hash,
        )


@dataclass(frozen=True)
class PairRow:
    """One (response, code) pair as the review queue shows it.

    Score fields are ``None`` for a pair not scored under the configuration asked;
    decision fields are ``None`` for an undecided pair.
    """

    response_id: str
    code_id: str
    code_name: str
    text: str
    surprisal: tuple[float, ...] | None
    probs: tuple[float, ...] | None
    pick: int | None
    pick_label: str | None
    confidence: float | None
    norm_entropy: float | None
    off_scale: bool | None
    decision: int | None
    source: str | None
    coder: str | None
    note: str | None
    decided_at: str | None
    expected: float | None = None
    spread: float | None = None
    on_scale_mass: float | None = None
    truncated: bool | None = None
    #: The response has a memo (``coder``'s when the listing asked for a coder, else
    #: any coder's).
    memo: bool = False

    @property
    def scored(self) -> bool:
        return self.probs is not None

    @property
    def decided(self) -> bool:
        return self.decision is not None


@dataclass(frozen=True)
class ResponseRow:
    """One response as the response list shows it (``study.queries.responses``).

    Attributes:
        response_id: The response.
        text: The start of its text (enough for a one-line snippet).
        max_entropy: The highest normalised entropy among its codes' scores under the
            configuration asked (its least sure code); ``None`` when none is scored.
        scored: How many of its codes are scored under that configuration.
        decided: How many of its codes are decided (by ``coder`` when one was asked).
        codes: How many codes there are to decide (the codable codes; a code a revision
            removed is not one).
        memo: It has a memo (``coder``'s when one was asked, else any coder's).
        noted: One of its pairs has a note (same rule).
    """

    response_id: str
    text: str
    max_entropy: float | None
    scored: int
    decided: int
    codes: int
    memo: bool
    noted: bool

    @property
    def complete(self) -> bool:
        """Every code of the response is decided."""
        return self.decided >= self.codes


def check_coder(coder: str) -> str:
    """``coder`` stripped of surrounding blanks.

    Raises:
        StudyError: empty, or with control characters (a newline, an escape) that would
            garble every listing and message that shows the name.
    """
    if not isinstance(coder, str) or not coder.strip():
        raise StudyError("a decision needs a coder's name", remedy=NAME_CODER)
    name = coder.strip()
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in name):
        raise StudyError(
            f"a coder's name cannot hold control characters (a newline, a tab, an escape): "
            f"{ascii(name)[:60]}"
        )
    return name
