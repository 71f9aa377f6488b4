"""analyze_rows: the kind of a dataset, from the shape of sampled rows."""

import copy
from typing import Any

import pytest

from benchwright_orchestrator.driver.builtin import UnrecognizedDataset, analyze_rows
from tests.orchestrator.driver.data import (
    BFCL_ROWS,
    GSM8K_ROWS,
    HUMANEVAL_ROWS,
    MMLU_ROWS,
    NQ_ROWS,
)


def test_gsm8k_is_math() -> None:
    analysis = analyze_rows(GSM8K_ROWS)
    assert analysis.kind == "math"
    assert analysis.candidates == ["math", "exact_match"]
    assert analysis.fields == {"question": "question"}
    assert analysis.schema == {
        "expected": "string",
        "input": "object",
        "input.question": "string",
        "task_id": "string",
    }
    assert analysis.sample_size == len(GSM8K_ROWS)
    assert "expected is a number in 4/4 rows" in analysis.evidence


def test_humaneval_is_code() -> None:
    analysis = analyze_rows(HUMANEVAL_ROWS)
    assert analysis.kind == "code"
    assert analysis.candidates == ["code"]
    assert analysis.fields == {
        "prompt": "prompt",
        "entry_point": "entry_point",
        "test": "test",
        "solution": "canonical_solution",
    }
    assert analysis.schema["expected.test"] == "string"
    assert any("input.prompt holds Python source" in line for line in analysis.evidence)


def test_humaneval_with_its_tests_in_input_is_code() -> None:
    """The built-in catalog's shape (decision 0028): the test harness beside the prompt."""
    rows = copy.deepcopy(HUMANEVAL_ROWS)
    for row in rows:
        row["input"]["test"] = row["expected"].pop("test")
    analysis = analyze_rows(rows)
    assert analysis.kind == "code"
    assert analysis.fields == {
        "prompt": "prompt",
        "entry_point": "entry_point",
        "test": "test",
        "solution": "canonical_solution",
    }
    assert any(line.startswith("input.test holds test code") for line in analysis.evidence)
    # The tests define functions too, but the prompt is still the one to complete.
    for row in rows:
        row["input"]["source"] = row["input"].pop("prompt")
    assert analyze_rows(rows).fields["prompt"] == "source"


def test_mmlu_is_multiple_choice() -> None:
    analysis = analyze_rows(MMLU_ROWS)
    assert analysis.kind == "multiple_choice"
    # A letter is a short answer too, but scoring it as text would hide the choices.
    assert analysis.candidates == ["multiple_choice"]
    assert analysis.fields == {"question": "question", "subject": "subject", "choices": "choices"}
    assert analysis.schema["input.choices"] == "array<string>"
    assert analysis.schema["category"] == "string"
    assert "input.choices is a list of 4 strings in 3/3 rows" in analysis.evidence


def test_choices_named_by_index_are_multiple_choice() -> None:
    rows = [
        {"input": {"prompt": "2 + 2 =", "options": ["3", "4", "5"]}, "expected": 1},
        {"input": {"prompt": "3 + 3 =", "options": ["6", "7"]}, "expected": 0},
    ]
    analysis = analyze_rows(rows)
    assert analysis.kind == "multiple_choice"
    assert analysis.fields == {"question": "prompt", "choices": "options"}
    assert any("0-based indices" in line for line in analysis.evidence)


def test_bfcl_is_function_call() -> None:
    analysis = analyze_rows(BFCL_ROWS)
    assert analysis.kind == "function_call"
    assert analysis.fields == {"functions": "function", "messages": "question"}
    assert analysis.schema["input.question"] == "array<array<object>>"
    assert analysis.schema["expected"] == "array|array<object>"


def test_bfcl_as_the_catalog_shapes_it_is_function_call() -> None:
    """The built-in catalog's shape (decision 0028): the question as text, "functions"."""
    rows = copy.deepcopy(BFCL_ROWS)
    for row in rows:
        turns = row["input"].pop("question")
        row["input"]["question"] = turns[0][0]["content"]
        row["input"]["functions"] = row["input"].pop("function")
    analysis = analyze_rows(rows)
    assert analysis.kind == "function_call"
    assert analysis.fields == {"question": "question", "functions": "functions"}


def test_natural_questions_is_exact_match() -> None:
    analysis = analyze_rows(NQ_ROWS)
    assert analysis.kind == "exact_match"
    assert analysis.fields == {"question": "question"}
    assert analysis.schema["expected"] == "array<string>"


def test_context_and_bare_text_inputs_are_found() -> None:
    squad = [
        {"input": {"context": "Paris is the capital.", "question": "Capital?"}, "expected": "Paris"}
    ]
    assert analyze_rows(squad).fields == {"question": "question", "context": "context"}
    bare = [{"input": "What is 6 x 7?", "expected": "42"}, {"input": "And 2 + 2?", "expected": 4}]
    analysis = analyze_rows(bare)
    assert (analysis.kind, analysis.fields) == ("math", {"question": ""})
    assert analysis.schema["expected"] == "integer|string"


def test_unusual_field_names_fall_back_to_the_longest_text() -> None:
    rows = [{"input": {"id": "q1", "body": "How many legs does a spider have?"}, "expected": "8"}]
    assert analyze_rows(rows).fields == {"question": "body"}


def test_one_non_numeric_answer_makes_it_exact_match_not_math() -> None:
    rows = [{"input": {"question": f"q{i}"}, "expected": str(1900 + i)} for i in range(9)]
    rows.append({"input": {"question": "q9"}, "expected": "Paris"})
    analysis = analyze_rows(rows)
    assert analysis.kind == "exact_match"
    assert any("'Paris' (sampled row 9) is not a number" in line for line in analysis.evidence)


def test_rows_are_sampled_evenly_and_a_late_odd_row_is_seen() -> None:
    rows: list[dict[str, Any]] = [
        {"input": {"question": f"q{i}"}, "expected": str(i)} for i in range(1000)
    ]
    assert analyze_rows(rows).sample_size == 25
    rows[960]["expected"] = "not a number at all"
    assert analyze_rows(rows).kind == "exact_match"


def test_schema_marks_fields_some_rows_lack() -> None:
    rows = copy.deepcopy(MMLU_ROWS)
    del rows[1]["category"]
    assert analyze_rows(rows).schema["category"] == "string?"


def test_analysis_is_deterministic() -> None:
    assert analyze_rows(copy.deepcopy(BFCL_ROWS)) == analyze_rows(BFCL_ROWS)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "no rows"),
        ([{"input": {"question": "q"}}], 'must be an object with "input" and "expected"'),
        (
            [{"input": {"question": "q"}, "expected": {"answer": 1, "unit": "m"}}],
            "no scorer kind fits these rows (expected: object",
        ),
        (
            [{"input": {"question": "Summarise this."}, "expected": " ".join(["word"] * 60)}],
            "is not a short answer",
        ),
        ([{"input": {"image": None}, "expected": "cat"}], "no input field holds the question text"),
    ],
)
def test_unrecognizable_datasets_say_why(rows: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(UnrecognizedDataset) as raised:
        analyze_rows(rows)
    assert message in str(raised.value)
