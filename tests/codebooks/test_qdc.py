from __future__ import annotations

import logging
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from codebooks import (
    LIKERT_5,
    SAMPLES,
    Code,
    Codebook,
    CodebookError,
    load_codebook,
    sample_paths,
    save_codebook,
)
from codebooks.qdc import (
    GUID_NAMESPACE,
    NAMESPACE,
    code_guid,
    describe,
    parse_description,
    parse_qdc,
    qdc_bytes,
)

NS = {"q": NAMESPACE}


def summary(codebook: Codebook) -> dict[str, Any]:
    """What REFI-QDA carries: everything but ids, scales, question and description."""
    by_id = {c.id: c for c in codebook.codes}
    return {
        "codes": {
            c.name: (
                c.definition,
                c.inclusion,
                c.exclusion,
                c.examples,
                None if c.parent is None else by_id[c.parent].name,
                c.codable,
                c.color,
            )
            for c in codebook.codes
        },
        "sets": [(n, sorted(by_id[m].name for m in members)) for n, members in codebook.sets],
    }


# --- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_yaml_to_qdc_to_yaml_is_lossless(tmp_path: Path, name: str) -> None:
    original = load_codebook(sample_paths(name)[1])
    via_qdc = load_codebook(save_codebook(original, tmp_path / "book.qdc"))
    again = load_codebook(save_codebook(via_qdc, tmp_path / "book.yaml"))
    assert summary(again) == summary(original)
    assert again.scale == LIKERT_5  # REFI-QDA has no scale: the default
    if name == "work_survey":  # its ids are the slugs of its names, as an import makes them
        assert again.codes == original.codes
        assert again.sets == original.sets


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_export_validates_against_the_schema(
    tmp_path: Path, name: str, codebook_schema: xmlschema.XMLSchema
) -> None:
    path = save_codebook(load_codebook(sample_paths(name)[1]), tmp_path / "book.qdc")
    codebook_schema.validate(str(path))


def test_export_layout(tmp_path: Path) -> None:
    codebook = load_codebook(sample_paths()[1])
    root = ET.fromstring(qdc_bytes(codebook))
    assert root.tag == f"{{{NAMESPACE}}}CodeBook"
    assert root.get("origin", "").startswith("codecurve")
    top = root.findall("q:Codes/q:Code", NS)
    assert [c.get("name") for c in top][:2] == ["Working conditions", "Colleagues"]
    assert top[0].get("isCodable") == "false"
    workload = root.find("q:Codes/q:Code/q:Code[@name='Workload']", NS)
    assert workload is not None
    assert workload.get("color") == "#d95f02"
    assert workload.get("guid") == code_guid(("Working conditions", "Workload"))
    members = root.findall("q:Sets/q:Set/q:MemberCode", NS)
    assert [m.get("guid") for m in members] == [
        workload.get("guid"),
        code_guid(("Stress and wellbeing",)),
    ]


def test_no_sets_element_without_sets(codebook_schema: xmlschema.XMLSchema) -> None:
    data = qdc_bytes(Codebook(name="x", codes=(Code("a", "A"),)))
    assert b"Sets" not in data
    assert b"Description" not in data
    codebook_schema.validate(data.decode())


def test_guids_are_stable_and_follow_the_path() -> None:
    codebook = load_codebook(sample_paths()[1])
    assert qdc_bytes(codebook) == qdc_bytes(load_codebook(sample_paths()[1]))
    expected = uuid.uuid5(GUID_NAMESPACE, '["code", "Working conditions", "Workload"]')
    assert code_guid(("Working conditions", "Workload")) == str(expected)
    # Renaming a category changes its guid and its children's, nobody else's.
    renamed = replace(
        codebook,
        codes=tuple(
            replace(c, name="Conditions") if c.id == "working-conditions" else c
            for c in codebook.codes
        ),
    )
    before = {e.get("name"): e.get("guid") for e in _codes(qdc_bytes(codebook))}
    after = {e.get("name"): e.get("guid") for e in _codes(qdc_bytes(renamed))}
    changed = {n for n in after if before.get(n) != after[n]}
    assert changed == {"Conditions", "Workload", "Pay and benefits", "Flexibility"}


def _codes(data: bytes) -> list[ET.Element]:
    return ET.fromstring(data).findall(".//q:Code", NS)


def test_characters_xml_cannot_hold_are_refused(tmp_path: Path) -> None:
    codebook = Codebook(name="x", codes=(Code("a", "A", definition="bell\x07"),))
    with pytest.raises(CodebookError, match="U\\+0007") as info:
        save_codebook(codebook, tmp_path / "x.qdc")
    assert str(tmp_path / "x.qdc") in str(info.value)
    assert not (tmp_path / "x.qdc").exists()


