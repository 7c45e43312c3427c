"""The export's tables as DataFrames: the long and wide layouts and their provenance.

Layouts and columns are described in :mod:`study.exchange.export`. Only the study's public face
is used (:class:`study.index.StudyView`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from codebooks.model import Code
from scoring.evidence import SentenceEffect
from study.audit.sample import AuditSample, read_audit
from study.errors import StudyError
from study.exchange.coders import (
    DECISION_COLUMNS,
    chosen_decisions,
    decision_coders,
    describe_choice,
    export_coder,
)
from study.iteration import revisions
from study.labels import resolve_config
from study.log.delegations import guarantee_sentences
from study.queries.pairs import pair_scale
from study.queries.records import (
    archived_decided_codes,
    memo_rows,
    note_rows,
    ordered_responses,
    score_rows,
    scored_pairs,
    value_rows,
)
from study.rows import CONSENSUS
from study.stamps import now, software_version
from study.view import StudyView

LAYOUTS = ("long", "wide")

LONG_COLUMNS = (
    "response_id",
    "code_id",
    "code_name",
    "archived",
    "scale",
    "scored",
    "model_pick",
    "model_pick_label",
    "model_applies",
    "confidence",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "probs",
    "surprisal",
    "decision",
    "decision_label",
    "decision_source",
    "blind",
    "coder",
    "decided_at",
    "codebook_version",
    "delegation",
    "audit",
    "audit_rank",
    "note",
    "memo",
    "final",
    "final_label",
    "final_applies",
    "final_from",
    "evidence_start",
    "evidence_end",
    "evidence_text",
    "evidence_effect",
)


#: Where a wide cell's value comes from with ``fill="model"`` (``final_from`` values).
FILLS = ("none", "model")


def _config_id(study: StudyView, config_id: int | str | None) -> int | None:
    if config_id is None:
        return None
    return resolve_config(study, config_id)


def _curves(blobs: Sequence[Any], *, as_json: bool = False) -> list[Any]:
    """Decode float64 BLOBs in bulk, rows of one length at a time.

    Returns lists of floats (``inf``/``nan`` as ``None``), or with ``as_json`` the same
    as JSON text with 7 significant digits (for formats that hold only scalars).
    """
    out: list[Any] = [None] * len(blobs)
    by_length: dict[int, list[int]] = {}
    for i, blob in enumerate(blobs):
        if isinstance(blob, bytes):
            by_length.setdefault(len(blob), []).append(i)
    for length, index in by_length.items():
        array = np.frombuffer(b"".join(blobs[i] for i in index), dtype="<f8")
        array = array.reshape(len(index), length // 8)
        rows: list[Any] = array.tolist()
        bad = set(np.flatnonzero(~np.isfinite(array).all(axis=1)).tolist())
        for j in bad:
            rows[j] = [v if math.isfinite(v) else None for v in rows[j]]
        if as_json:
            template = "[" + ",".join(["%.7g"] * (length // 8)) + "]"
            rows = [
                json.dumps([None if v is None else float(f"{v:.7g}") for v in row])
                if j in bad
                else template % tuple(row)
                for j, row in enumerate(rows)
            ]
        for j, i in enumerate(index):
            out[i] = rows[j]
    return out


def _response_order(study: StudyView) -> list[tuple[int, str, str, dict[str, Any]]]:
    with study.snapshot() as conn:
        return ordered_responses(conn)


_SCORE_COLUMNS = (
    "model_pick",
    "confidence",
    "norm_entropy",
    "entropy",
    "expected",
    "spread",
    "on_scale_mass",
    "off_scale",
    "truncated",
    "probs",
    "surprisal",
)


def _own(coder: str | None) -> str | None:
    """The coder whose archived codes and notes an export reads: the reconciled
    decisions are anyone's."""
    return None if coder == CONSENSUS else coder


def archived_keys(study: StudyView, *, coder: str | None = None) -> list[int]:
    """The ``cid`` of every archived code (one a revision removed) with a decision.

    Only ``coder``'s decisions count when a coder is given. An archived code nobody
    decided has nothing to export.
    """
    with study.snapshot() as conn:
        return archived_decided_codes(conn, coder=coder)


