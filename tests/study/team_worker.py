"""One process of the team test and benchmark: a coder deciding, undoing and noting at
random, or the lead revising the codebook and delegating mid-way.

``python -m tests.study.team_worker coder STUDY NAME SEED ACTIONS LOG``: ``ACTIONS``
random actions as ``NAME``, each one that the study reported as saved written to ``LOG``
(one JSON line, after the call returned) with the codebook the session had.

``python -m tests.study.team_worker lead STUDY LOG AT1 AT2``: plans a certified delegation
(``LOG`` with suffix ``.ready`` says it is planned), applies it as ``ana`` once the coders'
records reach ``AT1``; once they reach ``AT2``, a codebook
revision that archives ``pay``.

``python -m tests.study.team_worker bench STUDY NAME SEED ACTIONS OUT``: decisions only,
each one's commit time (seconds) in ``OUT``, one per line.

``python -m tests.study.team_worker full STUDY``: three coders writing long notes in turn
until the disk is full; prints what each saw and whether everything saved is there.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from pathlib import Path

from study import Study, StudyChangedError, StudyError


def _pick(study: Study, rng: random.Random) -> tuple[str, str]:
    codes = [c.id for c in study.codes]
    ids = study.response_ids()
    return rng.choice(ids), rng.choice(codes)


def coder(path: Path, name: str, seed: int, actions: int, log: Path) -> int:
    rng = random.Random(seed)
    with Study.open(path, coder=name) as study, log.open("a", encoding="utf-8") as out:
        for step in range(actions):
            if step % 10 == 0:
                study.refresh()  # as the app's timer does
            seen = study.codebook.content_hash()
            rid, code = _pick(study, rng)
            roll = rng.random()
            try:
                if roll < 0.6:
                    value = rng.randint(1, 5)
                    made = study.decisions.record(rid, code, value, coder=name)
                    entry = {"kind": "record", "id": made.id, "rid": rid, "code": code}
                    entry["value"] = value
                elif roll < 0.75:
                    undone = study.decisions.undo(coder=name)
                    if undone is None:
                        continue
                    entry = {"kind": "undo", "id": undone.id}
                elif roll < 0.9:
                    note = f"{name} {step}"
                    made = study.decisions.set_note(rid, code, note, coder=name)
                    entry = {"kind": "note", "id": made.id, "rid": rid, "code": code}
                    entry["note"] = note
                else:
                    made = study.decisions.clear(rid, code, coder=name)
                    entry = {"kind": "clear", "id": made.id, "rid": rid, "code": code}
            except StudyChangedError:
                entry = {"kind": "refused"}
            except StudyError as exc:
                if "no code" in str(exc) or "cannot be decided" in str(exc):
                    continue  # a code archived meanwhile
                raise
            entry.update(coder=name, codebook=seen)
            out.write(json.dumps(entry) + "\n")
            out.flush()
    return 0


def _records(study: Study) -> int:
    with study.query() as conn:
        return int(conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'record'").fetchone()[0])


def _wait_for(path: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    with Study.open(path, read_only=True) as reader:
        while _records(reader) < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"the coders never reached {count} records")
            time.sleep(0.02)


def lead(path: Path, log: Path, at_delegation: int, at_revision: int) -> int:
    from study.analysis.delegation_plan import plan_delegation

    done: dict[str, object] = {}
    with Study.open(path, coder="ana") as study:
        # Planned on the audit alone, before the coders start; applied mid-way, where
        # it leaves alone every pair a coder decided meanwhile.
        plan = plan_delegation(study, coder="ana", cut=0.5, max_error=0.2)
        log.with_suffix(".ready").touch()
        _wait_for(path, at_delegation)
        applied = study.delegations.apply(plan, coder="ana")
        done["delegated"] = applied.total
        done["delegation"] = applied.event_id
    _wait_for(path, at_revision)
    with Study.open(path) as study:
        kept = tuple(c for c in study.codebook.codes if c.id != "pay")
        revised = dataclasses.replace(study.codebook, codes=kept)
        done["version"] = study.versions.revise(revised)
    log.write_text(json.dumps(done), encoding="utf-8")
    return 0


def bench(path: Path, name: str, seed: int, actions: int, out: Path) -> int:
    rng = random.Random(seed)
    times = []
    with Study.open(path, coder=name) as study:
        for _ in range(actions):
            rid, code = _pick(study, rng)
            started = time.perf_counter()
            study.decisions.record(rid, code, rng.randint(1, 5), coder=name)
            times.append(time.perf_counter() - started)
    out.write_text("\n".join(f"{t:.9f}" for t in times), encoding="utf-8")
    return 0


def full(path: Path) -> int:
    sessions = [Study.open(path, coder=f"c{k}") for k in range(3)]
    ids, codes = sessions[0].response_ids(), [c.id for c in sessions[0].codes]
    saved: dict[tuple[str, str, str], str] = {}
    errors: dict[str, str] = {}
    for i in range(20000):
        name = f"c{i % 3}"
        if len(errors) == 3:
            break
        if name in errors:
            continue
        rid, code = ids[i % len(ids)], codes[(i // len(ids)) % len(codes)]
        note = f"{name} {i} " + "x" * 3000
        try:
            sessions[i % 3].decisions.set_note(rid, code, note, coder=name)
        except StudyError as exc:
            errors[name] = str(exc)
            continue
        saved[(name, rid, code)] = note
    for study in sessions:
        study.close()
    with Study.open(path, read_only=True) as reader:
        missing = [
            k for k, n in saved.items() if reader.decisions.note(k[1], k[2], coder=k[0]) != n
        ]
        problems = reader.check()
    print(
        json.dumps({"saved": len(saved), "errors": errors, "missing": missing, "check": problems})
    )
    return 0


def main(argv: list[str]) -> int:
    role, path = argv[0], Path(argv[1])
    if role == "coder":
        return coder(path, argv[2], int(argv[3]), int(argv[4]), Path(argv[5]))
    if role == "lead":
        return lead(path, Path(argv[2]), int(argv[3]), int(argv[4]))
    if role == "full":
        return full(path)
    if role == "bench":
        return bench(path, argv[2], int(argv[3]), int(argv[4]), Path(argv[5]))
    raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
