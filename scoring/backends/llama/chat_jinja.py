"""A model's chat template, rendered from its Jinja source as transformers renders it.

GGUF files carry the template as text (``tokenizer.chat_template``). To give the prompt
the transformers path gives for the same model, the environment matches
``transformers.utils.chat_template_utils``: a sandbox with ``trim_blocks`` and
``lstrip_blocks``, loop controls, a ``tojson`` that does not escape HTML,
``raise_exception`` and ``strftime_now``, and the special tokens' texts as variables.

The template is the file's, and a file can be hostile: rendering is bounded. Every loop
turn, call and arithmetic operator is a step, at most :data:`MAX_STEPS` a rendering; no
value (a text, a list) and not the output may grow past :data:`MAX_TEXT` characters
beyond what the messages bring, and no number given to a call (``' '.ljust(N)``,
``center(N)``) past it either; ``{% include %}``, ``{% import %}`` and ``{% extends %}``
(there is nothing to load) and endless recursion are refused. Each says "the model's
chat template failed" and why, at once: two nested ``range(100000)`` loops no longer
hold a scoring run for minutes, nor ``'a' * 4000000000`` its memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from functools import lru_cache, wraps
from typing import Any

from scoring.errors import ScoringError

#: Most steps (loop turns, calls, arithmetic operators) one rendering may take: a chat
#: template takes a few hundred.
MAX_STEPS = 200_000

#: Longest text or list a rendering may make, output included, beyond four times what
#: its messages hold (a long response is the model's to read, not the template's doing).
MAX_TEXT = 1_000_000

#: Largest exponent of ``**``: a template has no use for huge numbers.
MAX_EXPONENT = 1_000


class TemplateLimitError(Exception):
    """A rendering went past one of its bounds (the message says which)."""


class _Budget:
    """What one rendering may still do (held in a context variable: templates are cached
    and shared, their renderings are not)."""

    def __init__(self, text: int) -> None:
        self.steps = 0
        self.text = text

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateLimitError(
                f"it does more work than a chat template needs (over {MAX_STEPS:,} steps)"
            )

    def size(self, value: Any) -> Any:
        if isinstance(value, (str, bytes, list, tuple, dict, set)) and len(value) > self.text:
            raise TemplateLimitError(
                f"it makes a value of {len(value):,} characters or items (at most {self.text:,})"
            )
        return value

    def number(self, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > self.text:
            raise TemplateLimitError(f"it asks for {value:,} (at most {self.text:,})")


_BUDGET: ContextVar[_Budget | None] = ContextVar("chat_template_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    if budget is None:  # a compiled template used outside render_chat_template
        budget = _Budget(MAX_TEXT)
        _BUDGET.set(budget)
    return budget


def render_chat_template(
    template: str,
    messages: Sequence[Mapping[str, str]],
    *,
    special_tokens: Mapping[str, str],
) -> str:
    """The conversation as the model reads it, the assistant turn opened.

    Args:
        template: The Jinja source.
        messages: ``role``/``content`` dicts.
        special_tokens: ``bos_token``, ``eos_token``... and their texts.

    Raises:
        ScoringError: the template does not compile, fails on these messages or goes
            past a bound (module docstring): "the model's chat template failed: ...".
    """
    import jinja2

    held = sum(len(str(v)) for m in messages for v in m.values())
    budget = _Budget(MAX_TEXT + 4 * held)
    token = _BUDGET.set(budget)
    try:
        compiled = _compile(template)
        parts: list[str] = []
        length = 0
        for part in compiled.generate(
            messages=[dict(m) for m in messages],
            tools=None,
            documents=None,
            add_generation_prompt=True,
            **special_tokens,
        ):
            length += len(part)
            if length > budget.text:
                raise TemplateLimitError(f"its output passes {budget.text:,} characters")
            parts.append(part)
    except TemplateLimitError as exc:
        raise ScoringError(f"the model's chat template failed: {exc}") from None
    except jinja2.TemplateError as exc:
        said = exc.message or type(exc).__name__  # without the syntax error's line below it
        where = f" (line {exc.lineno})" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
        raise ScoringError(f"the model's chat template failed: {said}{where}") from exc
    except RecursionError:
        raise ScoringError(
            "the model's chat template failed: it calls itself without end (recursion)"
        ) from None
    except MemoryError:
        raise ScoringError("the model's chat template failed: it ran out of memory") from None
    except Exception as exc:  # the template's own code failed (a bad operand, a bad call)
        raise ScoringError(
            f"the model's chat template failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        _BUDGET.reset(token)
    return "".join(parts)


#: Tags that load another template: a model file has nothing to load.
_LOADING = {"Include": "include", "Import": "import", "FromImport": "from ... import",
            "Extends": "extends"}  # fmt: skip


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    from jinja2 import TemplateSyntaxError, nodes
    from jinja2.ext import loopcontrols
    from jinja2.visitor import NodeTransformer

    def raise_exception(message: str) -> None:
        from jinja2.exceptions import TemplateError

        raise TemplateError(message)

    def tojson(
        x: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    def turns(iterable: Any) -> Iterator[Any]:
        """A loop's items, a step each."""
        budget = _budget()
        for item in iterable:
            budget.step()
            yield item

    def concat(*parts: Any) -> str:
        """``a ~ b``, bounded like every other value."""
        budget = _budget()
        length = 0
        texts = []
        for part in parts:
            text = str(part)
            length += len(text)
            if length > budget.text:
                raise TemplateLimitError(
                    f"it makes a text of {length:,} characters (at most {budget.text:,})"
                )
            texts.append(text)
        return "".join(texts)

    class Bounded(NodeTransformer):
        """Loops and ``~`` through the bounded helpers above."""

        def visit_For(self, node: Any) -> Any:
            self.generic_visit(node)
            node.iter = nodes.Call(
                nodes.Name("codecurve_turns", "load"), [node.iter], [], None, None
            ).set_lineno(node.lineno)
            return node

        def visit_Concat(self, node: Any) -> Any:
            self.generic_visit(node)
            return nodes.Call(
                nodes.Name("codecurve_concat", "load"), list(node.nodes), [], None, None
            ).set_lineno(node.lineno)

    env = _environment()(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters = {name: _bounded_filter(f) for name, f in env.filters.items()}
    env.filters["tojson"] = _bounded_filter(tojson)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["codecurve_turns"] = turns
    env.globals["codecurve_concat"] = concat
    tree = env.parse(template)
    for kind, tag in _LOADING.items():
        found = next(iter(tree.find_all(getattr(nodes, kind))), None)
        if found is not None:
            raise TemplateSyntaxError(
                f"it loads another template ({{% {tag} %}}), and a model's file has none to load",
                found.lineno,
            )
    tree = Bounded().visit(tree)
    return env.template_class.from_code(env, env.compile(tree), env.make_globals(None), None)


def _bounded_filter(f: Any) -> Any:
    """``f`` with its numbers and its result bounded (``center(4000000000)``)."""

    @wraps(f)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.step()
        for value in (*args, *kwargs.values()):
            budget.number(value)
        return budget.size(f(*args, **kwargs))

    return bounded


@lru_cache(maxsize=1)
def _environment() -> Any:
    """The sandbox, with every call and operator counted and bounded."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            budget = _budget()
            budget.step()
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise TemplateLimitError(f"it raises a number to the power {right:,}")
            if operator == "*":
                for one, other in ((left, right), (right, left)):
                    sized = isinstance(one, (str, list, tuple)) and isinstance(other, int)
                    if sized and len(one) * other > budget.text:
                        raise TemplateLimitError(
                            f"it makes a value of {len(one) * other:,} characters or "
                            f"items (at most {budget.text:,})"
                        )
            return budget.size(super().call_binop(context, operator, left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            budget = _budget()
            budget.step()
            for value in (*args, *kwargs.values()):
                budget.number(value)
            return budget.size(super().call(__context, __obj, *args, **kwargs))

    return BoundedSandbox
