"""How fast scoring is, three ways, on the same pairs in one run.

Scores a few dozen (response, code) pairs of the ``work_survey`` sample with the embedded
model on the CPU (float32) and prints pairs per second and the ratios:

engine
    :class:`scoring.engine.ScoringEngine`: batches of one code, sorted by length, left
    padding, the code's shared prompt prefix computed once per batch, only the last
    positions' logits, surface variants pooled ("3" and " 3", the latter two tokens in
    SmolLM2's tokenizer, read in the same pass).
naive
    One forward pass per pair over the same prompt, full logits, no batching, reading
    the bare labels "1".."5" (one token each) at the last position. It does less than
    the engine (no pooling), so the ratio is a lower bound.
generation
    Asking the model to *write* the judgement: greedy decoding of 64 new tokens from the
    same prompt, then the first digit 1-5 of the text is taken as the answer (None when
    there is none). End-of-turn does not stop it: 64 tokens is the cost of a short
    justification, which is what a generated judgement usually carries.

The default, 32 responses of one code, has the shape of a study, where hundreds of
responses share each code's prompt prefix and the engine computes little more than each
response; several codes with few responses each (``--responses 8 --codes 4``) spend a
larger share on the codes' prefixes.

Targets (DESIGN.md): engine >= 2x naive, >= 30x generation. The machine may be shared,
so the three methods take turns code by code (a neighbour's load falls on all three
alike) and only the ratios of one run are comparable; absolute rates are for the record.
``--threads 1`` is steadier on a busy two-core machine than torch's default of two.

    .venv/bin/python -m benchmarks.bench_scoring [--responses 32] [--codes 1] [--threads N]
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from codebooks import load_codebook
from scoring import Pair, ScoringEngine, load_backend
from study.intake.responses import read_responses

ROOT = Path(__file__).resolve().parents[1]

SAMPLES = ROOT / "codebooks" / "samples"
NEW_TOKENS = 64


def sample_pairs(n_responses: int, n_codes: int) -> tuple[Any, list[Pair]]:
    book = load_codebook(SAMPLES / "work_survey.yaml")
    table = read_responses(SAMPLES / "work_survey.csv")
    codes = book.codable[:n_codes]
    pairs = [Pair(r.id, r.text, c) for r in list(table)[:n_responses] for c in codes]
    return book, pairs


def run_engine(engine: ScoringEngine, pairs: list[Pair]) -> tuple[float, Any]:
    started = time.perf_counter()
    scores = engine.score(pairs)
    return time.perf_counter() - started, scores


def run_naive(backend: Any, prompts: list[str]) -> tuple[float, list[int]]:
    import torch

    model, tok = backend.model, backend.tokenizer
    label_ids = [tok(str(i), add_special_tokens=False)["input_ids"][0] for i in range(1, 6)]
    picks = []
    started = time.perf_counter()
    with torch.inference_mode():
        for prompt in prompts:
            ids = torch.tensor([backend.encode(prompt)])
            logits = model(input_ids=ids).logits[0, -1]  # full logits were computed
            logp = torch.log_softmax(logits.double(), dim=-1)[label_ids]
            picks.append(int(torch.argmax(logp)) + 1)
    return time.perf_counter() - started, picks


def run_generation(backend: Any, prompts: list[str]) -> tuple[float, list[int | None], str]:
    import torch

    model, tok = backend.model, backend.tokenizer
    picks: list[int | None] = []
    first_text = ""
    started = time.perf_counter()
    with torch.inference_mode():
        for prompt in prompts:
            ids = torch.tensor([backend.encode(prompt)])
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                max_new_tokens=NEW_TOKENS,
                min_new_tokens=NEW_TOKENS,
                pad_token_id=tok.pad_token_id or tok.eos_token_id,
            )
            text = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
            first_text = first_text or text
            match = re.search(r"[1-5]", text)
            picks.append(int(match.group()) if match else None)
    return time.perf_counter() - started, picks, first_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=32)
    parser.add_argument("--codes", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--skip-generation", action="store_true")
    args = parser.parse_args()

    started = time.perf_counter()
    import torch
    from transformers.utils import logging as hf_logging

    import scoring.backends.transformers.backend  # the backend's own imports, timed with the rest

    import_seconds = time.perf_counter() - started
    hf_logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    backend = load_backend(None, device="cpu")
    load_seconds = time.perf_counter() - started
    assert isinstance(
        backend, scoring.backends.transformers.backend.TransformersBackend
    )  # its .stats
    book, pairs = sample_pairs(args.responses, args.codes)
    n = len(pairs)
    print(f"model   {backend.identity.describe()}, torch threads {torch.get_num_threads()}")
    print(f"load    {load_seconds:.2f} s (imports of torch, transformers: {import_seconds:.2f} s)")
    print(f"pairs   {n} ({args.responses} responses x {args.codes} codes), chat-v1 template")

    # warm-up: first calls allocate and pick kernels
    backend.option_logprobs(["Warm up."], [("1",), ("2",)])
    backend.close()
    backend.stats.update(forward_tokens=0, shared_tokens_saved=0)

    # The three methods take turns, one code at a time, so that a neighbour's load on a
    # shared machine falls on all of them alike.
    engine = ScoringEngine(backend, book, batch_size=args.batch_size)
    times = {"engine": 0.0, "naive": 0.0, "generation": 0.0}
    scores: list[Any] = []
    naive_picks: list[int] = []
    gen_picks: list[int | None] = []
    example = ""
    for code in book.codable[: args.codes]:
        group = [p for p in pairs if p.code is code]
        seconds, batch_scores = run_engine(engine, group)
        times["engine"] += seconds
        scores += batch_scores
        prompts = [s.prompt for s in batch_scores]
        seconds, picks = run_naive(backend, prompts)
        times["naive"] += seconds
        naive_picks += picks
        if not args.skip_generation:
            seconds, gpicks, text = run_generation(backend, prompts)
            times["generation"] += seconds
            gen_picks += gpicks
            example = example or text
    stats = dict(backend.stats)
    tokens = sum(backend.count_tokens(s.prompt) for s in scores)
    print(f"prompt  {tokens / n:.0f} tokens on average")
    rows = [(name, times[name]) for name in ("engine", "naive")]
    if not args.skip_generation:
        rows.append(("generation", times["generation"]))
    engine_s = times["engine"]
    print()
    print(f"{'method':<12}{'seconds':>10}{'pairs/s':>10}{'time/engine':>13}")
    for name, seconds in rows:
        ratio = seconds / engine_s
        print(f"{name:<12}{seconds:>10.2f}{n / seconds:>10.2f}{ratio:>12.1f}x")
    print()
    print(
        f"engine forward tokens {stats['forward_tokens']:,} of {tokens:,} prompt tokens "
        f"({stats['shared_tokens_saved']:,} read from a shared prefix's cache)"
    )
    engine_picks = [s.prediction for s in scores]
    same = sum(a == b for a, b in zip(engine_picks, naive_picks, strict=True))
    print(f"engine pick = naive pick (bare labels) for {same}/{n} pairs")
    if gen_picks:
        parsed = sum(p is not None for p in gen_picks)
        agree = sum(a == b for a, b in zip(engine_picks, gen_picks, strict=True))
        print(f"generation: a digit in {parsed}/{n} answers, the engine's pick in {agree}/{n}")
        print(f"generation example: {example[:160]!r}")


if __name__ == "__main__":
    main()
