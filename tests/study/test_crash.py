"""A decision that was returned as saved survives SIGKILL; the file stays intact.

A child process records decisions in a loop and prints each returned decision (flushed);
the parent kills it with SIGKILL at a random moment, reopens the study and checks that
every printed decision is there and that ``PRAGMA integrity_check`` says ok. Repeated
with different kill times, both durability settings, and kills in the middle of a
scoring batch.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from codebooks.model import Codebook
from study import ResponseTable, Study

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    from study import Study

    path, seed = sys.argv[1], int(sys.argv[2])
    study = Study.open(path, durability="full" if (seed // 1000) % 2 else "normal")
    ids = study.response_ids()
    codes = [c.id for c in study.codes]
    print("ready", flush=True)
    i = seed
    while True:
        i += 1
        rid, code = ids[i % len(ids)], codes[(i // len(ids)) % len(codes)]
        values = study.codebook.scale_for(study.code(code)).values
        value = values[i % len(values)]
        if i % 7 == 0:
            d = study.decisions.undo(coder="kim")
            print("undo", "-" if d is None else d.id, flush=True)
            continue
        note = f"n{i}" if i % 3 == 0 else None
        d = study.decisions.record(rid, code, value, coder="kim", note=note)
        print("rec", d.id, rid, code, value, flush=True)
    """
)


@pytest.fixture
def crash_study(tmp_path: Path, codebook: Codebook) -> Path:
    texts = {f"c{i}": f"response number {i}" for i in range(40)}
    path = tmp_path / "crash.codecurve"
    Study.create(path, responses=ResponseTable.from_texts(texts), codebook=codebook).close()
    return path


def run_and_kill(path: Path, seed: int, delay: float) -> list[list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert child.stdout is not None
    first = child.stdout.readline()
    assert first.strip() == "ready", child.stderr.read() if child.stderr else ""
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err
    lines = [line.split() for line in out.splitlines()]
    # The last line may have been cut by the kill; only whole lines were returned calls.
    if out and not out.endswith("\n"):
        lines = lines[:-1]
    return lines


def test_killed_writer_loses_nothing_it_returned(crash_study: Path) -> None:
    rng = random.Random(20240607)
    started = time.monotonic()
    expected: dict[tuple[str, str], int | None] = {}
    undone: set[int] = set()
    iterations = 0
    seed = 0
    # At least 8 kills whatever the machine's load (each starts an interpreter), then
    # more while 20 s last.
    while iterations < 8 or (iterations < 20 and time.monotonic() - started < 20):
        iterations += 1
        lines = run_and_kill(crash_study, seed, rng.uniform(0.0, 0.25))
        seed += 1000
        with Study.open(crash_study) as study:
            assert study.check() == []
            events = {e.id: e for e in study.decisions.events()}
            for line in lines:
                if line[0] == "rec":
                    event_id, rid, code, value = int(line[1]), line[2], line[3], int(line[4])
                    event = events.get(event_id)
                    assert event is not None, f"decision {event_id} was returned but is lost"
                    assert (event.response_id, event.code_id, event.value) == (rid, code, value)
                elif line[1] != "-":
                    undone.add(int(line[1]))
                    assert any(e.undoes == int(line[1]) for e in events.values())
            # The current state matches a replay of the log
            for (rid, code), replayed in _replay(list(events.values())).items():
                d = study.decisions.decision(rid, code, coder="kim")
                assert (None if d is None else d.value) == replayed
            expected = _replay(list(events.values()))
    assert expected  # something was decided across the runs


def _replay(events: list) -> dict[tuple[str, str], int | None]:  # type: ignore[type-arg]
    """The current values implied by the event log alone."""
    state: dict[tuple[str, str], int | None] = {}
    for e in sorted(events, key=lambda e: e.id):
        if e.kind in ("record", "clear", "import", "undo") and e.response_id is not None:
            state[(e.response_id, e.code_id)] = e.value
    return state


def test_killed_scoring_keeps_whole_batches(crash_study: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from tests.factories import synthetic_score, IDENTITY
        from codebooks.model import LIKERT_5
        from scoring.score import ScoreConfig
        from study import Study

        study = Study.open(sys.argv[1])
        config = ScoreConfig(model=IDENTITY, template_id="t", template_hash="h",
                             context="definition", scale=LIKERT_5)
        cid = study.scores.ensure_config(config)
        pending = study.scores.pending_pairs(cid)
        print("ready", flush=True)
        for start in range(0, len(pending), 4):
            batch = pending[start:start + 4]
            study.scores.store(cid, [synthetic_score(p, config) for p in batch])
            print("batch", len(batch), flush=True)
        print("done", flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(crash_study)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
    time.sleep(0.15)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    written = sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("batch"))
    with Study.open(crash_study) as study:
        assert study.check() == []
        config_id = study.scores.active_config_id()
        assert config_id is not None
        stored = study.scores.scored_count(config_id)
        assert stored >= written
        assert stored % 4 == 0 or stored == study.pair_count()  # whole batches only


NEW_CHILD = textwrap.dedent(
    """
    import sys, time
    from study import ResponseTable, Study
    from study.file import lifecycle
    from tests.factories import CODEBOOK

    def hold(tmp):
        print("building", tmp, flush=True)
        time.sleep(3600)  # killed here, its study half-made under the temporary name

    table = ResponseTable.from_texts({"r1": "a text", "r2": "another"})
    from pathlib import Path
    lifecycle.create_file(Path(sys.argv[1]), responses=table, codebook=CODEBOOK, fill=hold)
    """
)


def test_a_study_left_half_made_by_a_killed_new_is_removed_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "s.codecurve"
    child = subprocess.Popen(
        [sys.executable, "-c", NEW_CHILD, str(path)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert child.stdout is not None
    line = child.stdout.readline()  # waits until the temporary study is there
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert line.startswith("building "), line
    left = Path(line.split(" ", 1)[1].strip())
    assert left.exists()
    assert not path.exists()
    alive = tmp_path / f".other.codecurve.{os.getpid()}-0123abcd.tmp"
    alive.write_bytes(b"")  # a study being made by a living process: kept
    from tests.factories import CODEBOOK

    table = ResponseTable.from_texts({"r1": "a text"})
    Study.create(path, responses=table, codebook=CODEBOOK).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, alive.name])
