from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from codebooks import (
    BINARY,
    LIKERT_5,
    LIKERT_9,
    Code,
    Codebook,
    CodebookError,
    CodecurveError,
    Option,
    Scale,
    get_scale,
)


def book(*codes: Code, **kwargs: object) -> Codebook:
    return Codebook(name="test", codes=codes, **kwargs)  # type: ignore[arg-type]


def test_codebook_error_is_a_value_error_that_names_file_and_place() -> None:
    exc = CodebookError("bad thing", path="x/codes.yaml", where="line 3, column 4")
    assert isinstance(exc, ValueError)
    assert isinstance(exc, CodecurveError)
    assert str(exc) == "x/codes.yaml (line 3, column 4): bad thing"


def test_duplicate_names_are_refused_whatever_their_case() -> None:
    with pytest.raises(CodebookError, match="used twice"):
        book(Code("a", "Workload"), Code("b", " workload "))


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(CodebookError, match="id 'a' is used twice"):
        book(Code("a", "One"), Code("a", "Two"))


def test_unknown_parent_is_refused() -> None:
    with pytest.raises(CodebookError, match="unknown parent 'nowhere'"):
        book(Code("a", "A", parent="nowhere"))


@pytest.mark.parametrize(
    "codes",
    [
        (Code("a", "A", parent="a"),),
        (Code("a", "A", parent="b"), Code("b", "B", parent="a")),
        (
            Code("r", "Root"),
            Code("a", "A", parent="c"),
            Code("b", "B", parent="a"),
            Code("c", "C", parent="b"),
        ),
    ],
    ids=["self", "two", "three-below-a-root"],
)
def test_cycles_of_parents_are_refused(codes: tuple[Code, ...]) -> None:
    with pytest.raises(CodebookError, match="cycle of parents"):
        book(*codes)


def test_a_deep_chain_of_parents_is_checked_in_linear_time() -> None:
    codes = [Code("c0", "C0")] + [
        Code(f"c{i}", f"C{i}", parent=f"c{i - 1}") for i in range(1, 20_000)
    ]
    start = time.perf_counter()
    codebook = book(*codes)
    assert time.perf_counter() - start < 10.0  # a quadratic check takes minutes
    assert len(codebook.path_of(codebook.codes[-1])) == 20_000


def test_sets_must_name_known_codes() -> None:
    with pytest.raises(CodebookError, match="set 'S' names an unknown code 'x'"):
        book(Code("a", "A"), sets=(("S", ("x",)),))


def test_a_codebook_needs_codes() -> None:
    with pytest.raises(CodebookError, match="has no codes"):
        book()


@pytest.mark.parametrize("color", ["#abc", "#A1B2C3", "#a1b2c3"])
def test_hex_colours_in_either_case_are_accepted(color: str) -> None:
    assert Code("a", "A", color=color).color == color


@pytest.mark.parametrize("color", ["red", "#12345", "a1b2c3", "#ggg", ""])
def test_other_colours_are_refused(color: str) -> None:
    with pytest.raises(CodebookError, match="colour"):
        Code("a", "A", color=color)


def test_a_code_needs_an_id_and_a_name() -> None:
    with pytest.raises(CodebookError):
        Code(" ", "A")
    with pytest.raises(CodebookError):
        Code("a", "  ")


@pytest.mark.parametrize(("scale", "threshold"), [(LIKERT_5, 4), (LIKERT_9, 6), (BINARY, 1)])
def test_ready_made_scales_apply_above_their_midpoint(scale: Scale, threshold: int) -> None:
    assert scale.threshold == threshold
    assert scale.applies(threshold)
    assert not scale.applies(threshold - 1)


def test_binary_applies_at_yes() -> None:
    assert BINARY.option_for_value(BINARY.threshold).label == "Yes"
    assert BINARY.lowest.label == "No"
    assert BINARY.labels == ("No", "Yes")
    assert BINARY.values == (0, 1)


def test_scales_by_name() -> None:
    assert get_scale("1-5") is LIKERT_5
    assert get_scale("1-9").k == 9
    with pytest.raises(CodebookError, match="unknown scale '1-7'"):
        get_scale("1-7")


