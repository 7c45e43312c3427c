"""Is the evidence faithful, and what does it cost? (ERASER's measures, DeYoung et al. 2020)

On the long comments of the NHS patient feedback data (``../shared/data``: at least
``--min-sentences`` sentences), each paired with one category its human label names
(a pair where the code applies), scored zero-shot with the embedded model on the CPU:

* comprehensiveness: the drop in P(applies) when the top sentence is left out, against
  the drop when a random other sentence of the same response is (seeded);
* sufficiency: P(applies) with the top sentence alone, against the whole response's;
* cost: the seconds and the prompt tokens of explaining a pair (its variants) as a
  multiple of scoring it once, beside the number of sentences measured.

Figures are given over all pairs and over those the model calls "applies" with
confidence (P(applies) >= ``--confident``). One thread; a small ``--n`` checks that it
runs, the README's figures use more.

``--learned``: the same measures on a learned configuration, which explains itself (its
curves read the features and zero-shot curve the model returns for every variant). The
codebook is the six most frequent NHS categories (as ``bench_learning``); a study holds
``--train`` comments outside the measured ones, every one decided for every code with
its published label (so about ``--train`` decisions a code), and the measured comments;
the embedded model scores it (features kept), ``learn`` fits each code, and the pairs
(long comments with one of the six their label names) are explained through the fitted
curves (:func:`study.analysis._learning.fitted_curves`, nothing written) and, beside them,
on the model's zero-shot curve, with the same engine.

    .venv/bin/python -m benchmarks.bench_evidence [--n 12] [--min-sentences 4] [--seed 3]
    .venv/bin/python -m benchmarks.bench_evidence --learned [--n 40] [--train 200]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import time
from typing import Any


def long_pairs(n: int, min_sentences: int, seed: int) -> tuple[Any, list[Any]]:
    """The codebook and ``n`` (comment, labelled category) pairs of long comments."""
    import pandas as pd

    from codebooks.mapping import slugify
    from scoring import Pair
    from scoring.sentences import split_sentences
    from tests.factories import nhs_codebook, shared_data

    codebook = nhs_codebook()
    table = pd.read_csv(shared_data() / "nhs_patient_feedback.csv")
    rng = random.Random(seed)
    rows = [
        (str(r.id), str(r.text), str(r.label).split(";"))
        for r in table.itertuples()
        if isinstance(r.text, str) and len(split_sentences(r.text)) >= min_sentences
    ]
    rng.shuffle(rows)
    codes = {c.id: c for c in codebook.codable}
    pairs = []
    for rid, text, labels in rows:
        code = codes.get(slugify(rng.choice(labels)))
        if code is not None:
            pairs.append(Pair(rid, text, code))
        if len(pairs) >= n:
            break
    return codebook, pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=12, help="pairs measured")
    parser.add_argument("--min-sentences", type=int, default=4)
    parser.add_argument("--confident", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--learned", action="store_true", help="on a learned configuration")
    parser.add_argument("--cold", dest="warm", action="store_false", help="time the first pass")
    parser.add_argument("--train", type=int, default=200, help="decided comments (--learned)")
    args = parser.parse_args()
    if args.learned:
        run_learned(args)
        return

    import torch

    from scoring import ScoringEngine, load_backend
    from scoring.evidence import explain

    torch.set_num_threads(1)
    codebook, pairs = long_pairs(args.n, args.min_sentences, args.seed)
    backend = load_backend(None, device="cpu")
    engine = ScoringEngine(backend, codebook, context="definition", features=False)
    if args.warm:
        list(engine.iter_batches(pairs))  # the model's first passes, not the pairs', timed
        engine.clear_cache()
    started = time.perf_counter()
    batches = list(engine.iter_batches(pairs))
    once = time.perf_counter() - started
    once_tokens = sum(b.tokens for b in batches)
    prompts = {s.response_id: s.prompt for b in batches for s in b.scores}
    whole = _whole_passes(backend, codebook, pairs, context="definition", features=False)
    engine.clear_cache()  # the pairs are scored again inside the explanation, as a user's run
    computed = _computed(backend)
    started = time.perf_counter()
    found = list(explain(engine, pairs))
    explained = time.perf_counter() - started
    computed = _computed(backend) - computed
    tokens = sum(e.variants_tokens for e in found)
    floor = _floor(backend, pairs, found, prompts)
    rows = _rows(engine, pairs, found, args.seed)
    backend.close()

    sentences = statistics.mean(r[4] for r in rows) if rows else 0.0
    print(f"{len(pairs)} long NHS comments x a labelled category, {backend.identity.describe()}")
    _summary("all", rows)
    _summary(
        f"confident 'applies' (P >= {args.confident})", [r for r in rows if r[0] >= args.confident]
    )
    print(
        f"cost: {explained:.1f} s to explain vs {once:.1f} s to score once = "
        f"{explained / once:.1f}x time, {tokens / max(once_tokens, 1):.1f}x prompt tokens read "
        "(the shared prefix counted each time; prefix reuse computes it once); "
        f"{sentences:.1f} sentences per pair measured (+1 pass for the pair itself), so "
        f"{(explained / once) / (sentences + 1):.2f}x of a full pass per variant"
    )
    print(
        f"the variants' share of the prompts' tokens: {floor:.2f} passes a pair; explaining "
        f"cost {explained / once:.2f}x, {(explained / once) / floor:.2f}x that share "
        "(1.5x or less: prefix reuse does its work)"
    )
    _in_passes(explained, whole, floor, computed, backend, pairs, found)


def learned_setup(
    n: int, train: int, min_sentences: int, seed: int
) -> tuple[Any, dict[str, str], dict[str, dict[str, int]], list[tuple[str, str]]]:
    """The six categories' codebook, the study's texts (``train`` comments to decide and
    the measured ones), the labels, and the ``n`` measured (comment, code) pairs."""
    from benchmarks.bench_learning import nhs
    from scoring.sentences import split_sentences

    codebook, texts, labels = nhs()
    rng = random.Random(seed)
    ids = sorted(texts)
    rng.shuffle(ids)
    measured: list[tuple[str, str]] = []
    for rid in ids:
        applies = [c.id for c in codebook.codable if labels[c.id][rid]]
        if applies and len(split_sentences(texts[rid])) >= min_sentences:
            measured.append((rid, rng.choice(applies)))
        if len(measured) >= n:
            break
    chosen = {rid for rid, _ in measured}
    decided = [rid for rid in ids if rid not in chosen][:train]
    kept = {rid: texts[rid] for rid in [*decided, *chosen]}
    return codebook, kept, {c: {r: v[r] for r in decided} for c, v in labels.items()}, measured


def run_learned(args: argparse.Namespace) -> None:
    import tempfile
    from pathlib import Path

    import torch

    from scoring import Pair, ScoringEngine, load_backend
    from scoring.evidence import explain
    from study import ResponseTable, Study
    from study.analysis._evidence import learned_reading
    from study.analysis._learning import fitted_curves, learn
    from study.score_run import score_study

    torch.set_num_threads(1)
    codebook, texts, labels, measured = learned_setup(
        args.n, args.train, args.min_sentences, args.seed
    )
    backend = load_backend(None, device="cpu")
    path = Path(tempfile.mkdtemp(prefix="bench-evidence-")) / "nhs.codecurve"
    with Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook) as study:
        engine = ScoringEngine(backend, study.codebook)
        started = time.perf_counter()
        score_study(study, engine)
        scoring = time.perf_counter() - started
        for code_id, decided in labels.items():
            for rid, value in decided.items():
                study.decisions.record(rid, code_id, value, coder="coder")
        run = learn(study, coder="coder", activate=True)
        learned_id = run.config_id
        started = time.perf_counter()
        curves = fitted_curves(study, learned_id)
        refit = time.perf_counter() - started
        reading = learned_reading(curves)
        pairs = [Pair(rid, texts[rid], study.codebook.code(code)) for rid, code in measured]
        engine.clear_cache()
        started = time.perf_counter()
        batches = list(engine.iter_batches(pairs))
        once = time.perf_counter() - started
        once_tokens = sum(b.tokens for b in batches)
        prompts = {s.response_id: s.prompt for b in batches for s in b.scores}
        results: dict[str, list[Any]] = {}
        floors: dict[str, float] = {}
        gap = float("nan")
        seconds: dict[str, float] = {}
        tokens: dict[str, int] = {}
        whole = _whole_passes(backend, study.codebook, pairs)
        computed: dict[str, int] = {}
        found_by: dict[str, list[Any]] = {}
        for name, chosen in (("learned", reading), ("zero-shot", None)):
            engine.clear_cache()
            before = _computed(backend)
            started = time.perf_counter()
            found = list(explain(engine, pairs, reading=chosen))
            seconds[name] = time.perf_counter() - started
            computed[name] = _computed(backend) - before
            found_by[name] = found
            rows = _rows(engine, pairs, found, args.seed, chosen)
            results[name] = rows
            tokens[name] = sum(e.variants_tokens for e in found)
            floors[name] = _floor(backend, pairs, found, prompts)
            if chosen is not None:  # the explanation's whole pair is the stored learned curve
                gap = max(
                    abs(e.applies - stored_applies(study, learned_id, e.response_id, e.code_id))
                    for e in found
                )
    backend.close()
    shutil.rmtree(path.parent, ignore_errors=True)
    learned_codes = sum(1 for c in run.codes if c.learned)
    print(
        f"{len(pairs)} long NHS comments x a labelled category (6 categories), "
        f"{backend.identity.describe()}; {len(texts)} comments scored in {scoring:.0f} s, "
        f"{args.train} decided per code, {learned_codes} of 6 codes learned "
        f"(cv AUROC {', '.join(f'{c.cv_auroc:.2f}' for c in run.codes if c.cv_auroc)}); "
        f"fitted again for the explanation in {refit:.1f} s; the learned P(applies) of "
        f"the whole comments as explained differs from the stored learned curve's by at "
        f"most {gap:.1e}"
    )
    for name, rows in results.items():
        print(f"-- {name}")
        _summary("all", rows)
        _summary(
            f"confident 'applies' (P >= {args.confident})",
            [r for r in rows if r[0] >= args.confident],
        )
        sentences = statistics.mean(r[4] for r in rows) if rows else 0.0
        print(
            f"cost: {seconds[name]:.1f} s to explain vs {once:.1f} s to score once = "
            f"{seconds[name] / once:.1f}x time, {tokens[name] / max(once_tokens, 1):.1f}x prompt "
            f"tokens read; {sentences:.1f} sentences per pair measured; the variants' share "
            f"of the prompts' tokens {floors[name]:.2f} passes a pair, explaining cost "
            f"{seconds[name] / once / floors[name]:.2f}x that share"
        )
        _in_passes(
            seconds[name], whole, floors[name], computed[name], backend, pairs, found_by[name]
        )


def stored_applies(study: Any, config_id: int, response_id: str, code_id: str) -> float:
    """P(applies) of a pair's stored curve under ``config_id`` (binary scale: "Yes")."""
    import numpy as np

    with study.snapshot() as conn:
        (blob,) = conn.execute(
            "SELECT s.probs FROM scores s JOIN responses r ON r.rid = s.rid "
            "JOIN codes c ON c.cid = s.cid WHERE s.config_id = ? AND r.id = ? AND c.id = ?",
            (config_id, response_id, code_id),
        ).fetchone()
    return float(np.frombuffer(blob, dtype="<f8")[-1])


