"""Grading with the run's judge: the mechanics the model-graded scorers share.

Each grader takes the scorer (a ``BenchTask``, whose ``judge`` method calls the run's
judge through the proxy) or any callable with that method's signature,
``fn(prompt, judge=None, **params) -> str``, so a test can pass a scripted judge.

* ``grade_qa``: is the answer right, against a reference? ``C``/``P``/``I``
  (Inspect's ``model_graded_qa`` convention: the judge reasons, then ends with
  ``GRADE: <letter>``), scored 1, 0.5, 0.
* ``grade_fact``: does the answer contain the reference's fact? ``C``/``I``.
* ``grade_rubric``: which of a list of weighted criteria the answer meets (one call,
  the criteria numbered); the score is the met weight over the total weight.
* ``prefer``: which of two answers is better, asked in both orders; an answer that
  wins only in one position is a tie.
* ``panel``: one grader run once per judge, the grades combined by majority or mean.

Parsing is strict and deterministic: the judge's ``<think>`` blocks are dropped, the
*last* line of the asked form decides (a judge may quote the form while reasoning),
letters are read case-insensitively, and an answer with no verdict of the asked
form raises ``GradeParseError`` (the task ends ``err``, never a silent 0): the proxy
caches every judge answer, so asking again would get the same text.

The default templates and the grade instructions below are frozen: a scorer that
relies on them keeps grading with the same words, so its impl id keeps meaning the
same prompt. A new wording is a new constant. The shipped scorers spell their
templates out in their settings anyway, so the prompt is part of their code.

Runs in the work sandbox beside ``bench_task``, with only the standard library.
"""

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from bench_task import JudgeUnavailableError, judge_models


class GradeParseError(ValueError):
    """The judge's answer holds no verdict in the form it was asked for."""


class Judging(Protocol):
    """What a grader needs of the scorer: ``BenchTask.judge``."""

    def judge(self, prompt: str, *, judge: str | None = None, **params: Any) -> str: ...


# The scorer, or a callable standing in for its ``judge`` method.
Judge = Judging | Callable[..., str]

# A grade's score, and the grades worst first (a panel's tie goes to the worse one).
GRADE_SCORES = {"C": 1.0, "P": 0.5, "I": 0.0}
GRADE_ORDER = ("I", "P", "C")

QA_TEMPLATE = """\
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

FACT_TEMPLATE = """\
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

RUBRIC_TEMPLATE = """\
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

PAIRWISE_TEMPLATE = """\
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


def grade_instructions(letters: str) -> str:
    """What the judge is told about the form of its grade (``letters``: "CPI" or "CI")."""
    choices = {"C": '"C" for a correct answer', "P": '"P" for a partially correct answer'}
    choices["I"] = '"I" for an incorrect answer'
    listed = ", ".join(choices[letter] for letter in letters)
    return (
        f"Choose ONE grade: {listed}.\n\n"
        "First, write out step by step your reasoning about the submission, to be sure "
        "your conclusion is right; do not state the grade at the outset. Then end with a "
        f"line of its own, 'GRADE: $LETTER' (without quotes), where LETTER is one of {letters}."
    )


RUBRIC_INSTRUCTIONS = (
    "First, reason briefly about each criterion. Then end with one line per criterion, "
    "in order, of the form 'CRITERION <number>: YES' when the submission meets it or "
    "'CRITERION <number>: NO' when it does not, and nothing after them."
)
PAIRWISE_INSTRUCTIONS = (
    "First, explain your comparison step by step. Then end with a line of its own, "
    "'PREFERENCE: A', 'PREFERENCE: B' or 'PREFERENCE: TIE' (without quotes)."
)

