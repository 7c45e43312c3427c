"""What a study report shows: its sections, each with tables and figures, as plain values.

Built from :class:`study.report._data.ReportData` alone, so every number comes from the
same dicts the commands print with ``--format json``. A :class:`Figure` says what to draw
(its ``data`` are those dicts' values, untouched), with a title, axis labels, a caption
naming the sample and alt text; :mod:`study.report._draw` draws it. A :class:`Table` is
rows of cells, written as HTML or CSV.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codebooks.mapping import slugify
from study.report._data import POOLED, ReportData
from study.report._figure import Figure

#: What a missing section's box starts with.
TO_DO = "Not available yet"


@dataclass(frozen=True)
class Table:
    """One table: a header and rows of cells (text or numbers)."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Quote:
    """A response quoted with one passage marked (``before``, ``marked``, ``after``),
    and what the quotation shows (``caption``)."""

    before: str
    marked: str
    after: str
    caption: str


@dataclass(frozen=True)
class Section:
    """One section of the report: prose, tables and figures, or what to do to fill it."""

    name: str
    title: str
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    missing: str | None = None
    notes: tuple[str, ...] = field(default=())
    figures_first: bool = False
    quotes: tuple[Quote, ...] = ()


def _slug(name: str) -> str:
    return "all-codes" if name == POOLED else slugify(name)


