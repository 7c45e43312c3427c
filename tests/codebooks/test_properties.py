"""Property tests: every reader turns any input into a codebook or a CodebookError, and
every writer's output reads back to what was written."""

from __future__ import annotations

import csv
import io
import json
import string
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codebooks import (
    DEFAULT_QUESTION,
    SCALES,
    Code,
    Codebook,
    CodebookError,
    Option,
    Scale,
    load_codebook,
    slugify,
)
from codebooks.mapping import CODE_KEYS, TOP_KEYS
from codebooks.qdc import describe, parse_description
from codebooks.readers import READERS
from codebooks.writers import WRITERS, save_codebook

SUFFIXES = sorted(READERS)
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def read_or_refuse(path: Path) -> Codebook | None:
    """Load ``path``; a refusal must be a CodebookError that names the file."""
    try:
        return load_codebook(path)
    except CodebookError as exc:
        error = exc
    assert error.message.strip()
    assert str(path) in str(error)
    return None


# --- anything in, CodebookError or a codebook out ---------------------------------------


@FUZZ
@given(data=st.binary(max_size=400), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes(folder: Path, data: bytes, suffix: str) -> None:
    path = folder / f"bytes{suffix}"
    path.write_bytes(data)
    read_or_refuse(path)


@FUZZ
@given(text=st.text(max_size=300), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_text(folder: Path, text: str, suffix: str) -> None:
    path = folder / f"text{suffix}"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    read_or_refuse(path)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["1-5", "1-9", "binary", "#abc", "A", "a", "B", "true", "No"]),
)
plain_data = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(CODE_KEYS + TOP_KEYS), inner, max_size=4
        )
    ),
    max_leaves=20,
)
code_like = st.one_of(
    plain_data,
    st.dictionaries(st.sampled_from(CODE_KEYS), plain_data, max_size=6),
    st.fixed_dictionaries(
        {"name": st.sampled_from(["A", "B", "a", "Cat"])},
        optional={key: plain_data for key in CODE_KEYS if key != "name"},
    ),
)
codebook_like = st.one_of(
    plain_data,
    st.fixed_dictionaries(
        {},
        optional={
            "name": plain_data,
            "question": plain_data,
            "description": plain_data,
            "scale": plain_data
            | st.fixed_dictionaries(
                {
                    "options": st.lists(
                        plain_data
                        | st.dictionaries(
                            st.sampled_from(["label", "value", "anchor", "variants", "x"]),
                            plain_data,
                        ),
                        max_size=4,
                    )
                },
                optional={"applies_from": plain_data, "name": plain_data},
            ),
            "codes": st.lists(code_like, max_size=4) | plain_data,
            "sets": st.lists(
                st.fixed_dictionaries({"name": plain_data, "codes": plain_data}) | plain_data,
                max_size=3,
            )
            | plain_data,
        },
    ),
)


@FUZZ
@given(data=codebook_like)
def test_random_yaml_structures(folder: Path, data: Any) -> None:
    path = folder / "structure.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    read_or_refuse(path)


@FUZZ
@given(data=codebook_like)
def test_random_json_structures(folder: Path, data: Any) -> None:
    path = folder / "structure.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    read_or_refuse(path)


TAGS = st.sampled_from(
    ["CodeBook", "Codes", "Code", "Description", "Sets", "Set", "MemberCode", "Project", "x"]
)
NAMESPACED_TAGS = TAGS | st.builds(
    lambda version, tag: f"{{urn:QDA-XML:codebook:{version}}}{tag}",
    st.sampled_from(["1.0", "0:4"]),
    TAGS,
)
XML_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn")) | st.sampled_from("\n\t"),
    max_size=12,
)
ATTRIBUTES = st.dictionaries(
    st.sampled_from(["guid", "name", "isCodable", "color", "origin", "other"]),
    XML_TEXT | st.sampled_from(["true", "false", "1", "0", "#fff", "#ABCDEF", "red", "g1", "g2"]),
    max_size=4,
)


def _element(
    tag: str, attributes: dict[str, str], text: str | None, children: list[ET.Element]
) -> ET.Element:
    element = ET.Element(tag, attributes)
    element.text = text
    element.extend(children)
    return element


xml_trees = st.recursive(
    st.builds(_element, NAMESPACED_TAGS, ATTRIBUTES, st.none() | XML_TEXT, st.just([])),
    lambda children: st.builds(
        _element,
        NAMESPACED_TAGS,
        ATTRIBUTES,
        st.none() | XML_TEXT,
        st.lists(children, max_size=3),
    ),
    max_leaves=12,
)


@FUZZ
@given(tree=xml_trees, wrap=st.booleans())
def test_random_xml_trees(folder: Path, tree: ET.Element, wrap: bool) -> None:
    root = _element("CodeBook", {}, None, [tree]) if wrap else tree
    path = folder / "tree.qdc"
    path.write_bytes(ET.tostring(root, encoding="utf-8"))
    read_or_refuse(path)


@FUZZ
@given(
    start=st.integers(0, 2000),
    length=st.integers(0, 50),
    insert=st.binary(max_size=8),
    name=st.sampled_from(["maxqda_0_4.qdc", "deep.qdc", "taguette.qdc"]),
)
def test_damaged_real_files(
    folder: Path, data_dir: Path, start: int, length: int, insert: bytes, name: str
) -> None:
    original = (data_dir / name).read_bytes()
    start %= len(original)
    path = folder / "damaged.qdc"
    path.write_bytes(original[:start] + insert + original[start + length :])
    read_or_refuse(path)


HEADERS = [
    "name",
    "definition",
    "inclusion",
    "exclusion",
    "examples",
    "parent",
    "id",
    "codable",
    "color",
    "scale",
    "Code",
    "",
    "notes",
]


