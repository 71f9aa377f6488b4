"""The generated function-call scorer: tools sent, calls read in every form, compared BFCL-style."""

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.orchestrator.driver.conftest import FakeChat
from tests.orchestrator.driver.data import BFCL_ROWS

Make = Callable[..., Any]


def _reply_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(calls)
        ],
    }


def test_function_call_solve_sends_tools_and_reads_tool_calls(scorer_for: Make) -> None:
    row = BFCL_ROWS[3]
    task = scorer_for("function_call")
    task.chat = fake = FakeChat(
        _reply_calls(
            ("locate_city", {"coordinates": [40.7, -74], "options": {"precise": True}}),
            ("calc_velocity", {"distance": 100, "time": 9.58, "unit": "M/S"}),
        )
    )
    output = task.solve(3, row["input"])
    request = fake.requests[0]
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][1] == {
        "role": "user",
        "content": row["input"]["question"][0][0]["content"],
    }
    tools = {t["function"]["name"]: t["function"] for t in request["tools"]}
    assert all(t["type"] == "function" for t in request["tools"])
    assert tools["calc_velocity"]["parameters"] == {
        "type": "object",
        "properties": {
            "distance": {"type": "number"},
            "time": {"type": "number"},
            "unit": {"type": "string"},
        },
        "required": ["distance", "time"],
    }
    locate = tools["locate_city"]["parameters"]["properties"]
    assert locate["coordinates"] == {"type": "array", "items": {"type": "number"}}
    assert locate["options"]["type"] == "object"
    assert locate["options"]["properties"]["radius"] == {"type": "number"}
    assert locate["note"] == {}  # "any": no type at all
    assert json.loads(output) == [
        {"locate_city": {"coordinates": [40.7, -74], "options": {"precise": True}}},
        {"calc_velocity": {"distance": 100, "time": 9.58, "unit": "M/S"}},
    ]
    scored = task.score(3, output, row["expected"])
    assert scored["score"] == 1.0, scored
    assert scored["calls"] == 2 and scored["reason"] is None


def test_function_call_names_are_made_legal_for_tools_and_mapped_back(scorer_for: Make) -> None:
    row = BFCL_ROWS[1]
    task = scorer_for("function_call")
    task.chat = fake = FakeChat(_reply_calls(("math_factorial", {"number": 5})))
    output = task.solve(1, row["input"])
    assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == [
        "math_hypot",
        "math_factorial",
    ]
    assert json.loads(output) == [{"math.factorial": {"number": 5}}]
    assert task.score(1, output, row["expected"])["score"] == 1.0


@pytest.mark.parametrize(
    "content",
    [
        '[{"name": "spotify.play", "arguments": {"artist": "Maroon 5", "duration": 15}}, '
        '{"name": "spotify.play", "arguments": {"artist": "Taylor Swift", "duration": 20}}]',
        '```json\n[{"spotify.play": {"artist": "maroon 5", "duration": 15}}, '
        '{"spotify.play": {"artist": "taylor  swift", "duration": 20.0}}]\n```',
        "[spotify.play(artist='Taylor Swift', duration=20), spotify.play('Maroon 5', 15)]",
        "<think>Call [spotify.play(artist='Adele', duration=1)]? No.</think>\n"
        "[spotify.play(artist='Taylor Swift', duration=20), spotify.play('Maroon 5', 15)]",
        '<tool_call>\n{"name": "spotify.play", "arguments": {"artist": "Taylor Swift", '
        '"duration": 20}}\n</tool_call>\n<tool_call>\n{"name": "spotify_play", '
        '"arguments": {"artist": "Maroon 5", '
        '"duration": 15}}\n</tool_call>',
        'Sure! Here are the calls: [{"name": "spotify.play", "arguments": "{\\"artist\\": '
        '\\"Maroon 5\\", \\"duration\\": 15}"}, {"name": "spotify.play", "arguments": '
        '{"artist": "Taylor Swift", "duration": 20}}] Enjoy!',
    ],
)
def test_function_calls_written_as_text_are_read(content: str, scorer_for: Make) -> None:
    row = BFCL_ROWS[2]
    task = scorer_for("function_call")
    task.chat = FakeChat(content)
    output = task.solve(2, row["input"])
    scored = task.score(2, output, row["expected"])
    assert scored["score"] == 1.0, (output, scored)


