"""What a run would cost before it runs: its calls and tokens as a range, from its rows
and its scorer. Pure rules, no I/O; the route (``api/estimate.py``) gathers the rows,
the scorer's code and the prices (the proxy's, the ones it bills with).

* **Calls**: tasks x trials, one call a trial expected; at most as many as the
  scorer has call sites (``complete(`` / ``chat(`` / a post to the proxy).
* **Prompt tokens**: a call's prompt is the scorer's own text (the string literals of
  its ``solve``: the prompt template, where the scorer is known) plus the row's input
  (sampled rows' JSON). A token is taken as 4 characters, the usual rule of thumb for
  English with GPT-style tokenizers; the range is -25% / +50% around it.
* **Completion tokens**: bounded by the ``max_tokens`` the scorer asks for (else
  ``DEFAULT_MAX_TOKENS``): from one token to that bound, a quarter of it expected.
  The bound is read the way it was written: a kind scorer's ``MAX_TOKENS`` setting
  (``benchwright_shared.scorers.read_settings``, the block the builtin Driver
  writes), a BUILT subset's recipe (``read_recipe``), else, in a scorer written by
  hand, a literal ``max_tokens=`` argument or ``"max_tokens":`` entry (or a
  module-level constant one of them names).

* **Judge calls** (a model-graded scorer's, ``judge_workload``): one grading per
  attempt, each as many judge calls as the scorer's ``score`` has judge call sites
  (a pairwise preference asks twice: both orders), times the panel's judges when it
  grades with a panel; a prompt of the scorer's grading text, the row's input and
  the model's expected answer; an answer bounded by ``JUDGE_MAX_TOKENS`` (a setting)
  or a literal ``max_tokens`` in ``score``, else ``DEFAULT_MAX_TOKENS``.

Sandbox time and Driver work are left out and said so: a pinned run's Driver spends
nothing, and sandbox seconds depend on the machine more than on the rows.
"""

import ast
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from benchwright_shared.scorers import read_recipe, read_settings

CHARS_PER_TOKEN = 4.0
# A scorer that names no max_tokens leaves the answer's length to the model.
DEFAULT_MAX_TOKENS = 512
LOW, HIGH = 0.75, 1.5
MODEL_CALL = re.compile(r"\.(complete|chat)\(|chat/completions")


@dataclass(frozen=True)
class Scorer:
    """What the estimate reads from a scorer's code."""

    template_chars: int
    max_tokens: int | None
    call_sites: int
    known: bool


def read_scorer(code: str | None) -> Scorer:
    """The prompt template's size, the ``max_tokens`` asked for, and the call sites."""
    if not code:
        return Scorer(0, None, 1, known=False)
    sites = max(1, len(MODEL_CALL.findall(code)))
    return Scorer(_template_chars(code), max_tokens(code), sites, known=True)


def max_tokens(code: str) -> int | None:
    """The most completion tokens a call of this scorer asks for; None when it says not."""
    try:
        setting = read_settings(code).get("MAX_TOKENS")
    except (ValueError, SyntaxError):
        pass  # no settings block: not made from a kind's scorer file
    else:
        return setting if _is_count(setting) else None
    try:
        recipe = read_recipe(code)
    except (ValueError, SyntaxError):
        recipe = None
    if recipe is not None:
        knob = recipe.get("max_tokens")
        return knob if _is_count(knob) else None
    return _literal_max_tokens(code)


