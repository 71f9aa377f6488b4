"""Generated scorers, loaded beside ``bench_task`` as the sandbox loads them; no model."""

import json
from collections.abc import Callable
from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import KINDS, reference_outputs, wrong_outputs
from tests.orchestrator.driver.conftest import FakeChat, analysis_for
from tests.orchestrator.driver.data import (
    BFCL_ROWS,
    GSM8K_ROWS,
    HUMANEVAL_ROWS,
    MMLU_ROWS,
    NQ_ROWS,
    ROWS_BY_KIND,
)

Make = Callable[..., Any]


# -- the proof the pipeline runs: reference outputs pass, wrong ones do not ------


@pytest.mark.parametrize("kind", KINDS)
def test_reference_outputs_score_full_and_wrong_ones_do_not(kind: str, scorer_for: Make) -> None:
    rows = ROWS_BY_KIND[kind]
    analysis = analysis_for(kind)
    task = scorer_for(kind)
    right = reference_outputs(analysis, rows)
    wrong = wrong_outputs(analysis, rows)
    assert len(right) == len(wrong) == len(rows)
    for index, (row, good, bad) in enumerate(zip(rows, right, wrong, strict=True)):
        # A fresh scorer, as in the proof: score() runs without solve() or extract().
        scored = task.score(index, good, row["expected"])
        assert scored["score"] == 1.0, (row["task_id"], good, scored)
        assert "parsed" in scored or kind == "code"
        scored = task.score(index, bad, row["expected"])
        assert scored["score"] < 1.0, (row["task_id"], bad, scored)


def test_reference_outputs_read_like_model_replies() -> None:
    assert reference_outputs(analysis_for("math"), GSM8K_ROWS[:1]) == [
        "Let me work through it step by step. The answer is 18."
    ]
    assert wrong_outputs(analysis_for("math"), GSM8K_ROWS[2:3])[0].endswith("The answer is -93.")
    assert reference_outputs(analysis_for("multiple_choice"), MMLU_ROWS[:1]) == ["Answer: B"]
    assert wrong_outputs(analysis_for("multiple_choice"), MMLU_ROWS[2:3]) == ["Answer: A"]
    assert reference_outputs(analysis_for("exact_match"), NQ_ROWS[1:2]) == ["the Chicago Cubs"]
    calls = json.loads(reference_outputs(analysis_for("function_call"), BFCL_ROWS)[3])
    assert calls == [
        {"calc_velocity": {"distance": 100.0, "time": 9.58, "unit": "m/s"}},
        {"locate_city": {"coordinates": [40.7, -74.0], "options": {"precise": True}}},
    ]
    code = reference_outputs(analysis_for("code"), HUMANEVAL_ROWS[1:])[0]
    assert code.startswith("```python\n\n\ndef truncate_number(")
    assert "    return number % 1.0\n```" in code


# -- math ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected", "parsed"),
    [
        ("She spends $1,234.00 in total. The answer is $1,234.00.", "1234", "1234"),
        ("Janet sells 9 eggs at $2 each.\n#### 18", "18", "18"),
        ("16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars", "18", "18"),
        ("The answer is: **42** apples", "42", "42"),
        ("It was - 10 degrees. So the answer is - 10.", "-10", "-10"),
        ("So the final answer is \\boxed{\\frac{3}{4}}.", "0.75", "0.75"),
        ("The answer is 3/4 of a cake.", "0.75", "0.75"),
        ("The answer is 7.50 hours.", "7.5", "7.5"),
        ("The answer is 50%.", "50", "50"),
        ("The answer is 18.\n\nQuestion: Tom has 5 apples.\nAnswer: The answer is 5.", "18", "18"),
        ("<think>Maybe the answer is 20? No.</think>\n16 - 7 = 9, 9 x 2 = 18", "18", "18"),
    ],
)
def test_math_reads_the_final_number(
    reply: str, expected: str, parsed: str, scorer_for: Make
) -> None:
    assert scorer_for("math").score(0, reply, expected) == {"score": 1.0, "parsed": parsed}