def test_options_get_a_leading_space_variant_and_strict_drops_it() -> None:
    assert Option("3", 3).variants == ("3", " 3")
    assert Option("Yes", 1, variants=(" Yes",)).variants == ("Yes", " Yes")
    assert LIKERT_5.strict().options[2].variants == ("3",)
    with pytest.raises(CodebookError, match="twice"):
        Option("a", 1, variants=("a", "a"))


@pytest.mark.parametrize(
    ("options", "applies_from", "message"),
    [
        ((Option("1", 1),), None, "at least two"),
        ((Option("1", 1), Option("1", 2)), None, "duplicate option labels"),
        ((Option("2", 2), Option("1", 1)), None, "strictly increase"),
        ((Option("1", 1), Option("2", 2)), 1, "applies_from 1"),
        ((Option("1", 1), Option("2", 2)), 3, "applies_from 3"),
        ((Option("a", 1, variants=("a", "b")), Option("b", 2)), None, "share a surface"),
    ],
)
def test_malformed_scales_are_refused(
    options: tuple[Option, ...], applies_from: int | None, message: str
) -> None:
    with pytest.raises(CodebookError, match=message):
        Scale("s", options, applies_from)


def test_lookup_scale_path_and_codable() -> None:
    codebook = book(
        Code("cat", "Category", codable=False),
        Code("a", "Alpha", parent="cat", scale=BINARY),
        Code("b", "Beta", parent="a"),
    )
    assert codebook.code("b").name == "Beta"
    assert codebook.code(" ALPHA ").id == "a"
    with pytest.raises(CodebookError, match="no code named"):
        codebook.code("gamma")
    assert [c.id for c in codebook.codable] == ["a", "b"]
    assert codebook.scale_for(codebook.code("a")) is BINARY
    assert codebook.scale_for(codebook.code("b")) is LIKERT_5
    assert codebook.path_of(codebook.code("b")) == ("Category", "Alpha", "Beta")


def test_dict_round_trip_and_hash() -> None:
    codebook = book(
        Code("a", "Alpha", definition="d", examples=("e1", "e2"), color="#abcdef"),
        Code("b", "Beta", parent="a", scale=LIKERT_9),
        sets=(("S", ("a", "b")),),
    )
    again = Codebook.from_dict(codebook.to_dict())
    assert again == codebook
    assert again.content_hash() == codebook.content_hash()
    changed = book(*codebook.codes[:1], Code("b", "Beta", parent="a"), sets=codebook.sets)
    assert changed.content_hash() != codebook.content_hash()


def test_a_value_is_named_by_its_option_or_its_digits() -> None:
    assert BINARY.label_of(1) == BINARY.options[1].label
    assert BINARY.label_of(0) == BINARY.options[0].label
    assert LIKERT_5.label_of(3) == LIKERT_5.options[2].label
    assert LIKERT_5.option_of(7) is None
    assert LIKERT_5.label_of(7) == "7"  # recorded under an earlier scale


def _names_a_value_by_hand(tree: ast.AST) -> list[int]:
    """Lines of loops over a scale's options that compare ``.value`` and read ``.label``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.comprehension):
            over = node.iter
        elif isinstance(node, ast.GeneratorExp | ast.ListComp | ast.DictComp | ast.SetComp):
            over = node.generators[0].iter
        else:
            continue
        if not (isinstance(over, ast.Attribute) and over.attr == "options"):
            continue
        attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        looks_up = any(  # ``option.value == value``: finding one option, not going over all
            isinstance(n, ast.Compare)
            and isinstance(n.ops[0], ast.Eq)
            and isinstance(n.left, ast.Attribute)
            and n.left.attr == "value"
            for n in ast.walk(node)
        )
        if looks_up and "label" in attrs:
            found.append(getattr(node, "lineno", getattr(over, "lineno", 0)))
    return found


def test_one_function_names_a_value() -> None:
    """Only the scale looks an option up by its value to name it (Scale.label_of): the
    queue, the panes, the reconciliation view and the exports say the same."""
    root = Path(__file__).parents[2]
    found = [
        f"{path.relative_to(root)}:{line}"
        for folder in ("tui", "study", "screening")
        for path in sorted((root / folder).rglob("*.py"))
        for line in _names_a_value_by_hand(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []
