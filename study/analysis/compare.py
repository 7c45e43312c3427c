"""Compare a study's scoring configurations on the same decided pairs.

Each configuration (model and revision, template, context level, strictness) is scored
against one coder's own decisions (``source == "human"``: an accepted pick is no evidence
about the model) on the pairs that every configuration has scored, so that the numbers
differ only by the configuration. Per code and pooled over codes:

* ``n``: the decided pairs compared;
* ``agreement``: the share of pairs where the model's pick and the decision agree on
  applies / does not apply (the scale's ``applies_from``);
* Cohen's ``kappa`` of pick against decision on the code's scale, quadratic-weighted
  for ordinal scales (more than two options), unweighted for two; pooled over codes, on
  applies / does not apply; with a percentile bootstrap interval over pairs;
* Spearman's ``rho`` of pick against decision (ordinal scales, per code);
* the validity screen's ``tier`` for the configuration (:func:`study.analysis.screen.screen_study`,
  on every decided pair it has scored; it names a response pattern, not a verdict on the
  model), and beside it the ``auroc`` of p_max for correctness (applies agreement;
  None where the model is always right or always wrong);
* the mean normalised ``entropy`` and the mean ``off_scale`` mass (1 - on-scale mass).

``sample="audit"`` compares on the coder's blind decisions on the audit sample only (as
``codecurve screen --sample audit`` screens them), and the tiers are the audit screen's.
The pooled row sums the codes' audit pairs without weights: it compares configurations
on the same pairs, it does not estimate the population.

Differences: for every two configurations, the paired bootstrap interval of their kappa
difference (the same resampled pairs for both); a difference whose interval excludes 0
is larger than its uncertainty.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from codebooks.errors import Remedy
from study.analysis._coder_choice import CoderChoice, choose_coder
from study.errors import DRAW_AUDIT, SCORE, NoBlindDecisionsError, StudyError
from study.labels import backend_name
from study.store import Study

#: Comparing on every decided pair rather than on the blind audit sample.
ALL_PAIRS = Remedy("retry", "compare on all decided pairs", {"sample": "all"})

Sample = Literal["all", "audit"]
SAMPLES: tuple[Sample, ...] = ("all", "audit")
#: The name of the pooled row.
POOLED = "All codes"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval (``nan`` when undefined)."""

    point: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        return {
            k: _plain(v) for k, v in (("point", self.point), ("low", self.low), ("high", self.high))
        }


@dataclass(frozen=True)
class ConfigMetrics:
    """One configuration on one code (or pooled: ``code == POOLED``)."""

    config_id: int
    code: str
    n: int
    agreement: float
    kappa: Interval
    weighted: bool
    rho: float | None
    tier: str
    auroc: float | None
    entropy: float
    off_scale: float
    #: What the screen's story says (``"adds nothing"``, or the tier's plain words).
    verdict: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "config_id": self.config_id,
            "code": self.code,
            "n": self.n,
            "agreement": _plain(self.agreement),
            "kappa": self.kappa.to_dict(),
            "kappa_weights": "quadratic" if self.weighted else "none",
            "rho": None if self.rho is None else _plain(self.rho),
            "tier": self.tier,
            "verdict": self.verdict,
            "auroc": None if self.auroc is None else _plain(self.auroc),
            "mean_norm_entropy": _plain(self.entropy),
            "mean_off_scale_mass": _plain(self.off_scale),
        }


@dataclass(frozen=True)
class Difference:
    """The kappa difference ``a - b`` of two configurations on one code (or pooled)."""

    code: str
    a: int
    b: int
    kappa: Interval

    @property
    def clear(self) -> bool:
        """The interval excludes 0: the difference is larger than its uncertainty."""
        return bool(self.kappa.low > 0 or self.kappa.high < 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "a": self.a,
            "b": self.b,
            "kappa_difference": self.kappa.to_dict(),
            "clear": self.clear,
        }