def test_math_wrong_or_missing_numbers_fail(scorer_for: Make) -> None:
    task = scorer_for("math")
    assert task.score(0, "The answer is 17.", "18") == {"score": 0.0, "parsed": "17"}
    assert task.score(0, "I cannot tell.", "18") == {"score": 0.0, "parsed": None}
    with pytest.raises(ValueError, match="not a number"):
        task.score(0, "The answer is 3.", "three")


def test_math_solve_asks_for_chain_of_thought(scorer_for: Make) -> None:
    task = scorer_for("math")
    task.chat = fake = FakeChat("5 - 3 = 2. The answer is 18.")
    output = task.solve(0, GSM8K_ROWS[0]["input"])
    assert task.score(0, output, "18")["score"] == 1.0
    request = fake.requests[0]
    assert request["temperature"] == 0 and request["max_tokens"] == 256
    assert request["stop"] == ["\nQuestion:"]
    assert "The answer is 6." in fake.prompt  # a worked example
    assert fake.prompt.endswith(
        "How much in dollars does she make every day at the farmers' market?\nAnswer:"
    )


def test_math_guidance_zero_shot_tolerance_and_max_tokens(scorer_for: Make) -> None:
    task = scorer_for("math", "Zero-shot please, max_tokens 512, tolerance 0.01")
    task.chat = fake = FakeChat("The answer is 3.333")
    task.solve(0, {"question": "10 / 3?"})
    assert "The answer is 6." not in fake.prompt
    assert fake.requests[0]["max_tokens"] == 512
    assert task.score(0, "The answer is 3.333", "10/3")["score"] == 1.0
    assert scorer_for("math").score(0, "The answer is 3.333", "10/3")["score"] == 0.0


# -- multiple choice -------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ("The correct answer is (C)", "C"),
        ("C", "C"),
        (" C. 24", "C"),
        ("**Answer: C**", "C"),
        ("answer: c) 24", "C"),
        ("Let me think. A group of order 24... so the answer is C.", "C"),
        ("I believe (C) is right.", "C"),
        ("Option C", "C"),
        ("A is tempting, but the answer is C", "C"),
        ("24", "C"),  # the text of a choice, once the choices are known
        ("<think>Is it (A)? No: the answer is B... or C.</think>\n\nAnswer: C", "C"),
    ],
)
def test_multiple_choice_reads_the_letter(reply: str, parsed: str, scorer_for: Make) -> None:
    task = scorer_for("multiple_choice")
    task.chat = FakeChat(reply)
    output = task.solve(1, MMLU_ROWS[1]["input"])
    assert task.score(1, output, "C") == {"score": 1.0, "parsed": parsed}


@pytest.mark.parametrize(
    "reply", ["A group is a set.", "I am not sure.", "Either B or C", "The answer is E"]
)
def test_multiple_choice_without_a_clear_letter_fails(reply: str, scorer_for: Make) -> None:
    task = scorer_for("multiple_choice")
    task.chat = FakeChat(reply)
    task.solve(0, MMLU_ROWS[0]["input"])
    assert task.score(0, reply, "B")["score"] == 0.0


def test_multiple_choice_accepts_an_index_as_the_reference(scorer_for: Make) -> None:
    task = scorer_for("multiple_choice")
    assert task.score(0, "Answer: B", 1)["score"] == 1.0
    assert task.score(0, "Answer: B", "1")["score"] == 1.0
    with pytest.raises(ValueError, match="names no choice"):
        task.score(0, "Answer: B", "maybe")


def test_multiple_choice_solve_shows_lettered_choices(scorer_for: Make) -> None:
    task = scorer_for("multiple_choice")
    task.chat = fake = FakeChat("B")
    task.solve(0, MMLU_ROWS[0]["input"])
    assert fake.prompt.startswith(
        "The following is a multiple choice question about abstract algebra."
    )
    assert "\nA. 0\nB. 4\nC. 2\nD. 6\n" in fake.prompt
    assert fake.prompt.endswith(
        "Reply with the letter of the correct choice (A, B, C, D) only.\nAnswer:"
    )
    assert fake.requests[0]["max_tokens"] == 64


