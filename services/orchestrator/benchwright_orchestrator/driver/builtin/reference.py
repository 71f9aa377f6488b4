"""Model replies that a scorer must grade right (reference) and wrong, row by row.

The pipeline proves a scorer before running it: on a few rows, ``score()`` must
give 1.0 to every reference output and less than 1.0 to every wrong output. The
replies are written the way a model would write them, so they exercise the
scorer's parsing as well as its comparison:

* math: "... The answer is <expected>." / the same with <expected> x 10 + 7;
* multiple_choice: "Answer: <letter>" / the next letter;
* code: the prompt plus the canonical solution in a fenced block, self-contained
  so that it passes even when ``score()`` runs without ``solve()`` (which is how
  the proof runs) / a function of the same name that raises;
* function_call: the calls as ``[{name: {arg: value}}]`` JSON with the first
  non-empty acceptable value per argument (arguments that may only be left out
  are left out) / the same with one argument changed, a call renamed, or a
  stray call when none is expected;
* exact_match: the first acceptable answer / an answer that normalizes to none.
"""

import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from benchwright_orchestrator.driver.builtin.analyze import Analysis
from benchwright_orchestrator.driver.builtin.shapes import LETTERS, letter_index

_NUMBER = re.compile(r"-?\d+\s*/\s*\d+|-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")
WRONG_ANSWER = "xyzzy"


class ReferenceUnavailable(ValueError):
    """A row lacks what a reference reply needs (a code row without a solution)."""


def reference_outputs(analysis: Analysis, rows: list[dict[str, Any]]) -> list[str]:
    """For each row, a reply a correct model would give."""
    return [_REFERENCE[analysis.kind](analysis.fields, row) for row in rows]


def wrong_outputs(analysis: Analysis, rows: list[dict[str, Any]]) -> list[str]:
    """For each row, a reply that is certainly wrong."""
    return [_WRONG[analysis.kind](analysis.fields, row) for row in rows]


# -- math ----------------------------------------------------------------------


def _math_reference(fields: dict[str, str], row: dict[str, Any]) -> str:
    return f"Let me work through it step by step. The answer is {str(row['expected']).strip()}."


def _math_wrong(fields: dict[str, str], row: dict[str, Any]) -> str:
    value = _number(row["expected"])
    wrong = value * 10 + 7 if value != Fraction(-7, 9) else value + 1
    return f"Let me work through it step by step. The answer is {_plain(wrong)}."


def _number(value: Any) -> Fraction:
    found = _NUMBER.search(str(value).replace("\u2212", "-"))
    if found is None:
        raise ReferenceUnavailable(f"the reference answer {value!r} is not a number")
    return Fraction(re.sub(r"[\s,]", "", found.group()))


def _plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


# -- multiple choice -------------------------------------------------------------


def _choice_index(fields: dict[str, str], row: dict[str, Any]) -> tuple[int, int]:
    choices = _input(row).get(fields["choices"]) or []
    index = letter_index(row["expected"], len(choices) or len(LETTERS))
    if index is None:
        raise ReferenceUnavailable(f"the reference answer {row['expected']!r} names no choice")
    return index, len(choices) or len(LETTERS)


def _choice_reference(fields: dict[str, str], row: dict[str, Any]) -> str:
    index, _ = _choice_index(fields, row)
    return f"Answer: {LETTERS[index]}"


def _choice_wrong(fields: dict[str, str], row: dict[str, Any]) -> str:
    index, count = _choice_index(fields, row)
    return f"Answer: {LETTERS[(index + 1) % max(count, 2)]}"


# -- code ----------------------------------------------------------------------


def _entry_point(fields: dict[str, str], row: dict[str, Any]) -> str:
    expected = row["expected"] if isinstance(row["expected"], dict) else {}
    name = expected.get(fields["entry_point"]) or _input(row).get(fields["entry_point"])
    if not name:
        raise ReferenceUnavailable("the row names no entry point")
    return str(name)


def _code_reference(fields: dict[str, str], row: dict[str, Any]) -> str:
    expected = row["expected"] if isinstance(row["expected"], dict) else {}
    solution = expected.get(fields.get("solution", ""))
    if not isinstance(solution, str) or not solution.strip():
        raise ReferenceUnavailable("the row has no reference solution to reply with")
    name = _entry_point(fields, row)
    if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", solution, re.M):
        program = solution
    else:
        program = str(_input(row).get(fields["prompt"], "")) + solution
    return f"```python\n{program.rstrip()}\n```"


