"""Learning from the coder: how much better the curve gets, judged on a blind audit, and
how fast a code is refitted.

Part 1, the learning (``--part learning``), the embedded model, in one run. Two labelled
data sets of ``../shared/data``:

``nhs``
    500 NHS patient comments, the six most frequent categories of the framework as
    yes/no codes (the category names, no definitions: what a new user would write).
``causal``
    500 PubMed conclusion sentences on the 0-3 scale of claim strength (no relationship,
    correlational, conditional causal, direct causal); "applies" is a causal claim (2-3).

Each is a study scored by the embedded model (transformers, float32, features kept). A
random audit of ``--audit`` responses is drawn and decided blind with the published
labels. Outside it, a simulated coder takes decisions in the app's own order, code by
code: the most uncertain pair first under the active configuration, refitting the
learned curve every ``--refit`` decisions (as the app does) and re-ordering by it. At 25,
50, 100 and 200 decisions per code, the configurations are judged on the audit: AUROC of
P(applies) against the labels, and quadratic-weighted kappa of the pick:

zero-shot
    the model's own curve;
learned
    the curve learned from the decisions so far (``codecurve learn``);
examples
    the model prompted with ``--k`` of the coder's decisions per scale value in the
    code's prompt (``--context examples``), scored on the audit pairs (first draw only).

With ``--seeds 1,2,3`` the study is scored once and the whole replay (audit draw, coder,
refits) runs once per audit draw: with a few positives of a rare code in an audit of 150,
one draw's mean kappa can differ from another's by 0.2, so the table gives the mean over
draws with their range.

Part 2, the refit (``--part refit``): a synthetic study of 100,000 responses of one code
with 1,024-wide float16 features (what the embedded model keeps), 200 decisions; the time
to refit and rescore the code from the stored features (read, fit, predict, write), each
refit after the coder decided as many more pairs as the app refits after (so that every
pair's curve changes, as in the app), and the features' bytes per pair on disk.

    .venv/bin/python -m benchmarks.bench_learning [--part learning|refit|all]
        [--audit 150] [--refit 25] [--k 2] [--threads 2] [--datasets nhs,causal]
        [--seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from codebooks.model import BINARY, Code, Codebook, Option, Scale
from tests.factories import shared_data

CHECKPOINTS = (25, 50, 100, 200)

NHS_CATEGORIES = (
    "Staff manner & personal attributes",
    "Timeliness of care",
    "Positive experience & gratitude",
    "Staff listening, understanding & involving patients",
    "Transport to/ from services",
    "Being kept informed, clarity & consistency of information",
)

CAUSAL_SCALE = Scale(
    name="claim strength 0-3",
    options=(
        Option("0", 0, "no relationship, or not a claim"),
        Option("1", 1, "correlational"),
        Option("2", 2, "conditional causal (hedged: may, might, could)"),
        Option("3", 3, "direct causal"),
    ),
    applies_from=2,
)


def nhs() -> tuple[Codebook, dict[str, str], dict[str, dict[str, int]]]:
    import pandas as pd

    table = pd.read_csv(shared_data() / "nhs_patient_feedback.csv")
    codes = tuple(Code(f"c{i}", name) for i, name in enumerate(NHS_CATEGORIES))
    texts = dict(zip(table["id"].astype(str), table["text"].astype(str), strict=True))
    labels = {
        code.id: {
            rid: int(code.name in str(label).split(";"))
            for rid, label in zip(table["id"].astype(str), table["label"], strict=True)
        }
        for code in codes
    }
    return Codebook(name="NHS feedback", codes=codes, scale=BINARY), texts, labels


def causal() -> tuple[Codebook, dict[str, str], dict[str, dict[str, int]]]:
    import pandas as pd

    table = pd.read_csv(shared_data() / "causal_pubmed.csv")
    code = Code(
        "claim",
        "Causal claim",
        "How strongly the sentence claims that one thing causes another.",
    )
    texts = dict(zip(table["id"].astype(str), table["text"].astype(str), strict=True))
    labels = {"claim": dict(zip(table["id"].astype(str), table["label"].astype(int), strict=True))}
    codebook = Codebook(
        name="Causal language",
        codes=(code,),
        scale=CAUSAL_SCALE,
        question="How strong a causal claim does the sentence make?",
    )
    return codebook, texts, labels


DATASETS = {"nhs": nhs, "causal": causal}


def audit_metrics(
    truth: Sequence[int], probs: np.ndarray, values: Sequence[int], applies_from: int
) -> tuple[float, float]:
    """AUROC of P(applies) and quadratic-weighted kappa of the pick, on the audit."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    values_arr = np.asarray(values)
    applies = values_arr >= applies_from
    p_applies = probs[:, applies].sum(axis=1)
    y = np.asarray(truth)
    pick = values_arr[np.argmax(probs, axis=1)]
    auroc = float(roc_auc_score(y >= applies_from, p_applies))
    kappa = float(cohen_kappa_score(y, pick, weights="quadratic", labels=list(values)))
    return auroc, kappa


