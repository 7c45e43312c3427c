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
import csv
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import CodecurveError, InputError
from tui.commands import UsageError
from tui.commands.outputs import check_output, refuse_inputs
from tui.launch import CONTEXTS, device_name, positive_int
from tui.text import one_line, plural, printable

if TYPE_CHECKING:
    from codebooks.model import Codebook
    from scoring.engine import BatchResult, ScoringEngine
    from scoring.score import Score
    from study.intake.responses import ResponseTable

OUTPUT_FORMATS = {".csv": "csv", ".jsonl": "jsonl"}

#: scoring.engine.DEFAULT_PROMPT_TOKENS, written out so that --help imports no numpy (a
#: test checks that the two agree).
DEFAULT_PROMPT_TOKENS = 2048


def prompt_tokens(text: str) -> int | None:
    """``--max-prompt-tokens``: a whole number of at least 64, or ``model`` (None: the
    model's whole context)."""
    if text.strip().lower() == "model":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens or 'model', not {text!r}"
        ) from None
    if value < 64:
        raise argparse.ArgumentTypeError(f"a prompt needs at least 64 tokens, not {value}")
    return value


#: Columns of every row, in order (per-option columns follow the curve's summary).
ID_COLUMNS = ("response_id", "code_id", "code_name", "scale")
SUMMARY_COLUMNS = (
    "pick",
    "pick_label",
    "expected",
    "spread",
    "confidence",
    "entropy",
    "norm_entropy",
    "on_scale_mass",
    "off_scale",
    "truncated",
)
IDENTITY_COLUMNS = (
    "option_token_ids",
    "prompt_hash",
    "text_hash",
    "code_hash",
    "template_id",
    "template_hash",
    "context",
    "strict",
    "model_name",
    "model_revision",
    "model_dtype",
    "model_device",
    "model_backend",
    "config_key",
)


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
        help="what the prompt says about a code (%(choices)s): its name, its definition, or "
        "everything (criteria and examples too); default: the study's active "
        "configuration's, else definition",
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
        return score_study_file(args)
    return score_files(args)


def score_study_file(args: argparse.Namespace) -> int:
    """The study mode: score the study's pending pairs, each batch stored when finished."""
    from scoring import load_backend
    from scoring.engine import ScoringEngine
    from study.score_run import ScoreProgress, score_study
    from study.scores.labels import active_context
    from study.store import Study

    if args.output is not None:
        raise UsageError(
            "-o writes scores to a file; with a STUDY they are stored in it "
            "(write them out with 'codecurve export STUDY -o FILE')"
        )
    if (args.responses is None) != (args.codebook is None):
        raise UsageError("--responses and --codebook create the study together: give both")
    if args.responses is not None:
        refuse_inputs(
            args.study, protect={"responses file": args.responses, "codebook": args.codebook}
        )
        if args.study.exists():
            raise InputError(
                f"already exists; score it with 'codecurve score {args.study}' (without "
                "--responses and --codebook), or give another path for the new study",
                path=args.study,
            )
        from tui.commands.new import create_from_args

        args.encoding = getattr(args, "encoding", None)
        args.sheet = getattr(args, "sheet", None)
        study = create_from_args(args, scale=args.scale)
    else:
        if args.scale is not None:
            raise UsageError(
                "a study's scale is fixed when it is created ('codecurve new --scale'); "
                "drop --scale"
            )
        study = Study.open(args.study)
    with study:
        if args.context is None:
            # Resuming: the configuration being scored, not a new one at the default level.
            args.context = active_context(study)
        backend = load_backend(
            args.model,
            device=args.device,
            chat=False if args.no_chat else None,
            server=args.server,
            allow_download=args.allow_download,
            backend=args.backend,
            gpu_layers=args.gpu_layers,
            threads=args.threads,
        )
        try:
            engine = ScoringEngine(
                backend,
                study.codebook,
                context=args.context,
                strict=args.strict,
                batch_size=args.batch_size,
                max_prompt_tokens=args.max_prompt_tokens,
            )
            activate = bool(getattr(args, "activate", False))
            first = study.active_config_id() is None
            config_id = study.ensure_config(engine.config, activate=first)
            if activate and study.active_config_id() != config_id:
                study.set_active_config(config_id)
            pending = len(study.pending_pairs(config_id))
            _say(
                f"scoring {pending:,} pending of {plural(study.pair_count(), 'pair')} "
                f"in {args.study} "
                f"with {backend.identity.describe()}, template {engine.template.id}, "
                f"context {args.context}{', strict' if args.strict else ''}"
            )

            def report(step: ScoreProgress) -> None:
                rate = _rate(step.batch)
                sys.stderr.write(f"\rscored {step.scored:,}/{step.total:,}{rate}   ")
                sys.stderr.flush()

            result = score_study(study, engine, progress=report, activate=activate or first)
        finally:
            backend.close()
    sys.stderr.write("\n" if result.stored else "")
    _say(
        f"stored {plural(result.stored, 'new score')}; {result.already + result.stored:,} of "
        f"{plural(result.total, 'pair')} "
        f"{'is' if result.already + result.stored == 1 else 'are'} scored "
        f"(configuration {result.config_id})"
    )
    return 0


