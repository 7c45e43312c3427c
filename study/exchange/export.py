"""Export the coded dataset (CSV, XLSX, Parquet, JSONL, SPSS ``.sav``, Stata ``.dta``;
long or wide) and the codebook.

Layouts:

``long``  one row per (response, code), responses in file order, codes in codebook order:
          ``response_id, code_id, code_name, archived, scale``; the model's score under
          the configuration (``scored, model_pick, model_pick_label, model_applies,
          confidence, norm_entropy, entropy, expected, spread, on_scale_mass, off_scale,
          truncated, probs, surprisal``); the coder's decision (``decision,
          decision_label, decision_source, blind, coder, decided_at``, the codebook
          version it was made under ``codebook_version`` and, for a delegated one, its
          ``delegation`` (the ``delegate`` event id whose guarantee the provenance
          quotes), ``note``); the pair's audit membership ``audit`` and its response's
          1-based place in the audit's random order ``audit_rank``; the response's
          ``memo``; and the final decision (``final, final_label, final_applies,
          final_from``); the pair's evidence, the sentence whose absence lowered the
          model's P(applies) most (``evidence_start, evidence_end``: its characters in
          the text, ``evidence_text``, ``evidence_effect``: the drop; empty where it was
          not measured, ``codecurve explain``). ``blind`` is true for a decision made without
          seeing the model's answer (the blind audit, imports). An archived code (one a
          codebook revision removed) that has decisions follows the current codes of
          each response with ``archived`` true; its final value is the decision alone.
``wide``  one row per response, in file order: ``response_id, text``, the response's other
          columns (numbers as numbers where every value is one), ``codes_decided`` (current
          codes with a coder's decision), ``memo``, then one column per code named by the
          code holding the decision's value (0/1 on a yes/no code, the point of a 1-5 code,
          with a ``<code> (applies)`` 0/1 column beside a code whose values are not 0/1;
          blank where nobody decided, so that an unreviewed model pick never reads as a
          code), one ``<code> (confidence)``
          column per code (the model's ``max_k p_k``), and one ``<code> (archived)``
          column of decisions per archived code that has any. With ``fill="model"`` the
          blank cells of current codes take the model's pick and a ``<code> (source)``
          column per code says where each value came from (``final_from``). With
          ``all_coders`` one ``<code> [<coder>]`` column per code and coder follows, of
          that coder's values (blank where that coder did not decide).

``memo`` is the coder's memo on the whole response when ``coder`` is given; with no
coder or the reconciled decisions, every coder's memo (``[coder] text`` each where
several wrote one); the same text on each of the response's long rows.

The final decision is the coder's where there is one, else the model's pick, and
``final_from`` says which: ``human`` (the coder's own value), ``accepted`` (the coder
accepted the model's pick), ``delegated`` (delegated to the model by a certified
threshold), ``model`` (not reviewed: the model's pick), ``unresolved`` (reconciled
decisions: the coders disagree and no consensus settled it; no final value) or empty
(neither decided nor scored). Several coders are never mixed pair by pair: see
:mod:`study.exchange.coders` (one coder's decisions, the reconciled ones, or every coder
apart with ``all_coders``).

``probs``/``surprisal`` are lists in Parquet and JSONL, JSON text in CSV and XLSX; a
surprisal of ``inf`` (probability zero) is written as null.

Modules: :mod:`study.exchange.frames` builds the tables, :mod:`study.exchange.writers` writes them.

Safety: every file is written to a temporary file in the target's folder and renamed
over the target only when complete, so a failed export leaves no partial file; a
symlink's target is replaced, a device or pipe (``/dev/stdout``) is written into, and a
study (any SQLite file) or a file in ``protect`` is never overwritten. In CSV, a text
cell that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``,
tab or carriage return, and not simply a number such as ``-2``) is prefixed with ``'``;
XLSX, Parquet, SPSS and Stata cells are typed, and hold every text exactly (an XLSX text
starting with ``=`` is stored as text, never as a formula). SPSS and Stata files
(:mod:`study.exchange._stats_files`) get valid variable names, the column names as
variable labels and value labels from each code's scale; their provenance and the list
of their variables go in ``<file>-metadata.json`` beside them. XLSX has a second sheet
``provenance`` (model, template, context, scale, codebook, software version, export
time, archived codes, and, per delegated code, ``delegation guarantee (<code>)``: the
one sentence a methods section can quote); Parquet carries the same as schema metadata
(key ``codecurve.provenance``, JSON); CSV and JSONL hold no metadata, so the same goes in
a file beside them, ``<file>-metadata.json`` (for CSV a CSV on the Web table
description, :func:`study.exchange.writers.write_metadata`), unless the target is a
device or pipe. CSV is written as UTF-8 with a BOM, so that spreadsheet
programs detect the encoding.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from codebooks.errors import InputError
from codebooks.files import check_target
from study.errors import StudyError
from study.exchange._stats_files import variables, write_stats
from study.exchange.coders import CoderChoiceError, export_coder
from study.exchange.frames import (
    LAYOUTS,
    LONG_COLUMNS,
    long_frame,
    long_frame_by_coder,
    provenance,
    value_labels,
    wide_frame,
)
from study.exchange.writers import (
    FORMATS,
    XLSX_CELL_LIMIT,
    atomic_write,
    export_format,
    metadata_path,
    read_export,
    write_csv,
    write_jsonl,
    write_metadata,
    write_parquet,
    write_xlsx,
)
from study.intake.cells import FORMULA_STARTS, neutralise
from study.labels import resolve_config
from study.rows import CONSENSUS

if TYPE_CHECKING:
    from codebooks.model import Codebook
    from study.store import Study

__all__ = [
    "FORMATS",
    "FORMULA_STARTS",
    "LAYOUTS",
    "LONG_COLUMNS",
    "XLSX_CELL_LIMIT",
    "CoderChoiceError",
    "atomic_write",
    "export_codebook",
    "export_format",
    "export_study",
    "long_frame",
    "metadata_path",
    "metadata_target",
    "neutralise",
    "provenance",
    "read_export",
    "wide_frame",
    "write_csv",
    "write_jsonl",
    "write_parquet",
    "write_xlsx",
]


#: Formats whose provenance goes in a file beside them (they hold no metadata of their
#: own, or, for SPSS and Stata, too little).
SIDECAR_FORMATS = ("csv", "jsonl", "sav", "dta")

#: Folders of devices and of a process's open files: ``/dev/stdout`` is a regular file
#: when the output is redirected to one, yet nothing belongs beside it.
_SYSTEM_FOLDERS = (Path("/dev"), Path("/proc"))


def metadata_target(path: str | Path) -> Path | None:
    """Where a CSV or JSONL export to ``path`` puts its provenance
    (:func:`metadata_path`), or None when ``path`` is no file of its own folder: a
    device, a pipe, standard output (``/dev/stdout``, ``/proc/self/fd/1``), a folder."""
    target = Path(path)
    places = [Path(os.path.abspath(target))]
    if target.is_symlink():  # a link to /dev/stdout in a folder of one's own
        places.append(Path(os.path.abspath(target.parent / os.readlink(target))))
    if any(p.is_relative_to(folder) for p in places for folder in _SYSTEM_FOLDERS):
        return None
    if target.exists() and not target.is_file():
        return None
    return metadata_path(target)


def export_study(
    study: Study,
    path: str | Path,
    *,
    format: str | None = None,
    layout: str = "long",
    config_id: int | str | None = "active",
    coder: str | None = None,
    protect: Iterable[str | Path] = (),
    fill: str = "none",
    all_coders: bool = False,
) -> Path:
    """Write the coded dataset (layouts and safety in the module docstring).

    Args:
        study: An open study (read-only is enough).
        path: The file to write; replaced atomically if it exists.
        format: ``csv``, ``xlsx``, ``parquet`` or ``jsonl``; by the suffix when ``None``.
        layout: ``long`` or ``wide``.
        config_id: The scoring configuration whose scores are exported: ``"active"``
            (default), an id, or ``None`` for no scores.
        coder: Export this coder's decisions, or ``consensus`` the reconciled ones. By
            default the only coder's; with several coders the reconciled decisions once
            the consensus coder decided anything, else a coder must be chosen or every
            coder kept apart (:mod:`study.exchange.coders`).
        protect: Files never to overwrite (besides the study, the responses file it was
            made from and any SQLite file).
        fill: The wide layout's undecided cells: ``none`` (blank) or ``model``.
        all_coders: Keep every coder apart: the wide layout adds a ``CODE [coder]``
            column per code and coder (the code columns hold the reconciled values);
            the long layout has a row per pair and coder who decided it.

    Returns:
        The path written.

    Raises:
        StudyError: unknown format or layout, a refused or unwritable target (checked
            before the work), a damaged study file.
        CoderChoiceError: several coders, none chosen and the coders not kept apart.
    """
    target = Path(path)
    fmt = export_format(target, format)
    if layout not in LAYOUTS:
        raise StudyError(f"unknown layout {layout!r}; use long or wide")
    source = study.meta().get("responses_source", "")  # the file the study was made from
    protect = (study.path, *protect, *([Path(source)] if source else []))
    check_target(target, protect=protect, error=StudyError)
    # CSV and JSONL hold no metadata: their provenance goes in a file beside them (not
    # beside a device or pipe, such as /dev/stdout).
    metadata = metadata_target(target) if fmt in SIDECAR_FORMATS else None
    if metadata is not None:
        check_target(metadata, protect=(*protect, target), error=StudyError)
    if not study.read_only:
        # Read through a handle of its own: the writer's stays free for the coder's
        # decisions while a large export runs (every decision is committed, so the
        # reader sees them all).
        from study.store import Study

        with Study.open(study.path, read_only=True) as reader:
            return export_study(
                reader,
                target,
                format=fmt,
                layout=layout,
                config_id=config_id,
                coder=coder,
                protect=protect,
                fill=fill,
                all_coders=all_coders,
            )
    # A damaged page would otherwise read as "not scored" and export silently.
    study.quick_check()
    coder = export_coder(study, coder, all_coders=all_coders)
    as_json = fmt in ("csv", "xlsx", "sav", "dta")
    if layout == "long" and all_coders:
        frame = long_frame_by_coder(study, config_id=config_id, curves_as_json=as_json)
    elif layout == "long":
        frame = long_frame(study, config_id=config_id, coder=coder, curves_as_json=as_json)
    else:
        frame = wide_frame(
            study, config_id=config_id, coder=coder, fill=fill, all_coders=all_coders
        )
    info = provenance(
        study, config_id=config_id, layout=layout, coder=coder, fill=fill, all_coders=all_coders
    )
    info |= _screen_provenance(study, config_id, coder)
    if fmt == "xlsx":
        return atomic_write(target, lambda tmp: write_xlsx(frame, tmp, info=info), protect=protect)
    if fmt == "parquet":
        return atomic_write(
            target, lambda tmp: write_parquet(frame, tmp, info=info), protect=protect
        )
    if fmt in ("sav", "dta"):
        labels = value_labels(study, frame, config_id=config_id)
        written = atomic_write(
            target,
            lambda tmp: write_stats(
                frame, tmp, target=target, fmt=fmt, info=info, value_labels=labels
            ),
            protect=protect,
        )
        listed = variables(frame, fmt=fmt, value_labels=labels)
        if metadata is not None:
            atomic_write(
                metadata,
                lambda tmp: write_metadata(
                    frame, tmp, table=target.name, format=fmt, info=info, variables=listed
                ),
                protect=(*protect, target),
            )
        return written
    write_table = write_csv if fmt == "csv" else write_jsonl
    written = atomic_write(target, lambda tmp: write_table(frame, tmp), protect=protect)
    if metadata is not None:
        atomic_write(
            metadata,
            lambda tmp: write_metadata(frame, tmp, table=target.name, format=fmt, info=info),
            protect=(*protect, target),
        )
    return written


def export_codebook(
    study: Study, path: str | Path, *, version: int | None = None, flavour: str | None = None
) -> Path:
    """Write the study's codebook (or its version ``version``) with
    :func:`codebooks.writers.save_codebook` (by suffix; ``flavour`` another program's
    layout, such as ``taguette`` for a ``.csv``).

    ``save_codebook`` writes atomically itself and is given the real path, so that its
    errors (an unknown suffix, an unwritable folder) name the file asked for.

    Raises:
        InputError: the study has no codebook version ``version``.
        CodebookError: an unknown suffix, a codebook the format cannot hold, or a file
            that cannot be written.
    """
    try:
        from codebooks.writers import save_codebook
    except ImportError:
        raise StudyError("this codecurve cannot write codebook files yet") from None
    return save_codebook(codebook_version(study, version), Path(path), flavour=flavour)


def codebook_version(study: Study, version: int | None = None) -> Codebook:
    """The study's codebook, or its version ``version``.

    Raises:
        InputError: the study has no codebook version ``version``.
    """
    if version is None:
        return study.codebook
    versions = {v.version: v for v in study.versions.all()}
    if version not in versions:
        raise InputError(
            f"no codebook version {version}; the study has versions 1 to {max(versions)}",
            path=study.path,
        )
    return versions[version].codebook


def _screen_provenance(
    study: Study, config_id: int | str | None, coder: str | None
) -> dict[str, str]:
    """What the validity screen says, against the coder exported (every coder for a
    reconciled export), in the words of the terminal, the app and the report."""
    from study.analysis.screen import screen_lines

    resolved = resolve_config(study, config_id)
    who = None if coder in (None, CONSENSUS) else coder
    info = {}
    for line in screen_lines(study, resolved, who):
        key, _, value = line.partition(": ")
        info[key] = value
    return info