def kappa_ceiling(auroc: float, prevalence: float) -> float:
    """The highest Cohen's kappa that any cut-off gives a yes/no ranking of this AUROC at
    this prevalence, when each class's scores are normal with one variance (the binormal
    model of ROC analysis): what the kappa of a ranking this good can reach at best."""
    from scipy.optimize import minimize_scalar
    from scipy.stats import norm

    separation = float(np.sqrt(2.0) * norm.ppf(min(max(auroc, 1e-9), 1 - 1e-9)))

    def minus_kappa(cut: float) -> float:
        hit, false_alarm = norm.sf(cut - separation), norm.sf(cut)
        said_yes = prevalence * hit + (1 - prevalence) * false_alarm
        agree = prevalence * hit + (1 - prevalence) * (1 - false_alarm)
        chance = prevalence * said_yes + (1 - prevalence) * (1 - said_yes)
        return -(agree - chance) / (1 - chance)

    low, high = min(0.0, separation) - 6.0, max(0.0, separation) + 6.0
    return float(-minimize_scalar(minus_kappa, bounds=(low, high), method="bounded").fun)


def code_probs(study: Any, config_id: int, code_id: str, rids: Sequence[str]) -> np.ndarray:
    index = study.index
    cid = index.code_key(code_id)
    keys = [index.response_key(r) for r in rids]
    with study.snapshot() as conn:
        rows = dict(
            conn.execute(
                "SELECT rid, probs FROM scores WHERE config_id = ? AND cid = ?", (config_id, cid)
            ).fetchall()
        )
    return np.vstack([np.frombuffer(rows[k], dtype="<f8") for k in keys])


def next_in_queue(study: Any, config_id: int, code_id: str, skip: set[int], n: int) -> list[str]:
    """The ``n`` most uncertain pairs of the code under ``config_id`` not in ``skip``: the
    queue's order (normalised entropy, highest first; then response)."""
    cid = study.index.code_key(code_id)
    with study.snapshot() as conn:
        rows = conn.execute(
            "SELECT rid FROM scores WHERE config_id = ? AND cid = ? "
            "ORDER BY norm_entropy DESC, rid",
            (config_id, cid),
        ).fetchall()
    out = [int(r[0]) for r in rows if int(r[0]) not in skip][:n]
    return [study.index.response_id(r) for r in out]