def _code_wrong(fields: dict[str, str], row: dict[str, Any]) -> str:
    name = _entry_point(fields, row)
    return (
        f"```python\ndef {name}(*args, **kwargs):\n"
        '    raise NotImplementedError("a wrong answer, on purpose")\n```'
    )


# -- function calls --------------------------------------------------------------


def _calls(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    expected = row["expected"] if isinstance(row["expected"], list) else [row["expected"]]
    calls = []
    for call in expected:
        name, args = next(iter(call.items()))
        chosen = {k: _pick(v) for k, v in args.items() if _pick(v) is not _OMIT}
        calls.append((str(name), chosen))
    return calls


_OMIT = object()


def _pick(acceptable: Any) -> Any:
    """The first acceptable value that is not "" (which means "may be left out")."""
    options = acceptable if isinstance(acceptable, list) else [acceptable]
    for option in options:
        if option != "":
            return _pick_nested(option)
    return _OMIT


def _pick_nested(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pick(v) for k, v in value.items() if _pick(v) is not _OMIT}
    return value


def _calls_reference(fields: dict[str, str], row: dict[str, Any]) -> str:
    return json.dumps([{name: args} for name, args in _calls(row)])


def _calls_wrong(fields: dict[str, str], row: dict[str, Any]) -> str:
    calls = _calls(row)
    if not calls:
        functions = _input(row).get(fields["functions"]) or [{}]
        spec = functions[0].get("function", functions[0]) if functions else {}
        return json.dumps([{str(spec.get("name", "some_function")): {}}])
    name, args = calls[0]
    if args:
        key = next(iter(args))
        acceptable = next(iter(row["expected"][0].values()))[key]
        options = acceptable if isinstance(acceptable, list) else [acceptable]
        args[key] = _different(args[key], options)
    else:
        name = f"{name}_not_this_one"
    calls[0] = (name, args)
    return json.dumps([{n: a} for n, a in calls])


def _different(value: Any, options: list[Any]) -> Any:
    """A value of the same kind as ``value`` that equals none of ``options``."""
    if isinstance(value, bool):
        candidate: Any = not value
    elif isinstance(value, int | float):
        candidate = value * 10 + 7
    elif isinstance(value, str):
        candidate = f"{value} {WRONG_ANSWER}"
    elif isinstance(value, list):
        candidate = [*value, WRONG_ANSWER]
    elif isinstance(value, dict):
        candidate = {**value, WRONG_ANSWER: WRONG_ANSWER}
    else:
        candidate = WRONG_ANSWER
    if any(_loosely_equal(candidate, o) for o in options):
        return f"{WRONG_ANSWER} {json.dumps(candidate)}"
    return candidate


def _loosely_equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return bool(a == b)


# -- exact match ---------------------------------------------------------------


def _answers(row: dict[str, Any]) -> list[str]:
    expected = row["expected"]
    answers = [str(a) for a in (expected if isinstance(expected, list) else [expected])]
    answers = [a for a in answers if a.strip()]
    if not answers:
        raise ReferenceUnavailable("the row has no acceptable answer")
    return answers


def _exact_reference(fields: dict[str, str], row: dict[str, Any]) -> str:
    return _answers(row)[0]


def _exact_wrong(fields: dict[str, str], row: dict[str, Any]) -> str:
    """An answer that neither equals nor contains any acceptable one, however normalized."""
    squashed = [_squash(a) for a in _answers(row)]
    for wrong in (WRONG_ANSWER, f"{WRONG_ANSWER} plugh", "zzyzx quux"):
        if not any(s and (s == _squash(wrong) or s in _squash(wrong)) for s in squashed):
            return wrong
    raise ReferenceUnavailable("no certainly-wrong answer found")  # pragma: no cover


def _squash(text: str) -> str:
    return re.sub(r"\b(?:a|an|the)\b|[\W_]", "", text.lower())


def _input(row: dict[str, Any]) -> dict[str, Any]:
    value = row.get("input")
    return value if isinstance(value, dict) else {}


_Writer = Callable[[dict[str, str], dict[str, Any]], str]
_REFERENCE: dict[str, _Writer] = {
    "math": _math_reference,
    "multiple_choice": _choice_reference,
    "code": _code_reference,
    "function_call": _calls_reference,
    "exact_match": _exact_reference,
}
_WRONG: dict[str, _Writer] = {
    "math": _math_wrong,
    "multiple_choice": _choice_wrong,
    "code": _code_wrong,
    "function_call": _calls_wrong,
    "exact_match": _exact_wrong,
}
