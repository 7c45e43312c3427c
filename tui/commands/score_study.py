"""``codecurve score STUDY``: score a study's pending pairs into it, resuming.

With ``--responses`` and ``--codebook`` the study is created first. Each finished batch
is stored at once (:func:`study.score_run.score_study`), so an interrupted run keeps
what it finished.

``--context examples`` shows, in every prompt of a code, some pairs of the code one
coder decided (``--coder``, ``--examples K`` per value; never an audit pair), chosen by
:func:`study.analysis._examples.choose_examples` before the model loads: a configuration
of its own per example set, activated only as any other (the study's first, or
``--activate``). Resumed without ``--context``, an active examples configuration keeps
the examples it was scored with.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from codebooks.errors import InputError
from tui.commands import UsageError
from tui.commands.outputs import refuse_inputs
from tui.commands.score_output import eta, rate, say
from tui.text import plural

if TYPE_CHECKING:
    from scoring.backend import Backend
    from scoring.engine import BatchResult
    from study import Study
    from study.analysis import ExampleSet


def backend_from(args: argparse.Namespace) -> Backend:
    """The backend the score options ask for (both modes: a study, or files headless)."""
    from scoring import load_backend

    return load_backend(
        args.model,
        device=args.device,
        chat=False if args.no_chat else None,
        server=args.server,
        allow_download=args.allow_download,
        backend=args.backend,
        gpu_layers=args.gpu_layers,
        threads=args.threads,
    )


def score_study_file(args: argparse.Namespace) -> int:
    """The study mode: score the study's pending pairs, each batch stored when finished."""
    from scoring.engine import ScoringEngine
    from study import ScoreProgress, Study, active_context, score_study
    from tui.estimate import WARM_UP_PAIRS, estimate_text, warm_up_text

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
        resuming = args.context is None
        if resuming:
            # Resuming: the configuration being scored, not a new one at the default level.
            args.context = active_context(study)
        examples = _examples(study, args, resuming=resuming)
        backend = backend_from(args)
        try:
            engine = ScoringEngine(
                backend,
                study.codebook,
                context=args.context,
                strict=args.strict,
                batch_size=args.batch_size,
                max_prompt_tokens=args.max_prompt_tokens,
                examples=examples,
            )
            if examples is not None:
                from study.analysis import record_examples

                record_examples(study, examples)
            activate = bool(getattr(args, "activate", False))
            first = study.scores.active_config_id() is None
            config_id = study.scores.ensure_config(engine.config, activate=first)
            if activate and study.scores.active_config_id() != config_id:
                study.scores.set_active(config_id)
            pending = len(
                study.scores.pending_pairs(
                    config_id, features=engine.captures_features, layout=engine.feature_layout
                )
            )
            say(
                f"scoring {pending:,} pending of {plural(study.pair_count(), 'pair')} "
                f"in {args.study} "
                f"with {backend.identity.describe()}, template {engine.template.id}, "
                f"context {args.context}{', strict' if args.strict else ''}"
            )

            # What the run will cost, before it starts: at the speed of an earlier run,
            # else measured on its first batches (the first one left out: it includes
            # the model's warm-up).
            measured = study.scores.measured_rate(config_id)
            if pending:
                say(estimate_text(pending, measured, config_id=config_id))
            opening: list[BatchResult] = []
            told = measured is not None

            def report(step: ScoreProgress) -> None:
                nonlocal told
                batch = step.batch
                if not told and batch.rate > 0 and batch.done < batch.total:
                    if not opening:
                        opening.append(batch)
                    elif batch.done - opening[0].done >= WARM_UP_PAIRS:
                        seconds = batch.elapsed - opening[0].elapsed
                        measured_pairs = batch.done - opening[0].done
                        work = batch.work_done - opening[0].work_done
                        if seconds > 0 and work > 0:
                            sys.stderr.write("\n")
                            # The longest responses go first: the time left is the
                            # work left at the speed measured in work, not in pairs.
                            left_seconds = batch.work_left / (work / seconds)
                            left = batch.total - batch.done
                            speed_now = measured_pairs / seconds
                            say(warm_up_text(left, speed_now, measured_pairs, left_seconds))
                        told = True
                speed = rate(batch) + eta(batch)
                sys.stderr.write(f"\rscored {step.scored:,}/{step.total:,}{speed}   ")
                sys.stderr.flush()

            result = score_study(study, engine, progress=report, activate=activate or first)
        finally:
            backend.close()
    sys.stderr.write("\n" if result.stored else "")
    say(
        f"stored {plural(result.stored, 'new score')}; {result.already + result.stored:,} of "
        f"{plural(result.total, 'pair')} "
        f"{'is' if result.already + result.stored == 1 else 'are'} scored "
        f"(configuration {result.config_id})"
    )
    if examples is not None and not activate and not first:
        say(
            f"configuration {result.config_id} (examples) is not the active one; compare "
            f"it on the audit ('codecurve compare {args.study} --sample audit'), or make it "
            "active with --activate"
        )
    return 0


def _examples(study: Study, args: argparse.Namespace, *, resuming: bool) -> ExampleSet | None:
    """The worked examples of ``--context examples`` (None at any other context): those
    of the active configuration when resuming it, else chosen now from the decisions."""
    from study.analysis import DEFAULT_PER_VALUE, choose_examples, stored_examples

    chosen_by_options = args.coder is not None or args.examples is not None
    if args.context != "examples":
        if chosen_by_options:
            raise UsageError(
                "--coder and --examples choose the examples of --context examples; add "
                "--context examples, or drop them"
            )
        return None
    active = study.scores.active_config_id()
    if resuming and not chosen_by_options and active is not None:
        kept = stored_examples(study, study.scores.config_row(active).examples_hash)
        if kept is not None and kept.fits(study.codebook.codable):
            say(
                f"resuming configuration {active} with its examples from {kept.coder}'s "
                f"decisions ({plural(kept.shown, 'example')})"
            )
            return kept
    per_value = DEFAULT_PER_VALUE if args.examples is None else args.examples
    chosen = choose_examples(study, coder=args.coder, per_value=per_value)
    say(
        f"examples from {chosen.coder}'s decisions, up to {per_value} per value decided "
        "(never an audit pair):"
    )
    for code in chosen.codes:
        say(f"  {code.code_name}: {code.describe()}")
    return chosen
