"""The paragraph a methods section needs, written from the study's own numbers.

:func:`methods_paragraph` reads only :class:`study.report._data.ReportData` (the dicts the
commands print with ``--format json``) and says, in order: the model and its
configuration (prompt template, context level, the backend that ran it); the audit
sample (its size, how it was drawn, that it was coded blind); the reliability between
coders; what the validity screen found, in the words of each code's story
(:func:`screening.story.story`: never a tier for a model that adds nothing); any
delegation applied, with its guarantee; and how prevalence was estimated. Each statement
is there only where the study has it, and says so where it has not (no audit, no second
coder). :data:`REFERENCES` lists the works it cites, as docs/method.md does.
"""

from __future__ import annotations

import math
from typing import Any

from study.report._data import POOLED, ReportData

#: The works the paragraph cites, by the key it cites them with.
REFERENCES: dict[str, str] = {
    "Katz 2026": (
        "Katz (2026). Extending Minimal Pairs with Ordinal Surprisal Curves and Entropy "
        "Across Applied Domains. arXiv:2603.14400."
    ),
    "Cacioli 2026": (
        "Cacioli (2026). Screen Before You Interpret: A Portable Validity Protocol for "
        "Benchmark-Based LLM Confidence Signals. arXiv:2604.17714."
    ),
    "Krippendorff 2011": (
        "Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg "
        "School for Communication, University of Pennsylvania."
    ),
    "Clopper and Pearson 1934": (
        "Clopper, C. J., & Pearson, E. S. (1934). The use of confidence or fiducial limits "
        "illustrated in the case of the binomial. Biometrika, 26(4), 404-413."
    ),
    "Bauer 1991": (
        "Bauer, P. (1991). Multiple testing in clinical trials. Statistics in Medicine, "
        "10(6), 871-890."
    ),
    "Angelopoulos et al. 2021": (
        "Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I., & Lei, L. (2021). "
        "Learn then Test: Calibrating predictive algorithms to achieve risk control. "
        "arXiv:2110.01052."
    ),
    "Angelopoulos et al. 2023": (
        "Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023). "
        "Prediction-powered inference. Science, 382(6671), 669-674."
    ),
    "Angelopoulos, Duchi and Zrnic 2023": (
        "Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient "
        "prediction-powered inference. arXiv:2311.01453."
    ),
}


