"""Examples in the prompt: a coder's decided pairs shown to the model as worked examples.

The second way of learning from the coder (METHOD.md section 5; docs/method.md,
"Examples in the prompt"). At context ``examples`` each prompt of a code shows, after
the answer rule and before the response, some pairs of the code one coder decided
(``Response: "..." -> Answer: 4``). They belong to the code, so every prompt of the code
shares them in its long prefix, computed once per code by the prefix cache; they are
part of the configuration's identity (:attr:`scoring.score.ScoreConfig.examples_hash`),
so a configuration with examples is one of its own, compared with the others on the
audit (``codecurve compare STUDY --sample audit``).

Which decisions may be shown: exactly those a learned curve may learn from
(:func:`study.analysis._learning.training_decisions`): the coder's own (``human``)
decisions of the code made under a codebook version in which the code reads as now,
**never an audit pair**, never a delegated or accepted pick. The audit stays a random
sample whose decisions the prompts never showed.

Which of them: per scale value decided, up to ``per_value``, ranked by a seeded hash of
the code's and the response's ids (deterministic, independent of the order in which the
decisions were made; a new decision displaces a shown one only when it ranks above it),
and taken round-robin over the values in scale order, so that the prompt alternates the
values. Texts are one paragraph, cut to :data:`MAX_EXAMPLE_CHARS`, so the prefix stays
short.

Provenance: :func:`record_examples` keeps a chosen set in the study's ``meta`` under
``examples:<hash>`` (coder, examples per value, seed, and per code the response ids,
values, labels and texts shown); :func:`stored_examples` reads it back, so that a run
at the active examples configuration resumes with the very same examples.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codebooks.errors import Remedy
from codebooks.model import Code
from scoring.templates import TRUNCATION_MARK, Example, examples_hash
from study.analysis._learning import resolve_coder, training_decisions
from study.errors import StudyError
from study.scores.configurations import set_meta
from study.store import Study

#: Examples shown per scale value decided, unless asked otherwise (``--examples K``).
DEFAULT_PER_VALUE = 2

#: Longest example text, in characters (one paragraph; a longer one is cut at a word).
MAX_EXAMPLE_CHARS = 300

#: The ``meta`` key of a recorded example set (its hash follows).
META_KEY = "examples:"


@dataclass(frozen=True)
class ShownExample:
    """One decided pair shown as a worked example.

    Attributes:
        response_id: The response.
        value: The value the coder decided.
        label: The scale label of that value (what the prompt shows as the answer).
        text: The response's text as shown (one paragraph, cut to
            :data:`MAX_EXAMPLE_CHARS`).
    """

    response_id: str
    value: int
    label: str
    text: str


@dataclass(frozen=True)
class CodeExamples:
    """The worked examples of one code.

    Attributes:
        code_id, code_name: The code.
        code_hash: :meth:`Code.content_hash` of the code they were chosen for.
        examples: In the order shown (round-robin over the values).
        decided: The coder's decisions of each value that could be shown.
        left_out_audit: The coder's decisions of the code on audit pairs, never shown.
    """

    code_id: str
    code_name: str
    code_hash: str
    examples: tuple[ShownExample, ...]
    decided: Mapping[int, int]
    left_out_audit: int

    def describe(self) -> str:
        """``4 shown (values 1, 1, 5, 5)``, or why none is."""
        if not self.examples:
            reason = "no decisions outside the audit sample under its current definition"
            return f"no examples ({reason}): asked as at context 'full'"
        values = ", ".join(str(e.value) for e in sorted(self.examples, key=lambda e: e.value))
        return f"{len(self.examples)} shown (values {values})"


@dataclass(frozen=True)
class ExampleSet(Mapping[str, tuple[Example, ...]]):
    """The worked examples of every codable code, chosen from one coder's decisions.

    As a mapping it is what the scoring engine shows (its ``examples``): code id ->
    (text, label) pairs in the order shown, for the codes that have any.

    Attributes:
        coder: Whose decisions they are.
        per_value: Most examples per value decided.
        seed: Seed of the ranking.
        codes: Per codable code, in codebook order (a code may have none).
    """

    coder: str
    per_value: int
    seed: int
    codes: tuple[CodeExamples, ...]

    def prompt_examples(self) -> dict[str, tuple[Example, ...]]:
        """What the scoring engine shows: (text, label) per code id (codes with none left
        out)."""
        return {
            c.code_id: tuple((e.text, e.label) for e in c.examples)
            for c in self.codes
            if c.examples
        }

    def __getitem__(self, code_id: str) -> tuple[Example, ...]:
        for c in self.codes:
            if c.code_id == code_id and c.examples:
                return tuple((e.text, e.label) for e in c.examples)
        raise KeyError(code_id)

    def __iter__(self) -> Iterator[str]:
        return (c.code_id for c in self.codes if c.examples)

    def __len__(self) -> int:
        return sum(1 for c in self.codes if c.examples)

    @property
    def hash(self) -> str:
        """:func:`scoring.templates.examples_hash` of the examples: the configuration's
        :attr:`~scoring.score.ScoreConfig.examples_hash`."""
        return examples_hash(self.prompt_examples())

    @property
    def shown(self) -> int:
        return sum(len(c.examples) for c in self.codes)

    def fits(self, codes: Sequence[Code]) -> bool:
        """Whether the set was chosen for exactly these codes as they read now (a code
        revised or added since needs its examples chosen again)."""
        return [(c.code_id, c.code_hash) for c in self.codes] == [
            (c.id, c.content_hash()) for c in codes
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "coder": self.coder,
            "per_value": self.per_value,
            "seed": self.seed,
            "hash": self.hash,
            "codes": [
                {
                    "code_id": c.code_id,
                    "code": c.code_name,
                    "code_hash": c.code_hash,
                    "decided": {str(v): n for v, n in c.decided.items()},
                    "audit_decisions_left_out": c.left_out_audit,
                    "examples": [
                        {
                            "response_id": e.response_id,
                            "value": e.value,
                            "label": e.label,
                            "text": e.text,
                        }
                        for e in c.examples
                    ],
                }
                for c in self.codes
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExampleSet:
        """Raises KeyError, TypeError or ValueError on anything else than :meth:`to_dict`."""
        return cls(
            coder=str(data["coder"]),
            per_value=int(data["per_value"]),
            seed=int(data["seed"]),
            codes=tuple(
                CodeExamples(
                    code_id=str(c["code_id"]),
                    code_name=str(c["code"]),
                    code_hash=str(c["code_hash"]),
                    examples=tuple(
                        ShownExample(
                            str(e["response_id"]), int(e["value"]), str(e["label"]), str(e["text"])
                        )
                        for e in c["examples"]
                    ),
                    decided={int(v): int(n) for v, n in c["decided"].items()},
                    left_out_audit=int(c["audit_decisions_left_out"]),
                )
                for c in data["codes"]
            ),
        )


def choose_examples(
    study: Study,
    *,
    coder: str | None = None,
    per_value: int = DEFAULT_PER_VALUE,
    seed: int = 0,
) -> ExampleSet:
    """The worked examples of every codable code, from one coder's decisions.

    Args:
        study: An open study.
        coder: Whose decisions are shown (default: the only coder with decisions).
        per_value: Most examples per scale value decided (round-robin over the values).
        seed: Seed of the ranking that chooses among a value's decisions.

    Raises:
        StudyError: nobody has decided anything, the coder named has no decision,
            several coders have and none was named, or no code has a decision of the
            coder that may be shown (outside the audit, under its current definition).
        ValueError: ``per_value`` below 1.
    """
    if per_value < 1:
        raise ValueError(f"examples per value must be at least 1, got {per_value}")
    who = resolve_coder(study, coder)
    codes = tuple(
        _code_examples(study, code, who, per_value, seed) for code in study.codebook.codable
    )
    if not any(c.examples for c in codes):
        audit = sum(c.left_out_audit for c in codes)
        held = (
            f" ({audit} of their decisions are audit pairs, which are never shown)" if audit else ""
        )
        raise StudyError(
            f"coder {who!r} has no decision to show as an example{held}: examples are the "
            "coder's own decisions outside the audit sample, under the codes' current "
            "definitions; code some pairs in the queue first, then score with worked "
            "examples again",
            path=study.path,
            remedy=Remedy("review", "code some pairs in the queue"),
        )
    return ExampleSet(who, per_value, seed, codes)


def _code_examples(study: Study, code: Code, coder: str, per_value: int, seed: int) -> CodeExamples:
    decisions, left_out = training_decisions(study, code, coder)
    scale = study.codebook.scale_for(code)
    labels = {int(o.value): o.label for o in scale.options}
    index = study.index
    queues: dict[int, list[str]] = {}
    for rid, value in decisions.items():
        if value in labels:
            queues.setdefault(value, []).append(index.response_id(rid))
    for ids in queues.values():
        ids.sort(key=lambda response_id: _rank(seed, code.id, response_id))
    chosen: list[ShownExample] = []
    for _ in range(per_value):
        for value in (v for v in labels if v in queues):
            ids = queues[value]
            while ids:
                response_id = ids.pop(0)
                text = excerpt(study.response(response_id).text)
                if text:
                    chosen.append(ShownExample(response_id, value, labels[value], text))
                    break
    counts = Counter(v for v in decisions.values() if v in labels)
    return CodeExamples(
        code_id=code.id,
        code_name=code.name,
        code_hash=code.content_hash(),
        examples=tuple(chosen),
        decided={v: counts[v] for v in labels if counts[v]},
        left_out_audit=left_out,
    )


def _rank(seed: int, code_id: str, response_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{code_id}\x1f{response_id}".encode()).digest()


def excerpt(text: str, limit: int = MAX_EXAMPLE_CHARS) -> str:
    """``text`` as one paragraph, cut at a word to at most about ``limit`` characters
    (the cut marked ``[...]``)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    mark = TRUNCATION_MARK.rstrip()
    cut = flat[: limit - len(mark)]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + mark


def record_examples(study: Study, chosen: ExampleSet) -> None:
    """Keep ``chosen`` in the study (``meta`` key ``examples:<hash>``): which pairs a
    configuration at context ``examples`` showed."""
    with study.transaction() as conn:
        set_meta(conn, META_KEY + chosen.hash, json.dumps(chosen.to_dict(), ensure_ascii=False))


def stored_examples(study: Study, examples_hash: str) -> ExampleSet | None:
    """The example set recorded under ``examples_hash``; None when none is (or it no
    longer gives that hash)."""
    if not examples_hash:
        return None
    raw = study.meta().get(META_KEY + examples_hash)
    if raw is None:
        return None
    try:
        found = ExampleSet.from_dict(json.loads(raw))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return found if found.hash == examples_hash else None


__all__ = [
    "DEFAULT_PER_VALUE",
    "MAX_EXAMPLE_CHARS",
    "CodeExamples",
    "ExampleSet",
    "ShownExample",
    "choose_examples",
    "excerpt",
    "record_examples",
    "stored_examples",
]
