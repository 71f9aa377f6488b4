"""Math problems, scored by exact numeric match of the final answer.

The model reasons step by step and ends with "The answer is N"; the number after the
last such marker (or in the last ``\\boxed{}``, or else the reply's last number) must
equal the reference answer. Numbers are compared exactly as fractions, so "$1,234.00",
"1234" and "2468/2" are the same answer.

Runs in the work sandbox with only the standard library and ``bench_task``.
"""

import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from bench_task import BenchTask

# -- settings: the builtin Driver rewrites this block for its dataset (these fit GSM8K) --
QUESTION_FIELD = "question"  # in input: the problem text; "" = the input itself
FEW_SHOT = True  # two worked examples first
MAX_TOKENS = 256
TOLERANCE = 0.0  # 0: the numbers must be equal
# -- end of settings --

# Two short worked examples teach the answer format; more would crowd the small
# context windows of the small models this may run against.
EXAMPLES = (
    "Question: There are 15 trees in the grove. Grove workers will plant trees in the grove "
    "today. After they are done, there will be 21 trees. How many trees did the grove workers "
    "plant today?\n"
    "Answer: There are 15 trees originally. Then there were 21 trees after some more were "
    "planted. So there must have been 21 - 15 = 6. The answer is 6.\n\n"
    "Question: Olivia has $23. She bought five bagels for $3 each. How much money does she "
    "have left?\n"
    "Answer: 5 bagels for $3 each cost 5 x 3 = 15 dollars. Olivia had 23 dollars, so she has "
    "23 - 15 = 8 dollars left. The answer is 8.\n\n"
)
INSTRUCTION = (
    "Solve the math problem. Reason step by step, then end with "
    '"The answer is N." where N is a single number.\n\n'
)

# Reasoning models think aloud first; drafts in there are not the answer.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
# A sign counts only when it cannot be a subtraction ("5-3" is 5 and 3, not -3).
_SIGN = r"(?:(?<![\w)])-)?"
_NUMBER = re.compile(_SIGN + r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<!\d)\.\d+")
_FRACTION = re.compile(_SIGN + r"\d+\s*/\s*\d+(?![\d.])")
_LATEX_FRACTION = re.compile(r"(-?)\\d?frac\{\s*(-?\d+)\s*\}\{\s*(-?\d+)\s*\}")
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_MARKER = re.compile(r"the\s+(?:final\s+)?answer\s+is|final\s+answer\s*:|answer\s*:|####", re.I)
_DETACHED_SIGN = re.compile(r"-\s*\$?\s*$")
# Models run on into a new, made-up question; its numbers must not count.
_RUN_ON = re.compile(r"\n\s*(?:Question|Q)\s*:", re.IGNORECASE)
# How far past "The answer is" the number may start ("is: $ **1,234**").
_MARKER_REACH = 40


def question_text(input: Any) -> str:
    """The problem's text."""
    if QUESTION_FIELD and isinstance(input, dict):
        return str(input.get(QUESTION_FIELD, ""))
    return str(input)


def build_prompt(question: str) -> str:
    """The prompt for one problem: instruction, worked examples, the question."""
    examples = EXAMPLES if FEW_SHOT else ""
    return f"{INSTRUCTION}{examples}Question: {question.strip()}\nAnswer:"


def extract_answer(text: str) -> str | None:
    """The model's final number as written (commas removed), or None if it gave none.

    The last ``\\boxed{...}`` wins, then the number after the last "The answer is"
    / "Answer:" / "####"; without either, the last number in the reply, as a model
    that ignores the format usually still finishes on its result.
    """
    text = _THINK.sub("", text).replace("\u2212", "-")
    cut = _RUN_ON.search(text)
    if cut:
        text = text[: cut.start()]
    boxed = _BOXED.findall(text)
    if boxed:
        found = _first_number(boxed[-1])
        if found is not None:
            return found[1]
    markers = list(_MARKER.finditer(text))
    if markers:
        tail = text[markers[-1].end() :]
        found = _first_number(tail)
        if found is not None and found[0] <= _MARKER_REACH:
            start, number = found
            # "The answer is - 10": a detached sign still belongs to the answer.
            if not number.startswith("-") and _DETACHED_SIGN.search(tail[:start]):
                number = "-" + number
            return number
    numbers = _NUMBER.findall(text)
    return numbers[-1].replace(",", "") if numbers else None


def _first_number(text: str) -> tuple[int, str] | None:
    """Where the first number in ``text`` starts, and the number ("3/4" kept whole)."""
    latex = _LATEX_FRACTION.search(text)
    plain = _NUMBER.search(text)
    if latex and (plain is None or latex.start() <= plain.start()):
        sign = "-" if latex.group(1) else ""
        return latex.start(), f"{sign}{latex.group(2)}/{latex.group(3)}"
    fraction = _FRACTION.search(text)
    if fraction and plain and fraction.start() == plain.start():
        return fraction.start(), re.sub(r"\s", "", fraction.group())
    if plain is None:
        return None
    return plain.start(), plain.group().replace(",", "")


def to_number(text: str) -> Fraction | None:
    """``text`` as an exact number, tolerating "$", ",", "%", units, "3/4", "\\frac{3}{4}"."""
    found = _first_number(text.replace("\u2212", "-"))
    if found is None:
        return None
    try:
        return Fraction(found[1])
    except (ValueError, ZeroDivisionError):
        return None


def canonical(value: Fraction) -> str:
    """``value`` written plainly: "18", "7.5", "1/3"."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    for factor in (2, 5):
        while denominator % factor == 0:
            denominator //= factor
    if denominator == 1:
        decimal = Decimal(value.numerator) / Decimal(value.denominator)
        return format(decimal.normalize(), "f")
    return f"{value.numerator}/{value.denominator}"


class Task(BenchTask):
    """Chain-of-thought prompt; exact numeric comparison of the final answer."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model to reason and finish with "The answer is N"."""
        prompt = build_prompt(question_text(input))
        return self.complete(prompt, max_tokens=MAX_TOKENS, temperature=0, stop=["\nQuestion:"])

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the reply's final number equals the reference answer, else 0.0."""
        parsed = extract_answer(output or "")
        got = to_number(parsed) if parsed is not None else None
        want = to_number(str(expected))
        if want is None:
            raise ValueError(f"the reference answer {expected!r} is not a number")
        correct = got is not None and abs(got - want) <= Fraction(str(TOLERANCE))
        return {
            "score": 1.0 if correct else 0.0,
            "parsed": canonical(got) if got is not None else None,
        }
