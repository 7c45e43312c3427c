"""Codebook iteration: edited codes, the configuration shown, their comparison.

:class:`Iteration` is the app's collaborator for the codebook and configuration
work that sits behind ``E``, ``C`` and the screening panel's comparison; the app opens
the dialogs, runs the comparison in a worker and tells the coder, and this records and
keeps track:

* a confirmed edit of a code is recorded as the next codebook version
  (:meth:`study.iteration.versions.Versions.revise`, exactly like ``codecurve codebook
  --revise``) and the session codes with it; until their new score arrives, the changed
  code's pairs are drawn greyed (:attr:`Iteration.stale_keys`, from
  :func:`study.iteration.revisions.stale_pairs`);
* the chosen configuration becomes the study's active one;
* with two or more scored configurations, :meth:`Iteration.compare` compares
  them on the coder's decisions (:func:`study.analysis.compare.compare_configs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codebooks.errors import CodecurveError

if TYPE_CHECKING:
    from codebooks.model import Codebook
    from study import Study
    from study.analysis import Comparison
    from tui.screens.code_editor import CodeEdit
    from tui.session import ReviewSession

#: Bootstrap resamples of the panel's comparison of configurations (the CLI's: 1000).
COMPARE_RESAMPLES = 200


class Iteration:
    """A study's codebook versions and configurations as the coder iterates on them."""

    def __init__(self, study: Study, session: ReviewSession) -> None:
        self.study = study
        self.session = session
        #: Pairs whose shown score was computed from an older text (drawn greyed).
        self.stale_keys: frozenset[tuple[str, str]] = frozenset()
        #: The comparison of configurations the screening panel shows, if any.
        self.comparison: Comparison | None = None

    def plan(self, codebook: Codebook) -> list[str]:
        """What recording ``codebook`` would change, in words (the editor's preview).

        Raises:
            CodecurveError: the study refuses the revision.
        """
        return self.study.versions.plan_revision(codebook).lines()

    def revise(self, edit: CodeEdit) -> int:
        """Record ``edit`` as the next codebook version and code with it; its number.

        Raises:
            CodecurveError: the study refuses the revision (nothing is recorded).
        """
        done = "added" if edit.added else "edited"
        version = self.study.versions.revise(
            edit.codebook, source=f"app: {done} code {edit.code_id}"
        )
        self.session.set_codebook(self.study.codebook)
        return version

    def find_stale(self) -> bool:
        """Find the pairs shown with a score from an older text of their code (for the
        configuration shown); whether :attr:`stale_keys` changed."""
        from study.iteration import stale_pairs

        config_id = self.session.config_id
        keys: frozenset[tuple[str, str]] = frozenset()
        if config_id is not None:
            with self.study.snapshot() as conn:
                pairs = stale_pairs(conn, self.study.index, config_id)
            keys = frozenset((p.response_id, p.code.id) for p in pairs)
        if keys == self.stale_keys:
            return False
        self.stale_keys = keys
        return True

    def activate(self, config_id: int) -> bool:
        """Make ``config_id`` the study's active configuration; whether the session
        shows another one (the view then has to follow)."""
        if config_id != self.study.scores.active_config_id():
            self.study.scores.set_active(config_id)
        return config_id != self.session.config_id

    def compare(self) -> tuple[Comparison | None, str]:
        """Compare the scored configurations on the coder's decisions (slow: run it in a
        worker); None when fewer than two are scored, or with the reason it cannot be
        computed."""
        from study.analysis import compare_configs

        study = self.study
        scored = [c.id for c in study.scores.configs() if study.scores.scored_count(c.id) > 0]
        if len(scored) < 2:
            return None, ""
        try:
            comparison = compare_configs(
                study, coder=self.session.coder, config_ids=scored, resamples=COMPARE_RESAMPLES
            )
        except CodecurveError as exc:
            from tui.remedies import said

            return None, said(exc)
        return comparison, ""