# Reasoning models think aloud first; a grade drafted in there is not the verdict.
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
# Markdown a judge may wrap a verdict in ("**GRADE: C**", "GRADE: `C`").
_DECOR = r"[*_`'\"]*"
_GRADE = re.compile(rf"\bGRADE{_DECOR}\s*:\s*{_DECOR}\s*([A-Za-z]+)\b", re.IGNORECASE)
_CRITERION = re.compile(rf"\bCRITERION\s*(\d+){_DECOR}\s*:\s*{_DECOR}\s*(YES|NO)\b", re.IGNORECASE)
_PREFERENCE = re.compile(rf"\bPREFERENCE{_DECOR}\s*:\s*{_DECOR}\s*(A|B|TIE)\b", re.IGNORECASE)


def fill(template: str, required: Sequence[str], **values: str) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced, in one pass (a value's own
    braces are never read as placeholders, and any other braces in the template stay,
    so it may hold JSON). ``ValueError`` when it lacks one of ``required``: a template
    without ``{answer}`` would grade without showing the judge the answer."""
    missing = [name for name in required if "{" + name + "}" not in template]
    if missing:
        raise ValueError(f"the judge's template has no {', '.join('{' + n + '}' for n in missing)}")
    if not values:
        return template
    names = "|".join(re.escape(name) for name in values)
    return re.sub(r"\{(" + names + r")\}", lambda m: values[m.group(1)], template)


def verdict_text(reply: str) -> str:
    """The part of a judge's reply its verdict is read from: without ``<think>`` blocks."""
    return _THINK.sub("", reply)


def parse_grade(reply: str, letters: str) -> str:
    """The letter of the reply's last ``GRADE: X``; ``GradeParseError`` when there is none
    or it is not one of ``letters``."""
    found: list[str] = _GRADE.findall(verdict_text(reply))
    grade = found[-1].upper() if found else None
    if grade is None or len(grade) != 1 or grade not in letters:
        said = f"ends with GRADE: {found[-1]}" if found else "has no GRADE: line"
        raise GradeParseError(f"the judge's answer {said} (one of {letters} was asked for)")
    return grade


def parse_criteria(reply: str, count: int) -> list[bool]:
    """Whether each of ``count`` criteria is met, from the reply's last
    ``CRITERION n: YES|NO`` line for each n; ``GradeParseError`` naming any left out."""
    met: dict[int, bool] = {}
    for number, answer in _CRITERION.findall(verdict_text(reply)):
        met[int(number)] = answer.upper() == "YES"
    missing = [n for n in range(1, count + 1) if n not in met]
    if missing:
        raise GradeParseError(
            f"the judge's answer says nothing of criteria {', '.join(map(str, missing))}"
        )
    return [met[n] for n in range(1, count + 1)]


def parse_preference(reply: str) -> str:
    """ "A", "B" or "TIE", from the reply's last ``PREFERENCE:`` line."""
    found = _PREFERENCE.findall(verdict_text(reply))
    if not found:
        raise GradeParseError("the judge's answer has no PREFERENCE: A, B or TIE line")
    return str(found[-1]).upper()


def grade_for(score: float) -> str:
    """A score's grade on the C/P/I scale: all is C, nothing is I, anything between P."""
    return "C" if score >= 1.0 else "I" if score <= 0.0 else "P"


def ask(task: Judge, prompt: str, judge: str | None, params: Mapping[str, Any] | None) -> str:
    """The judge's answer to ``prompt``, through ``task.judge`` or ``task`` itself, with
    ``params`` (``temperature``, ``max_tokens``...) in the call."""
    method = getattr(task, "judge", None)
    call = method if callable(method) else task
    assert callable(call)
    return str(call(prompt, judge=judge, **(params or {})))


def input_text(input: Any, field: str) -> str:
    """The text a grader shows the judge from a row's input: ``input[field]``, or the
    whole input when ``field`` is "" or the input is not a dict ("" for none)."""
    if field and isinstance(input, dict):
        return str(input.get(field) or "")
    return "" if input is None else str(input)