def _literal_max_tokens(code: str) -> int | None:
    """The largest ``max_tokens=N`` / ``"max_tokens": N`` in hand-written code, where N is
    a number or a module-level constant set to one."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    asked: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "max_tokens":
            asked.append(node.value)
        elif isinstance(node, ast.Dict):
            asked += [
                value
                for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant) and key.value == "max_tokens"
            ]
    caps = []
    for value in asked:
        found = value.value if isinstance(value, ast.Constant) else None
        if isinstance(value, ast.Name):
            found = constants.get(value.id)
        if _is_count(found):
            caps.append(found)
    return max(caps) if caps else None


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _template_chars(code: str) -> int:
    """The characters of the string literals in ``solve`` (f-strings' fixed parts too)."""
    try:
        return _function_literal_chars(ast.parse(code), "solve")
    except SyntaxError:
        return 0


def _function_literal_chars(tree: ast.Module, function: str) -> int:
    """The characters of the string literals in every function named ``function``."""
    return sum(
        len(node.value)
        for found in ast.walk(tree)
        if isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef) and found.name == function
        for node in ast.walk(found)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def input_chars(rows: Iterable[dict[str, Any]]) -> list[int]:
    """Each sampled row's input, as the characters a prompt would carry."""
    sizes = []
    for row in rows:
        value = row.get("input")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        sizes.append(len(text))
    return sizes


@dataclass(frozen=True)
class Span:
    low: float
    expected: float
    high: float

    def times(self, factor: float) -> "Span":
        return Span(self.low * factor, self.expected * factor, self.high * factor)

    def rounded(self) -> dict[str, int]:
        return {
            "low": math.floor(self.low),
            "expected": round(self.expected),
            "high": math.ceil(self.high),
        }


@dataclass(frozen=True)
class Workload:
    """A run's model calls and tokens, as ranges."""

    tasks: int
    trials: int
    calls: Span
    prompt_tokens: Span
    completion_tokens: Span
    derivation: list[str]

    def usages(self) -> list[dict[str, int]]:
        """The low, expected and high totals, in the shape a price is asked for."""
        prompt, completion = self.prompt_tokens.rounded(), self.completion_tokens.rounded()
        return [
            {"prompt_tokens": prompt[k], "completion_tokens": completion[k]}
            for k in ("low", "expected", "high")
        ]


def workload(tasks: int, trials: int, scorer: Scorer, sampled: Sequence[int]) -> Workload:
    """The calls and tokens of ``tasks`` x ``trials`` with this scorer and these rows."""
    attempts = tasks * trials
    calls = Span(attempts, attempts, attempts * scorer.call_sites)
    mean_input = sum(sampled) / len(sampled) if sampled else 0.0
    per_call = (scorer.template_chars + mean_input) / CHARS_PER_TOKEN
    prompt = Span(
        per_call * LOW * calls.low, per_call * calls.expected, per_call * HIGH * calls.high
    )
    cap = scorer.max_tokens or DEFAULT_MAX_TOKENS
    completion = Span(calls.low * 1, calls.expected * max(1, cap // 4), calls.high * cap)
    derivation = [
        f"{tasks} task(s) x {trials} trial(s): {attempts} attempt(s), one model call each "
        f"expected, at most {scorer.call_sites} (the scorer's call sites)",
        f"a prompt of ~{per_call:.0f} tokens: "
        + (
            f"the scorer's prompt text ({scorer.template_chars} characters) and "
            if scorer.known
            else "no scorer on record, so "
        )
        + f"the rows' input ({mean_input:.0f} characters on average over {len(sampled)} "
        f"sampled row(s)), at {CHARS_PER_TOKEN:g} characters a token, "
        f"{LOW:.0%} to {HIGH:.0%} of it",
        f"an answer of 1 to {cap} tokens ("
        + ("the scorer's max_tokens" if scorer.max_tokens else "no max_tokens in the scorer")
        + f"), {max(1, cap // 4)} expected",
    ]
    return Workload(tasks, trials, calls, prompt, completion, derivation)


# A judge call in a scorer: the runtime's own, or one of ``bench_judge``'s graders.
JUDGE_CALL = re.compile(r"\.judge(?:_chat)?\(|\bgrade_(?:qa|fact|rubric)\(|\bprefer\(")
PAIRWISE = re.compile(r"\bprefer\(")
PANEL = re.compile(r"\bpanel\(")


@dataclass(frozen=True)
class Judging:
    """What the estimate reads of a scorer's grading by a judge."""

    sites: int
    template_chars: int
    max_tokens: int | None
    panel: bool


def read_judging(code: str | None) -> Judging | None:
    """The scorer's judge calls per grading and their sizes; None when it calls no judge."""
    if not code or not JUDGE_CALL.search(code):
        return None
    sites = len(JUDGE_CALL.findall(code)) + len(PAIRWISE.findall(code))
    try:
        setting = read_settings(code).get("JUDGE_MAX_TOKENS")
    except (ValueError, SyntaxError):
        setting = None
    cap = setting if _is_count(setting) else None
    return Judging(sites, _literal_chars(code, "score"), cap, bool(PANEL.search(code)))


def _literal_chars(code: str, function: str) -> int:
    """The characters of the string literals in ``function`` (f-strings' fixed parts too),
    and of module-level string constants (a grading template kept as a setting)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return 0
    constants = sum(
        len(node.value.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
    )
    return _function_literal_chars(tree, function) + constants


def judge_workload(
    model: Workload, judging: Judging, judges: int, sampled: Sequence[int]
) -> Workload:
    """The judge calls and tokens of grading ``model``'s attempts with ``judges`` judges."""
    attempts = model.tasks * model.trials
    per_grading = judging.sites * (judges if judging.panel else 1)
    calls = Span(attempts, attempts * per_grading, attempts * per_grading * 2)
    mean_input = sum(sampled) / len(sampled) if sampled else 0.0
    answer_chars = model.completion_tokens.expected / max(1, attempts) * CHARS_PER_TOKEN
    per_call = (judging.template_chars + mean_input + answer_chars) / CHARS_PER_TOKEN
    prompt = Span(
        per_call * LOW * calls.low, per_call * calls.expected, per_call * HIGH * calls.high
    )
    cap = judging.max_tokens or DEFAULT_MAX_TOKENS
    completion = Span(calls.low, calls.expected * max(1, cap // 4), calls.high * cap)
    derivation = [
        f"{attempts} grading(s), {per_grading} judge call(s) each expected ("
        f"{judging.sites} judge call site(s) in the scorer"
        + (f", each asked of the panel's {judges} judges" if judging.panel else "")
        + "), up to twice that",
        f"a judge prompt of ~{per_call:.0f} tokens: the scorer's grading text "
        f"({judging.template_chars} characters), the row's input and the model's "
        f"expected answer ({answer_chars:.0f} characters)",
        f"a verdict of 1 to {cap} tokens, {max(1, cap // 4)} expected",
    ]
    return Workload(model.tasks, model.trials, calls, prompt, completion, derivation)
