from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
import yaml

from codebooks import (
    BINARY,
    DEFAULT_QUESTION,
    LIKERT_5,
    SAMPLES,
    Code,
    Codebook,
    CodebookError,
    load_codebook,
    sample_paths,
    save_codebook,
)
from codebooks.writers import json_bytes, yaml_bytes


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def load_error(path: Path) -> CodebookError:
    with pytest.raises(CodebookError) as info:
        load_codebook(path)
    assert str(path) in str(info.value)
    return info.value


# --- YAML reading -----------------------------------------------------------------------

NESTED = """\
name: Nested
question: 'Does "{code}" apply?'
scale: binary
codes:
  - name: Conditions
    codable: false
    codes:
      - name: Workload
        definition: How much work.
        examples: Too much work.
      - {name: Pay, color: "#AbC", scale: 1-9}
  - name: Stress
    parent: conditions
sets:
  - name: Pressures
    codes: [workload, Stress]
"""


def test_nested_yaml_with_parents_by_id_or_name_and_sets(tmp_path: Path) -> None:
    codebook = load_codebook(write(tmp_path, "nested.yaml", NESTED))
    assert [(c.id, c.parent) for c in codebook.codes] == [
        ("conditions", None),
        ("workload", "conditions"),
        ("pay", "conditions"),
        ("stress", "conditions"),
    ]
    assert codebook.scale is BINARY
    assert codebook.question == 'Does "{code}" apply?'
    assert codebook.code("workload").examples == ("Too much work.",)
    assert codebook.code("pay").scale is not None
    assert codebook.code("pay").color == "#AbC"
    assert codebook.sets == (("Pressures", ("workload", "stress")),)
    assert [c.name for c in codebook.codable] == ["Workload", "Pay", "Stress"]


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "name: x\ncodes:\n  - name: [unclosed\n")
    error = load_error(path)
    assert error.where is not None
    assert error.where.startswith("line ")
    assert "column" in error.where
    assert "malformed YAML" in error.message


def test_tab_indentation_names_its_line(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, "tabs.yaml", "name: x\ncodes:\n\t- a\n"))
    assert error.where == "line 3, column 1"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("name: x\ncodez: []\n", None, "unknown top-level key(s) codez"),
        ("name: x\ncodes:\n  - name: A\n    defintion: typo\n", "codes[0]", "defintion"),
        ("name: x\ncodes: []\n", "codes", "non-empty list"),
        ("- just\n- a list\n", None, "must be a mapping"),
        ("name: x\ncodes:\n  - name: No\n", "codes[0]", "put it in quotes"),
        ("name: x\ncodes:\n  - definition: no name\n", "codes[0]", "needs a 'name'"),
        ("name: x\ncodes:\n  - name: A\n    parent: B\n", "codes[0]", "unknown parent 'B'"),
        ("name: x\ncodes:\n  - A\n  - a\n", "codes[1]", "used twice"),
        ("name: x\ncodes:\n  - {name: A, examples: {a: 1}}\n", "codes[0]", "examples"),
        ("name: x\ncodes:\n  - {name: A, codable: maybe}\n", "codes[0]", "true or false"),
        ("name: x\ncodes:\n  - {name: A, color: red}\n", "codes[0]", "colour 'red'"),
        ("name: x\nscale: 7\ncodes: [A]\n", "scale", "unknown scale 7"),
        ("name: x\nscale: {options: [a]}\ncodes: [A]\n", "scale", "at least two"),
        ("name: x\ncodes: [A]\nsets: [{name: S, codes: [B]}]\n", "sets[0]", "unknown code 'B'"),
        ("name: [x]\ncodes: [A]\n", "name", "must be text"),
        (
            "name: x\ncodes:\n  - name: A\n  - name: B\n    name: C\n",
            "line 5, column 5",
            "appears twice",
        ),
    ],
)
def test_yaml_errors_name_their_place(
    tmp_path: Path, text: str, where: str | None, message: str
) -> None:
    error = load_error(write(tmp_path, "codes.yaml", text))
    assert error.where == where
    assert message in error.message


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n"])
def test_empty_yaml_says_so(tmp_path: Path, text: str) -> None:
    assert load_error(write(tmp_path, "empty.yaml", text)).message == "the file is empty"


def test_non_utf8_yaml_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "latin1.yml", "name: Caf\u00e9\ncodes: [A]\n".encode("latin-1"))
    assert "not UTF-8" in load_error(path).message


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "bom.yaml", b"\xef\xbb\xbfname: x\ncodes: [A]\n")
    assert load_codebook(path).codes[0].name == "A"


def test_yaml_values_that_do_not_fit_their_type_are_codebook_errors(tmp_path: Path) -> None:
    assert "month" in load_error(write(tmp_path, "d.yaml", "name: 2024-13-45\n")).message
    huge = "name: " + "9" * 5000 + "\ncodes: [A]\n"
    assert "malformed YAML" in load_error(write(tmp_path, "n.yaml", huge)).message
    assert "too deeply" in load_error(write(tmp_path, "r.yaml", "[" * 600)).message
    unsafe = "name: !!python/object/apply:os.system [echo]\ncodes: [A]\n"
    assert "malformed YAML" in load_error(write(tmp_path, "u.yaml", unsafe)).message