def memos(study: StudyView, *, coder: str | None = None) -> dict[int, str]:
    """``rid`` -> the response's memo: ``coder``'s; with no coder (a study of one) or the
    reconciled decisions (``consensus``), every coder's memo: the memo where one coder
    wrote one, else each ``[coder] text``, one blank line apart."""
    with study.snapshot() as conn:
        rows = memo_rows(conn, coder=_own(coder))
    grouped: dict[int, list[tuple[str, str]]] = {}
    for rid, who, note in rows:
        grouped.setdefault(int(rid), []).append((str(who), str(note)))
    return {
        rid: items[0][1]
        if len(items) == 1
        else "\n\n".join(f"[{who}] {note}" for who, note in sorted(items))
        for rid, items in grouped.items()
    }


def typed_column(values: Sequence[Any]) -> Any:
    """A response column as numbers where every value is one (``"4"``, ``4``, ``-2.5``;
    blanks missing): whole numbers as ``Int64``, others ``Float64``; else as it is. A
    text such as ``007`` or ``+1`` stays text (a code, not a number)."""
    present = [v for v in values if not _blank(v)]
    if not present or any(isinstance(v, bool) for v in present):
        return list(values)
    texts = [v if isinstance(v, str) else repr(v) for v in present]
    if all(
        isinstance(v, int) or _INTEGER.fullmatch(t) for v, t in zip(present, texts, strict=True)
    ):
        return pd.array([None if _blank(v) else int(v) for v in values], dtype="Int64")
    if all(
        isinstance(v, (int, float)) or _INTEGER.fullmatch(t) or _DECIMAL.fullmatch(t)
        for v, t in zip(present, texts, strict=True)
    ):
        numbers = [None if _blank(v) else float(v) for v in values]
        if all(n is None or math.isfinite(n) for n in numbers):
            return pd.array(numbers, dtype="Float64")
    return list(values)


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+(?:[eE][-+]?[0-9]+)?")