def judge_name(judge: str | None) -> str | None:
    """The model that answers for ``judge``: itself, else the run's first judge."""
    return judge or next(iter(judge_models()), None)


def grade_qa(
    task: Judge,
    question: str,
    answer: str,
    reference: str,
    *,
    template: str = QA_TEMPLATE,
    partial_credit: bool = True,
    judge: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Grade ``answer`` to ``question`` against ``reference``: ``{"score", "grade",
    "reasoning", "judge"}`` with grade C (1.0), P (0.5, only with ``partial_credit``)
    or I (0.0). ``params`` go into the judge call (``temperature``, ``max_tokens``)."""
    letters = "CPI" if partial_credit else "CI"
    prompt = fill(
        template,
        ("answer",),
        question=question,
        answer=answer,
        reference=reference,
        instructions=grade_instructions(letters),
    )
    reply = ask(task, prompt, judge, params)
    grade = parse_grade(reply, letters)
    return {
        "score": GRADE_SCORES[grade],
        "grade": grade,
        "reasoning": reply,
        "judge": judge_name(judge),
    }


def grade_fact(
    task: Judge,
    question: str,
    answer: str,
    fact: str,
    *,
    template: str = FACT_TEMPLATE,
    judge: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Whether ``answer`` contains ``fact`` (the ``{reference}`` of the template): grade
    C (1.0) or I (0.0), in ``grade_qa``'s shape."""
    return grade_qa(
        task,
        question,
        answer,
        fact,
        template=template,
        partial_credit=False,
        judge=judge,
        params=params,
    )


def rubric_weights(criteria: Sequence[Any]) -> list[float]:
    """Each criterion's weight (1 when it gives none), once the rubric is checked:
    ``ValueError`` naming the field at fault (``rubric[2].weight``) for a criterion that
    is not ``{"criterion": text, "weight": number}``, a weight that is not a finite
    number >= 0, or weights that sum to nothing. (The platform's
    ``benchwright_shared.judging.check_rubric`` applies the same rules before a run.)"""
    if not isinstance(criteria, Sequence) or isinstance(criteria, str) or not criteria:
        raise ValueError("rubric: a rubric is a non-empty list of criteria")
    weights = []
    for i, item in enumerate(criteria):
        if not isinstance(item, dict):
            raise ValueError(f"rubric[{i}]: a criterion is {{'criterion': text, 'weight': n}}")
        unknown = sorted(str(key) for key in item if key not in ("criterion", "weight"))
        if unknown:
            raise ValueError(f"rubric[{i}].{unknown[0]}: not a field of a criterion")
        text = item.get("criterion")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"rubric[{i}].criterion: must be a non-empty text")
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"rubric[{i}].weight: must be a number, not {weight!r}")
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"rubric[{i}].weight: must be finite and >= 0, not {weight!r}")
        weights.append(float(weight))
    if not sum(weights) > 0:
        raise ValueError("rubric: the weights sum to 0; at least one must be positive")
    return weights


