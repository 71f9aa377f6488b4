"""The agent's run-log event contracts: capped texts, round trips, names free to register."""

from typing import Any

import pytest

from benchwright_shared.contracts.agent_events import (
    AGENT_EVENT_TYPES,
    TEXT_CAP,
    AgentAttemptEnded,
    AgentModelTurn,
    AgentToolCall,
    VerifierFinished,
    cap_text,
)
from benchwright_shared.contracts.run_events import RUN_EVENT_TYPES, RunEventData

IDS: dict[str, Any] = {"task_id": "t-3", "index": 3, "trial": 1, "attempt": 2}


def test_cap_text_keeps_short_text_and_cuts_long_text() -> None:
    assert cap_text("abc") == ("abc", False, 3)
    text, cut, size = cap_text("x" * (TEXT_CAP + 5))
    assert (len(text), cut, size) == (TEXT_CAP, True, TEXT_CAP + 5)


def test_the_types_are_run_event_data_and_their_names_are_free() -> None:
    names = [t.__name__ for t in AGENT_EVENT_TYPES]
    assert names == [
        "AgentAttemptStarted",
        "AgentModelTurn",
        "AgentToolResult",
        "AgentAttemptEnded",
        "VerifierFinished",
    ]
    assert all(issubclass(t, RunEventData) for t in AGENT_EVENT_TYPES)
    # Registered in the run log under their own names, colliding with none.
    assert all(RUN_EVENT_TYPES.get(t.__name__) is t for t in AGENT_EVENT_TYPES)


def test_a_model_turn_round_trips_through_json() -> None:
    turn = AgentModelTurn(
        **IDS,
        turn=2,
        messages_in_count=4,
        text=None,
        tool_calls=[AgentToolCall(id="c1", name="shell", arguments={"command": "ls"})],
        input_tokens=40,
        output_tokens=20,
        cost_micros=150,
        latency_ms=12,
        finish_reason="tool_calls",
    )
    again = AgentModelTurn.model_validate_json(turn.model_dump_json())
    assert again == turn
    assert again.tool_calls[0].arguments == {"command": "ls"}


def test_an_end_reason_outside_the_vocabulary_is_refused() -> None:
    AgentAttemptEnded(**IDS, reason="wall_time", turns=3)
    with pytest.raises(ValueError, match="reason"):
        AgentAttemptEnded(**IDS, reason="bored", turns=3)  # type: ignore[arg-type]


def test_a_verifier_error_has_no_reward() -> None:
    crashed = VerifierFinished(**IDS, error_type="verifier_timeout", duration_ms=600_000)
    assert crashed.reward is None and crashed.metadata == {}
    passed = VerifierFinished(**IDS, reward=1.0, metadata={"tests_passed": 4})
    assert passed.error_type is None
