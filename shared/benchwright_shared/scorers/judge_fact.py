"""Open questions, graded by the run's judge on whether the answer holds a fact: C or I.

The model answers the question. The judge reads the question, the row's fact (the
expert answer, ``expected``) and the model's answer, and ends with ``GRADE: C`` when
the answer contains the fact (1.0) or ``GRADE: I`` when it does not (0.0), as
Inspect's ``model_graded_fact`` has it; style and wording do not count. The grade,
the judge's reasoning and its model id are kept in the score metadata.

The judge's prompt is in the settings below, so it is part of this file's code and of
every impl id made from it.

Runs in the work sandbox with only the standard library, ``bench_task`` and
``bench_judge``; a run of it needs a judge.
"""

from typing import Any

from bench_judge import grade_fact, input_text
from bench_task import BenchTask

# -- settings: the judge's prompt; part of this file's code, so of its id --
QUESTION_FIELD = "question"  # in input: the question text; "" = the input itself
MAX_TOKENS = 512  # the model's answer
JUDGE_PARAMS = {"max_tokens": 1024}  # sent with every judge call
TEMPLATE = """\
You are comparing a submitted answer to an expert answer on a given question. \
Here is the data:

[BEGIN DATA]
***
[Question]: {question}
***
[Expert]: {reference}
***
[Submission]: {answer}
***
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore \
any differences in style, grammar, or punctuation. Does the submission contain the \
content in the expert answer?

{instructions}"""
# -- end of settings --


class Task(BenchTask):
    """Ask the question; the judge checks the answer holds the row's fact."""

    def solve(self, index: int, input: Any) -> str:
        """Ask the model the question."""
        return self.complete(input_text(input, QUESTION_FIELD), max_tokens=MAX_TOKENS)

    def score(self, index: int, output: str, expected: Any) -> dict[str, Any]:
        """The judge's grade: C 1.0 (the fact is there), I 0.0."""
        question = input_text(self.row_input(index), QUESTION_FIELD)
        return grade_fact(
            self, question, output, str(expected), template=TEMPLATE, params=JUDGE_PARAMS
        )