@FUZZ
@given(
    header=st.lists(st.sampled_from(HEADERS), min_size=1, max_size=6),
    rows=st.lists(
        st.lists(scalars.map(lambda v: "" if v is None else str(v)), max_size=7), max_size=5
    ),
    delimiter=st.sampled_from([",", ";", "\t"]),
)
def test_random_tables(
    folder: Path, header: list[str], rows: list[list[str]], delimiter: str
) -> None:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(header)
    writer.writerows(rows)
    path = folder / "table.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    read_or_refuse(path)


# --- what is written reads back ---------------------------------------------------------

CHARACTERS = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn", "Co"))
line = st.text(CHARACTERS, max_size=15).map(str.strip)
text = st.lists(
    st.one_of(
        line,
        st.builds(
            "".join,
            st.tuples(
                st.sampled_from(
                    [
                        "Include: ",
                        "example:",
                        "\\Exclude:",
                        "Examples :",
                        "- ",
                        "  ",
                        "Definition: ",
                        "\\\\",
                        "\t",
                    ]
                ),
                line,
            ),
        ),
    ),
    max_size=4,
).map(lambda lines: "\n".join(lines).strip())
names = st.text(CHARACTERS, min_size=1, max_size=20).map(str.strip).filter(bool)
colors = st.none() | st.from_regex(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})", fullmatch=True)
custom_scale = st.builds(
    lambda labels, anchor: Scale(
        "custom", tuple(Option(label, i, anchor) for i, label in enumerate(labels))
    ),
    st.lists(
        st.text(string.ascii_letters, min_size=1, max_size=4), min_size=2, max_size=4, unique=True
    ).filter(lambda ls: all(len(set(ls) & {" " + x}) == 0 for x in ls)),
    line,
)
scales = st.sampled_from(sorted(SCALES.values(), key=lambda s: s.name)) | custom_scale


@st.composite
def codebooks(draw: st.DrawFn, *, code_scales: bool = True) -> Codebook:
    code_names = draw(st.lists(names, min_size=1, max_size=7, unique_by=str.casefold))
    ids = [slugify(n) if draw(st.booleans()) else f"id-{i}" for i, n in enumerate(code_names)]
    assume(len(set(ids)) == len(ids))
    codes = []
    for i, (code_id, name) in enumerate(zip(ids, code_names, strict=True)):
        parent = draw(st.none() | st.sampled_from(ids[:i])) if i else None
        codes.append(
            Code(
                id=code_id,
                name=name,
                definition=draw(text),
                inclusion=draw(text),
                exclusion=draw(text),
                examples=tuple(draw(st.lists(line.filter(bool), max_size=3))),
                parent=parent,
                codable=draw(st.booleans()),
                color=draw(colors),
                scale=draw(st.none() | scales) if code_scales else None,
            )
        )
    order = draw(st.permutations(codes))
    sets = draw(
        st.lists(
            st.tuples(names, st.lists(st.sampled_from(ids), unique=True).map(tuple)),
            max_size=3,
        )
    )
    return Codebook(
        name=draw(names),
        codes=tuple(order),
        scale=draw(scales),
        question=draw(st.just(DEFAULT_QUESTION) | names.map(lambda q: q + " {code}?")),
        description=draw(text),
        sets=tuple(sets),
    )


ROUND_TRIP = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@ROUND_TRIP
@given(codebook=codebooks(), suffix=st.sampled_from([".yaml", ".json"]))
def test_yaml_and_json_keep_everything(folder: Path, codebook: Codebook, suffix: str) -> None:
    assert load_codebook(save_codebook(codebook, folder / f"book{suffix}")) == codebook


def _summary(codebook: Codebook) -> Iterator[tuple[Any, ...]]:
    by_id = {c.id: c for c in codebook.codes}
    for c in sorted(codebook.codes, key=lambda c: codebook.path_of(c)):
        yield (
            codebook.path_of(c),
            c.definition,
            c.inclusion,
            c.exclusion,
            c.examples,
            c.codable,
            c.color,
        )
    for name, members in codebook.sets:
        yield (name, tuple(codebook.path_of(by_id[m]) for m in members))


@ROUND_TRIP
@given(codebook=codebooks())
def test_qdc_keeps_codes_hierarchy_and_sets(
    folder: Path, codebook: Codebook, codebook_schema: xmlschema.XMLSchema
) -> None:
    path = save_codebook(codebook, folder / "book.qdc")
    codebook_schema.validate(str(path))
    again = load_codebook(path)
    assert list(_summary(again)) == list(_summary(codebook))
    assert path.read_bytes() == save_codebook(again, folder / "again.qdc").read_bytes()


@ROUND_TRIP
@given(codebook=codebooks(code_scales=False), scale=st.sampled_from(sorted(SCALES)))
def test_csv_keeps_the_codes(folder: Path, codebook: Codebook, scale: str) -> None:
    codebook = Codebook(name="book", codes=codebook.codes, scale=SCALES[scale])
    again = load_codebook(save_codebook(codebook, folder / "book.csv"))
    assert again == codebook


@settings(max_examples=300, deadline=None)
@given(
    definition=text,
    inclusion=text,
    exclusion=text,
    examples=st.lists(text.filter(bool), max_size=3),
)
def test_descriptions_parse_back(
    definition: str, inclusion: str, exclusion: str, examples: list[str]
) -> None:
    code = Code("a", "A", definition, inclusion, exclusion, tuple(examples))
    assert parse_description(describe(code)) == (
        definition,
        inclusion,
        exclusion,
        tuple(examples),
    )


def test_every_writer_has_a_reader() -> None:
    assert set(WRITERS) <= set(READERS)
