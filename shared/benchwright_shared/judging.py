"""What the platform reads in a scorer about its judge, before any run: whether the
scorer calls one, and whether its rubric holds up. Pure functions of the code (no
I/O), for the gateway's and registry's refusals.

The sandbox side of the same rules is ``bench_judge`` (the runtime's): its
``rubric_weights`` refuses the rubrics ``check_rubric`` reports, with the same fields.
"""

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass

from benchwright_shared.scorers import read_recipe, read_settings

__all__ = [
    "RUBRIC_SETTING",
    "RubricError",
    "RubricProblem",
    "check_rubric",
    "require_rubric",
    "scorer_rubric_problems",
    "uses_judge",
]

# The runtime module whose graders call the judge.
JUDGE_MODULE = "bench_judge"
# ``BenchTask``'s methods that call the judge.
JUDGE_METHODS = frozenset({"judge", "judge_chat"})
# The variable a scorer's judge key is in: a scorer that reads it calls the judge itself.
JUDGE_KEY_VARIABLE = "BW_JUDGE_PROXY_KEY"
# The settings constant a model-graded scorer keeps its rubric in.
RUBRIC_SETTING = "RUBRIC"
CRITERION_FIELDS = ("criterion", "weight")


def uses_judge(code: str) -> bool:
    """Whether a scorer's code calls the run's judge: it imports ``bench_judge``, calls
    ``self.judge(...)``/``self.judge_chat(...)`` (or ``super()``'s), or names the judge
    key's variable (a scorer posting with ``requests`` itself). Read from the syntax
    tree, so a mention in a comment or a docstring does not count. Code that does not
    parse calls nothing: False (it is refused elsewhere as code). A BUILT subset's
    generated code holds the runner for every grading: its ``RECIPE`` says whether this
    one is graded by a judge."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    try:
        recipe = read_recipe(code)
    except (ValueError, SyntaxError):
        recipe = None
    if recipe is not None:
        return recipe.get("grading") == "judge"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] == JUDGE_MODULE for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == JUDGE_MODULE:
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in JUDGE_METHODS
            and _is_self(node.func.value)
        ):
            return True
        if isinstance(node, ast.Constant) and node.value == JUDGE_KEY_VARIABLE:
            return True
    return False


def _is_self(node: ast.expr) -> bool:
    """``self``, or ``super()``."""
    if isinstance(node, ast.Name):
        return node.id == "self"
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


@dataclass(frozen=True)
class RubricProblem:
    """One thing wrong with a rubric: the field at fault (``rubric[2].weight``) and why."""

    field: str
    detail: str


class RubricError(ValueError):
    """A rubric that cannot grade; ``field`` and ``detail`` are its first problem's."""

    def __init__(self, problems: Sequence[RubricProblem]) -> None:
        first = problems[0]
        super().__init__(f"{first.field}: {first.detail}")
        self.field, self.detail, self.problems = first.field, first.detail, tuple(problems)


def check_rubric(criteria: object, field: str = "rubric") -> list[RubricProblem]:
    """Every problem of a rubric (empty when it is sound), each naming its field under
    ``field``: the rubric must be a non-empty list of ``{"criterion": text, "weight":
    number}`` (``weight`` may be left out: 1), with no other keys; each weight a finite
    number >= 0 (not a bool, not a numeric string), and the weights summing to more than
    0, or no answer could score anything."""
    if not isinstance(criteria, list | tuple) or not criteria:
        return [RubricProblem(field, "a rubric is a non-empty list of criteria")]
    problems: list[RubricProblem] = []
    total = 0.0
    for i, item in enumerate(criteria):
        at = f"{field}[{i}]"
        if not isinstance(item, dict):
            problems.append(RubricProblem(at, "a criterion is {'criterion': text, 'weight': n}"))
            continue
        problems += [
            RubricProblem(f"{at}.{key}", "not a field of a criterion")
            for key in sorted(str(key) for key in item if key not in CRITERION_FIELDS)
        ]
        text = item.get("criterion")
        if not isinstance(text, str) or not text.strip():
            problems.append(RubricProblem(f"{at}.criterion", "must be a non-empty text"))
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            problems.append(RubricProblem(f"{at}.weight", f"must be a number, not {weight!r}"))
        elif not math.isfinite(weight) or weight < 0:
            problems.append(
                RubricProblem(f"{at}.weight", f"must be finite and >= 0, not {weight!r}")
            )
        else:
            total += weight
    if not problems and not total > 0:
        problems.append(RubricProblem(field, "the weights sum to 0; at least one must be positive"))
    return problems


def require_rubric(criteria: object, field: str = "rubric") -> None:
    """``check_rubric``, raising ``RubricError`` (its first problem's field) if any."""
    problems = check_rubric(criteria, field)
    if problems:
        raise RubricError(problems)


def scorer_rubric_problems(code: str) -> list[RubricProblem]:
    """The problems of the ``RUBRIC`` in a scorer's settings block (fields named
    ``RUBRIC[i].weight``...); none when the code has no settings block or no rubric."""
    try:
        settings = read_settings(code)
    except (ValueError, SyntaxError):
        return []
    if RUBRIC_SETTING not in settings:
        return []
    return check_rubric(settings[RUBRIC_SETTING], RUBRIC_SETTING)