def score_files(args: argparse.Namespace) -> int:
    """The file mode: responses file x codebook file -> rows."""
    from codebooks import get_scale, load_codebook
    from scoring import Pair, load_backend
    from scoring.engine import ScoringEngine

    if args.responses is None or args.codebook is None:
        raise UsageError("give both --responses FILE and --codebook FILE")
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
    fmt = _output_format(args.output)
    codebook = load_codebook(args.codebook)
    if scale is not None:
        codebook = _with_scale(codebook, scale)
    table = _read_responses(args)
    codes = codebook.codable
    if not codes:
        raise InputError("the codebook has no codable codes", path=args.codebook)

    backend = load_backend(
        args.model,
        device=args.device,
        chat=False if args.no_chat else None,
        server=args.server,
        allow_download=args.allow_download,
        backend=args.backend,
        gpu_layers=args.gpu_layers,
        threads=args.threads,
    )
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
        _say(
            f"scoring {plural(len(table), 'response')} x {plural(len(codes), 'code')} = "
            f"{plural(len(pairs), 'pair')} "
            f"with {backend.identity.describe()}, template {engine.template.id}, "
            f"context {engine.config.context}{', strict' if args.strict else ''}"
        )
        scores = _score_with_progress(engine, pairs)
    finally:
        backend.close()
    names = {c.id: c.name for c in codes}
    if fmt is None:
        _print_table(scores, names, {r.id: r.text for r in table})
        return 0
    rows = [score_row(s, engine, names[s.code_id], with_prompt=fmt == "jsonl") for s in scores]
    _write(args.output, fmt, rows)
    _say(f"wrote {plural(len(rows), 'row')} to {args.output}")
    return 0


def _output_format(path: Path | None) -> str | None:
    if path is None:
        return None
    fmt = OUTPUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"cannot write {path.suffix or 'a file without a suffix'}; "
            "name the output .csv or .jsonl",
            path=path,
        )
    return fmt


def _read_responses(args: argparse.Namespace) -> ResponseTable:
    from study.intake.responses import read_responses

    table = read_responses(args.responses, id_column=args.id_column, text_column=args.text_column)
    for message in table.messages:
        _say(f"{args.responses}: {message}")
    if len(table) == 0:
        raise InputError("no responses with text to score", path=args.responses)
    return table


def _with_scale(codebook: Codebook, scale: Any) -> Codebook:
    """Every code asked on ``scale`` (codes' own scales included)."""
    codes = tuple(replace(c, scale=None) for c in codebook.codes)
    return replace(codebook, scale=scale, codes=codes)


def _score_with_progress(engine: ScoringEngine, pairs: list[Any]) -> list[Score]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    with Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("scoring", total=len(pairs), rate="")

        def report(batch: BatchResult) -> None:
            bar.update(task, completed=batch.done, rate=_rate(batch).lstrip(", "))

        return engine.score(pairs, progress=report)