def _blank(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def long_frame(
    study: StudyView,
    *,
    config_id: int | str | None = "active",
    coder: str | None = None,
    curves_as_json: bool = False,
) -> pd.DataFrame:
    """The long layout (module docstring) as a DataFrame.

    ``probs``/``surprisal`` are lists of floats, or JSON text with ``curves_as_json``.
    Archived codes with a decision follow the current codes of each response (``archived``
    True); their final value is the decision alone, never the model's pick. Whose
    decisions: :func:`study.exchange.coders.export_coder` (several coders are never mixed).

    Raises:
        CoderChoiceError: several coders, none chosen, no consensus decisions.
    """
    cfg = _config_id(study, config_id)
    coder = export_coder(study, coder)
    archived = archived_keys(study, coder=_own(coder))
    codable = [*study.index.codable_keys, *archived]
    with study.snapshot() as conn:
        responses = _response_order(study)
        scores = [] if cfg is None else score_rows(conn, cfg)
        chosen = chosen_decisions(conn, coder=coder)
        notes = note_rows(conn)
        memo_of = memos(study, coder=coder)
        sample = read_audit(conn, study.index)
    rids = np.repeat(np.array([r[0] for r in responses], dtype=np.int64), len(codable))
    cids = np.tile(np.array(codable, dtype=np.int64), len(responses))
    scope = study.index.scope
    if scope.scoped:
        # Only the study's pairs: a code scoped to survey questions has none on the
        # responses to another question (the wide layout leaves those cells empty).
        keep = np.ones(len(rids), dtype=bool)
        for cid in codable:
            if scope.limited(cid):
                rows = cids == cid
                own = np.fromiter(scope.rids(cid), dtype=np.int64)
                keep[rows] = np.isin(rids[rows], own)
        rids, cids = rids[keep], cids[keep]
    frame = pd.DataFrame({"rid": rids, "cid": cids})
    score_frame = pd.DataFrame.from_records(scores, columns=["rid", "cid", *_SCORE_COLUMNS])
    frame = frame.merge(score_frame, on=["rid", "cid"], how="left")
    decision_frame = pd.DataFrame.from_records(
        chosen.rows, columns=list(DECISION_COLUMNS)
    ).drop_duplicates(["rid", "cid"], keep="last")  # one coder's (or one reconciled) per pair
    frame = frame.merge(decision_frame, on=["rid", "cid"], how="left")
    note_frame = pd.DataFrame.from_records(notes, columns=["rid", "cid", "note_coder", "note"])
    frame["note_coder"] = frame["coder"] if coder is None else frame["coder"].fillna(coder)
    frame = frame.merge(note_frame, on=["rid", "cid", "note_coder"], how="left")

    codes = {cid: study.index.code_at(cid) for cid in codable}
    scales = {cid: pair_scale(study, cfg, code) for cid, code in codes.items()}
    # A value no option has gets no label in the export (its digits are in the value column).
    labels = {cid: {v: scale.label_of(v) for v in scale.values} for cid, scale in scales.items()}
    cid_list = frame["cid"].tolist()
    is_archived = frame["cid"].isin(archived).to_numpy(dtype=bool)
    frame["response_id"] = frame["rid"].map(study.index.response_ids_by_key())
    frame["code_id"] = [codes[c].id for c in cid_list]
    frame["code_name"] = [codes[c].name for c in cid_list]
    frame["archived"] = is_archived
    frame["scale"] = [scales[c].name for c in cid_list]
    threshold = pd.array([scales[c].threshold for c in cid_list], dtype="Int64")
    for column in ("model_pick", "decision"):
        frame[column] = frame[column].astype("Int64")
    frame["blind"] = frame["blind"].astype("Float64").astype("boolean")
    frame["scored"] = frame["model_pick"].notna()
    # An archived code is not in the current codebook: only a decision is a value of it.
    fallback = frame["model_pick"].mask(pd.Series(is_archived, index=frame.index))
    unresolved = pd.Series(
        [(r, c) in chosen.unresolved for r, c in zip(frame["rid"], cid_list, strict=True)]
        if chosen.unresolved
        else False,
        index=frame.index,
        dtype=bool,
    )
    # An unsettled disagreement has no final value: the model's pick is no stand-in.
    frame["final"] = frame["decision"].fillna(fallback.mask(unresolved))
    for column, source in (
        ("model_pick_label", "model_pick"),
        ("decision_label", "decision"),
        ("final_label", "final"),
    ):
        values = frame[source].astype(object).where(frame[source].notna(), None).tolist()
        frame[column] = [
            None if v is None else labels[c].get(int(v))
            for c, v in zip(cid_list, values, strict=True)
        ]
    frame["model_applies"] = (frame["model_pick"] >= threshold).astype("boolean")
    frame["final_applies"] = (frame["final"] >= threshold).astype("boolean")
    frame["final_from"] = np.select(
        [
            frame["decision_source"].eq("human").to_numpy(dtype=bool),
            frame["decision_source"].eq("model").to_numpy(dtype=bool),
            frame["decision_source"].eq("delegated").to_numpy(dtype=bool),
            unresolved.to_numpy(dtype=bool),
            frame["scored"].to_numpy(dtype=bool) & ~is_archived,
        ],
        ["human", "accepted", "delegated", "unresolved", "model"],
        default="",
    )
    frame["final_from"] = frame["final_from"].replace("", None)
    for column in ("off_scale", "truncated"):
        frame[column] = frame[column].astype("Float64").astype("boolean")
    for column in ("probs", "surprisal"):
        frame[column] = pd.Series(
            _curves(frame[column].tolist(), as_json=curves_as_json), index=frame.index, dtype=object
        )
    frame["memo"] = pd.Series(
        [memo_of.get(int(r)) for r in frame["rid"].tolist()], index=frame.index, dtype=object
    )
    for column in ("decision_source", "coder", "decided_at", "note"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    for column in ("codebook_version", "delegation"):
        frame[column] = frame[column].astype("Float64").astype("Int64")
    frame["audit"], frame["audit_rank"] = _audit_columns(study, sample, frame, codes)
    _evidence_columns(study, cfg, frame, {r[1]: r[2] for r in responses})
    return frame[list(LONG_COLUMNS)]


def _evidence_columns(
    study: StudyView, cfg: int | None, frame: pd.DataFrame, text_of: dict[str, str]
) -> None:
    """The top sentence of each pair's evidence (:mod:`study.scores.evidence`): where it
    stands in the response (characters), its text and its effect on P(applies); empty
    where none was measured."""
    found: dict[tuple[str, str], SentenceEffect] = {}
    if cfg is not None:
        for e in study.evidence.for_config(cfg):
            top = e.top
            if top is not None:
                found[(e.response_id, e.code_id)] = top
    keys = list(zip(frame["response_id"].tolist(), frame["code_id"].tolist(), strict=True))
    tops = [found.get(key) for key in keys]
    frame["evidence_start"] = pd.array([None if t is None else t.start for t in tops], "Int64")
    frame["evidence_end"] = pd.array([None if t is None else t.end for t in tops], "Int64")
    frame["evidence_text"] = pd.Series(
        [None if t is None else t.text(text_of[k[0]]) for t, k in zip(tops, keys, strict=True)],
        index=frame.index,
        dtype=object,
    )
    frame["evidence_effect"] = pd.array(
        [None if t is None else round(t.applies_effect, 6) for t in tops], "Float64"
    )


def _audit_columns(
    study: StudyView, sample: AuditSample | None, frame: pd.DataFrame, codes: dict[int, Code]
) -> tuple[pd.Series, pd.Series]:
    """Per row: whether the pair is in the audit sample, and its response's 1-based rank
    in the audit's random order (empty for a response the audit was not drawn from)."""
    if sample is None:
        empty = pd.Series(pd.NA, index=frame.index)
        return empty.astype("boolean"), empty.astype("Int64")
    ids = study.index.response_ids_by_key()
    rank_of = {rid: sample.position(ids[rid]) for rid in set(frame["rid"].tolist())}
    ranks = [rank_of[int(r)] for r in frame["rid"].tolist()]
    sizes = [sample.size(codes[int(c)].id) for c in frame["cid"].tolist()]
    audit = [r is not None and r < n for r, n in zip(ranks, sizes, strict=True)]
    rank = pd.array([None if r is None else r + 1 for r in ranks], dtype="Int64")
    return (
        pd.Series(pd.array(audit, dtype="boolean"), index=frame.index),
        pd.Series(rank, index=frame.index),
    )


def long_frame_by_coder(
    study: StudyView, *, config_id: int | str | None = "active", curves_as_json: bool = False
) -> pd.DataFrame:
    """The long layout with every coder kept apart: a row per pair and coder who decided
    it (the ``coder`` column says whose), and one row for each pair nobody decided.

    Rows follow the responses' order, codes in codebook order, coders by name.
    """
    coders = decision_coders(study)
    parts = [
        long_frame(study, config_id=config_id, coder=c, curves_as_json=curves_as_json)
        for c in coders
    ]
    # The consensus coder's frame is the reconciled one: only its own rows are its.
    decided = [
        part[part["decision"].notna() & part["coder"].eq(c)]
        for c, part in zip(coders, parts, strict=True)
    ]
    if parts:
        nobody = np.logical_and.reduce([part["decision"].isna().to_numpy() for part in parts])
        rest = parts[0][nobody]
    else:
        rest = long_frame(study, config_id=config_id, curves_as_json=curves_as_json)
    frame = pd.concat([*decided, rest])
    # The row's place in the single-coder layout, then the coder: a pair's rows together.
    frame["_place"] = frame.index
    frame["_who"] = frame["coder"].fillna("")
    frame = frame.sort_values(["_place", "_who"], kind="stable")
    return frame.drop(columns=["_place", "_who"]).reset_index(drop=True)


def wide_frame(
    study: StudyView,
    *,
    config_id: int | str | None = "active",
    coder: str | None = None,
    fill: str = "none",
    all_coders: bool = False,
) -> pd.DataFrame:
    """The wide layout (module docstring) as a DataFrame.

    ``all_coders`` adds, after the code columns, one ``CODE [coder]`` 0/1 column per
    code and coder with a decision (coders sorted by name), empty where that coder did
    not decide the pair.

    A code's 0/1 cell holds a decision (the coder's own, one accepted from the model or
    one delegated); a pair nobody decided is empty, so that an unreviewed model pick is
    never read as a code. ``fill="model"`` fills those cells with the model's pick and
    adds a ``CODE (source)`` column per code saying where each value came from
    (``human``, ``accepted``, ``delegated``, ``model``). An archived code with decisions
    has one ``CODE (archived)`` column of its decisions after the current codes (never
    filled). ``memo`` holds each response's memo.

    Raises:
        StudyError: ``fill`` is neither ``"none"`` nor ``"model"``.
    """
    if fill not in FILLS:
        raise StudyError(f"fill must be one of {', '.join(FILLS)}, not {fill!r}")
    coder = export_coder(study, coder, all_coders=all_coders)
    long = long_frame(study, config_id=config_id, coder=coder, curves_as_json=True)
    responses = _response_order(study)
    codes = list(study.index.codable_codes())
    archived = [study.index.code_at(cid) for cid in archived_keys(study, coder=_own(coder))]
    attr_names: dict[str, None] = {}
    for _rid, _id, _text, attrs in responses:
        for key in attrs:
            attr_names.setdefault(key, None)
    cfg = _config_id(study, config_id)
    scales = [pair_scale(study, cfg, code) for code in codes]
    # A code whose values are not 0/1 (1-5, 1-9) keeps its value, with an applies column.
    with_applies = [tuple(scale.values) != (0, 1) for scale in scales]
    taken = {"response_id", "text", "codes_decided"} | {c.name for c in codes}
    taken |= {f"{c.name} (confidence)" for c in codes}
    taken |= {f"{c.name} (applies)" for c, a in zip(codes, with_applies, strict=True) if a}
    if fill == "model":
        taken |= {f"{c.name} (source)" for c in codes}
    by_coder = _coder_columns(study, responses, codes) if all_coders else {}
    taken |= set(by_coder)
    archived_columns = []
    for code in archived:
        name = f"{code.name} (archived)"
        while name in taken:
            name += " (archived)"
        taken.add(name)
        archived_columns.append(name)
    memo_column = "memo" if "memo" not in taken else "memo (response)"
    taken.add(memo_column)
    attr_columns = {a: (a if a not in taken else f"{a} (attribute)") for a in attr_names}
    shape = (len(responses), len(codes) + len(archived))
    if study.index.scope.scoped:
        # Codes scoped to survey questions have no pair on another question's response:
        # the grid's cells there stay empty.
        grid = pd.DataFrame(
            {
                "response_id": np.repeat([r[1] for r in responses], shape[1]),
                "code_id": np.tile([c.id for c in (*codes, *archived)], len(responses)),
            }
        )
        long = grid.merge(long, on=["response_id", "code_id"], how="left")
    decided = long["decision"].notna().to_numpy().reshape(shape)
    applies = long["final_applies"].astype("Float64").to_numpy("float64", na_value=np.nan)
    applies = applies.reshape(shape)
    values = long["final"].astype("Float64").to_numpy("float64", na_value=np.nan)
    values = values.reshape(shape)
    if fill == "none":
        applies = np.where(decided, applies, np.nan)
        values = np.where(decided, values, np.nan)
    confidence = long["confidence"].astype("Float64").to_numpy("float64", na_value=np.nan)
    confidence = confidence.reshape(shape)
    sources = np.asarray(long["final_from"].to_numpy(object)).reshape(shape)
    memo_of = memos(study, coder=coder)
    # Every column built first and framed once: adding columns one at a time to a frame
    # made the export's time grow with the square of the number of codes.
    columns: dict[str, Any] = {
        "response_id": [r[1] for r in responses],
        "text": [r[2] for r in responses],
    }
    for name, column in attr_columns.items():
        columns[column] = typed_column([r[3].get(name) for r in responses])
    # Of the study's codes: an archived code's old decisions keep their column, not a count.
    columns["codes_decided"] = decided[:, : len(codes)].sum(axis=1).astype(int)
    columns[memo_column] = [memo_of.get(int(r[0])) for r in responses]
    for j, code in enumerate(codes):
        columns[code.name] = pd.array(values[:, j], dtype="Float64").astype("Int64")
        if with_applies[j]:
            columns[f"{code.name} (applies)"] = pd.array(applies[:, j], dtype="Float64").astype(
                "Int64"
            )
    if fill == "model":
        for j, code in enumerate(codes):
            columns[f"{code.name} (source)"] = list(sources[:, j])
    columns.update(by_coder)
    for j, code in enumerate(codes):
        columns[f"{code.name} (confidence)"] = pd.array(confidence[:, j], dtype="Float64")
    for j, name in enumerate(archived_columns, start=len(codes)):
        cells = np.where(decided[:, j], values[:, j], np.nan)
        columns[name] = pd.array(cells, dtype="Float64").astype("Int64")
    return pd.DataFrame(columns)


def value_labels(
    study: StudyView, frame: pd.DataFrame, *, config_id: int | str | None = "active"
) -> dict[str, dict[int, str]]:
    """Value labels of a frame's code columns, from each code's scale (``1: does not
    apply at all``, ``No: the code does not apply``): in the wide layout each code's
    value column and its coders' columns, its applies column (``0: does not apply``,
    ``1: applies``); in the long layout the value columns where every code shares a scale."""
    cfg = _config_id(study, config_id)
    columns = {str(c) for c in frame.columns}
    codes = list(study.index.codable_codes())
    scales = {code.name: pair_scale(study, cfg, code) for code in codes}

    def named(scale: Any) -> dict[int, str]:
        return {
            int(o.value): f"{o.label}: {o.anchor}" if o.anchor and o.anchor != o.label else o.label
            for o in scale.options
        }

    out: dict[str, dict[int, str]] = {}
    if "code_id" in columns:  # the long layout
        distinct = {s.name: s for s in scales.values()}
        if len(distinct) == 1:
            labelled = named(next(iter(distinct.values())))
            for column in ("model_pick", "decision", "final"):
                if column in columns:
                    out[column] = labelled
        return out
    coders = set(decision_coders(study))
    for name, scale in scales.items():
        for column in [name, *(f"{name} [{coder}]" for coder in coders)]:
            if column in columns:
                out[column] = named(scale)
        if f"{name} (applies)" in columns:
            out[f"{name} (applies)"] = {0: "does not apply", 1: "applies"}
    return out


def _coder_columns(
    study: StudyView,
    responses: list[tuple[int, str, str, dict[str, Any]]],
    codes: Sequence[Code],
) -> dict[str, Any]:
    """One ``CODE [coder]`` column per code and coder, of that coder's values
    (``wide_frame``)."""
    with study.snapshot() as conn:
        rows = value_rows(conn)
    coders = sorted({str(r[2]) for r in rows})
    row_of = {rid: i for i, (rid, _id, _text, _attrs) in enumerate(responses)}
    cids = [study.index.code_key(code.id) for code in codes]
    col_of = {cid: j for j, cid in enumerate(cids)}
    grids = {c: np.full((len(responses), len(codes)), np.nan) for c in coders}
    for rid, cid, coder, value in rows:
        if rid in row_of and cid in col_of:
            grids[str(coder)][row_of[rid], col_of[cid]] = float(value)
    out: dict[str, Any] = {}
    for j, code in enumerate(codes):
        for coder in coders:
            name = f"{code.name} [{coder}]"
            out[name] = pd.array(grids[coder][:, j], dtype="Float64").astype("Int64")
    return out


def source_counts(
    study: StudyView, *, config_id: int | str | None = "active", coder: str | None = None
) -> dict[str, int]:
    """How many final values come from each source, as the long layout's ``final_from``.

    Returns:
        ``{"coder", "accepted", "delegated", "model", "none"}`` counts over all pairs:
        the coder's own decisions, picks accepted from the model, delegated ones, the
        model's unreviewed picks, and pairs with no value at all; with the reconciled
        decisions (``coder="consensus"``) also ``unresolved``, where there are any.
    """
    cfg = _config_id(study, config_id)
    with study.snapshot() as conn:
        chosen = chosen_decisions(conn, coder=coder)
        rows = [(r[0], r[1], r[3]) for r in chosen.rows]
        scored = set() if cfg is None else scored_pairs(conn, cfg)
    codable = set(study.index.codable_keys)
    scope = study.index.scope
    latest = {
        (int(r[0]), int(r[1])): str(r[2])
        for r in rows
        if int(r[1]) in codable and scope.applies(int(r[0]), int(r[1]))
    }
    by_source = {"human": "coder", "model": "accepted", "delegated": "delegated"}
    counts = dict.fromkeys(("coder", "accepted", "delegated", "model", "none"), 0)
    for source in latest.values():
        key = by_source.get(source, "coder")
        counts[key] += 1
    unresolved = {pair for pair in chosen.unresolved if pair[1] in codable}
    if unresolved:
        counts["unresolved"] = len(unresolved)
    counts["model"] = sum(
        1
        for pair in scored
        if pair not in latest
        and pair not in unresolved
        and pair[1] in codable
        and scope.applies(*pair)
    )
    counts["none"] = study.pair_count() - sum(counts.values())
    return counts


def _code_name(study: StudyView, code_id: str) -> str:
    try:
        return study.codebook.code(code_id).name
    except (KeyError, ValueError):  # a code a later revision removed
        return code_id


def _audit_provenance(study: StudyView) -> dict[str, str]:
    """The codebook version and the audit sample, as the long layout's columns read them."""
    with study.snapshot() as conn:
        sample = read_audit(conn, study.index)
        version = revisions.current_version(conn)
    info = {
        "codebook version": f"{version} (column codebook_version: the version each decision "
        "was made under)"
    }
    if sample is None:
        info["audit sample"] = "(none drawn)"
        return info
    sizes = ", ".join(f"{c.name} {sample.size(c.id)}" for c in study.codes)
    info["audit sample"] = (
        f"blind random audit, seed {sample.seed}, drawn from {sample.population} responses, "
        f"last drawn or extended {sample.drawn_at}; pairs per code: {sizes} (columns audit: "
        "the pair is in the sample; audit_rank: its response's place in the random order, "
        "a code's sample being its first n responses)"
    )
    return info


def provenance(
    study: StudyView,
    *,
    config_id: int | str | None = "active",
    layout: str | None = None,
    coder: str | None = None,
    fill: str = "none",
    all_coders: bool = False,
) -> dict[str, str]:
    """What produced an export: model, template, context, scale, codebook, software, time.

    ``coder`` is whose decisions the export holds (:func:`study.exchange.coders.export_coder`:
    ``consensus`` for the reconciled ones), ``all_coders`` that every coder is kept apart.
    """
    cfg = _config_id(study, config_id)
    book = study.codebook
    meta = study.meta()
    counts = source_counts(study, config_id=cfg, coder=coder)
    coders = decision_coders(study)
    exported = describe_choice(coder, coders=coders, unresolved=counts.get("unresolved", 0))
    if all_coders:
        exported = f"every coder apart ({', '.join(coders)}); the common values: {exported}"
    info = {
        "study": study.path.name,
        "study created": meta.get("created_at", ""),
        "codebook": book.name,
        "codebook hash": meta.get("codebook_hash", book.content_hash()),
        "codes": str(len(study.codes)),
        "scale": f"{book.scale.name} {list(book.scale.values)}, applies from "
        f"{book.scale.threshold}",
        "responses": str(study.response_count()),
        "decisions": str(counts["coder"] + counts["accepted"] + counts["delegated"]),
        "coders": ", ".join(study.decisions.coders()) or "(none)",
        "coder exported": exported,
    }
    info |= _audit_provenance(study)
    if cfg is None:
        info["model"] = "(not scored)"
    else:
        row = study.scores.config_row(cfg)
        info |= {
            "model": row.model.name,
            "model revision": row.model.revision,
            "model dtype": row.model.dtype,
            "model device": row.model.device,
            "model backend": row.model.backend,
            "template": row.template_id,
            "template hash": row.template_hash,
            "context": row.context,
            "scale asked": f"{row.scale.name} {list(row.scale.values)}",
            "strict": str(row.strict).lower(),
            "configuration key": row.key,
            "pairs scored": f"{study.scores.scored_count(cfg)} of {study.pair_count()}",
        }
    shown = dict(counts)
    if layout == "wide" and fill != "model":
        # Those cells stay empty: the model's unreviewed picks are no value of this file.
        shown["none"] += shown["model"]
        shown["model"] = 0
    info["values by source"] = ", ".join(f"{key} {value}" for key, value in shown.items())
    archived = [study.index.code_at(cid).name for cid in archived_keys(study, coder=_own(coder))]
    if archived:
        info["archived codes"] = (
            ", ".join(archived) + " (removed by a codebook revision; their decisions are "
            "exported, marked archived)"
        )
    info["memos"] = f"{len(memos(study, coder=coder))} response(s) with a memo " + (
        "(the coder's)" if coder and coder != CONSENSUS else "(every coder's)"
    )
    # The sentence a methods section can quote, per code a delegation (not undone) planned.
    for code_id, sentence in guarantee_sentences(study, config_id=cfg).items():
        name = _code_name(study, code_id)
        info[f"delegation guarantee ({name})"] = sentence
    if layout is not None:
        info["layout"] = layout
    if layout == "wide":
        info["wide cells"] = (
            "the model's picks fill undecided cells (see each code's source column)"
            if fill == "model"
            else "empty where nobody decided (the model's picks are not filled in)"
        )
    info["software"] = f"codecurve {software_version()}"
    info["exported at"] = now()
    return info