def test_deep_codebooks_are_written_and_read_without_recursion(tmp_path: Path) -> None:
    codes = [Code("c0", "C0")] + [Code(f"c{i}", f"C{i}", parent=f"c{i - 1}") for i in range(1, 400)]
    codebook = Codebook(name="deep", codes=tuple(codes))
    again = load_codebook(save_codebook(codebook, tmp_path / "deep.qdc"))
    assert again.path_of(again.codes[-1]) == codebook.path_of(codebook.codes[-1])


# --- reading files written by other tools ---------------------------------------------


def test_maxqda_0_4_namespace_foreign_schema_location_and_sets(data_dir: Path) -> None:
    codebook = load_codebook(data_dir / "maxqda_0_4.qdc")
    assert codebook.name == "maxqda_0_4"
    assert [(c.name, c.parent) for c in codebook.codes] == [
        ("Working conditions", None),
        ("Workload", "working-conditions"),
        ("Pay", "working-conditions"),
        ("Management", None),
    ]
    workload = codebook.code("Workload")
    assert workload.definition == "Amount of work and its pace."
    assert workload.inclusion == "overtime, understaffing, deadlines"
    assert workload.exclusion == "stress without mention of the amount of work"
    assert workload.examples == ('"We are always two people short."',)
    assert workload.color == "#C00000"
    assert codebook.code("Working conditions").codable  # a codable parent
    assert codebook.sets == (("Conditions", ("workload", "pay")),)
    assert codebook.scale == LIKERT_5


def test_atlasti_braced_guids_and_short_colours(data_dir: Path) -> None:
    codebook = load_codebook(data_dir / "atlasti.qdc")
    assert [c.name for c in codebook.codes] == ["Colleagues", "Career growth", "Stress"]
    assert [c.color for c in codebook.codes] == ["#a3c4ff", "#fc0", None]
    assert codebook.code("Colleagues").definition == "Relations with co-workers."


def test_taguette_one_line_no_declaration_empty_sets(data_dir: Path) -> None:
    codebook = load_codebook(data_dir / "taguette.qdc")
    assert [(c.id, c.parent) for c in codebook.codes] == [
        ("interesting", None),
        ("people", None),
        ("family", "people"),
    ]
    assert codebook.sets == ()
    assert codebook.code("people").definition == ""


def test_single_quotes_and_numeric_booleans(data_dir: Path) -> None:
    codebook = load_codebook(data_dir / "oneline.qdc")
    flexibility, other = codebook.codes
    assert flexibility.color == "#ABCDEF"
    assert flexibility.definition == "Control over when and where work is done."
    assert flexibility.examples == ("I can start at seven.",)
    assert not other.codable


def test_deep_nesting_odd_ids_empty_and_broken_sets(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="codebooks.qdc"):
        codebook = load_codebook(data_dir / "deep.qdc")
    deepest = codebook.code("Level 8")
    assert codebook.path_of(deepest) == tuple(f"Level {i}" for i in range(1, 9))
    assert deepest.definition == "The deepest code."
    assert deepest.inclusion == "only here"
    assert deepest.examples == ("first example", "second example")
    assert codebook.sets == (("Empty set", ()), ("Deep ones", ("level-8", "level-7")))
    assert "not-there" in caplog.text


def test_bom_and_crlf(tmp_path: Path, data_dir: Path) -> None:
    original = (data_dir / "maxqda_0_4.qdc").read_bytes()
    variant = b"\xef\xbb\xbf" + original.replace(b"\n", b"\r\n")
    path = tmp_path / "maxqda_0_4.qdc"
    path.write_bytes(variant)
    assert load_codebook(path) == load_codebook(data_dir / "maxqda_0_4.qdc")


def test_utf16_with_declaration(tmp_path: Path) -> None:
    text = (
        '<?xml version="1.0" encoding="UTF-16"?>\n'
        '<CodeBook><Codes><Code guid="1" name="Caf\u00e9" isCodable="true"/></Codes></CodeBook>'
    )
    path = tmp_path / "u.qdc"
    path.write_bytes(text.encode("utf-16"))
    assert load_codebook(path).codes[0].name == "Caf\u00e9"