def _num(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _interval(estimate: dict[str, Any] | None) -> str:
    """``0.61 [0.45, 0.77]`` from an estimate dict (``value``, ``low``, ``high``)."""
    if not estimate or estimate.get("value") is None:
        return "undefined"
    return f"{_num(estimate['value'])} [{_num(estimate['low'])}, {_num(estimate['high'])}]"


def _config(data: ReportData) -> str:
    study = data.section("study") or {}
    configs = study.get("configurations") or []
    screen = data.section("screen")
    wanted = screen["config"]["id"] if screen is not None else None
    row = next((c for c in configs if c["id"] == wanted), None) or next(
        (c for c in configs if c.get("active")), None
    )
    codes = study.get("codes") or []
    opening = (
        f"The {study.get('responses', 0):,} responses were coded deductively with the "
        f"{len(codes)} codes of the codebook \u201c{study.get('codebook', '')}\u201d "
        f"(version {study.get('codebook_version', '?')})."
    )
    if row is None:
        return opening + " No language model scored them."
    backend = str(row["backend"]).split(" ", 1)[0]
    return (
        f"{opening} A language model, {row['model']} (revision {row['revision']}, "
        f"{row['dtype']}, run with {backend}), scored each response against each code by "
        "reading its next-token probabilities over every point of the code's scale at once "
        f"(ordinal surprisal curves; Katz 2026), with prompt template {row['template']} "
        f"(hash {row['template_hash']}) at context level \u201c{row['context']}\u201d; "
        f"{row['scored']:,} pairs were scored. Its pick is the scale point of least "
        "surprisal and its confidence the largest renormalised probability."
    )


def _audit(data: ReportData) -> str:
    audit = data.section("audit")
    if audit is None:
        return (
            "No random audit sample was drawn: the figures below rest on the coder's own "
            "decisions, which follow the order the coder chose and are not a random sample."
        )
    rows = audit["codes"]
    sizes = sorted({r["size"] for r in rows})
    size = (
        f"{sizes[0]:,} responses per code"
        if len(sizes) == 1
        else f"{sizes[0]:,} to {sizes[-1]:,} responses per code"
    )
    coded = sum(r["coded"] for r in rows)
    total = sum(r["size"] for r in rows)
    skipped = sum(r["skipped"] for r in rows)
    unblind = sum(r["unblind"] for r in rows)
    screen = data.section("screen") or {}
    coder = screen.get("coder") or "the coder"
    text = (
        f"A simple random audit sample of {size} was drawn from the {audit['population']:,} "
        f"responses (one seeded random order of the responses, seed {audit['seed']}, "
        "shared by every code, independent of the model), and coded blind, the model's "
        f"answer hidden: {coded:,} of its {total:,} pairs were coded blind by {coder}"
    )
    if skipped:
        text += f", {skipped:,} skipped (missing values, counted against the model)"
    if unblind:
        text += f"; {unblind:,} audit pairs decided while seeing the model are left out"
    return text + "."


def _reliability(data: ReportData) -> str:
    agreement = data.section("agreement")
    if agreement is None:
        return "Reliability between coders was not measured: the study has one coder."
    pooled = agreement.get("pooled") or {}
    coders = ", ".join(agreement.get("coders", []))
    parts = [f"percent agreement {_interval(pooled.get('percent'))}"]
    if pooled.get("kappa") is not None:
        weights = pooled.get("kappa_weights")
        kind = "Cohen's kappa" + (f" ({weights}-weighted)" if weights not in (None, "none") else "")
        parts.append(f"{kind} {_interval(pooled.get('kappa'))}")
    parts.append(f"Krippendorff's alpha {_interval(pooled.get('alpha'))} (Krippendorff 2011)")
    boot = agreement.get("bootstrap") or {}
    return (
        f"Reliability between coders ({coders}) on {pooled.get('n_units', 0):,} units "
        f"coded by two or more of them: {', '.join(parts)}, with 95% percentile bootstrap "
        f"intervals ({boot.get('resamples', '?')} resamples over units)."
    )


def _screen(data: ReportData) -> str:
    screen = data.section("screen")
    if screen is None:
        return "The model's confidence was not screened (the study has no scores or decisions)."
    sample = (
        f"the {screen['sample_size']:,} blind audit decisions of {screen['coder']}"
        if screen["sample"] == "audit"
        else f"all {screen['sample_size']:,} decisions of {screen['coder']} (not a random sample)"
    )
    groups = [(POOLED, screen["pooled"])] if len(screen["per_code"]) != 1 else []
    groups += list(screen["per_code"].items())
    said = []
    for name, group in groups:
        told = group.get("story") or {}
        head = (screen.get("headlines") or {}).get("pooled" if name == POOLED else "per_code", {})
        if name != POOLED:
            head = head.get(name) if isinstance(head, dict) else None
        kappa = ""
        if head and head.get("kappa") is not None:
            low, high = head.get("kappa_ci") or (None, None)
            kappa = f", kappa {_num(head['kappa'])} [{_num(low)}, {_num(high)}]"
        words = told.get("verdict") or group.get("pattern") or group.get("tier", "")
        said.append(f"{name}: {words}{kappa}")
    headline = screen.get("headline") or ""
    return (
        "The model's confidence was screened for validity before any calibration figure was "
        f"read (Cacioli 2026), on {sample}, at the confidence cut {screen['cut']}: "
        + (f"{headline}. " if headline else "")
        + "By code: "
        + "; ".join(said)
        + ". The screen judges the pattern of confidence against correctness, not the "
        "model; where the model gave one answer to every pair or agreed no better than "
        "chance it adds nothing and no tier or calibration is reported."
    )


def _delegation(data: ReportData) -> str:
    applied = (data.section("study") or {}).get("delegations") or {}
    if not applied:
        return "No pair was delegated to the model: every final code is a coder's decision."
    sentences = " ".join(str(s) for s in applied.values())
    return (
        "Pairs the model was confident about were delegated to it where a certified "
        "threshold exists: fixed-sequence testing of thresholds from the highest "
        "confidence down (Bauer 1991; Angelopoulos et al. 2021) with exact binomial "
        f"(Clopper and Pearson 1934) and finite-population bounds. {sentences}"
    )


def _prevalence(data: ReportData) -> str:
    findings = data.section("findings")
    if findings is None:
        return "Prevalence was not estimated: it needs blind decisions on a random audit sample."
    estimates = []
    for code in findings.get("codes", []):
        ppi = code.get("ppi") or {}
        if ppi.get("estimate") is None:
            continue
        estimates.append(
            f"{code['code_name']} {100 * ppi['estimate']:.1f}% "
            f"[{100 * ppi['lower']:.1f}, {100 * ppi['upper']:.1f}]"
        )
    text = (
        "The prevalence of each code was estimated by prediction-powered inference "
        "(PPI++ with power tuning; Angelopoulos et al. 2023; Angelopoulos, Duchi and Zrnic "
        "2023), which corrects the model's picks on every response with the blind audit "
        f"decisions, with {round(100 * findings.get('level', 0.95))}% intervals"
    )
    return text + (f": {'; '.join(estimates)}." if estimates else ".")


def methods_paragraph(data: ReportData) -> str:
    """The methods paragraph of ``data``'s study (module docstring)."""
    return " ".join(
        (
            _config(data),
            _audit(data),
            _reliability(data),
            _screen(data),
            _delegation(data),
            _prevalence(data),
        )
    )


def cited(paragraph: str) -> list[str]:
    """The references ``paragraph`` cites, in :data:`REFERENCES` order."""
    return [text for key, text in REFERENCES.items() if key in paragraph]
