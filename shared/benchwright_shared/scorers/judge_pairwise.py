"""Open answers, compared by the run's judge with a reference answer: win, tie or loss.

The model answers the question. The judge sees the model's answer and the row's
reference answer (``expected``: a baseline model's, or a person's) and says which is
better, ending with ``PREFERENCE: A``, ``B`` or ``TIE``. It is asked twice, the
model's answer first and then second: the model wins (1.0, grade C) only when both
orders prefer it, loses (0.0, grade I) only when both prefer the reference, and ties
(0.5, grade P) otherwise. When the two orders each prefer whichever answer stood in
the same place, the verdict ``flipped`` (the judge's position bias): a tie. The mean
score is the model's win rate against the reference, ties counting half. Both
verdicts, with the judge's reasoning, are kept in the score metadata.

The judge's prompt is in the settings below, so it is part of this file's code and of
every impl id made from it.

Runs in the work sandbox with only the standard library, ``bench_task`` and
``bench_judge``; a run of it needs a judge.
"""

from typing import Any

from bench_judge import input_text, prefer
from bench_task import BenchTask

# -- settings: the judge's prompt; part of this file's code, so of its id --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
MAX_TOKENS = 512  # the model's answer
JUDGE_PARAMS = {"max_tokens": 1024}  # sent with every judge call
TEMPLATE = """\
You are comparing two answers to the same question. Here is the data:

[BEGIN DATA]
***
[Question]: {question}
***
[Answer A]: {answer_a}
***
[Answer B]: {answer_b}
***
[END DATA]

Which answer is better: more correct, more helpful and more complete? Do not let \
the answers' order or length sway you.

{instructions}"""
# -- end of settings --

# The model's answer is "a": its result as a score and on the C/P/I scale.
OUTCOMES = {"a": (1.0, "C"), "tie": (0.5, "P"), "b": (0.0, "I")}


class Task(BenchTask):
    """Ask the question; the judge compares the answer with the reference, both ways round."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model the question."""
        return self.complete(input_text(input, QUESTION_FIELD), max_tokens=MAX_TOKENS)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """1.0 when the judge prefers the model's answer in both orders, 0.0 when it
        prefers the reference in both, 0.5 otherwise."""
        question = input_text(self.row_input(index), QUESTION_FIELD)
        verdict = prefer(
            self, question, output, str(expected), template=TEMPLATE, params=JUDGE_PARAMS
        )
        score, grade = OUTCOMES[verdict["winner"]]
        return {"score": score, "grade": grade, **verdict}
