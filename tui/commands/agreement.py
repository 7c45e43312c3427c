"""``codecurve agreement STUDY``: inter-coder reliability, per code and pooled.

Needs no scores: two coders' imported decisions are enough. The model can take part as
a coder (``--coders ann,model``): its pick under the study's active scoring
configuration. The coefficients are :func:`screening.reliability.reliability`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebooks.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from codebooks.model import Scale
    from screening.reliability import Bootstrap, Estimate, Reliability
    from study.store import Study

FORMATS = ("table", "markdown", "json")
UNITS = ("all", "shared")
#: The name under which the model's picks join as a coder.
MODEL = "model"
POOLED = "All codes"

DESCRIPTION = """\
Inter-coder reliability of the decisions in a study, per code and pooled over codes:
the number of units (response x code pairs rated by two or more of the coders),
percent agreement, Cohen's kappa (two coders; quadratic-weighted on ordinal scales),
Krippendorff's alpha (nominal on two-option scales, ordinal on longer ones), each with a
95% percentile bootstrap interval over units (pooled: over responses), and the share of
each coder's decisions that say the code applies. No model scores are needed; add
'model' to --coders to include the model's picks (active scoring configuration), which
leaves out decisions that accepted the model's pick.

  codecurve agreement survey.codecurve
  codecurve agreement survey.codecurve --coders ann,bob --format markdown
  codecurve agreement survey.codecurve --coders ann,model --code Pay
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agreement",
        help="inter-coder reliability: percent agreement, kappa, alpha with intervals",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("study", type=Path, help="the study file (.codecurve)")
    parser.add_argument(
        "--coders",
        metavar="A,B,...",
        help="the coders to compare, comma-separated; 'model' is the model's pick "
        "(default: every coder with decisions)",
    )
    parser.add_argument("--code", help="only this code (name or id)")
    parser.add_argument(
        "--units",
        choices=UNITS,
        default="all",
        help="all: pairs rated by two or more of the coders (default); shared: pairs "
        "rated by every one of them",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--resamples",
        type=_resamples,
        default=1000,
        metavar="N",
        help="bootstrap resamples for the intervals (default 1000)",
    )
    parser.set_defaults(func=run)


