"""``bench_judge``, the runtime's grading mechanics, against scripted judges: callables
whose answers are a pure function of the prompt (and of the judge named). No server:
the judge calls themselves are tested through the runner in ``test_judge_scorers``."""

import importlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchwright_shared.judging import check_rubric

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "services/sandbox-manager/benchwright_sandbox_manager/runtime"


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType]]:
    """``bench_task`` and ``bench_judge`` imported as a sandbox imports them (top-level
    modules beside each other), with no judge in the environment; undone afterwards."""
    for name in ("BW_JUDGE_PROXY_KEY", "BW_JUDGE_MODEL", "BW_JUDGE_MODELS"):
        monkeypatch.delenv(name, raising=False)
    saved = {name: sys.modules.pop(name, None) for name in ("bench_task", "bench_judge")}
    monkeypatch.syspath_prepend(str(RUNTIME))
    yield importlib.import_module("bench_task"), importlib.import_module("bench_judge")
    for name, module in saved.items():
        sys.modules.pop(name, None)
        if module is not None:
            sys.modules[name] = module


@pytest.fixture
def judge(runtime: tuple[ModuleType, ModuleType]) -> ModuleType:
    return runtime[1]


def submission(prompt: str) -> str:
    found = re.search(r"\[Submission\]: (.*?)\n\*\*\*", prompt, re.DOTALL)
    assert found, prompt
    return found.group(1)


class Scripted:
    """A judge standing in for ``BenchTask.judge``: ``answer(judge, prompt)`` decides,
    and every call is kept."""

    def __init__(self, answer: Callable[[str | None, str], str]) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def __call__(self, prompt: str, judge: str | None = None, **params: Any) -> str:
        self.calls.append((prompt, judge, params))
        return self.answer(judge, prompt)


# -- parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("The capital is Paris, as the reference says.\nGRADE: C", "C"),
        ("Partly right.\n\n**GRADE:** P", "P"),
        ("wrong city\ngrade: i", "I"),
        ("GRADE:C", "C"),
        ("Reasoning...\nGRADE: `I`.", "I"),
        # The instructions quoted, then the verdict: the last line decides.
        ("I must reply 'GRADE: $LETTER'. For a correct one, 'GRADE: C'.\nGRADE: I", "I"),
        # A grade drafted while thinking is not the verdict.
        ("<think>GRADE: C surely</think>On reflection it is wrong.\nGRADE: I", "I"),
    ],
)
def test_a_grade_is_read_from_the_last_grade_line(
    judge: ModuleType, reply: str, grade: str
) -> None:
    assert judge.parse_grade(reply, "CPI") == grade


@pytest.mark.parametrize(
    ("reply", "letters", "match"),
    [
        ("It is correct.", "CPI", "has no GRADE: line"),
        ("GRADE: X", "CPI", "ends with GRADE: X"),
        ("GRADE: Correct", "CPI", "ends with GRADE: Correct"),
        ("GRADE: P", "CI", "ends with GRADE: P"),
        ("<think>GRADE: C</think>I cannot decide.", "CPI", "has no GRADE: line"),
    ],
)
def test_an_answer_without_a_grade_of_the_asked_form_is_an_error(
    judge: ModuleType, reply: str, letters: str, match: str
) -> None:
    with pytest.raises(judge.GradeParseError, match=match):
        judge.parse_grade(reply, letters)


# -- grade_qa / grade_fact ------------------------------------------------------------

QA_GRADES = {"Paris.": "C", "Paris or Lyon": "P", "Berlin": "I"}


def qa_judge(_judge: str | None, prompt: str) -> str:
    return f"Comparing with the reference.\nGRADE: {QA_GRADES[submission(prompt)]}"


@pytest.mark.parametrize(
    ("answer", "score", "grade"),
    [("Paris.", 1.0, "C"), ("Paris or Lyon", 0.5, "P"), ("Berlin", 0.0, "I")],
)
def test_grade_qa_scores_each_grade(
    judge: ModuleType, answer: str, score: float, grade: str
) -> None:
    scripted = Scripted(qa_judge)
    result = judge.grade_qa(scripted, "Capital of France?", answer, "Paris", judge="j/a")
    assert result == {
        "score": score,
        "grade": grade,
        "reasoning": f"Comparing with the reference.\nGRADE: {grade}",
        "judge": "j/a",
    }
    [(prompt, named, params)] = scripted.calls
    assert (named, params) == ("j/a", {})
    assert "[Question]: Capital of France?" in prompt and "[Reference]: Paris\n" in prompt
    assert "one of CPI" in prompt and '"P" for a partially correct answer' in prompt


