"""``codecurve export STUDY -o FILE``: write the coded dataset (or the codebook)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands import UsageError

if TYPE_CHECKING:
    from study import Study

DESCRIPTION = """\
Write the coded dataset. Long layout: one row per (response, code) with the model's
curve, the coder's decision and the final decision (the coder's where there is one,
else the model's pick, marked as such). Wide layout: one row per response with a column
per code and the model's confidence per code. The format follows the
suffix (.csv, .xlsx, .parquet, .jsonl, .sav for SPSS, .dta for Stata) unless --format
says otherwise; an XLSX file has a second sheet, "provenance". The study may stay open in
the app meanwhile.

Wide columns: a code's value (0/1 on a yes/no code, the point of a 1-5 code, with a
"<code> (applies)" 0/1 column beside it), empty where nobody decided (unless --fill
model). SPSS and Stata files (wide by default) get valid variable names (the full column
name is each variable's label), value labels from each code's scale, numeric columns
as numbers, and the list of variables in <file>-metadata.json beside them. In a CSV a
text that Excel would run as a formula (=, +, -, @ first) is written with a leading
apostrophe; XLSX, Parquet, SPSS and Stata files hold every text exactly.

--project writes a REFI-QDA project for NVivo, ATLAS.ti, MAXQDA, QualCoder and others
(.qdpx; .qde for the XML alone): one source per response, its columns as case variables,
a coding per code that applies and a coding of the code's "(does not apply)" twin (under
the category "codecurve: does not apply") per code that does not, credited to its coder,
and each coder's notes on a response as one dated note (--coder: one coder's; --coder
consensus: the reconciled decisions; --all-coders: each coder as their own user, for
inter-coder comparison in the QDA program). Read back, nothing is added or settled.

  codecurve export survey.codecurve -o coded.xlsx --layout wide
  codecurve export survey.codecurve -o all.csv --layout wide --fill model
  codecurve export survey.codecurve --codebook codes.qdc
  codecurve export survey.codecurve --codebook codes.csv --for taguette
  codecurve export survey.codecurve --project survey.qdpx --all-coders
  codecurve export survey.codecurve -o coders.csv --layout wide --all-coders

