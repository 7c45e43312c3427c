"""``codecurve score``: score responses against a codebook, headless.

    codecurve score --responses answers.csv --codebook codes.yaml [-o scores.csv|.jsonl]

One row per (response, code): the whole surprisal curve (surprisal and probability per
option), on-scale mass, entropy, the model's pick, expected value, spread and confidence,
the flags (off-scale, truncated), the option token ids, and the score's identity (prompt
hash, template, context, model name, revision, dtype, device, backend). JSONL rows also carry the
exact prompt. Files are written to a temporary name and renamed. Without ``-o`` a table
with a sparkline per curve is printed. Progress (rate, ETA) goes to stderr.

The inputs are read, and the output format checked, before the model loads, so a bad
file costs a second, not a model load. Scoring a study file in place is a later mode of
this command: ``run`` dispatches on the arguments, and a positional ``STUDY`` (``nargs="?"``)
can join the parser without changing the file mode.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import CodecurveError, InputError
from tui.commands import UsageError
from tui.commands.outputs import check_output
from tui.commands.remedies import note_line
from tui.commands.score_output import print_table, say, score_with_progress
from tui.commands.types import CONTEXTS, device_name, positive_int, prompt_tokens
from tui.text import plural

if TYPE_CHECKING:
    from codebooks.model import Codebook
    from study import ResponseTable

#: scoring.engine.DEFAULT_PROMPT_TOKENS, written out so that --help imports no numpy (a
#: test checks that the two agree).
DEFAULT_PROMPT_TOKENS = 2048

#: study.analysis._examples.DEFAULT_PER_VALUE, written out for the same reason.
DEFAULT_EXAMPLES = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score responses against a codebook without the app (CSV/JSONL out)",
        description="Score every (response, code) pair with a language model's surprisal "
        "curve over the codebook's scale: one forward pass per pair, no text generated. "
        "Writes one row per pair to a CSV or JSONL file, or prints a table.",
    )
    parser.add_argument(
        "study",
        nargs="?",
        type=Path,
        help="a study file (.codecurve): score its pending pairs into it, resuming where an "
        "earlier run stopped; with --responses and --codebook it is created first",
    )
    parser.add_argument(
        "--responses", type=Path, metavar="FILE", help="responses: CSV, TSV, XLSX, JSONL, ..."
    )
    parser.add_argument("--codebook", type=Path, metavar="FILE", help="codebook: YAML, JSON, ...")
    parser.add_argument(
        "--model",
        metavar="ID|PATH",
        help="model: a Hugging Face id, a model folder, a .gguf file or openai:NAME "
        "(default: the embedded SmolLM2-135M-Instruct)",
    )
    parser.add_argument("--server", metavar="URL", help="server URL for an openai:NAME model")
    parser.add_argument(
        "--device",
        type=device_name,
        help="cpu, cuda, cuda:N or mps (default: cuda, else mps, else cpu)",
    )
    parser.add_argument(
        "--backend",
        choices=("llama.cpp", "transformers"),  # scoring.loading.BACKENDS
        help="what runs a .gguf model: llama.cpp (quantized, in-process; the default when "
        "llama-cpp-python is installed) or transformers (converted to float32 once)",
    )
    parser.add_argument(
        "--gpu-layers",
        type=int,
        metavar="N",
        help="layers llama.cpp offloads to the GPU (default: all on a GPU build, else 0)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="CPU threads of a local model (default: the physical cores for llama.cpp); "
        "fewer run faster on a machine busy with other work",
    )
    parser.add_argument(
        "--scale",
        metavar="1-5|1-9|binary",
        help="ask every code on this scale instead of the codebook's",
    )
    parser.add_argument(
        "--context",
        choices=CONTEXTS,
        metavar="LEVEL",  # a metavar keeps argparse from reading the choices before use
        default=None,
        help="what the prompt says about a code (%(choices)s): its name, its definition, "
        "everything (criteria and examples too), or everything and some pairs of the code "
        "a coder decided as worked examples (a STUDY only; never an audit pair); default: "
        "the study's active configuration's, else definition",
    )
    parser.add_argument(
        "--coder",
        metavar="NAME",
        help="with --context examples: whose decisions are shown (needed when several "
        "coders decided)",
    )
    parser.add_argument(
        "--examples",
        type=positive_int,
        metavar="K",
        default=None,
        help=f"with --context examples: examples per scale value decided, taken in turn "
        f"over the values (default {DEFAULT_EXAMPLES})",
    )
    parser.add_argument(
        "--max-prompt-tokens",
        type=prompt_tokens,
        default=DEFAULT_PROMPT_TOKENS,
        metavar="N",
        help=f"longest prompt in tokens; a longer response is cut from the middle and its "
        f"score flagged truncated (default {DEFAULT_PROMPT_TOKENS}; 'model' for the model's "
        "whole context)",
    )
    parser.add_argument(
        "--allow-download",
        action="store_true",
        help="fetch a Hugging Face model that is not in the local cache (the only time "
        "codecurve reaches the network; never by default)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="score exactly one rendering per option instead of pooling variants (' 3', '3')",
    )
    parser.add_argument(
        "--no-chat",
        action="store_true",
        help="plain completion prompts even when the model has a chat template",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="pairs per backend call (default: 16 for a local model, twice the "
        "server's concurrency for openai:NAME)",
    )
    parser.add_argument("--id-column", metavar="C", help="column of the response ids")
    parser.add_argument("--text-column", metavar="C", help="column of the response texts")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="write the scores to FILE (.csv or .jsonl); default: print a table",
    )
    parser.add_argument(
        "--activate",
        action="store_true",
        help="with a STUDY: make this configuration the one the queue and exports use "
        "(a study's first configuration is always made active)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.study is not None:
        from tui.commands.score_study import score_study_file

        return score_study_file(args)
    return score_files(args)


def score_files(args: argparse.Namespace) -> int:
    """The file mode: responses file x codebook file -> rows."""
    from codebooks import get_scale
    from scoring import Pair
    from scoring.engine import ScoringEngine
    from study.exchange import row_format, score_row, write_score_rows
    from study.refi import load_codebook_file
    from tui.commands.score_study import backend_from

    if args.responses is None or args.codebook is None:
        raise UsageError("give both --responses FILE and --codebook FILE")
    if args.context == "examples":
        raise UsageError(
            "--context examples shows pairs a coder decided, which a study holds: score a "
            "STUDY ('codecurve score STUDY --context examples')"
        )
    if args.coder is not None or args.examples is not None:
        raise UsageError(
            "--coder and --examples choose the examples of a STUDY's --context examples"
        )
    scale = None
    if args.scale is not None:
        try:
            scale = get_scale(args.scale)
        except CodecurveError as exc:
            raise UsageError(f"--scale: {exc}") from None
    for path, what in ((args.responses, "responses"), (args.codebook, "codebook")):
        if not path.exists():
            raise InputError(f"no such {what} file", path=path)
        if path.is_dir():
            raise InputError(f"is a folder, not a {what} file", path=path)
    if args.output is not None:
        # Before the inputs are read and hours are spent scoring: can the output be written?
        check_output(
            args.output, protect={"responses file": args.responses, "codebook": args.codebook}
        )
    fmt = None if args.output is None else row_format(args.output)
    codebook, _read = load_codebook_file(args.codebook)
    if scale is not None:
        codebook = _with_scale(codebook, scale)
    table = _read_responses(args)
    codes = codebook.codable
    if not codes:
        raise InputError("the codebook has no codable codes", path=args.codebook)

    backend = backend_from(args)
    try:
        engine = ScoringEngine(
            backend,
            codebook,
            context=args.context or "definition",
            strict=args.strict,
            batch_size=args.batch_size,
            template=None,
            max_prompt_tokens=args.max_prompt_tokens,
        )
        pairs = [Pair(r.id, r.text, code) for r in table for code in codes]
        say(
            f"scoring {plural(len(table), 'response')} x {plural(len(codes), 'code')} = "
            f"{plural(len(pairs), 'pair')} "
            f"with {backend.identity.describe()}, template {engine.template.id}, "
            f"context {engine.config.context}{', strict' if args.strict else ''}"
        )
        scores = score_with_progress(engine, pairs)
    finally:
        backend.close()
    names = {c.id: c.name for c in codes}
    if fmt is None:
        print_table(scores, names, {r.id: r.text for r in table})
        return 0
    rows = [
        score_row(s, engine.config, names[s.code_id], with_prompt=fmt == "jsonl") for s in scores
    ]
    write_score_rows(args.output, fmt, rows)
    say(f"wrote {plural(len(rows), 'row')} to {args.output}")
    return 0


def _read_responses(args: argparse.Namespace) -> ResponseTable:
    from study import read_responses

    table = read_responses(args.responses, id_column=args.id_column, text_column=args.text_column)
    for message in table.messages:
        say(f"{args.responses}: {note_line(message, study=args.study)}")
    if len(table) == 0:
        raise InputError("no responses with text to score", path=args.responses)
    return table


def _with_scale(codebook: Codebook, scale: Any) -> Codebook:
    """Every code asked on ``scale`` (codes' own scales included)."""
    codes = tuple(replace(c, scale=None) for c in codebook.codes)
    return replace(codebook, scale=scale, codes=codes)
