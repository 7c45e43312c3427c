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

    .venv/bin/python -m benchmarks.bench_evidence [--n 12] [--min-sentences 4] [--seed 3]
"""

from __future__ import annotations

import argparse
import random
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
    args = parser.parse_args()

    import torch

    from scoring import Pair, ScoringEngine, load_backend
    from scoring.evidence import applies_probability, explain

    torch.set_num_threads(1)
    codebook, pairs = long_pairs(args.n, args.min_sentences, args.seed)
    backend = load_backend(None, device="cpu")
    engine = ScoringEngine(backend, codebook, context="definition", features=False)
    started = time.perf_counter()
    once_tokens = sum(b.tokens for b in engine.iter_batches(pairs))
    once = time.perf_counter() - started
    engine.clear_cache()  # the pairs are scored again inside the explanation, as a user's run
    started = time.perf_counter()
    found = list(explain(engine, pairs))
    explained = time.perf_counter() - started
    tokens = sum(e.variants_tokens for e in found)
    rng = random.Random(args.seed)
    rows = []
    for pair, e in zip(pairs, found, strict=True):
        top = e.top
        if top is None:
            continue
        others = [s for s in e.sentences if s is not top]
        random_drop = rng.choice(others).applies_effect if others else float("nan")
        alone = engine.score([Pair("top", top.text(pair.text), pair.code)])[0]
        rows.append(
            (
                e.applies,
                top.applies_effect,
                random_drop,
                applies_probability(alone.curve.probs, alone.scale),
                len(e.sentences),
            )
        )
    backend.close()

    def summary(name: str, chosen: list[Any]) -> None:
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

    sentences = statistics.mean(r[4] for r in rows) if rows else 0.0
    print(f"{len(pairs)} long NHS comments x a labelled category, {backend.identity.describe()}")
    summary("all", rows)
    summary(
        f"confident 'applies' (P >= {args.confident})", [r for r in rows if r[0] >= args.confident]
    )
    print(
        f"cost: {explained:.1f} s to explain vs {once:.1f} s to score once = "
        f"{explained / once:.1f}x time, {tokens / max(once_tokens, 1):.1f}x prompt tokens read "
        "(the shared prefix counted each time; prefix reuse computes it once); "
        f"{sentences:.1f} sentences per pair measured (+1 pass for the pair itself), so "
        f"{(explained / once) / (sentences + 1):.2f}x of a full pass per variant"
    )


if __name__ == "__main__":
    main()
