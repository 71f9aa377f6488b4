"""Open questions, graded against a reference answer by every judge of the run: a panel.

As ``judge_qa``: the model answers, and each judge the launch names (a panel of up to
five) grades the answer against the row's reference, C, P or I. The grades are then
combined: by ``majority`` (the grade most judges gave; a tie goes to the worse grade,
so a split panel never flatters the model) or by ``mean`` (of the judges' scores,
graded C at 1, I at 0 and P between). Each judge's grade is kept in the score
metadata (``panel``: judge -> grade), so the judges' agreement with each other, and
with people, can be measured.

The judges' prompt and the way they are combined are in the settings below, so they
are part of this file's code and of every impl id made from it.

Runs in the work sandbox with only the standard library, ``bench_task`` and
``bench_judge``; a run of it needs one judge or more.
"""

from typing import Any

from bench_judge import grade_qa, input_text, panel
from bench_task import BenchTask

# -- settings: the judges' prompt and how they are combined; part of this file's id --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
MAX_TOKENS = 512  # the model's answer
PARTIAL_CREDIT = True  # False: each judge grades C or I only
PANEL_MODE = "majority"  # or "mean"
JUDGE_PARAMS = {"max_tokens": 1024}  # sent with every judge call
TEMPLATE = """\
You are assessing a submitted answer to a question against a reference answer. \
Here is the data:

[BEGIN DATA]
***
[Question]: {question}
***
[Reference]: {reference}
***
[Submission]: {answer}
***
[END DATA]

Does the submission answer the question as the reference does? Ignore differences \
of style, grammar, punctuation or length.

{instructions}"""
# -- end of settings --


class Task(BenchTask):
    """Ask the question; every judge of the run grades the answer, and the panel decides."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model the question."""
        return self.complete(input_text(input, QUESTION_FIELD), max_tokens=MAX_TOKENS)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """The panel's grade, each judge's beside it."""
        question = input_text(self.row_input(index), QUESTION_FIELD)

        def grade(judge: str) -> dict[str, Any]:
            return grade_qa(
                self,
                question,
                output,
                str(expected),
                template=TEMPLATE,
                partial_credit=PARTIAL_CREDIT,
                judge=judge,
                params=JUDGE_PARAMS,
            )

        return panel(grade, how=PANEL_MODE)