def test_the_same_name_under_two_parents_is_made_unique(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = (
        b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>'
        b'<Code guid="1" name="Pay" isCodable="true">'
        b'<Code guid="2" name="Other" isCodable="true"/></Code>'
        b'<Code guid="3" name="Time" isCodable="true">'
        b'<Code guid="4" name="other" isCodable="true"/></Code>'
        b'<Code guid="5" name="Other" isCodable="true"/>'
        b"</Codes></CodeBook>"
    )
    with caplog.at_level(logging.WARNING, logger="codebooks.qdc"):
        codebook = parse_qdc(data, name="dupes")
    assert [c.name for c in codebook.codes] == ["Pay", "Other", "Time", "other (Time)", "Other (2)"]
    assert [c.id for c in codebook.codes] == ["pay", "other", "time", "other-time", "other-2"]
    assert "other (Time)" in caplog.text


def test_a_bad_colour_is_dropped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    data = b'<CodeBook><Codes><Code name="A" isCodable="true" color="red"/></Codes></CodeBook>'
    with caplog.at_level(logging.WARNING, logger="codebooks.qdc"):
        assert parse_qdc(data).codes[0].color is None
    assert "'red'" in caplog.text


# --- refusing -----------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE CodeBook [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>
<Code guid="1" name="&lol9;" isCodable="true"/></Codes></CodeBook>
"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE CodeBook [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<CodeBook><Codes><Code guid="1" name="&secret;" isCodable="true"/></Codes></CodeBook>
"""


@pytest.mark.parametrize(
    "data",
    [BILLION_LAUGHS, EXTERNAL_ENTITY, b'<!DOCTYPE CodeBook SYSTEM "http://x/y.dtd"><CodeBook/>'],
    ids=["entity-bomb", "external-entity", "external-dtd"],
)
def test_dtds_and_entities_are_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "evil.qdc"
    path.write_bytes(data)
    start = time.perf_counter()
    with pytest.raises(CodebookError, match="DTD or entities") as info:
        load_codebook(path)
    assert time.perf_counter() - start < 5.0  # an expanded bomb never ends
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        (b"", "line 1, column 1", "malformed XML: no element found"),
        (b"<CodeBook>\n  <Codes>\n</CodeBook>", "line 3, column 3", "mismatched tag"),
        (b"not xml", "line 1, column 1", "syntax error"),
        (b"<Project/>", None, "a REFI-QDA project"),
        (b"<html/>", "line 1", "root element is <html>"),
        (b"<CodeBook><Sets/></CodeBook>", "CodeBook", "no <Codes>"),
        (b"<CodeBook><Codes/></CodeBook>", "CodeBook/Codes", "no codes"),
        (
            b"<CodeBook><Codes><Code guid='1' isCodable='true'/></Codes></CodeBook>",
            "Codes/Code[1]",
            "needs a non-empty name",
        ),
        (
            b"<CodeBook><Codes><Code name='A'/><Code name='B' isCodable='maybe'/></Codes>"
            b"</CodeBook>",
            "Codes/Code[2]",
            "isCodable must be true or false, not 'maybe'",
        ),
        (
            b'<?xml version="1.0" encoding="klingon"?><CodeBook/>',
            None,
            "malformed XML",
        ),
    ],
)
def test_malformed_files_name_their_place(
    tmp_path: Path, data: bytes, where: str | None, message: str
) -> None:
    path = tmp_path / "bad.qdc"
    path.write_bytes(data)
    with pytest.raises(CodebookError) as info:
        load_codebook(path)
    assert info.value.where == where
    assert message in info.value.message
    assert str(path) in str(info.value)


# --- the Description layout ---------------------------------------------------------------


def test_describe_layout() -> None:
    code = Code(
        "a",
        "A",
        definition="What it is.\n\nMore about it.",
        inclusion="when x\nor y",
        exclusion="when z",
        examples=("first", "second"),
    )
    assert describe(code) == (
        "What it is.\n\nMore about it.\n\n"
        "Include: when x\n  or y\n"
        "Exclude: when z\n"
        "Example: first\n"
        "Example: second"
    )
    assert parse_description(describe(code)) == (
        code.definition,
        code.inclusion,
        code.exclusion,
        code.examples,
    )


def test_a_description_without_labels_is_the_definition() -> None:
    text = "Anything about pay.\nIncluding: bonuses (not a label)."
    assert parse_description(text) == (text, "", "", ())


def test_definition_lines_that_look_like_labels_are_escaped() -> None:
    code = Code("a", "A", definition="Example: not one\n\\Include: neither", examples=("real",))
    text = describe(code)
    assert text.startswith("\\Example: not one\n\\\\Include: neither\n\nExample: real")
    assert parse_description(text) == (code.definition, "", "", ("real",))


def test_labels_other_tools_write() -> None:
    text = (
        "DEFINITION: Money.\n"
        "Inclusion Criteria: salary\n"
        "exclusion: praise\n"
        "Examples:\n"
        "- paid late\n"
        "* no rise\n"
        "\n"
        "A closing remark."
    )
    assert parse_description(text) == (
        "Money.\n\nA closing remark.",
        "salary",
        "praise",
        ("paid late", "no rise"),
    )
