"""The product runner of BUILT subsets: one scorer, configured by the recipe above it.

The registry generates a BUILT subset's ``task_impl.py`` as this file with the
subset's recipe written in front of it as ``RECIPE`` (a plain dict literal), so
the code, and with it the impl id, changes exactly when the recipe does. What
each knob means:

* ``prompt_template``: the user message; ``{input}`` is the row's input (JSON
  unless it is text), ``{input.question}`` one of its fields (dots go deeper),
  ``{{`` and ``}}`` are literal braces. ``system_prompt`` goes first when set.
* ``max_tokens``, ``temperature``: sent with the chat completion.
* ``extraction``: what of the reply is the answer: ``full`` (all of it,
  stripped), ``last_line``, ``last_number``, or ``pattern`` (the last match of
  ``answer_pattern``, its first group when it has one).
* ``grading``: ``exact`` (whitespace collapsed; ``case_sensitive`` or not),
  ``numeric`` (equal within ``tolerance``), ``contains`` (the expected text
  appears in the answer) or ``regex`` (the expected value is a pattern the
  answer must match). A list as ``expected`` passes when any of it does.
  ``judge``: the run's judge grades the whole reply against ``rubric`` (a list of
  ``{"criterion", "weight"}``) in one call, ``bench_judge.grade_rubric``; the
  score is the met criteria's share of the weight, a pass only when all are met.
* ``trials``, ``aggregator``, ``run_timeout``: read by the platform (k trials per
  task, how they reduce, the per-task wall clock), not here.

Runs in the sandbox with only the standard library and ``bench_task``.
"""

import importlib
import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from bench_task import BenchTask

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(input(?:\.[A-Za-z0-9_-]+)*)\}")
_NUMBER = re.compile(r"(?:(?<![\w)])-)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<!\d)\.\d+")


def as_text(value: Any) -> str:
    """A value as prompt text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render(template: str, input: Any) -> str:
    """Fill ``{input}`` / ``{input.a.b}`` placeholders; ``{{`` and ``}}`` are braces."""

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        value = input
        for key in match.group(1).split(".")[1:]:
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                raise KeyError(f"the prompt template names {match.group(1)!r}; the row has none")
        return as_text(value)

    return _PLACEHOLDER.sub(fill, template)


def extract_answer(output: str, recipe: dict[str, Any]) -> str | None:
    """The part of the reply that is the answer, or None when there is none."""
    text = (output or "").replace("\u2212", "-")
    mode = recipe["extraction"]
    if mode == "full":
        return text.strip()
    if mode == "last_line":
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else None
    if mode == "last_number":
        numbers = _NUMBER.findall(text)
        return numbers[-1].replace(",", "") if numbers else None
    matches = list(re.finditer(recipe["answer_pattern"], text))
    if not matches:
        return None
    last = matches[-1]
    found = last.group(1) if last.re.groups else last.group(0)
    return found.strip() if found is not None else None


def _normal(text: str, case_sensitive: bool) -> str:
    collapsed = " ".join(text.split())
    return collapsed if case_sensitive else collapsed.casefold()


def to_number(text: str) -> Decimal | None:
    """The first number in ``text`` ("$1,234.50" is 1234.50), or None."""
    found = _NUMBER.search(text.replace("\u2212", "-"))
    if not found:
        return None
    try:
        return Decimal(found.group().replace(",", ""))
    except InvalidOperation:
        return None


def grade(answer: str, expected: Any, recipe: dict[str, Any]) -> bool:
    """Whether ``answer`` matches one expected value under the recipe's grading."""
    how, case_sensitive = recipe["grading"], bool(recipe["case_sensitive"])
    want = as_text(expected)
    if how == "numeric":
        got, target = to_number(answer), to_number(want)
        if got is None or target is None:
            return False
        return abs(got - target) <= Decimal(str(recipe["tolerance"]))
    if how == "regex":
        flags = 0 if case_sensitive else re.IGNORECASE
        return re.search(want, answer, flags) is not None
    if how == "contains":
        return _normal(want, case_sensitive) in _normal(answer, case_sensitive)
    return _normal(answer, case_sensitive) == _normal(want, case_sensitive)


def recipe() -> dict[str, Any]:
    """The generated file's ``RECIPE``, written above this code."""
    found: dict[str, Any] = globals()["RECIPE"]
    return found


class Task(BenchTask):
    """Prompt from the recipe's template, extract the answer, grade it."""

    def solve(self, index: int, input: Any) -> str:
        """One chat completion: the system prompt (if any), then the rendered template."""
        config = recipe()
        messages: list[dict[str, Any]] = []
        if config["system_prompt"]:
            messages.append({"role": "system", "content": config["system_prompt"]})
        messages.append({"role": "user", "content": render(config["prompt_template"], input)})
        params: dict[str, Any] = {"temperature": config["temperature"]}
        if config["max_tokens"] is not None:
            params["max_tokens"] = config["max_tokens"]
        reply = self.chat(messages, **params)
        content = reply["choices"][0]["message"].get("content")
        return content if isinstance(content, str) else ""

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the extracted answer matches the expected value (any of a list); with
        ``grading: judge``, the share of the rubric's weight the judge finds met."""
        config = recipe()
        if config["grading"] == "judge":
            # Imported by name: the runner is every BUILT subset's, and only a recipe
            # graded by a judge needs one (``judging.uses_judge`` reads the recipe).
            grade_rubric = importlib.import_module("bench_judge").grade_rubric
            question = render(config["prompt_template"], self.row_input(index))
            if expected is not None:
                question += f"\n\n(A reference answer: {as_text(expected)})"
            graded: dict[str, Any] = grade_rubric(self, output, config["rubric"], question=question)
            return graded
        if expected is None:
            raise ValueError("the row has no expected value to grade against")
        answer = extract_answer(output, config)
        wanted = expected if isinstance(expected, list) else [expected]
        passed = answer is not None and any(grade(answer, w, config) for w in wanted)
        return {"score": 1.0 if passed else 0.0, "answer": answer}
