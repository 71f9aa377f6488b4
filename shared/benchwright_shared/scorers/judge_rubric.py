"""Open answers, graded by the run's judge against a weighted rubric: a score in [0, 1].

The model answers the question. The judge reads the question, the answer and the
rubric's criteria (numbered from 1), reasons, and ends with one line per criterion,
``CRITERION n: YES`` or ``NO``. The score is the weight of the criteria met over the
rubric's whole weight; the grade beside it is C when all of it is met, I when none
is, P otherwise. ``met`` (one bool per criterion), the judge's reasoning and its
model id are kept in the score metadata. The row's ``expected`` is not used.

The rubric and the judge's prompt are in the settings below, so they are part of this
file's code and of every impl id made from it: a new rubric is a new impl. Each
criterion is ``{"criterion": text, "weight": number}``; weights are finite, >= 0 and
sum to more than 0 (``benchwright_shared.judging.check_rubric`` says which is not).

Runs in the work sandbox with only the standard library, ``bench_task`` and
``bench_judge``; a run of it needs a judge.
"""

from typing import Any

from bench_judge import grade_rubric, input_text
from bench_task import BenchTask

# -- settings: the rubric and the judge's prompt; part of this file's code, so of its id --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
MAX_TOKENS = 512  # the model's answer
JUDGE_PARAMS = {"max_tokens": 1024}  # sent with every judge call
RUBRIC = [
    {"criterion": "The answer addresses the question that was asked.", "weight": 2.0},
    {"criterion": "Every factual claim in the answer is correct.", "weight": 3.0},
    {"criterion": "The answer states its conclusion plainly.", "weight": 1.0},
    {"criterion": "The answer has no padding, repetition or irrelevant text.", "weight": 1.0},
]
TEMPLATE = """\
You are grading a submitted answer against a rubric. Here is the data:

[BEGIN DATA]
***
[Question]: {question}
***
[Submission]: {answer}
***
[Rubric]:
{criteria}
***
[END DATA]

Judge each criterion on its own: does the submission meet it?

{instructions}"""
# -- end of settings --


class Task(BenchTask):
    """Ask the question; the judge marks each criterion of the rubric met or not."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model the question."""
        return self.complete(input_text(input, QUESTION_FIELD), max_tokens=MAX_TOKENS)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """The met criteria's share of the rubric's weight."""
        question = input_text(self.row_input(index), QUESTION_FIELD)
        return grade_rubric(
            self, output, RUBRIC, question=question, template=TEMPLATE, params=JUDGE_PARAMS
        )
