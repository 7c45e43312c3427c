"""Prompt templates: what the model reads for one (response, code) pair.

Two templates, versioned by id and hashed by their text, so that an edited template never
reuses old scores (the hash is part of every score's identity):

``chat-v1``
    For chat models. A system message and one user message, rendered by the backend's
    chat template with the assistant turn opened; the answer starts right there, so
    options are scored as written ("3").
``base-v1``
    For base models (and ``--no-chat``). A plain completion prompt ending in the answer
    cue ``Answer:``; the natural continuation is " 3", so the leading-space rendering is
    the one a strict scale scores.

Layout: instructions, the code (at the chosen context level), the question and the scale
come first, the response last, then the answer cue. All prompts of one code therefore
share a long token prefix, which the transformers backend computes once per batch.

Context levels (METHOD.md): ``none`` shows the code's name only; ``definition`` adds its
definition; ``full`` adds inclusion and exclusion criteria and examples; ``examples``
adds to ``full`` some pairs of the code a coder decided, as worked examples
(``Response: "..." -> Answer: 4``), after the answer rule and before the response: they
belong to the code, so every prompt of the code still shares the whole prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from codebooks.model import Code, Codebook, Option, Scale
from scoring.backend import Backend, OptionVariants
from scoring.errors import ScoringError
from scoring.score import CONTEXT_LEVELS

#: Marks the place where an over-long response was cut.
TRUNCATION_MARK = " [...] "

#: A worked example shown at context ``examples``: a response's text and the label of the
#: value a coder decided for it.
Example = tuple[str, str]

#: The line before a code's worked examples, and the form of each (both in
#: :func:`examples_hash`, so that a change of wording never reuses scores).
EXAMPLES_INTRO = "Responses already coded with this code:"
EXAMPLE_LINE = 'Response: "{text}" -> Answer: {label}'


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned prompt template. Every text field takes part in :attr:`hash`.

    Attributes:
        id: Versioned name (``chat-v1``); bump the version when the wording changes.
        chat: Rendered through the model's chat template (True) or as plain text.
        system: System message (chat templates only).
        intro: The task, first line of the prompt.
        question_line: ``{question}`` is the codebook's question with ``{code}`` filled in.
        scale_intro: Line before the scale's anchors.
        answer_rule: Asks for only the label; ``{labels}`` lists them.
        response_line: ``{text}`` is the response.
        answer_cue: Plain templates end with it (chat templates end with the opened
            assistant turn).
        space_before_answer: Strict mode scores ``" " + label`` (the continuation after
            a cue like ``Answer:``) instead of the bare label.
    """

    id: str
    chat: bool
    system: str
    intro: str
    question_line: str
    scale_intro: str
    answer_rule: str
    response_line: str
    answer_cue: str
    space_before_answer: bool

    @property
    def hash(self) -> str:
        """sha256 prefix of the template's text."""
        blob = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def user_text(
        self,
        codebook: Codebook,
        code: Code,
        text: str,
        context: str,
        *,
        examples: Sequence[Example] = (),
    ) -> str:
        """The instructions, the code, the question and the scale, at context ``examples``
        the code's worked examples, then the response.

        Raises:
            ScoringError: an unknown context, or examples at another context.
        """
        if context not in CONTEXT_LEVELS:
            raise ScoringError(
                f"unknown context level {context!r}; choose one of {', '.join(CONTEXT_LEVELS)}"
            )
        if examples and context != "examples":
            raise ScoringError(f"worked examples are shown at context 'examples', not {context!r}")
        scale = codebook.scale_for(code)
        question = codebook.question.replace("{code}", code.name)
        parts = [
            self.intro,
            describe_code(code, context),
            self.question_line.format(question=question, code=code.name),
            self.scale_intro + "\n" + describe_scale(scale),
            self.answer_rule.format(labels=_or_list(scale.labels)),
            describe_examples(examples),
            self.response_line.format(text=text),
        ]
        return "\n\n".join(p for p in parts if p)

    def render(
        self,
        backend: Backend,
        codebook: Codebook,
        code: Code,
        text: str,
        context: str,
        *,
        examples: Sequence[Example] = (),
    ) -> str:
        """The exact prompt the model reads."""
        user = self.user_text(codebook, code, text, context, examples=examples)
        if self.chat:
            messages = []
            if self.system:
                messages.append({"role": "system", "content": self.system})
            messages.append({"role": "user", "content": user})
            return backend.render_chat(messages)
        return f"{user}\n{self.answer_cue}"

    def options(self, scale: Scale, *, strict: bool) -> list[OptionVariants]:
        """The surface variants scored per option.

        Pooled: every variant the scale lists. Strict: exactly one rendering, the one this
        template's answer position calls for.
        """
        if not strict:
            return [o.variants for o in scale.options]
        return [(self._strict_variant(o),) for o in scale.options]

    def _strict_variant(self, option: Option) -> str:
        if self.space_before_answer:
            spaced = " " + option.label
            return spaced if spaced in option.variants else option.label
        return option.label