def test_grade_qa_passes_params_and_names_the_run_s_first_judge(
    judge: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_JUDGE_MODELS", json.dumps(["j/first", "j/second"]))
    scripted = Scripted(qa_judge)
    result = judge.grade_qa(
        scripted, "q", "Berlin", "Paris", params={"temperature": 0.0, "max_tokens": 9}
    )
    assert result["judge"] == "j/first"
    assert scripted.calls[0][1:] == (None, {"temperature": 0.0, "max_tokens": 9})


def test_without_partial_credit_the_judge_chooses_between_c_and_i(judge: ModuleType) -> None:
    scripted = Scripted(qa_judge)
    with pytest.raises(judge.GradeParseError, match="one of CI"):
        judge.grade_qa(scripted, "q", "Paris or Lyon", "Paris", partial_credit=False)
    prompt = scripted.calls[0][0]
    assert "one of CI." in prompt and '"P"' not in prompt


def test_the_template_s_placeholders_are_filled_once_and_other_braces_kept(
    judge: ModuleType,
) -> None:
    scripted = Scripted(lambda _j, _p: "GRADE: C")
    template = 'JSON {"a": 1} Q={question} R={reference} A={answer} {unknown}\n{instructions}'
    judge.grade_qa(scripted, "{answer}", "says {reference}", "ref", template=template)
    prompt = scripted.calls[0][0]
    assert prompt.startswith('JSON {"a": 1} Q={answer} R=ref A=says {reference} {unknown}\n')


def test_a_template_that_never_shows_the_answer_is_refused(judge: ModuleType) -> None:
    scripted = Scripted(lambda _j, _p: "GRADE: C")
    with pytest.raises(ValueError, match=r"has no \{answer\}"):
        judge.grade_qa(scripted, "q", "a", "r", template="Grade {question}.")
    assert scripted.calls == []


def test_grade_fact_asks_whether_the_fact_is_in_the_answer(judge: ModuleType) -> None:
    scripted = Scripted(lambda _j, p: "GRADE: C" if "1889" in submission(p) else "GRADE: I")
    held = judge.grade_fact(scripted, "When?", "It opened in 1889.", "1889")
    missed = judge.grade_fact(scripted, "When?", "Long ago.", "1889")
    assert (held["score"], held["grade"], missed["score"], missed["grade"]) == (1.0, "C", 0.0, "I")
    assert "[Expert]: 1889" in scripted.calls[0][0] and "one of CI." in scripted.calls[0][0]


def test_a_task_s_judge_method_is_called_when_given_the_task(judge: ModuleType) -> None:
    class Task:
        def __init__(self) -> None:
            self.asked: list[str | None] = []

        def judge(self, prompt: str, *, judge: str | None = None, **params: Any) -> str:
            self.asked.append(judge)
            return "GRADE: C"

    task = Task()
    assert judge.grade_qa(task, "q", "a", "r", judge="j/x")["grade"] == "C"
    assert task.asked == ["j/x"]


# -- rubric -------------------------------------------------------------------------

RUBRIC = [
    {"criterion": "On topic.", "weight": 2},
    {"criterion": "Correct.", "weight": 3.0},
    {"criterion": "Plain.", "weight": 1},
    {"criterion": "Short."},  # weight 1
]


def rubric_judge(_judge: str | None, prompt: str) -> str:
    verdicts = {"good": "YYYY", "mixed": "YNYN", "bad": "NNNN", "nearly": "NYYY"}
    said = verdicts[submission(prompt)]
    lines = [f"CRITERION {n}: {'YES' if v == 'Y' else 'NO'}" for n, v in enumerate(said, 1)]
    return "Each in turn.\n" + "\n".join(lines)


@pytest.mark.parametrize(
    ("answer", "score", "grade", "met"),
    [
        ("good", 1.0, "C", [True, True, True, True]),
        ("mixed", 3 / 7, "P", [True, False, True, False]),
        ("bad", 0.0, "I", [False, False, False, False]),
        ("nearly", 5 / 7, "P", [False, True, True, True]),
    ],
)
def test_rubric_score_is_the_met_weight_over_the_whole(
    judge: ModuleType, answer: str, score: float, grade: str, met: list[bool]
) -> None:
    scripted = Scripted(rubric_judge)
    result = judge.grade_rubric(scripted, answer, RUBRIC, question="Why?")
    assert (result["score"], result["grade"], result["met"]) == (score, grade, met)
    assert len(scripted.calls) == 1
    prompt = scripted.calls[0][0]
    assert "[Rubric]:\n1. On topic.\n2. Correct.\n3. Plain.\n4. Short.\n" in prompt


def test_rubric_lines_may_be_decorated_and_the_last_for_each_counts(judge: ModuleType) -> None:
    reply = (
        "Draft: CRITERION 1: NO\n**Criterion 1:** yes\n- CRITERION 2 : No\n"
        "CRITERION 3: `YES`\ncriterion 4: NO\nCRITERION 9: YES"
    )
    assert judge.parse_criteria(reply, 4) == [True, False, True, False]


def test_a_rubric_answer_missing_a_criterion_is_an_error(judge: ModuleType) -> None:
    with pytest.raises(judge.GradeParseError, match="criteria 2, 4"):
        judge.parse_criteria("CRITERION 1: YES\nCRITERION 3: NO", 4)


BAD_RUBRICS: list[tuple[Any, str]] = [
    ([], "rubric"),
    ("be good", "rubric"),
    ([{"criterion": "a", "weight": -1}], "rubric[0].weight"),
    ([{"criterion": "a", "weight": 1}, {"criterion": "b", "weight": math.nan}], "rubric[1].weight"),
    ([{"criterion": "a", "weight": math.inf}], "rubric[0].weight"),
    ([{"criterion": "a", "weight": 0}, {"criterion": "b", "weight": 0.0}], "rubric"),
    ([{"criterion": "a", "weight": 1}, {"criterion": "b", "weight": "2"}], "rubric[1].weight"),
    ([{"criterion": "a", "weight": True}], "rubric[0].weight"),
    ([{"criterion": "a", "weight": None}], "rubric[0].weight"),
    (
        [{"criterion": "a"}, {"criterion": "b"}, {"criterion": " ", "weight": 1}],
        "rubric[2].criterion",
    ),
    ([{"criterion": "a", "wieght": 2}], "rubric[0].wieght"),
    (["a"], "rubric[0]"),
]


@pytest.mark.parametrize(("criteria", "field"), BAD_RUBRICS)
def test_a_bad_rubric_is_refused_naming_the_field_here_and_in_shared(
    judge: ModuleType, criteria: Any, field: str
) -> None:
    """The sandbox's check and the platform's (``benchwright_shared.judging``) agree."""
    scripted = Scripted(rubric_judge)
    with pytest.raises(ValueError, match=rf"^{re.escape(field)}:"):
        judge.grade_rubric(scripted, "good", criteria)
    assert scripted.calls == []
    assert check_rubric(criteria)[0].field == field


# -- prefer -------------------------------------------------------------------------


def pairwise_judge(_judge: str | None, prompt: str) -> str:
    """Says TIE when the answer shown first says "tie-me"; else prefers the answer
    saying "best", and with none or both, the one shown first (position bias)."""
    first = re.search(r"\[Answer A\]: (.*?)\n\*\*\*", prompt, re.DOTALL)
    second = re.search(r"\[Answer B\]: (.*?)\n\*\*\*", prompt, re.DOTALL)
    assert first and second
    a, b = first.group(1), second.group(1)
    if "tie-me" in a:
        return "Equal.\nPREFERENCE: TIE"
    if "best" in b and "best" not in a:
        return "B is better.\nPREFERENCE: B"
    return "A is better.\n**PREFERENCE:** A"


@pytest.mark.parametrize(
    ("a", "b", "winner", "flipped", "said"),
    [
        ("the best", "plain", "a", False, ["A", "B"]),
        ("plain", "the best", "b", False, ["B", "A"]),
        ("plain", "also plain", "tie", True, ["A", "A"]),
        ("tie-me", "tie-me", "tie", False, ["TIE", "TIE"]),
        ("tie-me best", "plain", "tie", False, ["TIE", "B"]),
    ],
)
def test_prefer_asks_both_orders_and_a_flip_is_a_tie(
    judge: ModuleType, a: str, b: str, winner: str, flipped: bool, said: list[str]
) -> None:
    scripted = Scripted(pairwise_judge)
    result = judge.prefer(scripted, "Which?", a, b, judge="j/a")
    assert (result["winner"], result["flipped"], result["judge"]) == (winner, flipped, "j/a")
    assert [v["order"] for v in result["verdicts"]] == ["ab", "ba"]
    assert [v["preferred"] for v in result["verdicts"]] == said
    first, second = (call[0] for call in scripted.calls)
    assert f"[Answer A]: {a}\n" in first and f"[Answer B]: {b}\n" in first
    assert f"[Answer A]: {b}\n" in second and f"[Answer B]: {a}\n" in second


def test_prefer_without_a_verdict_is_an_error(judge: ModuleType) -> None:
    with pytest.raises(judge.GradeParseError, match="PREFERENCE"):
        judge.prefer(Scripted(lambda _j, _p: "Both are fine."), "q", "a", "b")


# -- panel --------------------------------------------------------------------------


def graded(grades: dict[str, str]) -> Callable[[str], dict[str, Any]]:
    scores = {"C": 1.0, "P": 0.5, "I": 0.0}
    return lambda j: {"score": scores[grades[j]], "grade": grades[j], "reasoning": f"{j} says"}


@pytest.mark.parametrize(
    ("grades", "how", "grade", "score"),
    [
        ({"a": "C", "b": "C", "c": "I"}, "majority", "C", 1.0),
        ({"a": "C", "b": "P", "c": "I"}, "majority", "I", 0.0),  # a three-way tie: the worst
        ({"a": "C", "b": "P"}, "majority", "P", 0.5),
        ({"a": "P", "b": "P", "c": "C"}, "majority", "P", 0.5),
        ({"a": "C", "b": "C", "c": "I"}, "mean", "P", 2 / 3),
        ({"a": "C", "b": "C"}, "mean", "C", 1.0),
        ({"a": "I", "b": "I", "c": "I"}, "mean", "I", 0.0),
    ],
)
def test_panel_combines_each_judge_s_grade(
    judge: ModuleType, grades: dict[str, str], how: str, grade: str, score: float
) -> None:
    result = judge.panel(graded(grades), list(grades), how=how)
    assert (result["grade"], result["score"], result["how"]) == (grade, score, how)
    assert result["panel"] == grades
    assert result["reasoning"] == {j: f"{j} says" for j in grades}


def test_panel_majority_score_is_the_mean_of_the_majority_s_scores(judge: ModuleType) -> None:
    results = {"a": (0.6, "P"), "b": (0.8, "P"), "c": (1.0, "C")}

    def grade(j: str) -> dict[str, Any]:
        return {"score": results[j][0], "grade": results[j][1]}

    result = judge.panel(grade, ["a", "b", "c"])
    assert (result["grade"], result["score"]) == ("P", 0.7)


def test_panel_runs_every_judge_of_the_run_in_order(
    judge: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_JUDGE_MODELS", json.dumps(["j/b", "j/a"]))
    scripted = Scripted(qa_judge)
    result = judge.panel(lambda j: judge.grade_qa(scripted, "q", "Paris.", "Paris", judge=j))
    assert [call[1] for call in scripted.calls] == ["j/b", "j/a"]
    assert result["panel"] == {"j/b": "C", "j/a": "C"}


def test_panel_refusals(judge: ModuleType, runtime: tuple[ModuleType, ModuleType]) -> None:
    bench_task = runtime[0]
    with pytest.raises(bench_task.JudgeUnavailableError, match="names none"):
        judge.panel(graded({}))
    with pytest.raises(ValueError, match="twice"):
        judge.panel(graded({"a": "C"}), ["a", "a"])
    with pytest.raises(ValueError, match="'majority' or 'mean'"):
        judge.panel(graded({"a": "C"}), ["a"], how="median")
    with pytest.raises(ValueError, match="a majority needs grades"):
        judge.panel(lambda _j: {"score": 1.0, "grade": "A"}, ["a"])


# -- bench_task's side ---------------------------------------------------------------


def test_judge_models_come_from_the_environment(
    runtime: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_task = runtime[0]
    assert bench_task.judge_models() == []
    monkeypatch.setenv("BW_JUDGE_MODEL", "j/only")
    assert bench_task.judge_models() == ["j/only"]
    monkeypatch.setenv("BW_JUDGE_MODELS", '["j/a", "j/b"]')
    assert bench_task.judge_models() == ["j/a", "j/b"]
    monkeypatch.setenv("BW_JUDGE_MODELS", '{"j/a": 1}')
    with pytest.raises(bench_task.JudgeUnavailableError, match="not a JSON list"):
        bench_task.judge_models()


def test_a_judge_call_without_a_judge_key_is_an_infra_error(
    runtime: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_task = runtime[0]
    monkeypatch.setenv("BW_MODEL_PROXY_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("BW_MODEL_PROXY_KEY", "bw_run_x.model")
    with pytest.raises(bench_task.JudgeUnavailableError, match="launch it with a judge") as caught:
        bench_task.BenchTask().judge("grade this")
    assert caught.value.infra_error == "infra:no_judge"