def run_learning(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from scoring import load_backend
    from scoring.engine import ScoringEngine
    from study import ResponseTable, Study
    from study.score_run import score_study

    torch.set_num_threads(args.threads)
    backend = load_backend(None, device="cpu")
    seeds = [int(s) for s in str(args.seeds).split(",")]
    report: dict[str, Any] = {}
    for name in args.datasets.split(","):
        codebook, texts, labels = DATASETS[name]()
        folder = Path(tempfile.mkdtemp(prefix=f"bench-learning-{name}-"))
        scored = folder / f"{name}.codecurve"
        with Study.create(
            scored, responses=ResponseTable.from_texts(texts), codebook=codebook
        ) as study:
            started = time.perf_counter()
            score_study(study, ScoringEngine(backend, study.codebook))
            scoring_seconds = time.perf_counter() - started
        draws = []
        for i, seed in enumerate(seeds):
            # Scored once; each audit draw replays the coder on a copy of the scored study.
            path = folder / f"{name}-{seed}.codecurve"
            shutil.copyfile(scored, path)
            with Study.open(path) as study:
                rows = replay(study, backend, labels, args, seed=seed, examples=i == 0)
            draws.append({"seed": seed, "rows": rows})
        report[name] = {"scoring_seconds": scoring_seconds, "draws": draws}
        shutil.rmtree(folder, ignore_errors=True)
    return report


def replay(
    study: Any,
    backend: Any,
    labels: dict[str, dict[str, int]],
    args: argparse.Namespace,
    *,
    seed: int,
    examples: bool,
) -> list[dict[str, Any]]:
    """One audit draw: the blind audit decided, then the coder in the app's order, the
    configurations judged on the audit at each checkpoint (examples-in-prompt only when
    ``examples``: it costs a model pass per audit pair and checkpoint)."""
    from scoring.learned import LearningError
    from study.analysis._learning import learn

    zero_shot = study.scores.active_config_id()
    assert zero_shot is not None
    sample = study.audit.draw(per_code=args.audit, seed=seed)
    for code in study.codebook.codable:
        for rid in sample.pairs(code.id):
            study.decisions.record(rid, code.id, labels[code.id][rid], coder="coder", blind=True)
    rows: list[dict[str, Any]] = []
    for code in study.codebook.codable:
        scale = study.codebook.scale_for(code)
        values = [int(v) for v in scale.values]
        audit = list(sample.pairs(code.id))
        truth = [labels[code.id][r] for r in audit]
        audit_keys = {study.index.response_key(r) for r in audit}
        decided: set[int] = set()
        order_config = zero_shot
        learned_config: int | None = None
        for checkpoint in CHECKPOINTS:
            while len(decided) < checkpoint:
                step = min(args.refit, checkpoint - len(decided))
                for rid in next_in_queue(study, order_config, code.id, decided | audit_keys, step):
                    study.decisions.record(rid, code.id, labels[code.id][rid], coder="coder")
                    decided.add(study.index.response_key(rid))
                try:
                    run = learn(study, coder="coder", code=code.id, activate=True)
                    learned_config = order_config = run.config_id
                    fit = run.codes[0]
                except LearningError:
                    fit = None
            zero = audit_metrics(
                truth, code_probs(study, zero_shot, code.id, audit), values, scale.threshold
            )
            learned = (
                audit_metrics(
                    truth,
                    code_probs(study, learned_config, code.id, audit),
                    values,
                    scale.threshold,
                )
                if learned_config is not None and fit is not None and fit.learned
                else None
            )
            row = {
                "code": code.name,
                "decisions": checkpoint,
                "zero_shot": zero,
                "learned": learned,
                "examples": (
                    examples_metrics(
                        study, backend, code, audit, truth, values, scale.threshold, args.k
                    )
                    if examples
                    else None
                ),
                "cv_auroc": None if fit is None else fit.cv_auroc,
                # The learned AUROC's best kappa (binormal), yes/no codes only.
                "kappa_ceiling": (
                    kappa_ceiling(learned[0], float(np.mean(np.asarray(truth) >= scale.threshold)))
                    if learned is not None and len(values) == 2
                    else None
                ),
            }
            rows.append(row)
            print(json.dumps({"seed": seed, **row}), flush=True)
    return rows


def examples_metrics(
    study: Any,
    backend: Any,
    code: Code,
    audit: Sequence[str],
    truth: Sequence[int],
    values: Sequence[int],
    applies_from: int,
    k: int,
) -> tuple[float, float] | None:
    """The examples-in-prompt configuration on the audit pairs, or None where this build
    cannot (no such context level yet)."""
    try:
        from study.analysis._examples import choose_examples
    except ImportError:
        return None
    from scoring.engine import ScoringEngine
    from scoring.score import Pair

    examples = choose_examples(study, coder="coder", per_value=k)
    engine = ScoringEngine(backend, study.codebook, context="examples", examples=examples)
    texts = {r.id: r.text for r in study.responses()}
    scores = engine.score([Pair(r, texts[r], code) for r in audit])
    probs = np.vstack([s.curve.probs for s in scores])
    return audit_metrics(truth, probs, values, applies_from)


def run_refit(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.curves import curve_from_logprobs
    from scoring.fake import FakeBackend
    from scoring.score import Score, ScoreConfig
    from study import ResponseTable, Study
    from study.analysis._learning import ReadMemory, learn
    from tui.learning import REFIT_EVERY

    n, width = args.pairs, 1024
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="bench-refit-"))
    code = Code("wait", "Waiting")
    codebook = Codebook(name="Refit", codes=(code,), scale=BINARY)
    texts = {f"r{i}": f"response {i}" for i in range(n)}
    signal = rng.standard_normal(width)
    with Study.create(
        folder / "refit.codecurve", responses=ResponseTable.from_texts(texts), codebook=codebook
    ) as study:
        config = ScoreConfig(
            model=FakeBackend().identity,
            template_id="bench",
            template_hash="0",
            context="definition",
            scale=BINARY,
        )
        config_id = study.scores.ensure_config(config)
        truth = {}
        for start in range(0, n, 10_000):
            batch = []
            feats = rng.standard_normal((min(10_000, n - start), width)).astype(np.float16)
            for j, vec in enumerate(feats):
                rid = f"r{start + j}"
                truth[rid] = int(float(vec.astype(np.float32) @ signal) > 0)
                lp = np.log(rng.dirichlet([1.0, 1.0]))
                batch.append(
                    Score(
                        response_id=rid,
                        code_id=code.id,
                        config_key=config.key(),
                        scale=BINARY,
                        curve=curve_from_logprobs(lp, values=[0.0, 1.0]),
                        token_ids=(((1,),), ((2,),)),
                        missing=(False, False),
                        prompt="",
                        prompt_hash="0",
                        text_hash="0",
                        code_hash=code.content_hash(),
                        features=vec,
                    )
                )
            study.scores.store(config_id, batch, feature_layout="bench:1024:f16")
        for i in range(args.decisions):
            study.decisions.record(f"r{i}", code.id, truth[f"r{i}"], coder="coder")
        with study.snapshot() as conn:
            feature_bytes = conn.execute("SELECT SUM(LENGTH(vec)) FROM features").fetchone()[0]
        learn(study, coder="coder", code=code.id, activate=True)  # imports, warm caches
        memory = ReadMemory()
        learn(study, coder="coder", code=code.id, activate=True, memory=memory)
        cold: list[float] = []
        app: list[float] = []
        waits: list[float] = []
        decided = args.decisions
        for round_ in range(args.rounds):
            # Taken in turns, the order swapped every round (the machine is shared).
            for kind in ("cold", "app") if round_ % 2 == 0 else ("app", "cold"):
                # As in the app: the coder decided more pairs since the last refit, so
                # the curve and every pair's row change (an unchanged refit writes the
                # same values, which SQLite's indexes take faster).
                for i in range(decided, decided + REFIT_EVERY):
                    study.decisions.record(f"r{i}", code.id, truth[f"r{i}"], coder="coder")
                decided += REFIT_EVERY
                with DecisionProbe(study, n, decided) as probe:
                    started = time.perf_counter()
                    learn(
                        study,
                        coder="coder",
                        code=code.id,
                        activate=True,
                        memory=memory if kind == "app" else None,
                    )
                    (cold if kind == "cold" else app).append(time.perf_counter() - started)
                waits.extend(probe.waits)
    size = sum(p.stat().st_size for p in folder.iterdir())
    shutil.rmtree(folder, ignore_errors=True)  # 470 MB at 100,000 pairs
    return {
        "pairs": n,
        "decisions": args.decisions,
        "refit_seconds_median": statistics.median(cold),
        "refit_seconds_max": max(cold),
        "app_refit_seconds_median": statistics.median(app),
        "app_refit_seconds_max": max(app),
        "decision_wait_ms_median": 1000 * statistics.median(waits) if waits else None,
        "decision_wait_ms_max": 1000 * max(waits) if waits else None,
        "decisions_during_refits": len(waits),
        "feature_bytes_per_pair": feature_bytes / n,
        "study_bytes_per_pair": size / n,
    }