def _floor(backend: Any, pairs: list[Any], found: list[Any], prompts: dict[str, str]) -> float:
    """What prefix reuse makes the floor of explaining a pair, in passes of its whole
    prompt: each variant re-reads the response (the code's prompt is computed once), so
    its variants times the response's share of the prompt's tokens."""
    return statistics.mean(
        (len(e.sentences) + 1)
        * (backend.count_tokens(pair.text) or 0)
        / max(backend.count_tokens(prompts[pair.response_id]) or 0, 1)
        for pair, e in zip(pairs, found, strict=True)
    )


def _rows(
    engine: Any, pairs: list[Any], found: list[Any], seed: int, reading: Any = None
) -> list[tuple[float, float, float, float, int]]:
    """Per pair with a top sentence: P(applies), the top sentence's drop, a random other
    sentence's drop (seeded), P(applies) with the top sentence alone (read through
    ``reading`` when given, as the explanation was), and the sentences measured."""
    from scoring import Pair
    from scoring.evidence import applies_probability

    rng = random.Random(seed)
    rows = []
    for pair, e in zip(pairs, found, strict=True):
        top = e.top
        if top is None:
            continue
        others = [s for s in e.sentences if s is not top]
        random_drop = rng.choice(others).applies_effect if others else float("nan")
        alone = engine.score([Pair("top", top.text(pair.text), pair.code)])[0]
        probs = alone.curve.probs if reading is None else reading(alone)
        rows.append(
            (
                e.applies,
                top.applies_effect,
                random_drop,
                applies_probability(probs, alone.scale),
                len(e.sentences),
            )
        )
    return rows


