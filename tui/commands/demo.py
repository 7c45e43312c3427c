"""``codecurve demo``: open the app on a study made from a bundled sample."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tui.launch import add_app_options, app_keys, create_study, require_terminal, run_app


def demo_path(sample: str) -> Path:
    """Where the demo study of ``sample`` is kept (the user data folder)."""
    from scoring.paths import data_dir

    name = "demo.codecurve" if sample == "work_survey" else f"demo-{sample}.codecurve"
    return data_dir() / name


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="open the app on a bundled sample study",
        description="Open the review app on a study made from a bundled sample, scored by "
        "the embedded model on first open (r re-scores). Samples: work_survey (default), "
        "causal, causal_scaled, figurative, sets_words.",
    )
    parser.add_argument("sample", nargs="?", default="work_survey", help="which sample")
    parser.add_argument("--reset", action="store_true", help="start the demo study afresh")
    add_app_options(parser)
    parser.set_defaults(func=run, study_of=study_of)


def study_of(args: argparse.Namespace) -> Path:
    """The demo study the command opens, for its errors' remedies."""
    return demo_path(args.sample)


def run(args: argparse.Namespace) -> int:
    from codebooks.samples import sample_paths

    keys = app_keys()
    require_terminal()
    responses, codebook = sample_paths(args.sample)
    path = demo_path(args.sample)
    fresh = args.reset or not path.exists()
    if fresh:
        path.parent.mkdir(parents=True, exist_ok=True)
        create_study(path, responses=responses, codebook=codebook, overwrite=args.reset)
    return run_app(path, args, keys=keys, score_on_open=fresh or _unscored(path))


def _unscored(path: Path) -> bool:
    """Whether the demo study has no scores yet (e.g. the model was missing last time)."""
    from study import Study

    with Study.open(path, read_only=True) as study:
        return study.scores.active_config_id() is None