class DecisionProbe:
    """A coder deciding while a refit runs: another thread records a decision (of another
    coder, on pairs the refit does not learn from) every 50 ms on the same study handle,
    as the app's key does, and keeps how long each one took to save."""

    def __init__(self, study: Any, pairs: int, skip: int) -> None:
        import threading

        self._study = study
        self._next = skip
        self._pairs = pairs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.waits: list[float] = []

    def __enter__(self) -> DecisionProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            rid = f"r{self._next % self._pairs}"
            self._next += 1
            started = time.perf_counter()
            self._study.decisions.record(rid, "wait", 1, coder="probe")
            self.waits.append(time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("learning", "refit", "all"), default="all")
    parser.add_argument("--datasets", default="nhs,causal")
    parser.add_argument("--audit", type=int, default=150)
    parser.add_argument("--refit", type=int, default=25)
    parser.add_argument("--k", type=int, default=2, help="examples per scale value")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--seeds", default="1", help="audit draws, comma-separated (scored once, replayed)"
    )
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    if args.part in ("refit", "all"):
        report["refit"] = run_refit(args)
        print(json.dumps(report["refit"]), flush=True)
    if args.part in ("learning", "all"):
        report["learning"] = run_learning(args)
        print_table(report["learning"])
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))


def print_table(report: dict[str, Any]) -> None:
    def cell(pair: Any) -> str:
        return "-" if pair is None else f"{pair[0]:.2f} / {pair[1]:.2f}"

    for name, data in report.items():
        draws = data["draws"]
        print(f"\n{name}: scored in {data['scoring_seconds']:.0f} s; AUROC / kappa on the audit")
        print(f"first draw (seed {draws[0]['seed']}):")
        print(f"{'code':<60} {'n':>4} {'zero-shot':>12} {'learned':>12} {'examples':>12}")
        for row in draws[0]["rows"]:
            print(
                f"{row['code'][:60]:<60} {row['decisions']:>4} {cell(row['zero_shot']):>12} "
                f"{cell(row['learned']):>12} {cell(row['examples']):>12}"
            )
        for checkpoint in CHECKPOINTS:
            for key in ("zero_shot", "learned", "examples"):
                means = []  # per draw: the mean over codes
                for draw in draws:
                    got = [
                        r[key]
                        for r in draw["rows"]
                        if r["decisions"] == checkpoint and r[key] is not None
                    ]
                    if got:
                        means.append(
                            (statistics.mean(g[0] for g in got), statistics.mean(g[1] for g in got))
                        )
                if not means:
                    continue
                ceilings = [
                    r["kappa_ceiling"]
                    for draw in draws
                    for r in draw["rows"]
                    if r["decisions"] == checkpoint and r.get("kappa_ceiling") is not None
                ]  # the learned curve's, shown on its line
                ceiling = (
                    f"; a ranking of each code's AUROC allows kappa {statistics.mean(ceilings):.3f}"
                    " at best (binormal)"
                    if key == "learned" and ceilings
                    else ""
                )
                auroc = [m[0] for m in means]
                kappa = [m[1] for m in means]
                spread = (
                    f" (draws: AUROC {min(auroc):.3f}-{max(auroc):.3f}, "
                    f"kappa {min(kappa):.3f}-{max(kappa):.3f})"
                    if len(means) > 1
                    else ""
                )
                print(
                    f"  mean at {checkpoint:>3}: {key:<10} AUROC {statistics.mean(auroc):.3f} "
                    f"kappa {statistics.mean(kappa):.3f} over {len(means)} draw(s){spread}{ceiling}"
                )


if __name__ == "__main__":
    main()