def _computed(backend: Any) -> int:
    """Tokens the transformers backend's passes have computed so far."""
    return int(backend.stats["forward_tokens"])


def _whole_passes(backend: Any, codebook: Any, pairs: list[Any], **options: Any) -> float:
    """Seconds to score ``pairs`` once with nothing shared between their prompts (the
    same weights without prefix reuse): each pair's whole prompt read, as a pair alone
    costs, which is what the floor's passes are of."""
    from scoring import ScoringEngine
    from scoring.backends.transformers.backend import TransformersBackend

    alone = TransformersBackend(
        backend.model,
        backend.tokenizer,
        name="whole",
        revision="whole",
        chat=backend.is_chat,
        prefix_sharing=False,
    )
    engine = ScoringEngine(alone, codebook, **options)
    list(engine.iter_batches(pairs[:2]))  # warm
    engine.clear_cache()
    started = time.perf_counter()
    list(engine.iter_batches(pairs))
    return time.perf_counter() - started


def _in_passes(
    seconds: float,
    whole: float,
    floor: float,
    computed: int,
    backend: Any,
    pairs: list[Any],
    found: list[Any],
) -> None:
    """The explanation in passes of each pair's whole prompt, by time and by the tokens
    the model computed, against the floor (the variants' response tokens)."""
    response_tokens = sum(
        (len(e.sentences) + 1) * (backend.count_tokens(pair.text) or 0)
        for pair, e in zip(pairs, found, strict=True)
    )
    print(
        f"in passes of each pair's whole prompt (scored once with nothing shared: "
        f"{whole:.1f} s): explaining took {seconds / whole:.2f} passes a pair against the "
        f"floor's {floor:.2f}, {seconds / whole / floor:.2f}x; the model computed "
        f"{computed:,} tokens for the variants' {response_tokens:,} response tokens, "
        f"{computed / max(response_tokens, 1):.2f}x (1.5x or less: prefix reuse and the "
        "token tree do their work)"
    )


def _summary(name: str, chosen: list[Any]) -> None:
    if not chosen:
        print(f"{name}: no pairs")
        return
    comp = statistics.mean(r[1] for r in chosen)
    rand = statistics.mean(r[2] for r in chosen)
    suff = statistics.mean(r[3] for r in chosen)
    base = statistics.mean(r[0] for r in chosen)
    ratio = f"{comp / rand:.1f}x" if rand > 0 else "a random sentence lowers nothing"
    print(
        f"{name} ({len(chosen)} pairs): P(applies) {base:.3f}; comprehensiveness: top "
        f"sentence {comp:+.3f} vs random {rand:+.3f} ({ratio}); sufficiency: "
        f"P(applies | top alone) {suff:.3f}"
    )


if __name__ == "__main__":
    main()
