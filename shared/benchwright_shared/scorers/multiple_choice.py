"""Multiple choice, scored by the letter the model picks.

The question and its choices, lettered A, B, C..., are shown; the model replies with a
letter (after reasoning, when chain of thought is on). The letter is read robustly
("The correct answer is (C)", "C. 42", "**Answer: C**", the text of a choice) and must
be the reference one; the reference may be a letter or a 0-based index.

Runs in the work sandbox with only the standard library and ``bench_task``.
"""

import re
from typing import Any

from bench_task import BenchTask

# -- settings: the builtin Driver rewrites this block for its dataset (these fit MMLU) --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
CHOICES_FIELD = "choices"  # in input: a list of 2-10 strings
SUBJECT_FIELD = "subject"  # named in the instruction when set
CONTEXT_FIELD = ""  # a passage shown before the question
CHAIN_OF_THOUGHT = False  # reason first, then answer
MAX_TOKENS = 64
# -- end of settings --

LETTERS = "ABCDEFGHIJ"

# Reasoning models think aloud first; drafts in there are not the answer.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
_WORDS = (
    r"(?i:(?:the\s+)?(?:correct\s+|right\s+|best\s+|final\s+)?(?:answer|option|choice)"
    r"(?:\s+(?:is|would\s+be|should\s+be))?\s*[:\-]?\s*(?:option\s+|choice\s+|letter\s+)?)"
)
# "The answer is (C)", "Answer: C", "answer: c)": after a marker, a lowercase letter
# counts only when bracketed or followed by ")" / "." ("the answer is a ..." does not).
_MARKED = re.compile(_WORDS + r"(?:[(\[]\s*([A-Ja-j])\s*[)\]]|([A-J])(?![\w'])|([a-j])[).:](?!\w))")
_LEADING = re.compile(r"^\s*[(\[]?([A-J])(?:[)\].:,]|\s*$|\s*\n|\s+-)")
_BRACKETED = re.compile(r"[(\[]([A-J])[)\]]")
_STANDALONE = re.compile(r"(?<![\w'])([A-J])(?![\w'])")
_ARTICLE = re.compile(r"(?:A|I)\s+[a-z]")


def build_prompt(input: Any) -> str:
    """The question, its lettered choices and how to answer."""
    fields = input if isinstance(input, dict) else {}
    question = str(fields.get(QUESTION_FIELD, "")) if QUESTION_FIELD else str(input)
    choices = [str(c) for c in fields.get(CHOICES_FIELD) or []]
    subject = str(fields.get(SUBJECT_FIELD) or "").replace("_", " ") if SUBJECT_FIELD else ""
    about = f" about {subject}" if subject else ""
    parts = [f"The following is a multiple choice question{about}."]
    context = str(fields.get(CONTEXT_FIELD) or "") if CONTEXT_FIELD else ""
    if context:
        parts.append(context.strip())
    lines = [f"Question: {question.strip()}"]
    lines += [f"{LETTERS[i]}. {choice.strip()}" for i, choice in enumerate(choices)]
    parts.append("\n".join(lines))
    valid = ", ".join(LETTERS[: len(choices)])
    if CHAIN_OF_THOUGHT:
        parts.append(
            "Think it through step by step, then finish with a line "
            f'"Answer: X" where X is one of {valid}.'
        )
        return "\n\n".join(parts)
    parts.append(f"Reply with the letter of the correct choice ({valid}) only.")
    return "\n\n".join(parts) + "\nAnswer:"


def extract_letter(reply: str, choices: list[str] | None = None) -> str | None:
    """The letter a reply chooses, or None when it chooses none or several.

    In order: the last "answer is X" / "Answer: X"; a reply that starts with a
    letter ("C", "C.", "(C) 42"); a single bracketed letter; a reply that is one
    of the choices' text; a single standalone capital letter (not the words
    "A" and "I"). Letters beyond the number of choices are ignored.
    """
    valid = LETTERS[: len(choices)] if choices else LETTERS
    text = _THINK.sub("", reply).replace("*", "").replace("`", "").strip()
    for match in reversed(list(_MARKED.finditer(text))):
        letter = next(g for g in match.groups() if g).upper()
        if letter in valid:
            return letter
    leading = _LEADING.match(text)
    if leading and leading.group(1) in valid:
        return str(leading.group(1))
    bracketed: set[str] = {m for m in _BRACKETED.findall(text) if m in valid}
    if len(bracketed) == 1:
        return bracketed.pop()
    if choices:
        said = _normalize(text)
        same = [i for i, choice in enumerate(choices) if _normalize(choice) == said]
        if len(same) == 1:
            return LETTERS[same[0]]
    standalone: set[str] = {
        m.group(1)
        for m in _STANDALONE.finditer(text)
        if m.group(1) in valid and not _ARTICLE.match(text, m.start())
    }
    return standalone.pop() if len(standalone) == 1 else None


def expected_letter(expected: Any, count: int | None = None) -> str:
    """The reference answer as a letter: from "B", "(B)", 1 or "1" (0-based indices)."""
    if isinstance(expected, bool):
        raise ValueError(f"the reference answer {expected!r} names no choice")
    if isinstance(expected, int):
        index = expected
    else:
        text = str(expected).strip().strip("()").strip()
        if len(text) == 1 and text.upper() in LETTERS:
            index = LETTERS.index(text.upper())
        elif text.isdigit():
            index = int(text)
        else:
            raise ValueError(f"the reference answer {expected!r} names no choice")
    if not 0 <= index < (count or len(LETTERS)):
        raise ValueError(f"the reference answer {expected!r} is out of range")
    return LETTERS[index]


def _normalize(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


class Task(BenchTask):
    """Lettered choices in, one letter out; pass when it is the reference letter."""

    def __init__(self) -> None:
        # index -> choices, filled by solve(): score() sees only the reply.
        self._choices: dict[int, list[str]] = {}

    def solve(self, index: int, input: Any) -> str:
        """Ask the model to pick a letter."""
        if isinstance(input, dict):
            self._choices[index] = [str(c) for c in input.get(CHOICES_FIELD) or []]
        return self.complete(build_prompt(input), max_tokens=MAX_TOKENS, temperature=0)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the chosen letter is the reference one, else 0.0."""
        choices = self._choices_for(index)
        want = expected_letter(expected, len(choices) if choices else None)
        parsed = extract_letter(output or "", choices)
        return {"score": 1.0 if parsed == want else 0.0, "parsed": parsed}

    def _choices_for(self, index: int) -> list[str] | None:
        if index in self._choices:
            return self._choices[index]
        # A re-score without solve(): the rows extract() loaded still hold them.
        rows = self._rows
        if rows is not None and 0 <= index < len(rows):
            row_input = rows[index].get("input")
            if isinstance(row_input, dict) and isinstance(row_input.get(CHOICES_FIELD), list):
                return [str(c) for c in row_input[CHOICES_FIELD]]
        return None
