"""``write_scorer``: the ``task_impl.py`` for an analysed dataset, from its kind's scorer.

Every kind's scorer is a real file in ``benchwright_shared.scorers`` (``code.py``,
``function_call.py``, ``multiple_choice.py``, ``math.py``, ``exact_match.py``): it
subclasses ``BenchTask`` as ``Task``, asks the model in ``solve`` and returns
``{"score", "parsed", ...}`` from ``score`` so that the ``majority_on`` aggregator can
vote on ``parsed``. What each does is in its docstring. Here is only how each kind's
settings follow from the analysis (the dataset's fields) and from the guidance
directives the kind acts on (listed in ``guidance``).
"""

from benchwright_orchestrator.driver.builtin.analyze import Analysis, Kind
from benchwright_orchestrator.driver.builtin.guidance import Directives, parse_guidance
from benchwright_orchestrator.driver.builtin.render import Template, Value, render


def _code(fields: dict[str, str], d: Directives) -> dict[str, Value]:
    return {
        "PROMPT_FIELD": fields["prompt"],
        "ENTRY_POINT_FIELD": fields["entry_point"],
        "TEST_FIELD": fields["test"],
        "MAX_TOKENS": d.max_tokens or 512,
        "TIMEOUT_S": d.timeout_s or 10.0,
    }


def _function_call(fields: dict[str, str], d: Directives) -> dict[str, Value]:
    return {
        "FUNCTIONS_FIELD": fields["functions"],
        "MESSAGES_FIELD": fields.get("messages", ""),
        "QUESTION_FIELD": fields.get("question", ""),
        "NATIVE_TOOLS": True if d.native_tools is None else d.native_tools,
        "ORDER_SENSITIVE": bool(d.order_sensitive),
        "ALLOW_EXTRA_CALLS": bool(d.allow_extra_calls),
        "CASE_SENSITIVE": bool(d.case_sensitive),
        "MAX_TOKENS": d.max_tokens or 512,
    }


def _multiple_choice(fields: dict[str, str], d: Directives) -> dict[str, Value]:
    cot = bool(d.chain_of_thought)
    return {
        "QUESTION_FIELD": fields["question"],
        "CHOICES_FIELD": fields["choices"],
        "SUBJECT_FIELD": fields.get("subject", ""),
        "CONTEXT_FIELD": fields.get("context", ""),
        "CHAIN_OF_THOUGHT": cot,
        "MAX_TOKENS": d.max_tokens or (512 if cot else 64),
    }


def _math(fields: dict[str, str], d: Directives) -> dict[str, Value]:
    return {
        "QUESTION_FIELD": fields["question"],
        "FEW_SHOT": True if d.few_shot is None else d.few_shot,
        "MAX_TOKENS": d.max_tokens or 256,
        "TOLERANCE": d.tolerance or 0.0,
    }


def _exact_match(fields: dict[str, str], d: Directives) -> dict[str, Value]:
    return {
        "QUESTION_FIELD": fields["question"],
        "CONTEXT_FIELD": fields.get("context", ""),
        "CASE_SENSITIVE": bool(d.case_sensitive),
        "CONTAINS": bool(d.contains),
        "MAX_TOKENS": d.max_tokens or 64,
    }


TEMPLATES: dict[Kind, Template] = {
    "code": Template(
        kind="code",
        scorer="code",
        directives=("max_tokens", "timeout_s"),
        required=("prompt", "entry_point", "test"),
        settings=_code,
    ),
    "function_call": Template(
        kind="function_call",
        scorer="function_call",
        directives=(
            "native_tools",
            "order_sensitive",
            "allow_extra_calls",
            "case_sensitive",
            "max_tokens",
        ),
        required=("functions",),
        settings=_function_call,
    ),
    "multiple_choice": Template(
        kind="multiple_choice",
        scorer="multiple_choice",
        directives=("chain_of_thought", "max_tokens"),
        required=("question", "choices"),
        settings=_multiple_choice,
    ),
    "math": Template(
        kind="math",
        scorer="math",
        directives=("few_shot", "max_tokens", "tolerance"),
        required=("question",),
        settings=_math,
    ),
    "exact_match": Template(
        kind="exact_match",
        scorer="exact_match",
        directives=("case_sensitive", "contains", "max_tokens"),
        required=("question",),
        settings=_exact_match,
    ),
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