def _resamples(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 100000, not {value}")
    return value


def safe(text: object) -> str:
    """Display text with control characters and bidirectional overrides shown as escapes
    (``\\x1b``, ``\\u202e``), never obeyed."""
    return "".join(
        repr(ch)[1:-1]
        if unicodedata.category(ch) == "Cc"
        else f"\\u{ord(ch):04x}"
        if ch in BIDI_CONTROLS
        else ch
        for ch in str(text)
    )


#: The embeddings, overrides and isolates, which reorder the rest of a line.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@dataclass(frozen=True)
class CodeAgreement:
    """One row of the report: a code (or all codes pooled) and its coefficients."""

    code: str
    scale: str
    result: Reliability
    applies: tuple[float | None, ...]


@dataclass(frozen=True)
class AgreementReport:
    """The agreement of a set of coders over a study's codes."""

    study: str
    coders: tuple[str, ...]
    units: str
    pooled: CodeAgreement | None
    per_code: tuple[CodeAgreement, ...]
    bootstrap: Bootstrap
    notes: tuple[str, ...]


def run(args: argparse.Namespace) -> int:
    from study.store import Study

    if not args.study.exists():
        raise InputError("no such study file", path=args.study)
    wanted = None
    if args.coders is not None:
        wanted = [c.strip() for c in args.coders.split(",") if c.strip()]
    with Study.open(args.study, read_only=True) as study:
        report = study_agreement(
            study,
            coders=wanted,
            code=args.code,
            units=args.units,
            seed=args.seed,
            resamples=args.resamples,
        )
    if args.format == "json":
        sys.stdout.write(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(to_markdown(report) + "\n")
    else:
        _print_table(report)
    return 0


# --- the study query -------------------------------------------------------------------


def _decisions(study: Study, coders: Sequence[str] | None) -> tuple[pd.DataFrame, list[str]]:
    """Every decision (response, code, coder, value), with the model's picks as a coder."""
    import pandas as pd

    human_only = coders is None or MODEL not in coders
    config_id = None if human_only else study.active_config_id()
    frame = study.annotated_pairs(config_id)
    if not len(frame):
        return frame, []
    people = sorted(set(frame["coder"]))
    if not human_only and MODEL not in people:
        if config_id is None:
            raise InputError(
                "the model cannot be a coder: the study has no scores yet; "
                "run 'codecurve score' first",
                path=study.path,
            )
        frame = frame[frame["source"] == "human"]
        picks = frame[frame["scored"]].drop_duplicates(["response_id", "code_id"])
        model = picks.assign(coder=MODEL, value=picks["pick"].astype(int))
        frame = pd.concat([frame, model], ignore_index=True)
    return frame, people


def study_agreement(
    study: Study,
    *,
    coders: Sequence[str] | None = None,
    code: str | None = None,
    units: str = "all",
    seed: int = 0,
    resamples: int = 1000,
) -> AgreementReport:
    """Agreement of ``coders`` (default: every coder) per code and pooled over codes.

    Raises:
        InputError: fewer than two coders, an unknown coder or code, the model asked for
            on a study without scores, or no unit rated by two or more of the coders.
    """
    import numpy as np

    from screening.reliability import Bootstrap, reliability

    if units not in UNITS:
        raise InputError(f"--units must be 'all' or 'shared', not {units!r}")
    if coders is not None and len(set(coders)) != len(coders):
        raise InputError(f"a coder is named twice in --coders: {', '.join(map(safe, coders))}")
    frame, people = _decisions(study, coders)
    offer = ", ".join(safe(p) for p in people) or "none"
    if coders is None:
        if len(people) < 2:
            raise InputError(
                f"agreement needs decisions by two or more coders; coders in this study: "
                f"{offer} (import another coder's codes with 'codecurve import-codes', or "
                f"compare with the model: --coders NAME,model)",
                path=study.path,
            )
        chosen = people
    else:
        chosen = list(coders)
        unknown = [c for c in chosen if c not in people and c != MODEL]
        if unknown:
            listed = ", ".join("'" + safe(c) + "'" for c in unknown)
            raise InputError(
                f"no decisions by coder {listed}; "
                f"coders in this study: {offer} (and 'model' for the model's picks)",
                path=study.path,
            )
        if len(chosen) < 2:
            raise InputError(
                f"agreement needs two or more coders, got {len(chosen)}; coders in this "
                f"study: {offer}",
                path=study.path,
            )
    codebook = study.codebook
    codes = list(codebook.codable)
    if code is not None:
        try:
            codes = [codebook.code(code)]
        except ValueError:
            names = ", ".join(safe(c.name) for c in codebook.codable)
            raise InputError(
                f"no code {safe(code)!r} in this study; codes: {names}", path=study.path
            ) from None
    notes = []
    if MODEL in chosen and MODEL not in people:
        accepted = int(np.sum(frame["source"] == "model")) if len(frame) else 0
        notes.append(
            "the model's picks are from the active scoring configuration; "
            "decisions that accepted the model's pick are left out"
            + (f" ({accepted})" if accepted else "")
        )
    frame = frame[frame["coder"].isin(chosen)] if len(frame) else frame
    spec = Bootstrap(resamples, seed, 0.95)
    rows: list[CodeAgreement] = []
    pooled_parts: list[tuple[Any, Any, Scale]] = []
    skipped = []
    for c in codes:
        scale = codebook.scale_for(c)
        mine = frame[frame["code_id"] == c.id] if len(frame) else frame
        matrix, responses = _matrix(mine, chosen, units)
        if matrix.shape[1] == 0:
            skipped.append(c.name)
            continue
        pooled_parts.append((matrix, responses, scale))
        rows.append(_row(c.name, matrix, scale, chosen, seed, resamples, reliability))
    if not rows or all(r.result.n_units == 0 for r in rows):
        raise InputError(
            f"no shared units: no pair was rated by "
            f"{'every one' if units == 'shared' else 'two or more'} of "
            f"{', '.join(safe(c) for c in chosen)}"
            + (f" on code {safe(codes[0].name)!r}" if code is not None else "")
            + (" (try --units all)" if units == "shared" and len(chosen) > 2 else ""),
            path=study.path,
        )
    if skipped and code is None:
        notes.append(f"{len(skipped)} code(s) without shared decisions are not listed")
    pooled = None
    if len(rows) > 1:
        pooled = _pooled(pooled_parts, chosen, seed, resamples, reliability)
        spec = Bootstrap(resamples, seed, 0.95, "units (pooled row: responses)")
        notes.append(
            "the pooled row resamples whole responses, since a response's codes are not "
            "independent units"
        )
    return AgreementReport(
        study=study.path.name,
        coders=tuple(chosen),
        units=units,
        pooled=pooled,
        per_code=tuple(rows),
        bootstrap=spec,
        notes=tuple(notes),
    )


def _matrix(frame: pd.DataFrame, coders: Sequence[str], units: str) -> tuple[Any, Any]:
    """Shape (n_coders, n_responses) of one code's values (nan missing), and the responses."""
    import numpy as np

    if not len(frame):
        return np.zeros((len(coders), 0)), np.zeros(0, dtype=object)
    wide = frame.pivot_table(
        index="response_id", columns="coder", values="value", aggfunc="last"
    ).reindex(columns=list(coders))
    rated = wide.notna().sum(axis=1)
    keep = rated == len(coders) if units == "shared" else rated >= 2
    wide = wide[keep]
    return wide.to_numpy(dtype=float).T, wide.index.to_numpy(dtype=object)


def _scale_kind(scale: Scale) -> tuple[str, Any]:
    return ("nominal", None) if scale.k == 2 else ("ordinal", "quadratic")


def _applies(
    result: Reliability, scale_values: Sequence[int], threshold: int
) -> tuple[float | None, ...]:
    """Per coder, the share of their ratings that say the code applies."""
    out: list[float | None] = []
    for shares in result.prevalence:
        if shares is None:
            out.append(None)
            continue
        out.append(sum(s for s, v in zip(shares, scale_values, strict=True) if v >= threshold))
    return tuple(out)


def _row(
    name: str,
    matrix: Any,
    scale: Scale,
    coders: Sequence[str],
    seed: int,
    resamples: int,
    reliability: Any,
) -> CodeAgreement:
    level, weights = _scale_kind(scale)
    result = reliability(
        matrix,
        coders=list(coders),
        level=level,
        weights=weights,
        labels=list(scale.values),
        names=list(scale.labels),
        resamples=resamples,
        seed=seed,
    )
    return CodeAgreement(
        code=name,
        scale=f"{scale.name}, {level}",
        result=result,
        applies=_applies(result, scale.values, scale.threshold),
    )


def _pooled(
    parts: list[tuple[Any, Any, Scale]],
    coders: Sequence[str],
    seed: int,
    resamples: int,
    reliability: Any,
) -> CodeAgreement:
    """All codes as one set of units; codes on different scales are reduced to applies."""
    import numpy as np

    scales = {p[2].values for p in parts}
    same = len(scales) == 1
    matrices, clusters = [], []
    for matrix, responses, scale in parts:
        if not same:
            matrix = np.where(np.isnan(matrix), np.nan, matrix >= scale.threshold).astype(float)
        matrices.append(matrix)
        clusters.append(responses.astype(str))
    data = np.concatenate(matrices, axis=1)
    if same:
        scale = parts[0][2]
        level, weights = _scale_kind(scale)
        labels, names = list(scale.values), list(scale.labels)
        described = f"{scale.name}, {level}"
    else:
        level, weights, labels = "nominal", None, [0, 1]
        names = ["does not apply", "applies"]
        described = "applies / does not apply, nominal"
    result = reliability(
        data,
        coders=list(coders),
        level=level,
        weights=weights,
        labels=labels,
        names=names,
        clusters=np.concatenate(clusters),
        resamples=resamples,
        seed=seed,
    )
    applies = (
        _applies(result, parts[0][2].values, parts[0][2].threshold)
        if same
        else tuple(None if s is None else s[1] for s in result.prevalence)
    )
    return CodeAgreement(code=POOLED, scale=described, result=result, applies=applies)


# --- output ----------------------------------------------------------------------------

COLUMNS = ("Code", "Scale", "Units", "Agreement", "Cohen's kappa", "Krippendorff's alpha")


def _estimate(e: Estimate | None, *, percent: bool = False) -> str:
    if e is None:
        return "-"
    if e.value is None:
        return "undefined"
    spec = ".1%" if percent else ".2f"
    if e.low is None or e.high is None:
        return format(e.value, spec)
    return f"{e.value:{spec}} [{e.low:{spec}}, {e.high:{spec}}]"


def _notes(row: CodeAgreement) -> list[str]:
    r = row.result
    out = []
    thin: dict[int, list[str]] = {}
    for name, e in (("kappa", r.kappa), ("alpha", r.alpha)):
        if e is None:
            continue
        if e.value is None:
            out.append(f"{name} undefined: {e.reason}")
        elif e.undefined_resamples:
            thin.setdefault(e.undefined_resamples, []).append(name)
    out += [
        f"{' and '.join(names)} undefined in {count} of {r.bootstrap.resamples} resamples "
        "(left out of the interval)"
        for count, names in thin.items()
    ]
    if r.percent.value is None and r.percent.reason:
        out.append(f"agreement undefined: {r.percent.reason}")
    if r.paradox:
        out.append(r.paradox)
    return [safe(n) for n in out]


def _cells(row: CodeAgreement, coders: Sequence[str]) -> list[str]:
    r = row.result
    applies = ", ".join(
        f"{safe(c)} {'-' if a is None else f'{a:.0%}'}"
        for c, a in zip(coders, row.applies, strict=True)
    )
    return [
        safe(row.code),
        safe(row.scale),
        str(r.n_units),
        _estimate(r.percent, percent=True),
        _estimate(r.kappa),
        _estimate(r.alpha),
        applies,
        "; ".join(_notes(row)),
    ]


def _all_rows(report: AgreementReport) -> list[CodeAgreement]:
    return ([report.pooled] if report.pooled else []) + list(report.per_code)


def caption(report: AgreementReport) -> str:
    """One line for under a table in a methods section."""
    b = report.bootstrap
    coders = ", ".join(safe(c) for c in report.coders)
    kappa = (
        "Cohen's kappa unweighted on two-option scales, quadratic-weighted on ordinal scales; "
        if len(report.coders) == 2
        else "Cohen's kappa not reported (more than two coders); "
    )
    return (
        f"Agreement of {coders} on {safe(report.study)}, units = response x code pairs rated "
        f"by {'all' if report.units == 'shared' else 'two or more'} of them. {kappa}"
        f"Krippendorff's alpha nominal on two-option scales, ordinal on longer ones. "
        f"Brackets: 95% percentile bootstrap intervals over units (pooled row: over "
        f"responses), {b.resamples:,} resamples, seed {b.seed}. Applies: share of each "
        f"coder's decisions at or above the scale's applies-from value."
    )


def to_markdown(report: AgreementReport) -> str:
    """A table a methods section can paste, with its caption and notes."""
    header = [*COLUMNS, "Applies", "Notes"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * 2 + "--:|" * 4 + "---|" * 2,
    ]
    lines.extend(
        "| " + " | ".join(cell(c) for c in _cells(row, report.coders)) + " |"
        for row in _all_rows(report)
    )
    lines += ["", f"*Table: {cell(caption(report))}*"]
    lines += [f"\nNote: {safe(n)}." for n in report.notes]
    return "\n".join(lines)


def to_json(report: AgreementReport) -> dict[str, Any]:
    def one(row: CodeAgreement) -> dict[str, Any]:
        return {
            "code": row.code,
            "scale": row.scale,
            "applies": dict(zip(report.coders, row.applies, strict=True)),
            **row.result.to_dict(),
        }

    return {
        "study": report.study,
        "coders": list(report.coders),
        "units": report.units,
        "bootstrap": report.bootstrap.to_dict(),
        "pooled": None if report.pooled is None else one(report.pooled),
        "per_code": [one(r) for r in report.per_code],
        "notes": list(report.notes),
        "caption": caption(report),
    }


def _print_table(report: AgreementReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(
        title=Text(f"Agreement: {', '.join(safe(c) for c in report.coders)}"),
        header_style="bold",
        caption=Text(caption(report)),
    )
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("Code", "Scale") else "right")
    table.add_column("Applies")
    for row in _all_rows(report):
        table.add_row(*(Text(c) for c in _cells(row, report.coders)[:-1]))
    console.print(table)
    for row in _all_rows(report):
        for note in _notes(row):
            console.print(Text.assemble(("note ", "yellow"), f"{safe(row.code)}: {note}"))
    for note in report.notes:
        console.print(Text.assemble(("note ", "yellow"), safe(note)))