def _alias_bomb(prefix: str, leaf: str, level: str = "[{refs}]") -> str:
    """A flow list whose last item expands to 9**8 leaves through YAML aliases."""
    items = [f"&{prefix}0 {leaf}"]
    for i in range(1, 9):
        refs = ", ".join([f"*{prefix}{i - 1}"] * 9)
        items.append(f"&{prefix}{i} " + level.format(i=i, refs=refs))
    return "[" + ", ".join(items) + "]"


@pytest.mark.parametrize(
    "text",
    [
        "name: " + _alias_bomb("n", "x") + "\ncodes: [A]\n",
        "codes: [{name: A, examples: " + _alias_bomb("e", "x") + "}]\n",
        "codes: [A]\nsets: [{name: S, codes: " + _alias_bomb("m", "A") + "}]\n",
        "codes: " + _alias_bomb("k", "{name: A}", "{{name: B{i}, codes: [{refs}]}}") + "\n",
        "codes: [A]\nscale: {options: " + _alias_bomb("o", "x") + "}\n",
    ],
    ids=["name", "examples", "sets", "codes", "scale"],
)
def test_a_yaml_alias_bomb_fails_fast(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "bomb.yaml", text)
    start = time.perf_counter()
    with pytest.raises(CodebookError):
        load_codebook(path)
    assert time.perf_counter() - start < 5.0  # an expanded bomb never ends


# --- JSON -------------------------------------------------------------------------------


def test_json_uses_the_yaml_layout(tmp_path: Path) -> None:
    data = yaml.safe_load(NESTED)
    from_json = load_codebook(write(tmp_path, "nested.json", json.dumps(data)))
    from_yaml = load_codebook(write(tmp_path, "nested.yaml", NESTED))
    assert from_json == from_yaml


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"name": "x",\n "codes": [}', "line 2, column 12", "malformed JSON"),
        ('{"name": "x", "name": "y", "codes": ["A"]}', None, "'name' appears twice"),
        ('["A"]', None, "must be a mapping"),
        ("", None, "the file is empty"),
        ("[" * 5000, None, "too deeply"),
    ],
)
def test_json_errors(tmp_path: Path, text: str, where: str | None, message: str) -> None:
    error = load_error(write(tmp_path, "codes.json", text))
    assert error.where == where
    assert message in error.message


# --- loading in general -----------------------------------------------------------------


def test_unknown_suffix_missing_file_and_directory(tmp_path: Path) -> None:
    assert "unknown codebook format '.txt'" in load_error(tmp_path / "codes.txt").message
    assert load_error(tmp_path / "missing.yaml").message == "no such file"
    (tmp_path / "folder.yaml").mkdir()
    assert "directory" in load_error(tmp_path / "folder.yaml").message


# --- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_yaml_and_json_round_trips_are_lossless(tmp_path: Path, name: str, suffix: str) -> None:
    original = load_codebook(sample_paths(name)[1])
    path = save_codebook(original, tmp_path / f"copy{suffix}")
    assert load_codebook(path) == original


def test_everything_survives_yaml_and_json(tmp_path: Path) -> None:
    codebook = Codebook(
        name="Everything",
        description="About\nall of it",
        question="Q {code}?",
        scale=BINARY,
        codes=(
            Code("cat", "Category", definition="Groups.\n\nTwo paragraphs.", codable=False),
            Code(
                "x-1",
                "Has: colon",
                definition="first\n  indented line",
                inclusion="- looks like a list",
                exclusion="'quoted'",
                examples=("yes", "no", "1", "null", "# hash"),
                parent="cat",
                color="#ABCDEF",
                scale=LIKERT_5,
            ),
        ),
        sets=(("Empty", ()), ("Both", ("cat", "x-1"))),
    )
    assert load_codebook(save_codebook(codebook, tmp_path / "e.yaml")) == codebook
    assert load_codebook(save_codebook(codebook, tmp_path / "e.json")) == codebook


def test_yaml_output_is_readable() -> None:
    codebook = Codebook(
        name="R",
        codes=(Code("a", "A", definition="Line one.\nLine two."), Code("b", "B")),
    )
    text = yaml_bytes(codebook).decode()
    assert "definition: |-\n    Line one.\n    Line two.\n" in text
    assert "question" not in text  # the default is left out
    assert "id:" not in text  # ids that are slugs of names are left out
    assert json.loads(json_bytes(codebook))["codes"][1] == {"name": "B"}
    assert DEFAULT_QUESTION not in text


def test_saving_is_atomic_and_keeps_permissions(tmp_path: Path) -> None:
    codebook = load_codebook(sample_paths()[1])
    path = tmp_path / "codes.yaml"
    path.write_text("old")
    os.chmod(path, 0o600)
    save_codebook(codebook, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_codebook(path) == codebook
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codes.yaml"]


def test_a_failed_save_leaves_the_old_file(tmp_path: Path) -> None:
    scaled = load_codebook(sample_paths("causal_scaled")[1])  # a custom scale: not in CSV
    path = tmp_path / "codes.csv"
    path.write_text("old")
    with pytest.raises(CodebookError, match="custom scale") as info:
        save_codebook(scaled, path)
    assert str(path) in str(info.value)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["codes.csv"]


def test_saving_to_a_missing_folder_or_unknown_suffix(tmp_path: Path) -> None:
    codebook = load_codebook(sample_paths()[1])
    with pytest.raises(CodebookError, match="cannot write"):
        save_codebook(codebook, tmp_path / "no" / "such" / "codes.yaml")
    with pytest.raises(CodebookError, match="unknown codebook format"):
        save_codebook(codebook, tmp_path / "codes.docx")