@dataclass(frozen=True)
class Comparison:
    """Every configuration on the same decided pairs."""

    coder: str
    sample: Sample
    configs: tuple[tuple[int, str], ...]
    rows: tuple[ConfigMetrics, ...]
    differences: tuple[Difference, ...]
    n_pairs: int
    resamples: int
    level: float
    #: Whose decisions, where taken by default among several coders ("" otherwise).
    coder_note: str = ""
    #: Code id -> its name, for the rows and differences (which carry ids).
    code_names: Mapping[str, str] = field(default_factory=dict)

    def code_name(self, code: str) -> str:
        """A row's code as users know it: its name (``POOLED`` stays as it is)."""
        return self.code_names.get(code, code)

    def to_dict(self) -> dict[str, Any]:
        return {
            "coder": self.coder,
            "coder_note": self.coder_note,
            "sample": self.sample,
            "configs": [{"id": i, "label": label} for i, label in self.configs],
            "n_pairs": self.n_pairs,
            "bootstrap": {"resamples": self.resamples, "level": self.level, "unit": "pair"},
            "rows": [{**r.to_dict(), "code_name": self.code_name(r.code)} for r in self.rows],
            "differences": [
                {**d.to_dict(), "code_name": self.code_name(d.code)} for d in self.differences
            ],
        }