With several coders an export never mixes them pair by pair: --coder NAME writes one
coder's decisions; --coder consensus the reconciled ones (the consensus coder's where it
settled a disagreement, else the decision the coders agree on; an unsettled disagreement
is left empty, final_from "unresolved"), the default once the app's reconciliation (D) has
consensus decisions; --all-coders keeps every coder apart: in the wide layout one
column of values per code and coder, such as "Workload [ana]", "Workload [ben]" (empty where that
coder did not decide), in the long layout one row per pair and coder who decided it, in
a project each coder as their own user (a project's default with several coders).
Without any of these, a dataset of a study with several coders and no consensus is
refused. Each long row also says the codebook version its decision was made under
(codebook_version), whether the pair is in the audit sample (audit) and its response's
place in the audit's random order (audit_rank), and for a delegated decision the
delegation it belongs to (delegation: its id, whose guarantee the provenance quotes).
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write the coded dataset or the codebook",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="the dataset to write; - for standard output (with --format csv or jsonl)",
    )
    parser.add_argument(
        "--format",
        choices=("csv", "xlsx", "parquet", "jsonl", "sav", "dta"),
        help="default: by the suffix",
    )
    parser.add_argument(
        "--layout",
        choices=("long", "wide"),
        help="default: wide for SPSS and Stata files (.sav, .dta), else long",
    )
    parser.add_argument(
        "--coder",
        metavar="NAME",
        help="export this coder's decisions, or 'consensus' the reconciled ones (default: "
        "the only coder's; with several, the reconciled ones once there is a consensus)",
    )
    parser.add_argument(
        "--project",
        type=Path,
        metavar="FILE",
        help="write a REFI-QDA project (.qdpx, or .qde) for QDA programs",
    )
    parser.add_argument(
        "--all-coders",
        action="store_true",
        help="keep every coder apart: in the project each coder a user; in the wide layout "
        "one column per code and coder; in the long layout a row per pair and coder",
    )
    parser.add_argument(
        "--config",
        type=int,
        metavar="ID",
        help="the scoring configuration to export (default: the study's active one)",
    )
    parser.add_argument(
        "--fill",
        choices=("none", "model"),
        default="none",
        help="wide layout: what an undecided cell holds: nothing (default) or the model's "
        "pick, with a source column per code",
    )
    parser.add_argument(
        "--codebook",
        type=Path,
        metavar="FILE",
        help="write the study's codebook (.yaml, .json, .csv or .qdc)",
    )
    parser.add_argument(
        "--for",
        dest="flavour",
        choices=("taguette",),
        help="with --codebook FILE.csv: the columns another program reads (taguette: "
        "tag, the path of names joined by '.', and description)",
    )
    parser.add_argument(
        "--version",
        type=int,
        metavar="N",
        help="with --codebook: write codebook version N (default: the current one)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codebooks.writers import unkept
    from study import Study
    from study.exchange import (
        codebook_version,
        export_codebook,
        export_format,
        export_study,
        metadata_target,
    )
    from tui.commands.outputs import check_output
    from tui.text import printable

    project = getattr(args, "project", None)
    if args.output is None and args.codebook is None and project is None:
        raise UsageError("nothing to write: give -o FILE, --codebook FILE or --project FILE")
    if args.output is None and (args.format or args.config is not None):
        raise UsageError("--format and --config describe the dataset: add -o FILE")
    if args.output is None and project is None and args.coder:
        raise UsageError("--coder chooses the decisions written: add -o FILE or --project FILE")
    check_project_options(args)
    if args.flavour is not None and args.codebook is None:
        raise UsageError("--for chooses the codebook's layout: add --codebook FILE.csv")
    if args.version is not None and args.codebook is None:
        raise UsageError("--version chooses the codebook version to write: add --codebook FILE")
    if args.layout is None:
        stats = args.output is not None and (
            args.format in ("sav", "dta") or args.output.suffix.casefold() in (".sav", ".dta")
        )
        args.layout = "wide" if stats else "long"
    if args.fill != "none" and args.layout != "wide":
        raise UsageError("--fill is for the wide layout (the long one always says final_from)")
    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    to_stdout = args.output == Path("-")
    if to_stdout and args.format not in ("csv", "jsonl"):
        raise UsageError("-o - writes the dataset to standard output: add --format csv or jsonl")
    outputs = [o for o in (args.output, args.codebook, project) if o is not None and not to_stdout]
    for output in outputs:
        check_output(
            output,
            protect={"study": args.study},
            streams=output == args.output,
            **output_kind(output, args),
        )
    if len({o.resolve() for o in outputs}) < len(outputs):
        raise UsageError("-o, --codebook and --project name the same file; give one name each")
    with Study.open(args.study, read_only=True) as study:
        if args.coder is not None:
            check_coder(args.coder, study.decisions.coders())
        elif args.output is not None and not args.all_coders:
            say_coder_choice(study)
        if to_stdout:
            stream_export(study, args)
        elif args.output is not None:
            written = export_study(study, args.output, **table_options(args))
            said = f"wrote {written} ({args.layout} layout)"
            if export_format(written, args.format) in ("csv", "jsonl", "sav", "dta"):
                metadata = metadata_target(args.output)
                said += (
                    f"; its provenance in {metadata.name}"
                    if metadata is not None
                    else "; no provenance file beside a device or stream (-o FILE writes one)"
                )
            sys.stderr.write(printable(said) + "\n")
        if args.codebook is not None:
            written = export_codebook(
                study, args.codebook, version=args.version, flavour=args.flavour
            )
            sys.stderr.write(printable(f"wrote {written}") + "\n")
            # A table has no place for the scoping to questions: said, not lost silently.
            book = codebook_version(study, args.version)
            for line in unkept(book, args.codebook, flavour=args.flavour):
                sys.stderr.write(printable(f"warning: {line}") + "\n")
        if project is not None:
            write_project(study, args)
    return 0


def output_kind(output: Path, args: argparse.Namespace) -> dict[str, Any]:
    """What a file may hold to be replaced by ``output``: the dataset written with
    ``--format`` replaces only a file of that format (``-o codes.yaml --format csv`` would
    replace a codebook with a table); the rest are written as their suffix says."""
    from study.exchange import FORMATS

    if output != args.output or not args.format:
        return {}
    kinds = tuple(suffix for suffix, fmt in FORMATS.items() if fmt == args.format)
    return {"kinds": kinds, "what": f"{args.format.upper()} dataset"}


def check_project_options(args: argparse.Namespace) -> None:
    """``--all-coders`` only with ``--project``, never with ``--coder``; a project suffix."""
    from study.refi import is_project_file
    from tui.text import printable

    project = getattr(args, "project", None)
    if getattr(args, "all_coders", False):
        if project is None and args.output is None:
            raise UsageError(
                "--all-coders chooses the decisions written: add -o FILE or --project FILE"
            )
        if args.coder is not None:
            raise UsageError("give --coder NAME or --all-coders, not both")
    if project is not None and not is_project_file(project):
        suffix = printable(project.suffix) or "a name without a suffix"
        raise UsageError(f"--project writes a .qdpx file (or a .qde), not {suffix}")


def write_project(study: Study, args: argparse.Namespace) -> None:
    """Write ``args.project`` from the open study and say what it holds."""
    from study.refi import export_project
    from tui.text import printable

    written = export_project(
        study, args.project, coder=args.coder, all_coders=args.all_coders, protect=[args.study]
    )
    from study.exchange import decision_coders
    from study.rows import CONSENSUS

    whose = (
        "every coder's decisions, each coder a user"
        if args.all_coders or (args.coder is None and len(decision_coders(study)) > 1)
        else "the reconciled decisions, as the consensus coder's"
        if args.coder == CONSENSUS
        else f"{args.coder}'s decisions"
        if args.coder
        else "the final decisions"
    )
    sys.stderr.write(printable(f"wrote {written} (REFI-QDA project, {whose})") + "\n")


def say_coder_choice(study: Study) -> None:
    """With several coders and no ``--coder``: refuse, naming the options, unless the
    study has consensus decisions (then say that the reconciled ones are written)."""
    from study.exchange import decision_coders
    from study.rows import CONSENSUS
    from tui.text import printable

    coders = decision_coders(study)
    if len(coders) <= 1:
        return
    listed = ", ".join(repr(c) for c in coders[:10]) + (" ..." if len(coders) > 10 else "")
    if CONSENSUS not in coders:
        raise UsageError(
            printable(
                f"the study holds decisions by {len(coders)} coders ({listed}): choose whose "
                "with --coder NAME, keep every coder apart with --all-coders, or settle "
                "their disagreements in the app's reconciliation (D) and export --coder consensus"
            )
        )
    sys.stderr.write(
        printable(
            f"{len(coders)} coders ({listed}): writing the reconciled decisions (--coder "
            "consensus); --coder NAME for one coder's, --all-coders to keep them apart"
        )
        + "\n"
    )


def check_coder(coder: str, coders: list[str]) -> None:
    """Refuse a coder with no decisions in the study, naming those who have some.

    Raises:
        InputError: "no decisions by 'alice' (did you mean 'Alice'?); coders: ...".
    """
    if coder in coders:
        return
    if not coders:
        raise InputError(f"no decisions by {coder!r}: the study has no decisions yet")
    message = f"no decisions by {coder!r}"
    same = [c for c in coders if c.casefold() == coder.casefold()]
    if same:
        message += f" (did you mean {same[0]!r}?)"
    listed = ", ".join(repr(c) for c in coders[:20])
    more = f" and {len(coders) - 20} more" if len(coders) > 20 else ""
    raise InputError(f"{message}; the study's coders are {listed}{more}")


def table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The dataset's options on the command line, as :func:`study.exchange.export.export_study`
    takes them."""
    return {
        "format": args.format,
        "layout": args.layout,
        "config_id": "active" if args.config is None else args.config,
        "coder": args.coder,
        "fill": args.fill,
        "all_coders": args.all_coders,
    }


def stream_export(study: Study, args: argparse.Namespace) -> None:
    """``-o -``: the dataset to standard output, written whole to a temporary file
    first, so that a failure sends nothing at all down the pipe."""
    import shutil
    import tempfile

    from study.exchange import export_study

    with tempfile.TemporaryDirectory(prefix="codecurve-export-") as folder:
        table = Path(folder) / f"export.{args.format}"
        export_study(study, table, **table_options(args))
        with table.open("rb") as source:
            try:
                if sys.stdout.isatty():  # shown, not kept: no cell's escape sequence runs
                    from tui.text import printable

                    sys.stdout.write(printable(source.read().decode("utf-8", "replace")))
                else:
                    shutil.copyfileobj(source, sys.stdout.buffer)
                sys.stdout.flush()
            except BrokenPipeError:
                # The reader stopped early (``| head``): not an error of the export.
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