def _num(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def _pct(value: Any) -> str:
    return _num(value, ".1%")


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else ""


def sections(data: ReportData) -> tuple[Section, ...]:
    """The report's sections in reading order."""
    out = [
        _study(data),
        _methods(data),
        _audit(data),
        _screen(data),
        _delegation(data),
        _agreement(data),
        _confusion(data),
        _entropy(data),
        _curves(data),
    ]
    evidence = _evidence(data)
    if evidence is not None:
        out.append(evidence)
    comparison = _comparison(data)
    if comparison is not None:
        out.append(comparison)
    return tuple(out)


def figures(data: ReportData) -> tuple[Figure, ...]:
    """Every figure of the report, in reading order."""
    return tuple(f for s in sections(data) for f in s.figures)


def tables(data: ReportData) -> tuple[Table, ...]:
    """Every table of the report, in reading order."""
    return tuple(t for s in sections(data) for t in s.tables)


# -- the methods paragraph -------------------------------------------------------------


def _methods(data: ReportData) -> Section:
    from study.report._methods import cited, methods_paragraph

    paragraph = methods_paragraph(data)
    references = "References: " + " ".join(cited(paragraph))
    return Section("methods", "For the methods section", lines=(paragraph, references))


# -- the study -------------------------------------------------------------------------


def _study(data: ReportData) -> Section:
    s = data.sections["study"]
    waves = s["waves"]
    lines = (
        f"{s['responses']} responses, {len(s['codes'])} codes, {len(waves)} "
        f"wave{'s' if len(waves) != 1 else ''}, "
        f"{len(s['configurations'])} scoring configuration"
        f"{'s' if len(s['configurations']) != 1 else ''}.",
        f"Codebook {s['codebook']!s}, version {s['codebook_version']} "
        f"(content hash {s['codebook_hash']}).",
        "Coders: " + (", ".join(s["coders"]) if s["coders"] else "none yet") + ".",
    )
    ledger = Table(
        name="scoring-ledger",
        title="Scoring ledger",
        columns=(
            "Configuration",
            "Active",
            "Model",
            "Revision",
            "Backend",
            "Template",
            "Template hash",
            "Context",
            "Scale",
            "Scored pairs",
        ),
        rows=tuple(
            (
                c["id"],
                "yes" if c["active"] else "",
                c["model"],
                c["revision"],
                c["backend"],
                c["template"],
                c["template_hash"],
                c["context"],
                c["scale"],
                c["scored"],
            )
            for c in s["configurations"]
        ),
        caption="Every scoring configuration stored in the study: the model's identity, "
        "the prompt template and its hash, and the context the model saw.",
    )
    codes = Table(
        name="codes",
        title="Codes",
        columns=("Code", "Id", "Scale"),
        rows=tuple((c["name"], c["id"], c["scale"]) for c in s["codes"]),
    )
    wave_table = Table(
        name="waves",
        title="Waves of responses",
        columns=("Wave", "Responses", "Source", "Added"),
        rows=tuple((w["wave"], w["responses"], w["source"], w["at"]) for w in waves),
    )
    return Section(
        "study", f"The study: {s['name']}", lines=lines, tables=(codes, wave_table, ledger)
    )


# -- the audit -------------------------------------------------------------------------


def _audit(data: ReportData) -> Section:
    title = "The blind random audit"
    a = data.section("audit")
    if a is None:
        return Section("audit", title, missing=data.missing.get("audit"))
    table = Table(
        name="audit-progress",
        title="Audit progress per code",
        columns=(
            "Code",
            "Sample size",
            "Coded blind",
            "Skipped",
            "Remaining",
            "Unblind",
            "Blind share",
        ),
        rows=tuple(
            (
                c["code"],
                c["size"],
                c["coded"],
                c["skipped"],
                c["remaining"],
                c["unblind"],
                _pct(c["blind_share"]),
            )
            for c in a["codes"]
        ),
        caption="Audit pairs are the first responses of one seeded random order; only "
        "decisions made without seeing the model (blind) count as audit evidence.",
    )
    lines = (
        f"One random order of the {a['population']} responses, seed {a['seed']}, drawn "
        f"{a['drawn_at']} ({len(a['draws'])} draw{'s' if len(a['draws']) != 1 else ''}).",
    )
    return Section("audit", title, lines=lines, tables=(table,))


# -- the screen ------------------------------------------------------------------------


def _groups(screen: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    groups = [(POOLED, screen["pooled"])] if len(screen["per_code"]) != 1 else []
    return groups + list(screen["per_code"].items())


def sample_words(screen: dict[str, Any]) -> str:
    """Which decisions the screen used, in words."""
    if screen["sample"] == "audit":
        return f"the blind random audit ({screen['sample_size']} decisions of {screen['coder']})"
    return f"all {screen['sample_size']} decisions of {screen['coder']} (not a random sample)"


def _screen(data: ReportData) -> Section:
    title = "The validity screen"
    screen = data.section("screen")
    if screen is None:
        return Section("screen", title, missing=data.missing.get("screen"))
    lines = []
    if screen["headline"]:
        lines.append(_sentence(screen["headline"]))
    if screen["next_action"]:
        lines.append("Next: " + _sentence(screen["next_action"]))
    if screen["study_warning"]:
        lines.append("Warning: " + _sentence(screen["study_warning"]))
    lines.append(f"Configuration {screen['config']['label']}; confidence cut: {screen['cut']}.")
    lines.append("Sample: " + _sentence(sample_words(screen)))
    if screen.get("coder_note"):
        lines.append("Coder: " + _sentence(screen["coder_note"]))
    if screen["sample_note"]:
        lines.append("Note: " + _sentence(screen["sample_note"]))
    tables_out = []
    figs: list[Figure] = []
    plan = data.section("delegation")
    for name, report in _groups(screen):
        tables_out.append(
            Table(
                name=f"vrs-{_slug(name)}",
                title=f"Validity report (VRS): {name}",
                columns=("Row", "Value"),
                rows=tuple(data.vrs_rows.get(name, ())),
            )
        )
        phase_b = report.get("phase_b")
        if phase_b is None:
            continue
        figs.append(_reliability(name, report, phase_b, screen))
        code_plan = _code_plan(plan, name)
        figs.append(_risk_coverage(name, phase_b, screen, code_plan))
    notes = tuple(screen["warnings"])
    nothing = [
        name for name, report in _groups(screen) if report.get("story", {}).get("adds_nothing")
    ]
    if nothing:
        notes += (
            "No reliability diagram or risk-coverage curve for "
            + ", ".join(nothing)
            + ": the model adds nothing there, so its calibration would mean nothing.",
        )
    if not figs and len(nothing) < len(_groups(screen)):
        notes += (
            "No reliability diagram or risk-coverage curve: the screen allows them only "
            "where its tier is Valid or Indeterminate.",
        )
    return Section(
        "screen",
        title,
        figures_first=True,
        lines=tuple(lines),
        tables=tuple(tables_out),
        figures=tuple(figs),
        notes=notes,
    )


def _code_plan(plan: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    if plan is None:
        return None
    for code in plan["codes"].values():
        if code["code_name"] == name:
            return dict(code)
    return None


def _reliability(
    name: str, report: dict[str, Any], phase_b: dict[str, Any], screen: dict[str, Any]
) -> Figure:
    bins = phase_b["calibration"]
    worst = max(bins, key=lambda b: abs(b["accuracy"] - b["confidence"]), default=None)
    alt = (
        f"Reliability diagram for {name}: {len(bins)} confidence bins; "
        + (
            f"the largest gap is in the bin {worst['low']:.1f}-{worst['high']:.1f} "
            f"(mean confidence {worst['confidence']:.2f}, observed accuracy "
            f"{worst['accuracy']:.2f}, n = {worst['n']}). "
            if worst
            else ""
        )
        + f"Expected calibration error {_num(phase_b['ece'])}."
    )
    return Figure(
        name=f"reliability-{_slug(name)}",
        kind="reliability",
        code=name,
        title=f"Reliability diagram: {name}",
        xlabel="Model confidence (p_max), mean per bin",
        ylabel="Observed accuracy",
        caption=(
            f"Confidence in ten equal-width bins against the share of the model's picks "
            f"that agree with {sample_words(screen)}, {report['n_items']} pairs; bars are "
            f"exact 95% (Clopper-Pearson) intervals, the number above each point its "
            f"pairs; the diagonal is perfect calibration. ECE {_num(phase_b['ece'])}."
            + (f" {phase_b['caveat']}" if phase_b.get("caveat") else "")
        ),
        alt=alt,
        data={"bins": bins, "ece": phase_b["ece"]},
    )


def _risk_coverage(
    name: str, phase_b: dict[str, Any], screen: dict[str, Any], plan: dict[str, Any] | None
) -> Figure:
    points = phase_b["risk_coverage"]
    certified = None
    max_error = None
    if plan is not None:
        max_error = plan["max_error"]
        if plan["threshold"] is not None:
            certified = {
                "threshold": plan["threshold"],
                "n": plan["n"],
                "errors": plan["errors"],
                "upper_bound": plan["upper_bound"],
                "n_audit": plan["n_audit"],
                "coverage": plan["n"] / plan["n_audit"],
                "risk": plan["errors"] / plan["n"],
                "level": plan["level"],
            }
    if certified is not None:
        marked = (
            f"The certified threshold {certified['threshold']:.3f} is marked: "
            f"{certified['n']} audit pairs at or above it, {certified['errors']} errors, "
            f"upper bound {certified['upper_bound']:.1%} at {certified['level']:.0%} "
            f"confidence (dashed line: the maximum error {max_error:.1%})."
        )
    elif plan is not None:
        marked = f"No threshold is certified: {plan['reason']}."
    elif name == POOLED:
        marked = "Delegation is certified code by code: see each code's curve."
    else:
        marked = "No delegation plan: the study has no audit sample."
    return Figure(
        name=f"risk-coverage-{_slug(name)}",
        kind="risk_coverage",
        code=name,
        title=f"Risk-coverage curve: {name}",
        xlabel="Share of pairs delegated (coverage)",
        ylabel="Error rate among them (risk)",
        caption=(
            f"Delegating every pair at or above a confidence threshold: the share of "
            f"{sample_words(screen)} kept (coverage) against the model's error rate among "
            f"them (risk), thresholds from the highest down. {marked}"
        ),
        alt=(
            f"Risk-coverage curve for {name}: {len(points)} thresholds; at full coverage "
            f"the error rate is {_pct(points[-1]['risk']) if points else 'n/a'}. {marked}"
        ),
        data={"points": points, "certified": certified, "max_error": max_error},
    )


# -- delegation ------------------------------------------------------------------------


def _delegation(data: ReportData) -> Section:
    title = "Delegation"
    plan = data.section("delegation")
    if plan is None:
        return Section("delegation", title, missing=data.missing.get("delegation"))
    codes = list(plan["codes"].values())
    table = Table(
        name="delegation",
        title="Delegation plan per code",
        columns=(
            "Code",
            "Screen",
            "Threshold",
            "Audit n",
            "Errors",
            "Bound",
            "Delegated",
            "Left for review",
        ),
        rows=(
            *(
                (
                    c["code_name"],
                    c.get("screen") or c["tier"],
                    _num(c["threshold"]) if c["threshold"] is not None else "refused",
                    c["n"] if c["threshold"] is not None else "-",
                    c["errors"] if c["threshold"] is not None else "-",
                    _pct(c["upper_bound"]) if c["threshold"] is not None else "-",
                    c["delegated"],
                    c["left"],
                )
                for c in codes
            ),
            ("Total", "", "", "", "", "", plan["delegated"], plan["left"]),
        ),
        caption=(
            f"At most {plan['max_error']:.1%} errors at {plan['level']:.0%} confidence, "
            f"on the blind audit decisions of {plan['coder']}; model {plan['config']}."
        ),
    )
    lines = tuple(c["guarantee"] for c in codes)
    return Section("delegation", title, lines=lines, tables=(table,))


# -- agreement -------------------------------------------------------------------------


def _estimate(e: dict[str, Any] | None, *, percent: bool = False) -> str:
    if e is None:
        return "-"
    if e["value"] is None:
        return "undefined"
    spec = ".1%" if percent else ".2f"
    if e["low"] is None or e["high"] is None:
        return format(e["value"], spec)
    return f"{e['value']:{spec}} [{e['low']:{spec}}, {e['high']:{spec}}]"


def _agreement(data: ReportData) -> Section:
    title = "Inter-coder reliability"
    report = data.section("agreement")
    if report is None:
        return Section("agreement", title, missing=data.missing.get("agreement"))
    rows = ([report["pooled"]] if report["pooled"] else []) + list(report["per_code"])
    table = Table(
        name="agreement",
        title="Agreement per code",
        columns=("Code", "Scale", "Units", "Agreement", "Cohen's kappa", "Krippendorff's alpha"),
        rows=tuple(
            (
                r["code"],
                r["scale"],
                r["n_units"],
                _estimate(r["percent"], percent=True),
                _estimate(r["kappa"]),
                _estimate(r["alpha"]),
            )
            for r in rows
        ),
        caption=report["caption"],
    )
    forest = Figure(
        name="forest-agreement",
        kind="forest",
        code=None,
        title="Agreement per code: " + " vs ".join(report["coders"]),
        xlabel="Coefficient (1 = perfect agreement, 0 = chance)",
        ylabel="Code",
        caption=(
            "Cohen's kappa and Krippendorff's alpha per code and pooled, with their 95% "
            f"percentile bootstrap intervals ({report['bootstrap']['resamples']} resamples, "
            f"seed {report['bootstrap']['seed']}), between {', '.join(report['coders'])}."
        ),
        alt="Forest plot of agreement: "
        + "; ".join(
            f"{r['code']} kappa {_estimate(r['kappa'])}, alpha {_estimate(r['alpha'])}"
            for r in rows
        )
        + ".",
        data={
            "rows": [{"code": r["code"], "kappa": r["kappa"], "alpha": r["alpha"]} for r in rows],
            "coders": report["coders"],
        },
    )
    return Section(
        "agreement",
        title,
        tables=(table,),
        figures=(forest,),
        notes=tuple(report["notes"]),
    )


# -- the model against the reference coder ----------------------------------------------


def _confusion(data: ReportData) -> Section:
    title = "The model against the reference coder"
    found = data.section("confusion")
    if found is None:
        return Section("confusion", title, missing=data.missing.get("confusion"))
    screen = data.sections["screen"]
    tables_out = []
    figs = []
    for name, c in found["codes"].items():
        labels = c["labels"]
        tables_out.append(
            Table(
                name=f"confusion-{_slug(name)}",
                title=f"Confusion matrix: {name}",
                columns=(f"{found['coder']} \\ model", *labels),
                rows=tuple((label, *row) for label, row in zip(labels, c["counts"], strict=True)),
            )
        )
        if not c["n"]:
            continue
        diagonal = sum(c["counts"][i][i] for i in range(len(labels)))
        figs.append(
            Figure(
                name=f"confusion-{_slug(name)}",
                kind="confusion",
                code=name,
                title=f"Confusion matrix: {name}",
                xlabel="Model's pick",
                ylabel=f"Decision of {found['coder']}",
                caption=(
                    f"The model's pick against the decision of {found['coder']} on "
                    f"{sample_words(screen)}: {c['n']} pairs of {name}, {diagonal} "
                    f"({diagonal / c['n']:.0%}) on the diagonal."
                ),
                alt=(
                    f"Confusion matrix for {name}: rows are {found['coder']}'s decisions "
                    f"({', '.join(labels)}), columns the model's picks; {diagonal} of "
                    f"{c['n']} pairs agree exactly."
                ),
                data=c,
            )
        )
    return Section("confusion", title, tables=tuple(tables_out), figures=tuple(figs))


# -- entropy and example curves ---------------------------------------------------------


def _entropy(data: ReportData) -> Section:
    title = "Where the model hesitates: entropy by code"
    found = data.section("entropy")
    if found is None:
        return Section("entropy", title, missing=data.missing.get("entropy"))
    codes = found["codes"]
    table = Table(
        name="entropy",
        title="Normalised entropy per code",
        columns=("Code", "Pairs", "Mean", "Min", "Q1", "Median", "Q3", "Max"),
        rows=tuple(
            (name, c["n"], _num(c["mean"]), *(_num(q) for q in c["quartiles"]))
            for name, c in codes.items()
        ),
    )
    figure = Figure(
        name="entropy-by-code",
        kind="entropy",
        code=None,
        title="Entropy by code",
        xlabel="Normalised entropy of the model's curve (0 = certain, 1 = uniform)",
        ylabel="Code",
        caption=(
            f"The distribution of the normalised entropy H / ln K over every scored pair of "
            f"each code (configuration #{found['config_id']}): box from the first to the "
            f"third quartile, line at the median, whiskers at the minimum and maximum."
        ),
        alt="Entropy by code: "
        + "; ".join(
            f"{name} median {c['quartiles'][2]:.2f} (quartiles {c['quartiles'][1]:.2f}-"
            f"{c['quartiles'][3]:.2f}, {c['n']} pairs)"
            for name, c in codes.items()
        )
        + ".",
        data={"codes": codes},
    )
    return Section("entropy", title, tables=(table,), figures=(figure,))


def _curves(data: ReportData) -> Section:
    title = "Example curves"
    found = data.section("curves")
    if found is None:
        return Section("curves", title, missing=data.missing.get("curves"))
    figs = []
    for name, examples in found["codes"].items():
        if not examples:
            continue
        figs.append(
            Figure(
                name=f"curves-{_slug(name)}",
                kind="curves",
                code=name,
                title=f"Surprisal curves: {name}",
                xlabel="Scale option",
                ylabel="Surprisal (-log p, nats)",
                caption=(
                    f"The model's surprisal over the scale of {name} for the responses "
                    "with the lowest, the median and the highest normalised entropy of "
                    f"the code (configuration #{found['config_id']}); lower is likelier."
                ),
                alt=f"Surprisal curves for {name}: "
                + "; ".join(
                    f"{e['which']} (response {e['response_id']}, entropy "
                    f"{e['norm_entropy']:.2f}) lowest at "
                    + (
                        e["labels"][min(range(len(e["surprisal"])), key=e["surprisal"].__getitem__)]
                        if e["surprisal"]
                        else "n/a"
                    )
                    for e in examples
                )
                + ".",
                data={"examples": examples},
            )
        )
    lines = tuple(
        f"{name}, {e['which']}: response {e['response_id']}: “{_clip(e['text'])}”"
        for name, examples in found["codes"].items()
        for e in examples
    )
    return Section("curves", title, lines=lines, figures=tuple(figs))


#: Characters of a response quoted on each side of its evidence sentence.
QUOTE_CONTEXT = 240


def _evidence(data: ReportData) -> Section | None:
    """A few pairs per code with the sentence that moved the model marked; no section
    where no evidence was measured."""
    found = data.section("evidence")
    if found is None:
        return None
    quotes = []
    for name, examples in found["codes"].items():
        for e in examples:
            text, start, end = e["text"], e["start"], e["end"]
            before = text[max(0, start - QUOTE_CONTEXT) : start]
            after = text[end : end + QUOTE_CONTEXT]
            quotes.append(
                Quote(
                    before=("…" if start > QUOTE_CONTEXT else "") + before,
                    marked=text[start:end],
                    after=after + ("…" if end + QUOTE_CONTEXT < len(text) else ""),
                    caption=(
                        f"{name}, response {e['response_id']}: P(applies) "
                        f"{e['applies']:.2f}, {e['applies_without']:.2f} without the "
                        f"marked sentence (−{e['effect']:.2f})."
                    ),
                )
            )
    learned = bool(found.get("learned"))
    lines = (
        "For each code, up to three of the pairs the model finds most likely to apply, "
        "with the sentence of the response whose absence lowers P(applies) most marked: "
        "each sentence was left out in turn and the pair scored again with the same "
        f"model and prompt (configuration #{found['config_id']}"
        + (", whose learned curves read the model's answer to every variant" if learned else "")
        + "). It is measured on the model, not a reason the model wrote; explaining the "
        "study again measures more pairs.",
    )
    return Section(
        "evidence", "The sentence that moved the model", lines=lines, quotes=tuple(quotes)
    )


def _clip(text: str, width: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


# -- comparison of configurations -------------------------------------------------------


def _comparison(data: ReportData) -> Section | None:
    title = "Scoring configurations compared"
    found = data.section("comparison")
    if found is None:
        message = data.missing.get("comparison")
        return None if message is None else Section("comparison", title, missing=message)
    labels = {c["id"]: c["label"] for c in found["configs"]}
    table = Table(
        name="comparison",
        title="Configurations side by side",
        columns=("Code", "Configuration", "Pairs", "Agreement", "Kappa", "Tier", "AUROC"),
        rows=tuple(
            (
                r["code"],
                labels.get(r["config_id"], r["config_id"]),
                r["n"],
                _pct(r["agreement"]),
                _interval(r["kappa"]),
                r["tier"],
                _num(r["auroc"]),
            )
            for r in found["rows"]
        ),
        caption=(
            f"Every configuration on the same {found['n_pairs']} pairs decided by "
            f"{found['coder']}; kappa with a {found['bootstrap']['level']:.0%} paired "
            f"bootstrap interval ({found['bootstrap']['resamples']} resamples)."
        ),
    )
    return Section("comparison", title, tables=(table,))


def _interval(k: dict[str, Any]) -> str:
    if k["point"] is None:
        return "n/a"
    return f"{k['point']:.2f} [{_num(k['low'], '.2f')}, {_num(k['high'], '.2f')}]"


def table_cells(table: Table) -> Sequence[Sequence[str]]:
    """The table's rows as text, for HTML."""
    return [[str(cell) for cell in row] for row in table.rows]