def _plain(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def kappa(a: IntArray, b: IntArray, k: int, *, weighted: bool) -> float:
    """Cohen's kappa of two raters' category indices ``0..k-1`` (quadratic weights if asked)."""
    n = a.size
    if n == 0:
        return math.nan
    counts = np.bincount(a * k + b, minlength=k * k).reshape(k, k) / n
    return _kappa_from(counts, _weights(k, weighted))


def _weights(k: int, weighted: bool) -> FloatArray:
    i = np.arange(k, dtype=float)
    if weighted and k > 1:
        return np.asarray(1.0 - ((i[:, None] - i[None, :]) / (k - 1)) ** 2, dtype=float)
    return np.eye(k)


def _kappa_from(table: FloatArray, w: FloatArray) -> float:
    expected = np.outer(table.sum(axis=1), table.sum(axis=0))
    po, pe = float((w * table).sum()), float((w * expected).sum())
    if pe >= 1.0 - 1e-12:
        return math.nan
    return (po - pe) / (1.0 - pe)


def spearman(x: FloatArray, y: FloatArray) -> float:
    """Spearman's rho (Pearson correlation of average ranks); ``nan`` for a constant side."""
    if x.size < 2:
        return math.nan
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def _interval(point: float, draws: FloatArray, level: float) -> Interval:
    finite = draws[np.isfinite(draws)]
    if math.isnan(point) or finite.size < max(10, draws.size // 2):
        return Interval(point, math.nan, math.nan)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Interval(point, float(low), float(high))


#: Bootstrap resamples drawn at a time (the draws of a block are the block's rows of one
#: large draw: a seeded comparison gives the same figures).
BOOTSTRAP_BLOCK = 100


def _boot_kappas(a: IntArray, b: IntArray, k: int, weighted: bool, draws: IntArray) -> FloatArray:
    w = _weights(k, weighted)
    flat = a * k + b
    out = np.empty(draws.shape[0])
    n = a.size
    for i, idx in enumerate(draws):
        table = np.bincount(flat[idx], minlength=k * k).reshape(k, k) / n
        out[i] = _kappa_from(table, w)
    return out


@dataclass(frozen=True)
class _Group:
    """The compared pairs of one code (or pooled), per configuration."""

    code: str
    k: int
    weighted: bool
    value: IntArray
    picks: dict[int, IntArray]
    agree: dict[int, FloatArray]
    confidence: dict[int, FloatArray]
    entropy: dict[int, FloatArray]
    off: dict[int, FloatArray]
    ordinal: bool


def _resolve_coder(study: Study, coder: str | None) -> CoderChoice:
    coders = study.decisions.coders()
    human = [c for c in coders if study.decisions.count(coder=c)]
    if coder is not None:
        if coder not in human:
            known = ", ".join(human) or "none"
            raise StudyError(f"no decisions by coder {coder!r}; coders: {known}", path=study.path)
        return CoderChoice(coder)
    if not human:
        raise StudyError(
            "no decisions to compare with: decide some pairs (or import a coder's decisions) first",
            path=study.path,
            remedy=Remedy("import-codes", "import a coder's decisions"),
        )
    return choose_coder({c: study.decisions.count(coder=c) for c in human}, None)


def _frames(
    study: Study, config_ids: Sequence[int], coder: str, *, sample: Sample
) -> dict[int, Any]:
    codable = {c.id for c in study.codes}
    audit = _audit_pairs(study, coder) if sample == "audit" else None
    frames = {}
    for cid in config_ids:
        frame = study.queries.annotated_pairs(cid, coder=coder)
        if len(frame):
            frame = frame[(frame["source"] == "human") & frame["scored"]]
            frame = frame[frame["code_id"].isin(codable)]
        if audit is not None and len(frame):
            keep = [
                pair in audit for pair in zip(frame["response_id"], frame["code_id"], strict=True)
            ]
            frame = frame[np.asarray(keep, dtype=bool)]
        frames[cid] = frame.set_index(["response_id", "code_id"]) if len(frame) else frame
    return frames


def _audit_pairs(study: Study, coder: str) -> set[tuple[str, str]]:
    """``coder``'s blind decisions on the audit sample, as the screen uses them.

    Raises:
        StudyError: no audit sample, or no blind decision of ``coder`` on it.
    """
    drawn = study.audit.sample()
    if drawn is None:
        raise StudyError(
            "no audit sample drawn: compare on all decided pairs, or draw the audit sample first",
            path=study.path,
            remedy=(ALL_PAIRS, DRAW_AUDIT),
        )
    pairs = {(r, c) for r, c, _ in study.audit.blind_pairs(coder=coder) if drawn.is_audit(r, c)}
    if not pairs:
        raise NoBlindDecisionsError(
            f"no blind decisions by {coder!r} on the audit sample yet: code the audit "
            "blind first, or compare on all decided pairs",
            path=study.path,
            remedy=(Remedy("audit", "code the audit blind"), ALL_PAIRS),
        )
    return pairs


def _tiers(study: Study, config_id: int, coder: str, sample: Sample) -> dict[str, tuple[str, str]]:
    """Code id (or ``POOLED``) -> the screen's tier and what its story says of it
    (:func:`screening.story.story`: ``"adds nothing"`` where the model adds nothing)."""
    from study.analysis.screen import screen_study

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            screened = screen_study(study, config_id, coder=coder, sample=sample)
    except StudyError:
        return {}
    tiers = {POOLED: (str(screened.pooled.screen.tier), screened.story(None).verdict)}
    for code in study.codes:  # the screen names its per-code reports by code name
        name = code.name if code.name in screened.per_code else code.id
        report = screened.per_code.get(name)
        if report is not None:
            tiers[code.id] = (str(report.screen.tier), screened.story(name).verdict)
    return tiers


def compare_configs(
    study: Study,
    *,
    coder: str | None = None,
    sample: Sample = "all",
    config_ids: Sequence[int] | None = None,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Comparison:
    """Compare the study's scoring configurations against one coder's decisions.

    Raises:
        StudyError: no configurations, no decisions, an unknown or ambiguous coder, no
            pair decided and scored by every configuration, or ``sample="audit"`` before
            an audit sample was drawn or before the coder decided any of it blind.
    """
    if sample not in SAMPLES:
        raise StudyError(f"unknown sample {sample!r}; use one of {', '.join(SAMPLES)}")
    if sample == "audit" and study.audit.sample() is None:
        raise StudyError(
            "no audit sample drawn: compare on all decided pairs, or draw the audit sample first",
            path=study.path,
            remedy=(ALL_PAIRS, DRAW_AUDIT),
        )
    ids = [c.id for c in study.scores.configs()] if config_ids is None else list(config_ids)
    if not ids:
        raise StudyError(
            "the study has no scoring configurations; score it first",
            path=study.path,
            remedy=SCORE,
        )
    choice = _resolve_coder(study, coder)
    chosen = choice.coder or ""
    frames = _frames(study, ids, chosen, sample=sample)
    common = None
    for frame in frames.values():
        keys = set(frame.index) if len(frame) else set()
        common = keys if common is None else common & keys
    pairs = sorted(common or ())
    if not pairs:
        raise StudyError(
            f"no pair decided by {chosen!r} is scored under every configuration; score the "
            "decided pairs first",
            path=study.path,
        )
    rng = np.random.default_rng(seed)
    groups = _groups(study, frames, ids, pairs)
    rows: list[ConfigMetrics] = []
    differences: list[Difference] = []
    tiers = {cid: _tiers(study, cid, chosen, sample) for cid in ids}
    for group in groups:
        n = group.value.size
        # The same draws for every configuration (a paired bootstrap), made a block at
        # a time: resamples x n indexes at once would be gigabytes on a large study.
        parts: dict[int, list[FloatArray]] = {cid: [] for cid in ids}
        for start in range(0, resamples, BOOTSTRAP_BLOCK):
            draws = rng.integers(0, n, size=(min(BOOTSTRAP_BLOCK, resamples - start), n))
            for cid in ids:
                parts[cid].append(
                    _boot_kappas(group.picks[cid], group.value, group.k, group.weighted, draws)
                )
        boots = {cid: np.concatenate(parts[cid]) if parts[cid] else np.empty(0) for cid in ids}
        points = {
            cid: kappa(group.picks[cid], group.value, group.k, weighted=group.weighted)
            for cid in ids
        }
        for cid in ids:
            tier, verdict = tiers[cid].get(group.code, ("", ""))
            # Beside every tier, whatever it is: the tier alone reads as a verdict.
            auroc = _auroc(group.agree[cid], group.confidence[cid])
            rows.append(
                ConfigMetrics(
                    config_id=cid,
                    code=group.code,
                    n=n,
                    agreement=float(group.agree[cid].mean()),
                    kappa=_interval(points[cid], boots[cid], level),
                    weighted=group.weighted,
                    rho=spearman(group.picks[cid].astype(float), group.value.astype(float))
                    if group.ordinal
                    else None,
                    tier=tier or "-",
                    verdict=verdict,
                    auroc=auroc,
                    entropy=float(np.nanmean(group.entropy[cid])),
                    off_scale=float(np.nanmean(group.off[cid])),
                )
            )
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                diff = boots[a] - boots[b]
                differences.append(
                    Difference(group.code, a, b, _interval(points[a] - points[b], diff, level))
                )
    labels = tuple((cid, describe_config(study, cid)) for cid in ids)
    return Comparison(
        coder=chosen,
        sample=sample,
        configs=labels,
        rows=tuple(rows),
        differences=tuple(differences),
        n_pairs=len(pairs),
        resamples=resamples,
        level=level,
        coder_note=choice.note,
        code_names={c.id: c.name for c in study.codebook.codes},
    )


def _auroc(correct: FloatArray, confidence: FloatArray) -> float | None:
    ok = correct.astype(bool)
    if ok.all() or not ok.any():
        return None
    ranks = stats.rankdata(confidence)
    n1, n0 = int(ok.sum()), int((~ok).sum())
    return float((ranks[ok].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def describe_config(study: Study, config_id: int) -> str:
    """A short label: model, the backend that ran it, context, strictness and template
    (``embedded:SmolLM2-135M-Instruct (llama.cpp) [definition] chat-v1``)."""
    row = study.scores.config_row(config_id)
    strict = ", strict" if row.strict else ""
    return f"{row.model.name} ({backend_name(row)}) [{row.context}{strict}] {row.template_id}"


def _groups(
    study: Study, frames: dict[int, Any], ids: Sequence[int], pairs: list[tuple[str, str]]
) -> list[_Group]:
    first = frames[ids[0]].loc[pairs]
    codes = [c for c in study.codes if c.id in set(first.index.get_level_values("code_id"))]
    groups = []
    for code in [*codes, None]:
        scale = None if code is None else study.codebook.scale_for(code)
        if code is None:
            mask = np.ones(len(pairs), dtype=bool)
            k, weighted, ordinal = 2, False, False
        else:
            mask = first.index.get_level_values("code_id").to_numpy() == code.id
            assert scale is not None
            k, weighted, ordinal = scale.k, scale.k > 2, scale.k > 2
        sub = [p for p, m in zip(pairs, mask, strict=True) if m]
        base = frames[ids[0]].loc[sub]
        if code is None:
            value = base["applies"].to_numpy(bool).astype(np.int64)
        else:
            assert scale is not None
            position = {v: i for i, v in enumerate(scale.values)}
            value = np.array([position[int(v)] for v in base["value"]], dtype=np.int64)
        picks, agree, conf, ent, off = {}, {}, {}, {}, {}
        for cid in ids:
            f = frames[cid].loc[sub]
            if code is None:
                picks[cid] = f["pick_applies"].to_numpy(bool).astype(np.int64)
            else:
                assert scale is not None
                position = {v: i for i, v in enumerate(scale.values)}
                picks[cid] = np.array([position[int(v)] for v in f["pick"]], dtype=np.int64)
            agree[cid] = (f["pick_applies"].to_numpy(bool) == f["applies"].to_numpy(bool)).astype(
                float
            )
            conf[cid] = f["p_max"].to_numpy(float)
            ent[cid] = f["norm_entropy"].to_numpy(float)
            off[cid] = 1.0 - f["on_scale_mass"].to_numpy(float)
        groups.append(
            _Group(
                code=POOLED if code is None else code.id,
                k=k,
                weighted=weighted,
                value=value,
                picks=picks,
                agree=agree,
                confidence=conf,
                entropy=ent,
                off=off,
                ordinal=ordinal,
            )
        )
    return groups
