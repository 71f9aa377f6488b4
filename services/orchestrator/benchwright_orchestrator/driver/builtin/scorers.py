"""``write_scorer``: the ``task_impl.py`` for an analysed dataset, from the kind's template.

Every scorer subclasses ``BenchTask`` as ``Task``, asks the model in ``solve`` and
returns ``{"score", "parsed", ...}`` from ``score`` so that the ``majority_on``
aggregator can vote on ``parsed``. What each kind does is in its module
(``kind_math``, ``kind_choice``, ``kind_code``, ``kind_calls``, ``kind_exact``) and
in the scorer's own docstring; the guidance directives each kind acts on are
listed in ``guidance``.
"""

from benchwright_orchestrator.driver.builtin import (
    kind_calls,
    kind_choice,
    kind_code,
    kind_exact,
    kind_math,
)
from benchwright_orchestrator.driver.builtin.analyze import Analysis, Kind
from benchwright_orchestrator.driver.builtin.guidance import parse_guidance
from benchwright_orchestrator.driver.builtin.render import Template, render

TEMPLATES: dict[Kind, Template] = {
    "code": kind_code.TEMPLATE,
    "function_call": kind_calls.TEMPLATE,
    "multiple_choice": kind_choice.TEMPLATE,
    "math": kind_math.TEMPLATE,
    "exact_match": kind_exact.TEMPLATE,
}


def write_scorer(analysis: Analysis, guidance: str | None = None) -> str:
    """The full source of ``task_impl.py`` for ``analysis.kind``.

    Deterministic: the same analysis and guidance give the same bytes. The guidance
    is recorded verbatim in the module docstring, and the directives it states (see
    ``guidance``) set the scorer's settings. Raises ``ValueError`` when the analysis
    lacks a field the kind needs (``analysis.kind`` swapped for an unfit one).
    """
    template = TEMPLATES[analysis.kind]
    return render(template, analysis, guidance, parse_guidance(guidance))
