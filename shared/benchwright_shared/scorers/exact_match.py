"""Short answers, scored by exact match after SQuAD normalization.

The model gives a short answer; it passes when, lowercased and stripped of punctuation,
articles and extra spaces (SQuAD's normalization), it equals one of the row's
acceptable answers. The token-overlap F1 is recorded beside the score.

Runs in the work sandbox with only the standard library and ``bench_task``.
"""

import re
import string
from collections import Counter
from typing import Any

from bench_task import BenchTask

# -- settings: the builtin Driver rewrites this block for its dataset (these fit NQ-open) --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
CONTEXT_FIELD = ""  # a passage shown before the question
CASE_SENSITIVE = False  # False: SQuAD lowercases
CONTAINS = False  # True: an answer anywhere in the reply counts
MAX_TOKENS = 64
# -- end of settings --

INSTRUCTION = (
    "Answer the question with a short answer: a name, a number, a date or a short phrase, "
    "not a sentence. Reply with the answer only.\n\n"
)

# Reasoning models think aloud first; drafts in there are not the answer.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
_MARKER = re.compile(r"\banswer(?:\s+is)?\s*:\s*|\bthe\s+(?:final\s+)?answer\s+is\s+", re.I)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b" if not CASE_SENSITIVE else r"\b(?:[Aa]n?|[Tt]he)\b")
_PUNCTUATION = set(string.punctuation)


def build_prompt(input: Any) -> str:
    """The instruction, any context passage, and the question."""
    fields = input if isinstance(input, dict) else {}
    question = str(fields.get(QUESTION_FIELD, "")) if QUESTION_FIELD else str(input)
    context = str(fields.get(CONTEXT_FIELD) or "") if CONTEXT_FIELD else ""
    passage = f"{context.strip()}\n\n" if context.strip() else ""
    return f"{INSTRUCTION}{passage}Question: {question.strip()}\nAnswer:"


def extract_answer(reply: str) -> str:
    """The answer in a reply: the first line after the last "Answer:" / "the answer is",
    else the reply's first line."""
    text = _THINK.sub("", reply).replace("*", "").strip()
    markers = list(_MARKER.finditer(text))
    if markers:
        text = text[markers[-1].end() :]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def normalize(text: str) -> str:
    """SQuAD's normalization: lowercase, no punctuation, no articles, single spaces."""
    if not CASE_SENSITIVE:
        text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, answer: str) -> float:
    """SQuAD's token-overlap F1 between two normalized strings."""
    got, want = prediction.split(), answer.split()
    common = sum((Counter(got) & Counter(want)).values())
    if not got or not want or common == 0:
        return float(got == want)
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


def acceptable(expected: Any) -> list[str]:
    """The acceptable answers: a list of them, or one."""
    answers = expected if isinstance(expected, list) else [expected]
    return [str(a) for a in answers if str(a).strip()]


class Task(BenchTask):
    """Ask for a short answer; pass when it matches an acceptable one after normalization."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model for a short answer."""
        return self.complete(build_prompt(input), max_tokens=MAX_TOKENS, temperature=0)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the normalized answer equals an acceptable one, else 0.0 (``f1`` beside)."""
        answers = [normalize(a) for a in acceptable(expected)]
        if not answers:
            raise ValueError(f"the row has no acceptable answer: {expected!r}")
        parsed = normalize(extract_answer(output or ""))
        if CONTAINS:
            said = f" {normalize(_THINK.sub('', output or ''))} "
            correct = any(a and f" {a} " in said for a in answers)
        else:
            correct = parsed in answers
        f1 = max(token_f1(parsed, a) for a in answers)
        return {"score": 1.0 if correct else 0.0, "parsed": parsed, "f1": round(f1, 4)}
