"""Work over a study: the validity screen, delegation planning, comparison of
configurations, agreement, findings, learning from the coder, examples, reconciliation.

The front door: other rooms (the UI, the command line) import the names of ``__all__``
from here, never a module of the wing. They load on first use, so importing the wing
costs nothing until a name is asked for.

Modules without a leading ``_`` are also read by other wings of ``study``: ``agreement``,
``compare``, ``delegation_plan`` and ``findings`` by the report, ``screen`` by the
report, the export and the REFI-QDA mapping. The rest (``_evidence``, ``_examples``,
``_learning`` ...) are the wing's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from study.lazy import lazy_getattr

if TYPE_CHECKING:
    from study.analysis._evidence import (
        ExplainPlan,
        explain_study,
        measure_pairs,
        measuring_config,
        plan_explain,
    )
    from study.analysis._examples import (
        DEFAULT_PER_VALUE,
        ExampleSet,
        choose_examples,
        record_examples,
        stored_examples,
    )
    from study.analysis._lacks import after_revision, after_wave
    from study.analysis._learning import (
        CodeLearning,
        LearnRun,
        ReadMemory,
        base_config,
        fits,
        learn,
        learned_config_id,
        training_decisions,
    )
    from study.analysis._reconcile import (
        Disagreement,
        compared_coders,
        disagreements,
        resolved_count,
    )
    from study.analysis.agreement import (
        AgreementError,
        AgreementReport,
        CodeAgreement,
        agreement_hint,
        agreement_remedies,
        describe_estimate,
        safe,
        study_agreement,
    )
    from study.analysis.compare import Comparison, ConfigMetrics, compare_configs
    from study.analysis.delegation_plan import plan_delegation
    from study.analysis.findings import (
        CoOccurrence,
        Findings,
        co_occurrence,
        coded_responses,
        findings_provenance,
        study_findings,
        write_table,
    )
    from study.analysis.screen import (
        Agreement,
        Cut,
        StudyScreening,
        check_screen_coder,
        screen_study,
    )

#: Each exported name and the module that defines it, imported on first use.
_LAZY = {
    "ExplainPlan": "study.analysis._evidence",
    "explain_study": "study.analysis._evidence",
    "measure_pairs": "study.analysis._evidence",
    "measuring_config": "study.analysis._evidence",
    "plan_explain": "study.analysis._evidence",
    "DEFAULT_PER_VALUE": "study.analysis._examples",
    "ExampleSet": "study.analysis._examples",
    "choose_examples": "study.analysis._examples",
    "record_examples": "study.analysis._examples",
    "stored_examples": "study.analysis._examples",
    "after_revision": "study.analysis._lacks",
    "after_wave": "study.analysis._lacks",
    "CodeLearning": "study.analysis._learning",
    "LearnRun": "study.analysis._learning",
    "ReadMemory": "study.analysis._learning",
    "base_config": "study.analysis._learning",
    "fits": "study.analysis._learning",
    "learn": "study.analysis._learning",
    "learned_config_id": "study.analysis._learning",
    "training_decisions": "study.analysis._learning",
    "Disagreement": "study.analysis._reconcile",
    "compared_coders": "study.analysis._reconcile",
    "disagreements": "study.analysis._reconcile",
    "resolved_count": "study.analysis._reconcile",
    "AgreementError": "study.analysis.agreement",
    "AgreementReport": "study.analysis.agreement",
    "CodeAgreement": "study.analysis.agreement",
    "agreement_hint": "study.analysis.agreement",
    "agreement_remedies": "study.analysis.agreement",
    "describe_estimate": "study.analysis.agreement",
    "safe": "study.analysis.agreement",
    "study_agreement": "study.analysis.agreement",
    "Comparison": "study.analysis.compare",
    "ConfigMetrics": "study.analysis.compare",
    "compare_configs": "study.analysis.compare",
    "plan_delegation": "study.analysis.delegation_plan",
    "CoOccurrence": "study.analysis.findings",
    "Findings": "study.analysis.findings",
    "co_occurrence": "study.analysis.findings",
    "coded_responses": "study.analysis.findings",
    "findings_provenance": "study.analysis.findings",
    "study_findings": "study.analysis.findings",
    "write_table": "study.analysis.findings",
    "Agreement": "study.analysis.screen",
    "Cut": "study.analysis.screen",
    "StudyScreening": "study.analysis.screen",
    "check_screen_coder": "study.analysis.screen",
    "screen_study": "study.analysis.screen",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_PER_VALUE",
    "Agreement",
    "AgreementError",
    "AgreementReport",
    "CoOccurrence",
    "CodeAgreement",
    "CodeLearning",
    "Comparison",
    "ConfigMetrics",
    "Cut",
    "Disagreement",
    "ExampleSet",
    "ExplainPlan",
    "Findings",
    "LearnRun",
    "ReadMemory",
    "StudyScreening",
    "after_revision",
    "after_wave",
    "agreement_hint",
    "agreement_remedies",
    "base_config",
    "check_screen_coder",
    "choose_examples",
    "co_occurrence",
    "coded_responses",
    "compare_configs",
    "compared_coders",
    "describe_estimate",
    "disagreements",
    "explain_study",
    "findings_provenance",
    "fits",
    "learn",
    "learned_config_id",
    "measure_pairs",
    "measuring_config",
    "plan_delegation",
    "plan_explain",
    "record_examples",
    "resolved_count",
    "safe",
    "screen_study",
    "stored_examples",
    "study_agreement",
    "study_findings",
    "training_decisions",
    "write_table",
]