def test_function_calls_compare_as_sets_and_by_value(scorer_for: Make) -> None:
    task = scorer_for("function_call")
    expected = BFCL_ROWS[2]["expected"]
    swift = {"spotify.play": {"artist": "Taylor Swift", "duration": 20}}
    maroon = {"spotify.play": {"artist": "Maroon 5", "duration": 15}}

    def score(*calls: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = task.score(2, json.dumps(list(calls)), expected)
        return result

    in_order, reversed_order = score(swift, maroon), score(maroon, swift)
    assert in_order["score"] == reversed_order["score"] == 1.0
    # The same parsed value either way, for majority voting across trials.
    assert in_order["parsed"] == reversed_order["parsed"]
    assert score(swift)["reason"] == "expected 2 calls, got 1"
    assert score(swift, maroon, swift)["reason"] == "expected 2 calls, got 3"
    # Each reference call needs its own call: the same call twice does not do.
    assert score(swift, swift)["score"] == 0.0
    wrong = score(swift, {"spotify.play": {"artist": "Maroon 5", "duration": 16}})
    assert wrong["score"] == 0.0
    assert wrong["reason"] == (
        "no call matches spotify.play: "
        "argument 'artist' is 'Taylor Swift', expected one of ['Maroon 5']"
    )


def test_bfcl_optional_arguments_and_types(scorer_for: Make) -> None:
    task = scorer_for("function_call")
    expected = BFCL_ROWS[0]["expected"]  # unit: ["units", ""]

    def score(args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = task.score(
            0, json.dumps([{"calculate_triangle_area": args}]), expected
        )
        return result

    assert score({"base": 10, "height": 5})["score"] == 1.0  # "" = may be left out
    assert score({"base": 10, "height": 5, "unit": "Units "})["score"] == 1.0
    assert score({"base": 10.0, "height": 5})["score"] == 1.0  # numbers numerically
    assert score({"base": 10, "height": 5, "unit": "cm"})["score"] == 0.0
    assert score({"base": "10", "height": 5})["score"] == 0.0  # a string is not a number
    assert (
        score({"height": 5})["reason"]
        == "no call matches calculate_triangle_area: missing argument 'base'"
    )
    assert (
        "unexpected argument 'color'" in score({"base": 10, "height": 5, "color": "red"})["reason"]
    )
    assert task.score(0, "[]", expected)["reason"] == "expected 1 calls, got 0"


def test_no_call_is_right_when_none_is_expected(scorer_for: Make) -> None:
    row = BFCL_ROWS[4]
    task = scorer_for("function_call")
    task.chat = FakeChat("Why did the penguin cross the ice? To get to the other slide.")
    output = task.solve(4, row["input"])
    assert output.startswith("Why did the penguin")  # the reply's text is kept
    assert task.score(4, output, row["expected"]) == {
        "score": 1.0,
        "parsed": "[]",
        "calls": 0,
        "reason": None,
    }


def test_function_call_guidance_order_extra_calls_and_prompt_tools(scorer_for: Make) -> None:
    expected = BFCL_ROWS[2]["expected"]
    swift = {"spotify.play": {"artist": "Taylor Swift", "duration": 20}}
    maroon = {"spotify.play": {"artist": "Maroon 5", "duration": 15}}
    ordered = scorer_for("function_call", "Calls are order-sensitive.")
    assert ordered.score(2, json.dumps([swift, maroon]), expected)["score"] == 1.0
    assert ordered.score(2, json.dumps([maroon, swift]), expected)["score"] == 0.0

    lenient = scorer_for("function_call", "Allow extra calls.")
    assert lenient.score(2, json.dumps([maroon, swift, swift]), expected)["score"] == 1.0

    strict_case = scorer_for("function_call", "case-sensitive strings")
    assert (
        strict_case.score(
            2,
            json.dumps([{"spotify.play": {"artist": "taylor swift", "duration": 20}}, maroon]),
            expected,
        )["score"]
        == 0.0
    )

    prompted = scorer_for(
        "function_call", "This model has no tools parameter: put the functions in the prompt."
    )
    prompted.chat = fake = FakeChat('[{"name": "math.factorial", "arguments": {"number": 5}}]')
    output = prompted.solve(1, BFCL_ROWS[1]["input"])
    assert "tools" not in fake.requests[0]
    system = fake.requests[0]["messages"][0]["content"]
    assert '"name": "math_factorial"' in system and "Reply with the calls only" in system
    assert prompted.score(1, output, BFCL_ROWS[1]["expected"])["score"] == 1.0
