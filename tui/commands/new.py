"""``codecurve new STUDY --responses FILE --codebook FILE``: create a study file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from study import ResponseTable, Study

DESCRIPTION = """\
Create a study: one file (.codecurve) holding the responses, a snapshot of the codebook,
and later the model's scores and your decisions. Nothing is written unless the whole
study could be built; an existing study is never replaced without --force.

  codecurve new survey.codecurve --responses answers.csv --codebook codes.yaml
  codecurve new survey.codecurve --responses answers.xlsx --sheet 2 --codebook codes.qdc
  codecurve new survey.codecurve --responses answers.csv --codebook atlas-project.qdpx

Responses: CSV, TSV, XLSX, JSONL, JSON, Parquet or TXT (one per line). The id and text
columns are guessed (id, response_id, respondent ... / text, response, answer, comment
... or the longest texts); other columns are kept with each response.

--project makes the study from a REFI-QDA project (.qdpx or .qde, from NVivo, ATLAS.ti,
MAXQDA, QualCoder ...): each text source becomes a response (its name the id, its case
variables the columns), the project's codes the codebook, and its codings the decisions
of the coder named by their user. What cannot be taken is listed.

  codecurve new survey.codecurve --project coded.qdpx
"""

SCALES = ("1-5", "1-9", "binary")


def add_source_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--responses/--codebook`` and the reading options, shared with ``score``."""
    parser.add_argument(
        "--responses", type=Path, required=required, metavar="FILE", help="the responses file"
    )
    parser.add_argument(
        "--codebook",
        type=Path,
        required=required,
        metavar="FILE",
        help="the codebook file (.yaml, .json, .csv, .qdc), or a REFI-QDA project (.qdpx, "
        ".qde) whose codebook to take",
    )
    parser.add_argument(
        "--id-column", metavar="NAME", help="column of response ids (default: guessed)"
    )
    parser.add_argument(
        "--text-column", metavar="NAME", help="column of response texts (default: guessed)"
    )
    parser.add_argument(
        "--encoding",
        metavar="NAME",
        help="text encoding of the responses (default: UTF-8, with or without BOM)",
    )
    parser.add_argument("--sheet", metavar="NAME", help="XLSX sheet: a name or 0-based number")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "new",
        help="create a study from responses and a codebook",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file to create (.codecurve)")
    add_source_options(parser, required=False)
    parser.add_argument(
        "--project",
        type=Path,
        metavar="FILE",
        help="make the study from a REFI-QDA project (.qdpx or .qde) instead",
    )
    parser.add_argument(
        "--scale",
        choices=SCALES,
        help="the codebook's default scale (default: as the codebook says)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing study at that path"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tui.commands import UsageError

    if getattr(args, "project", None) is not None:
        others = [
            f"--{name.replace('_', '-')}"
            for name in ("responses", "codebook", "id_column", "text_column", "encoding", "sheet")
            if getattr(args, name) is not None
        ]
        if others or args.scale is not None:
            listed = ", ".join([*others, *(["--scale"] if args.scale else [])])
            raise UsageError(f"--project brings its own responses and codebook: drop {listed}")
        create_from_project_args(args).close()
        return 0
    missing = [f"--{n}" for n in ("responses", "codebook") if getattr(args, n) is None]
    if missing:
        raise UsageError(
            f"give {' and '.join(missing)} FILE (or --project FILE to start from a QDA project)"
        )
    create_from_args(args, scale=args.scale, overwrite=args.force).close()
    return 0


def create_from_project_args(args: argparse.Namespace) -> Study:
    """Create ``args.study`` from the project ``args.project`` (left open).

    What was skipped or changed goes to stderr, one line each, then the summary.
    """
    from study.refi import create_from_project
    from tui.commands.outputs import check_folder, refuse_inputs
    from tui.commands.remedies import note_line
    from tui.text import plural, printable

    refuse_inputs(args.study, protect={"project file": args.project})
    check_folder(args.study)
    study, done = create_from_project(args.study, args.project, overwrite=args.force)
    for message in done.messages:
        for line in note_line(message, study=args.study).splitlines():
            sys.stderr.write(printable(f"{args.project}: {line}") + "\n")
    coded = ", ".join(
        f"{printable(coder)} {plural(n, 'decision')}" for coder, n in done.decisions.items()
    )
    sys.stderr.write(
        f"created {printable(str(args.study))}: {plural(study.response_count(), 'response')} x "
        f"{plural(len(study.codes), 'code')} ({plural(study.pair_count(), 'pair')})"
        + (f"; {coded}" if coded else "; no codings")
        + (f"; {plural(done.notes, 'note')}" if done.notes else "")
        + "\n"
    )
    return study


def create_from_args(
    args: argparse.Namespace, *, scale: str | None = None, overwrite: bool = False
) -> Study:
    """Read ``args.responses`` and ``args.codebook`` and create ``args.study`` (left open).

    Messages about the responses go to stderr, one line each; so does the summary.
    """
    from dataclasses import replace

    from codebooks import get_scale
    from study import Study, read_responses
    from study.refi import load_codebook_file
    from tui.commands.outputs import check_folder, refuse_inputs
    from tui.commands.remedies import note_line
    from tui.text import plural, printable

    refuse_inputs(args.study, protect={"responses file": args.responses, "codebook": args.codebook})
    check_folder(args.study)
    sheet: str | int | None = args.sheet
    table = read_responses(
        args.responses,
        id_column=args.id_column,
        text_column=args.text_column,
        encoding=args.encoding,
        sheet=sheet,
    )
    codebook, read = load_codebook_file(args.codebook)  # a project's codebook too
    for message in read:
        sys.stderr.write(printable(f"{args.codebook}: {message}") + "\n")
    if scale is not None:
        codebook = replace(codebook, scale=get_scale(scale))
    for message in table.messages:
        line = note_line(message, study=args.study)
        sys.stderr.write(printable(f"{args.responses}: {line}") + "\n")
    if codebook.codable and not any(code.definition.strip() for code in codebook.codable):
        sys.stderr.write(
            printable(
                f"{args.codebook}: warning: no code has a definition; the model sees only "
                "the codes' names (see docs/codebooks.md)"
            )
            + "\n"
        )
    study = Study.create(
        args.study,
        responses=table,
        codebook=codebook,
        overwrite=overwrite,
        codebook_source=args.codebook,
    )
    sys.stderr.write(printable(columns_line(table, args)) + "\n")
    sys.stderr.write(
        f"created {args.study}: {plural(study.response_count(), 'response')} x "
        f"{plural(len(study.codes), 'code')} ({plural(study.pair_count(), 'pair')}"
        + scope_note(study)
        + ")\n"
    )
    return study


def scope_note(study: Study) -> str:
    """``; each code only on the answers to its questions (3 questions of question_id)``
    when codes are scoped to survey questions, else nothing."""
    from tui.text import plural

    book = study.codebook
    if not book.scoped or book.question_column is None:
        return ""
    asked = plural(len(book.scoped_questions()), "question")
    return f": each code only on the answers to its questions ({asked} of {book.question_column})"


def columns_line(table: ResponseTable, args: argparse.Namespace) -> str:
    """Which columns the responses came from, and how to choose others:
    ``columns: id 'id' (detected), text 'text' (detected); kept: question, trust``."""
    parts = []
    for what, column, given in (
        ("id", table.id_column, args.id_column),
        ("text", table.text_column, args.text_column),
    ):
        if column is None:
            parts.append(f"{what}: the row numbers")
        else:
            how = "as given" if given is not None else f"detected; --{what}-column to choose"
            parts.append(f"{what} {column!r} ({how})")
    line = "columns: " + ", ".join(parts)
    kept = table.attribute_columns
    if kept:
        shown = ", ".join(kept[:8]) + (f" and {len(kept) - 8} more" if len(kept) > 8 else "")
        line += f"; kept with each response: {shown}"
    return line