def describe_code(code: Code, context: str) -> str:
    """The code as the model sees it at a context level."""
    lines = [f"Code: {code.name}"]
    if context in ("definition", "full", "examples") and code.definition.strip():
        lines.append(f"Definition: {_one_paragraph(code.definition)}")
    if context in ("full", "examples"):
        if code.inclusion.strip():
            lines.append(f"Apply it when: {_one_paragraph(code.inclusion)}")
        if code.exclusion.strip():
            lines.append(f"Do not apply it when: {_one_paragraph(code.exclusion)}")
        examples = [e for e in code.examples if e.strip()]
        if examples:
            lines.append("Examples where it applies:")
            lines.extend(f'- "{_one_paragraph(e)}"' for e in examples)
    return "\n".join(lines)


def describe_examples(examples: Sequence[Example]) -> str:
    """A code's worked examples, one line each (empty when there are none)."""
    if not examples:
        return ""
    lines = [EXAMPLES_INTRO]
    lines.extend(
        EXAMPLE_LINE.format(text=_one_paragraph(text), label=label) for text, label in examples
    )
    return "\n".join(lines)


def examples_hash(examples: Mapping[str, Sequence[Example]]) -> str:
    """sha256 prefix of the worked examples shown per code id (and of their wording): the
    :attr:`~scoring.score.ScoreConfig.examples_hash` of a configuration at context
    ``examples``. A code without examples counts as absent."""
    blob = json.dumps(
        {
            "intro": EXAMPLES_INTRO,
            "line": EXAMPLE_LINE,
            "codes": {
                code_id: [[text, label] for text, label in shown]
                for code_id, shown in sorted(examples.items())
                if shown
            },
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def describe_scale(scale: Scale) -> str:
    """One line per anchored option: ``1 = does not apply at all``."""
    lines = [f"{o.label} = {o.anchor}" for o in scale.options if o.anchor.strip()]
    if not lines:
        lines = [", ".join(scale.labels)]
    return "\n".join(lines)


def _or_list(labels: Sequence[str]) -> str:
    if len(labels) == 2:
        return f"{labels[0]} or {labels[1]}"
    return ", ".join(labels[:-1]) + f" or {labels[-1]}"


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


CHAT_V1 = PromptTemplate(
    id="chat-v1",
    chat=True,
    system="You are a careful qualitative researcher. You code survey responses with a "
    "codebook and answer with a single scale point.",
    intro="Rate how well a code from a codebook applies to a survey response.",
    question_line="Question: {question}",
    scale_intro="Scale:",
    answer_rule="Answer with only one of {labels}, nothing else.",
    response_line="Response:\n{text}",
    answer_cue="",
    space_before_answer=False,
)

BASE_V1 = PromptTemplate(
    id="base-v1",
    chat=False,
    system="",
    intro="Rate how well a code from a codebook applies to a survey response.",
    question_line="Question: {question}",
    scale_intro="Scale:",
    answer_rule="Answer with only one of {labels}, nothing else.",
    response_line="Response: {text}",
    answer_cue="Answer:",
    space_before_answer=True,
)

TEMPLATES: dict[str, PromptTemplate] = {t.id: t for t in (CHAT_V1, BASE_V1)}


def get_template(template: str | PromptTemplate | None, backend: Backend) -> PromptTemplate:
    """A template by id, as given, or the default for the backend (chat or plain)."""
    if isinstance(template, PromptTemplate):
        chosen = template
    elif template is None:
        chosen = CHAT_V1 if backend.is_chat else BASE_V1
    else:
        try:
            chosen = TEMPLATES[template]
        except KeyError:
            known = ", ".join(TEMPLATES)
            raise ScoringError(
                f"unknown prompt template {template!r}; choose one of {known}"
            ) from None
    if chosen.chat and not backend.is_chat:
        raise ScoringError(
            f"template {chosen.id} needs a chat model, and {backend.identity.name} is used "
            "without a chat template; use base-v1"
        )
    return chosen
