"""GSM8K: grade-school math word problems, scored by exact numeric match.

Runs in the work sandbox with only the standard library and ``bench_task``.
Rows look like ``{"input": {"question": str}, "expected": "18"}``.
"""

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from bench_task import BenchTask

# Two short worked examples teach the answer format; more would crowd a
# 2048-token context on the small models this is meant to run against.
FEW_SHOT = (
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
    "Solve the math word problem. Reason step by step, then end with "
    '"The answer is N." where N is a single number.\n\n'
)
MAX_TOKENS = 256

# A sign counts only when it cannot be a subtraction ("5-3" is 5 and 3, not -3).
_NUMBER = re.compile(r"(?:(?<![\w)])-)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<!\d)\.\d+")
_MARKER = re.compile(r"the\s+(?:final\s+)?answer\s+is|####", re.IGNORECASE)
_DETACHED_SIGN = re.compile(r"-\s*\$?\s*$")
# Small models run on into a new, made-up question; its numbers must not count.
_RUN_ON = re.compile(r"\n\s*(?:Question|Q)\s*:", re.IGNORECASE)
# How far past "The answer is" the number may start ("is: $ **1,234**").
_MARKER_REACH = 40


def build_prompt(question: str) -> str:
    """The few-shot prompt for one problem."""
    return f"{INSTRUCTION}{FEW_SHOT}Question: {question.strip()}\nAnswer:"


def extract_answer(text: str) -> str | None:
    """The model's final number as written (commas removed), or None if it gave none.

    The number after the last "The answer is" / "####" wins; without a marker,
    the last number in the reply is taken, as a model that ignores the format
    usually still finishes on its result.
    """
    text = text.replace("\u2212", "-")
    cut = _RUN_ON.search(text)
    if cut:
        text = text[: cut.start()]
    markers = list(_MARKER.finditer(text))
    if markers:
        tail = text[markers[-1].end() :]
        found = _NUMBER.search(tail)
        if found and found.start() <= _MARKER_REACH:
            number = found.group().replace(",", "")
            # "The answer is - 10": a detached sign still belongs to the answer.
            if not number.startswith("-") and _DETACHED_SIGN.search(tail[: found.start()]):
                number = "-" + number
            return number
    numbers = _NUMBER.findall(text)
    return numbers[-1].replace(",", "") if numbers else None


def to_number(text: str) -> Decimal | None:
    """``text`` as an exact decimal, tolerating "$", ",", "%", units and a trailing dot."""
    found = _NUMBER.search(text.replace("\u2212", "-"))
    if not found:
        return None
    try:
        return Decimal(found.group().replace(",", ""))
    except InvalidOperation:
        return None


def canonical(value: Decimal) -> str:
    """``value`` without trailing zeros: Decimal("18.00") -> "18"."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


class Task(BenchTask):
    """Chain-of-thought prompt, exact numeric comparison of the final answer."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model to reason and finish with "The answer is N"."""
        question = input["question"] if isinstance(input, dict) else str(input)
        return self.complete(
            build_prompt(question), max_tokens=MAX_TOKENS, temperature=0, stop=["\nQuestion:"]
        )

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the reply's final number equals the reference answer, else 0.0."""
        parsed = extract_answer(output or "")
        got = to_number(parsed) if parsed is not None else None
        want = to_number(str(expected))
        correct = got is not None and want is not None and got == want
        return {
            "score": 1.0 if correct else 0.0,
            "parsed": canonical(got) if got is not None else None,
        }