def grade_rubric(
    task: Judge,
    answer: str,
    criteria: Sequence[dict[str, Any]],
    *,
    question: str = "",
    template: str = RUBRIC_TEMPLATE,
    judge: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Grade ``answer`` against weighted ``criteria`` in one judge call (the criteria
    numbered from 1): ``{"score", "grade", "met", "reasoning", "judge"}``, the score
    being the met criteria's weight over all the weight, in [0, 1], ``met`` a bool per
    criterion in order, and the grade ``grade_for(score)`` (C all, I none, P between)."""
    weights = rubric_weights(criteria)
    listed = "\n".join(f"{n}. {c['criterion'].strip()}" for n, c in enumerate(criteria, 1))
    prompt = fill(
        template,
        ("answer", "criteria"),
        question=question,
        answer=answer,
        criteria=listed,
        instructions=RUBRIC_INSTRUCTIONS,
    )
    reply = ask(task, prompt, judge, params)
    met = parse_criteria(reply, len(criteria))
    score = sum(w for w, ok in zip(weights, met, strict=True) if ok) / sum(weights)
    return {
        "score": score,
        "grade": grade_for(score),
        "met": met,
        "reasoning": reply,
        "judge": judge_name(judge),
    }


def prefer(
    task: Judge,
    question: str,
    a: str,
    b: str,
    *,
    template: str = PAIRWISE_TEMPLATE,
    judge: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Which of ``a`` and ``b`` answers ``question`` better, asked twice: ``a`` shown
    first, then ``b`` first. ``{"winner": "a"|"b"|"tie", "flipped", "verdicts",
    "judge"}``: a winner only when both orders name it; otherwise a tie, ``flipped``
    when each order preferred the answer in the same position (position bias, Zheng et
    al. 2023's MT-Bench judges treat it so). ``verdicts`` holds each order's."""
    verdicts = []
    for order, first, second in (("ab", a, b), ("ba", b, a)):
        prompt = fill(
            template,
            ("answer_a", "answer_b"),
            question=question,
            answer_a=first,
            answer_b=second,
            instructions=PAIRWISE_INSTRUCTIONS,
        )
        reply = ask(task, prompt, judge, params)
        said = parse_preference(reply)
        # Which of a and b the judge preferred, whatever position it was in.
        winner = "tie" if said == "TIE" else order[0] if said == "A" else order[1]
        verdicts.append({"order": order, "preferred": said, "winner": winner, "reasoning": reply})
    first, second = verdicts[0]["winner"], verdicts[1]["winner"]
    flipped = first != second and "tie" not in (first, second)
    return {
        "winner": first if first == second else "tie",
        "flipped": flipped,
        "verdicts": verdicts,
        "judge": judge_name(judge),
    }


def panel(
    grade_fn: Callable[[str], dict[str, Any]],
    judges: Sequence[str] | None = None,
    how: str = "majority",
) -> dict[str, Any]:
    """Run ``grade_fn(judge)`` once per judge (``judges``, else every judge of the run,
    one after another so call ids stay in order) and combine their ``grade``/``score``:

    * ``majority``: the grade most judges gave, a tie going to the worse grade
      (I < P < C); the score is the mean of those judges' scores;
    * ``mean``: the mean score, graded by ``grade_for``.

    ``{"score", "grade", "how", "panel": {judge: grade}, "scores": {judge: score},
    "reasoning": {judge: text}}``: each judge's grade is kept so that the judges'
    agreement with each other can be measured later. A judge's failure fails the panel.
    """
    if how not in ("majority", "mean"):
        raise ValueError(f"a panel combines by 'majority' or 'mean', not {how!r}")
    names = list(judges) if judges is not None else judge_models()
    if not names:
        raise JudgeUnavailableError("a panel needs judges, and the run names none")
    if len(set(names)) != len(names):
        raise ValueError(f"a panel names a judge twice: {names}")
    results = {name: grade_fn(name) for name in names}
    grades = {name: str(result["grade"]) for name, result in results.items()}
    scores = {name: float(result["score"]) for name, result in results.items()}
    unknown = sorted(set(grades.values()) - set(GRADE_ORDER))
    if how == "majority" and unknown:
        raise ValueError(f"a majority needs grades among {GRADE_ORDER}, not {unknown}")
    if how == "majority":
        counts = Counter(grades.values())
        top = max(counts.values())
        grade = min((g for g, n in counts.items() if n == top), key=GRADE_ORDER.index)
        chosen = [scores[name] for name, g in grades.items() if g == grade]
        score = sum(chosen) / len(chosen)
    else:
        score = sum(scores.values()) / len(scores)
        grade = grade_for(score)
    return {
        "score": score,
        "grade": grade,
        "how": how,
        "panel": grades,
        "scores": scores,
        "reasoning": {name: result.get("reasoning") for name, result in results.items()},
    }
