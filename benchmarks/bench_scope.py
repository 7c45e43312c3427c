"""How much a survey's scoping to questions costs the queue's queries.

Builds two studies of the same responses (``--responses``, spread over ``--questions``
questions in column ``question_id``) and the same codes (``--codes``): in the scoped one
each code but ``--everywhere`` of them applies to one question (the rest to every
answer), as in a survey with its own codes per question; the other has no scoping. Both
get synthetic scores for the scoped study's pairs, so their scores tables are the same
size. Then times, in each, the queue's page query (entropy order, first page and a page
deep in the queue; id order without scores) and its counts (all pairs, one code, the
undecided), median of ``--repeat`` runs, and prints the ratio scoped / unscoped.

The scope is SQL over the pairs (:meth:`study.scope.PairScope.sql`): one seek per pair of
a scoped code into the file's ``scoped_pairs`` table; a ratio well above 2 says that
condition, not the data, is what costs. A page deep in the queue tests every pair it
skips, so it is the one query that stays near 2 (about 2,500 seeks at offset 5000).

    .venv/bin/python -m benchmarks.bench_scope [--responses 20000] [--questions 9] [--codes 40]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codebooks.model import LIKERT_5, Code, Codebook
from study.intake.responses import Response, ResponseTable
from study.store import Study
from tests.factories import iter_synthetic_scores, synthetic_config


def codebook(codes: int, questions: int, everywhere: int, *, scoped: bool) -> Codebook:
    made = []
    for i in range(codes):
        asked = () if i < everywhere or not scoped else (f"q{i % questions + 1}",)
        made.append(Code(f"c{i}", f"Code {i}", f"Definition of code {i}.", questions=asked))
    return Codebook(
        name="Bench",
        codes=tuple(made),
        scale=LIKERT_5,
        question_column="question_id" if scoped else None,
    )


def responses(n: int, questions: int) -> ResponseTable:
    rows = tuple(
        Response(f"r{i}", f"answer {i} to a question", {"question_id": f"q{i % questions + 1}"})
        for i in range(n)
    )
    return ResponseTable(responses=rows, attribute_columns=("question_id",))


def build(folder: Path, args: argparse.Namespace) -> tuple[Path, Path]:
    table = responses(args.responses, args.questions)
    scoped_book = codebook(args.codes, args.questions, args.everywhere, scoped=True)
    plain_book = codebook(args.codes, args.questions, args.everywhere, scoped=False)
    scoped, plain = folder / "scoped.codecurve", folder / "plain.codecurve"
    config = synthetic_config(scoped_book)
    with Study.create(scoped, responses=table, codebook=scoped_book) as study:
        config_id = study.scores.ensure_config(config)
        scores = iter_synthetic_scores(study, config)
        kept = []
        while batch := list(itertools.islice(scores, 5000)):
            study.scores.store(config_id, batch)
            kept.extend(batch)
    with Study.create(plain, responses=table, codebook=plain_book) as study:
        config_id = study.scores.ensure_config(synthetic_config(plain_book))
        for start in range(0, len(kept), 5000):
            study.scores.store(config_id, kept[start : start + 5000])
    return scoped, plain


def timed(call: Callable[[], object], repeat: int) -> float:
    call()  # warm the page cache and the statement cache
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def measure(path: Path, repeat: int) -> dict[str, float]:
    with Study.open(path, read_only=True) as study:
        config_id = study.scores.active_config_id()
        q = study.queries
        return {
            "page, entropy, first": timed(lambda: q.page(config_id, limit=50), repeat),
            "page, entropy, offset 5000": timed(
                lambda: q.page(config_id, offset=5000, limit=50), repeat
            ),
            "page, one code": timed(lambda: q.page(config_id, code_id="c20", limit=50), repeat),
            "page, id order, no scores": timed(lambda: q.page(None, order="id", limit=50), repeat),
            "count, all": timed(lambda: q.count(config_id), repeat),
            "count, one code": timed(lambda: q.count(config_id, code_id="c20"), repeat),
            "count, undecided": timed(lambda: q.count(config_id, status="undecided"), repeat),
            "progress": timed(q.progress, repeat),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=20000)
    parser.add_argument("--questions", type=int, default=9)
    parser.add_argument("--codes", type=int, default=40)
    parser.add_argument("--everywhere", type=int, default=4, help="codes on every question")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        scoped, plain = build(Path(tmp), args)
        with Study.open(scoped, read_only=True) as s, Study.open(plain, read_only=True) as p:
            sizes = (s.pair_count(), p.pair_count())
        print(
            f"{args.responses:,} responses, {args.questions} questions, {args.codes} codes "
            f"({args.everywhere} on every question): {sizes[0]:,} pairs scoped, "
            f"{sizes[1]:,} unscoped (built in {time.perf_counter() - start:.0f} s)"
        )
        with_scope, without = measure(scoped, args.repeat), measure(plain, args.repeat)
    print(f"{'query':32} {'scoped ms':>10} {'unscoped ms':>12} {'ratio':>7}")
    for name, took in with_scope.items():
        base = without[name]
        print(f"{name:32} {took * 1e3:10.2f} {base * 1e3:12.2f} {took / base:7.2f}")


if __name__ == "__main__":
    main()
