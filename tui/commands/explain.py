"""``codecurve explain STUDY``: which sentence of each response moved the model.

The work is :mod:`study.analysis._evidence`'s (the pairs, the cost) and
:mod:`scoring.evidence`'s (the measurement); this parses, says what the run will cost,
shows progress, and prints what was kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError
from tui.commands.score_output import say
from tui.commands.types import device_name, positive_int
from tui.text import duration, plural

if TYPE_CHECKING:
    from scoring.evidence import ExplainProgress
    from study import Study
    from study.analysis import ExplainPlan

DESCRIPTION = """\
For each scored pair whose response has more than one sentence, leave each sentence
out in turn, score the pair again with the same model and prompt, and keep how far the
probability that the code applies (and the expected value) fell: the sentence that
moved the model most is the pair's evidence, shown in the app's detail pane ('e'),
exported as evidence_start, evidence_end, evidence_text, evidence_effect, and written
as the model's coded segment in a REFI-QDA project.

The variants of a code share its prompt prefix, so each costs about the response's
tokens; a response of many sentences is measured on its 40 longest. The pairs most
likely to apply come first. A learned configuration explains itself: its model scores
the variants and its learned curves read them (refitted from the decisions they were
learned from: after new decisions, 'codecurve learn' first).

  codecurve explain survey.codecurve --limit 200
  codecurve explain survey.codecurve --code Workload
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="measure which sentence of each response moved the model (evidence)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument("--code", help="explain only this code (name or id)")
    parser.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="explain at most N pairs (the most likely to apply)",
    )
    parser.add_argument(
        "--model",
        metavar="ID|PATH",
        help="the model the study was scored with (default: the active configuration's)",
    )
    parser.add_argument("--server", metavar="URL", help="server URL for an openai:NAME model")
    parser.add_argument("--device", type=device_name, help="cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--backend", choices=("llama.cpp", "transformers"), help="what runs a .gguf model"
    )
    parser.add_argument("--gpu-layers", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=positive_int, metavar="N", help="CPU threads")
    parser.add_argument(
        "--no-chat", action="store_true", help="plain completion prompts (as scored)"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, metavar="N", help="variants per backend call"
    )
    parser.add_argument("--allow-download", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from study import Study
    from study.analysis import explain_study, plan_explain

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    with Study.open(args.study) as study:
        plan = plan_explain(study, code=args.code, limit=args.limit)
        say(plan_text(plan, args.study))
        if not plan.pairs:
            return 0
        engine = _engine(study, plan, args)
        try:
            result = explain_study(study, engine, plan, progress=_progress)
        finally:
            engine.backend.close()
    sys.stderr.write("\n")
    say(
        f"kept evidence for {plural(result.stored, 'pair')} in {duration(result.seconds)} "
        f"({plural(result.variants, 'variant')} scored; configuration {result.config_id})"
    )
    return 0


def plan_text(plan: ExplainPlan, path: Path) -> str:
    """What the run will do and cost, in one paragraph."""
    head = f"{plural(len(plan.pairs), 'pair')} to explain in {path}"
    learned = (
        f", learned configuration {plan.learned_id} (its curves read the variants that "
        f"the model of configuration {plan.config.id} scores)"
        if plan.learned_id is not None
        else f", configuration {plan.config.id}"
    )
    parts = [head + learned]
    if plan.explained:
        parts.append(f"{plural(plan.explained, 'pair')} explained already")
    if plan.single:
        parts.append(f"{plural(plan.single, 'pair')} left out (one sentence: nothing to compare)")
    if plan.pairs:
        seconds = plan.seconds
        cost = f"{plural(plan.variants, 'variant')} to score"
        if seconds is not None and plan.rate is not None:
            cost += (
                f": about {duration(seconds)} at {plan.rate.rate:,.1f} pairs/s (the study's "
                "measured scoring speed; a variant re-reads its response from the sentence "
                "it leaves out)"
            )
        parts.append(cost)
    return "; ".join(parts)


def _engine(study: Study, plan: ExplainPlan, args: argparse.Namespace) -> Any:
    """The engine of the plan's configuration, on the model given or the one it names."""
    from scoring.engine import ScoringEngine
    from scoring.weights import EMBEDDED_NAME
    from tui.commands.score_study import backend_from

    row = plan.config
    if args.model is None and row.model.name != EMBEDDED_NAME:
        args.model = row.model.name
    examples = None
    if row.context == "examples":
        from study.analysis import stored_examples

        examples = stored_examples(study, row.examples_hash)
        if examples is None:
            raise InputError(
                f"the worked examples of configuration {row.id} are not in the study",
                path=args.study,
            )
    backend = backend_from(args)
    try:
        return ScoringEngine(
            backend,
            study.codebook,
            context=row.context,
            strict=row.strict,
            batch_size=args.batch_size,
            examples=examples,
        )
    except BaseException:
        backend.close()
        raise


def _progress(step: ExplainProgress) -> None:
    rate = step.variants_done / step.elapsed if step.elapsed > 0 else 0.0
    left = (step.variants_total - step.variants_done) / rate if rate > 0 else None
    eta = f", {duration(left)} left" if left is not None else ""
    sys.stderr.write(
        f"\rexplained {step.pairs_done:,}/{step.pairs_total:,} pairs "
        f"({step.variants_done:,}/{step.variants_total:,} variants, {rate:,.1f}/s{eta})   "
    )
    sys.stderr.flush()