def test_multiple_choice_guidance_chain_of_thought(scorer_for: Make) -> None:
    task = scorer_for("multiple_choice", "Let the model use chain-of-thought.")
    task.chat = fake = FakeChat("Q(sqrt 2, sqrt 3) has degree 4.\nAnswer: B")
    output = task.solve(0, MMLU_ROWS[0]["input"])
    assert 'finish with a line "Answer: X"' in fake.prompt
    assert fake.requests[0]["max_tokens"] == 512
    assert task.score(0, output, "B")["score"] == 1.0


# -- code ----------------------------------------------------------------------


def test_code_solve_then_score_runs_the_tests(scorer_for: Make) -> None:
    row = HUMANEVAL_ROWS[1]
    task = scorer_for("code")
    # A bare body, as many models reply: it is appended to the prompt.
    task.chat = fake = FakeChat("```python\n    return number - int(number)\n```")
    output = task.solve(1, row["input"])
    assert "def truncate_number(number: float) -> float:" in fake.prompt
    assert fake.requests[0]["max_tokens"] == 512
    scored = task.score(1, output, row["expected"])
    assert scored["score"] == 1.0 and scored["exit_code"] == 0

    task.chat = FakeChat("```python\ndef truncate_number(number):\n    return number\n```")
    scored = task.score(1, task.solve(1, row["input"]), row["expected"])
    assert scored["score"] == 0.0 and "AssertionError" in scored["stderr_tail"]


def test_code_guidance_timeout_stops_a_hanging_candidate(scorer_for: Make) -> None:
    row = HUMANEVAL_ROWS[1]
    task = scorer_for("code", "timeout 1 second")
    assert task.timeout_s == 1.0
    hang = "```python\ndef truncate_number(number):\n    while True:\n        pass\n```"
    scored = task.score(1, hang, row["expected"])
    assert scored["score"] == 0.0 and scored["timeout"] is True


# -- exact match ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("The Chicago Cubs.", 1.0),
        ("cubs", 1.0),
        ("Answer: **the Cubs**", 1.0),
        ("The answer is the Chicago Cubs.", 1.0),
        ("I think the final answer is: Cubs", 1.0),
        ("Chicago Cubs\n\nThey beat Cleveland in seven games.", 1.0),
        ("Chicago", 0.0),
        ("The Cleveland Indians", 0.0),
    ],
)
def test_exact_match_normalizes_like_squad(reply: str, score: float, scorer_for: Make) -> None:
    result = scorer_for("exact_match").score(1, reply, NQ_ROWS[1]["expected"])
    assert result["score"] == score
    assert 0.0 <= result["f1"] <= 1.0


def test_exact_match_solve_and_guidance(scorer_for: Make) -> None:
    task = scorer_for("exact_match")
    task.chat = fake = FakeChat("Wilhelm Conrad R\u00f6ntgen")
    output = task.solve(0, NQ_ROWS[0]["input"])
    assert fake.prompt.endswith("Question: who got the first nobel prize in physics\nAnswer:")
    assert fake.requests[0]["max_tokens"] == 64
    assert task.score(0, output, NQ_ROWS[0]["expected"])["parsed"] == "wilhelm conrad r\u00f6ntgen"

    sensitive = scorer_for("exact_match", "Answers are case-sensitive.")
    assert sensitive.score(1, "cubs", NQ_ROWS[1]["expected"])["score"] == 0.0
    assert sensitive.score(1, "Cubs", NQ_ROWS[1]["expected"])["score"] == 1.0

    contains = scorer_for("exact_match", "substring match is fine")
    long_reply = "It was won by the Chicago Cubs, their first title since 1908."
    assert contains.score(1, long_reply, NQ_ROWS[1]["expected"])["score"] == 1.0
    assert task.score(1, long_reply, NQ_ROWS[1]["expected"])["score"] == 0.0