def score_row(
    score: Score, engine: ScoringEngine, code_name: str, *, with_prompt: bool
) -> dict[str, Any]:
    """One output row: ids, the curve, its summary, and the score's identity.

    Per-option values go to ``surprisal_<label>`` and ``prob_<label>`` columns (nats).
    """
    curve = score.curve
    model = engine.config.model
    row: dict[str, Any] = {
        "response_id": score.response_id,
        "code_id": score.code_id,
        "code_name": code_name,
        "scale": score.scale.name,
        "pick": score.prediction,
        "pick_label": score.prediction_label,
        "expected": curve.expected,
        "spread": curve.spread,
        "confidence": curve.confidence,
        "entropy": curve.entropy,
        "norm_entropy": curve.norm_entropy,
        "on_scale_mass": curve.on_scale_mass,
        "off_scale": curve.off_scale,
        "truncated": score.truncated,
    }
    for option, s, p in zip(score.scale.options, curve.surprisal, curve.probs, strict=True):
        row[f"surprisal_{option.label}"] = float(s)
        row[f"prob_{option.label}"] = float(p)
    row.update(
        {
            "option_token_ids": json.dumps([[list(v) for v in o] for o in score.token_ids]),
            "prompt_hash": score.prompt_hash,
            "text_hash": score.text_hash,
            "code_hash": score.code_hash,
            "template_id": engine.config.template_id,
            "template_hash": engine.config.template_hash,
            "context": engine.config.context,
            "strict": engine.config.strict,
            "model_name": model.name,
            "model_revision": model.revision,
            "model_dtype": model.dtype,
            "model_device": model.device,
            "model_backend": model.backend,
            "config_key": score.config_key,
        }
    )
    if with_prompt:
        row["prompt"] = score.prompt
    return row


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Fixed columns, with every scale's per-option columns in order of first use."""
    per_option: list[str] = []
    seen: set[str] = set()
    fixed = set(ID_COLUMNS) | set(SUMMARY_COLUMNS) | set(IDENTITY_COLUMNS) | {"prompt"}
    for row in rows:
        for key in row:
            if key not in fixed and key not in seen:
                seen.add(key)
                per_option.append(key)
    return [*ID_COLUMNS, *SUMMARY_COLUMNS, *per_option, *IDENTITY_COLUMNS]


def _write(path: Path, fmt: str, rows: list[dict[str, Any]]) -> None:
    from study.exchange.export import atomic_write, neutralise

    def write_csv(tmp: Path) -> None:
        columns = _columns(rows)
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _csv_cell(neutralise, row.get(k)) for k in columns})

    def write_jsonl(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                out = dict(row)
                out["option_token_ids"] = json.loads(row["option_token_ids"])
                fh.write(json.dumps(_finite(out), ensure_ascii=False) + "\n")

    atomic_write(path, write_csv if fmt == "csv" else write_jsonl)


def _csv_cell(neutralise: Any, value: Any) -> Any:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return neutralise(value)


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no infinity: an impossible option's surprisal is written as null."""
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()
    }


#: Below this terminal width the score table leaves out the response's text.
NARROW_TABLE = 100


def _print_table(scores: Iterable[Score], names: dict[str, str], texts: dict[str, str]) -> None:
    """The scores as a table; every text from a file is shown with its control characters
    made visible and is never read as Rich markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from scoring.curves import sparkline

    console = Console(highlight=False)
    # On a narrow terminal the response's text goes first (then the code's name is cut):
    # the pick, p and H/lnK columns are what the table is for.
    narrow = console.width < NARROW_TABLE
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("response", overflow="ellipsis", no_wrap=True, max_width=16)
    if not narrow:
        table.add_column("text", overflow="ellipsis", no_wrap=True, max_width=40, ratio=1)
    table.add_column("code", overflow="ellipsis", no_wrap=True, max_width=20 if narrow else 24)
    table.add_column("curve", no_wrap=True, min_width=5)
    table.add_column("pick", justify="right", no_wrap=True, min_width=4)
    table.add_column("p", justify="right", no_wrap=True, min_width=4)
    table.add_column("H/lnK", justify="right", no_wrap=True, min_width=5)
    table.add_column("flags", overflow="fold")
    for s in scores:
        flags = ", ".join(
            f for f, on in (("off-scale", s.curve.off_scale), ("truncated", s.truncated)) if on
        )
        cells = [Text(one_line(s.response_id))]
        if not narrow:
            cells.append(Text(one_line(texts.get(s.response_id, ""))))
        table.add_row(
            *cells,
            Text(one_line(names.get(s.code_id, s.code_id))),
            sparkline(s.curve.surprisal),
            Text(one_line(s.prediction_label)),
            f"{s.curve.confidence:.2f}",
            f"{s.curve.norm_entropy:.2f}",
            flags,
        )
    console.print(table)


def _say(message: str) -> None:
    sys.stderr.write(printable(message) + "\n")


def _rate(batch: BatchResult) -> str:
    """The rate to show: pairs per second, and tokens per second while pairs take longer
    than a second each (long prompts), so a slow run never reads "0.0 pairs/s"."""
    parts = []
    if batch.rate >= 1 or (batch.rate > 0 and not batch.token_rate):
        parts.append(f"{batch.rate:.1f} pairs/s")
    if batch.token_rate and batch.rate < 1:
        parts.append(f"{batch.token_rate:,.0f} tokens/s")
    return "".join(f", {p}" for p in parts)
