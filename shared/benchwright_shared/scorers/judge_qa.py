"""Open questions, graded by the run's judge against a reference answer: C, P or I.

The model answers the question. The judge (the launch's ``judge``) reads the question,
the row's reference answer (``expected``) and the model's answer, reasons, and ends
with ``GRADE: C`` (correct, 1.0), ``GRADE: P`` (partly correct, 0.5) or ``GRADE: I``
(incorrect, 0.0), as Inspect's ``model_graded_qa`` has it. The grade, the judge's
reasoning and its model id are kept in the score metadata, where the review queue
shows them and the agreement figures read the grade.

The judge's prompt is in the settings below, so it is part of this file's code and of
every impl id made from it: editing it makes a new impl, never a silent re-grade.

Runs in the work sandbox with only the standard library, ``bench_task`` and
``bench_judge``; a run of it needs a judge.
"""

from typing import Any

from bench_judge import grade_qa, input_text
from bench_task import BenchTask

# -- settings: the judge's prompt and grading; part of this file's code, so of its id --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
MAX_TOKENS = 512  # the model's answer
PARTIAL_CREDIT = True  # False: C or I only
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
    """Ask the question; the judge grades the answer against the reference."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model the question."""
        question = input_text(input, QUESTION_FIELD)
        return self.complete(question, max_tokens=MAX_TOKENS)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """The judge's grade: C 1.0, P 0.5, I 0.0."""
        question = input_text(self.row_input(index), QUESTION_FIELD)
        return grade_qa(
            self,
            question,
            output,
            str(expected),
            template=TEMPLATE,
            partial_credit=PARTIAL_CREDIT,
            params=JUDGE_PARAMS,
        )
