"""A GGUF file's chat template is the file's code, and a file can be hostile: its
rendering is bounded in work and size, loads nothing and recurses not without end, and
every refusal says "the model's chat template failed" at once. Real templates render as
transformers renders them."""

from __future__ import annotations

import time

import pytest

from scoring.backends.llama.chat_jinja import render_chat_template
from scoring.errors import ScoringError

MESSAGES = [
    {"role": "system", "content": "You code survey responses."},
    {"role": "user", "content": "Does the comment mention pay? 'The salary is too low.'"},
]
SPECIALS = {"bos_token": "<s>", "eos_token": "</s>"}

#: Templates of the kinds models ship (ChatML, Llama 3, Gemma), as transformers runs them.
REAL = {
    "chatml": (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
        "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|im_start|>assistant\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}{% for message in messages %}{% set content = '<|start_header_id|>' "
        "+ message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + "
        "'<|eot_id|>' %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    "gemma": (
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]"
        "['content'] ~ '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first "
        "= '' %}{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}"
        "{% if loop.index0 == 0 %}{% set text = first ~ message['content'] %}{% else %}"
        "{% set text = message['content'] %}{% endif %}{{ '<start_of_turn>' ~ "
        "(message['role'] == 'assistant' and 'model' or message['role']) ~ '\n' ~ text | trim "
        "~ '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
        "{{'<start_of_turn>model\n'}}{% endif %}"
    ),
    "tojson": "{{ messages | tojson }}{% for i in range(3) %}{{ loop.index }}{% endfor %}",
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_templates_render_as_transformers_renders_them(name: str) -> None:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    expected = _compile_jinja_template(REAL[name]).render(
        messages=MESSAGES, tools=None, documents=None, add_generation_prompt=True, **SPECIALS
    )
    assert render_chat_template(REAL[name], MESSAGES, special_tokens=SPECIALS) == expected


def test_a_long_response_is_no_template_fault() -> None:
    long = [{"role": "user", "content": "word " * 600_000}]
    prompt = render_chat_template(REAL["chatml"], long, special_tokens=SPECIALS)
    assert len(prompt) > 3_000_000


HOSTILE = {
    "nested range loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "more work than a chat template needs",
    ),
    "a huge product": ("{{ 'a' * 4000000000 }}", "a value of 4,000,000,000"),
    "doubling by ~": (
        "{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}"
        "{% endfor %}{{ ns.x }}",
        "it makes a text of",
    ),
    "doubling by +": (
        "{% set ns = namespace(x=['a']) %}{% for i in range(64) %}{% set ns.x = ns.x + ns.x %}"
        "{% endfor %}{{ ns.x | length }}",
        "it makes a value of",
    ),
    "a padded string": ("{{ 'a'.ljust(4000000000) }}", "it asks for 4,000,000,000"),
    "a centred filter": ("{{ 'a' | center(4000000000) }}", "it asks for 4,000,000,000"),
    "a huge power": ("{{ 10 ** 100000000 }}", "to the power"),
    "endless output": (
        "{% for i in range(100000) %}{{ 'x' * 60 }}{% endfor %}",
        "its output passes",
    ),
    "include": ("{% include 'other.jinja' %}", "loads another template ({% include %})"),
    "import": ("{% import 'macros.jinja' as m %}", "loads another template ({% import %})"),
    "from import": ("{% from 'm.jinja' import f %}", "loads another template"),
    "extends": ("{% extends 'base.jinja' %}", "loads another template ({% extends %})"),
    "recursion": (
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        "calls itself without end",
    ),
    "branching recursion": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
        "{{ f(60) }}",
        "more work than a chat template needs",
    ),
    "a bad operand": ("{{ 1 + 'a' }}", "TypeError"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_template_fails_at_once_in_one_sentence(name: str) -> None:
    template, reason = HOSTILE[name]
    started = time.monotonic()
    with pytest.raises(ScoringError) as caught:
        render_chat_template(template, MESSAGES, special_tokens=SPECIALS)
    message = str(caught.value)
    print(f"{name}: {time.monotonic() - started:.2f} s: {message}")
    assert message.startswith("the model's chat template failed: ")
    assert reason in message
    assert "\n" not in message


def test_a_bound_holds_for_one_rendering_only() -> None:
    """The budget is each rendering's own: many renderings of a real template (a study's
    pairs) never add up to a refusal."""
    for _ in range(3000):
        render_chat_template(REAL["gemma"], MESSAGES, special_tokens=SPECIALS)
