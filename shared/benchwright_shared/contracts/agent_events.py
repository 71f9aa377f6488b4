"""What an agent did during one attempt at a task, as run-log events.

Every attempt of a tool-using agent writes, in order::

    AgentAttemptStarted
    (AgentModelTurn, AgentToolResult*)*    one model turn, then one result per tool call
    AgentAttemptEnded                      why it stopped
    VerifierFinished                       the verifier's reward, after the agent

Each event names its task (``task_id``, ``index``), ``trial`` and ``attempt`` (an
attempt rerun after a crash starts again from the task's initial state, so a reader
keeps the events of the highest attempt of a trial only).

The shapes follow OpenTelemetry's ``gen_ai`` conventions (``input_tokens``,
``output_tokens``, ``finish_reason``, a tool call's ``id``/``name``/``arguments``) and
map one to one onto Harbor's Agent Trajectory Interchange Format (ATIF), so an export
is a translation, not a reconstruction:

    ATIF steps 1 and 2            AgentAttemptStarted: source "system" (system_prompt),
                                  source "user" (instruction)
    ATIF step (source "agent")    AgentModelTurn: step_id = turn + 2, message = text,
                                  tool_calls[].tool_call_id/function_name/arguments =
                                  id/name/arguments,
                                  metrics.prompt_tokens/completion_tokens = input_tokens/
                                  output_tokens, metrics.cost_usd = cost_micros / 1e6
    step.observation.results[]    AgentToolResult of that turn: source_call_id = call_id,
                                  content = output
    final_metrics                 AgentAttemptEnded

(``benchwright_gateway.trajectories`` writes it: without a system prompt the steps
count from the instruction; tool results of no model turn, ``turn`` 0, are an agent
step with ``llm_call_count`` 0.)

Texts are capped at ``TEXT_CAP`` characters in the event (``truncated`` says so, the
``*_chars`` field gives the whole size); a tool's whole output is kept in the
artifacts bucket (``AgentToolResult.output_object``).
"""

from typing import Any, Literal

from pydantic import Field

from benchwright_shared.contracts.run_event_data import RunEventData

__all__ = [
    "AGENT_EVENT_TYPES",
    "TEXT_CAP",
    "AgentAttemptEnded",
    "AgentAttemptStarted",
    "AgentModelTurn",
    "AgentToolCall",
    "AgentToolResult",
    "AttemptEndReason",
    "VerifierFinished",
    "cap_text",
]

# The longest text (a model's answer, a tool's output, an instruction) an event holds.
TEXT_CAP = 8192


def cap_text(text: str, cap: int = TEXT_CAP) -> tuple[str, bool, int]:
    """``(text cut to cap characters, whether it was cut, the whole length)``."""
    if len(text) <= cap:
        return text, False, len(text)
    return text[:cap], True, len(text)


class _AttemptEvent(RunEventData):
    task_id: str
    index: int
    trial: int = 0
    # 1 for the first try of this trial; a rerun after a crash counts up.
    attempt: int = 1


class AgentAttemptStarted(_AttemptEvent):
    """An agent begins an attempt, from the task's initial state."""

    agent: str
    # The model the agent talks to (``name@provider``), when the platform knows it.
    model: str | None = None
    instruction: str = ""
    instruction_truncated: bool = False
    instruction_chars: int = 0
    # With the instruction and the turns that follow, the conversation the model saw.
    system_prompt: str = ""
    tools: list[str] = Field(default_factory=list)


class AgentToolCall(RunEventData):
    """One call the model asked for (OpenAI's ``tool_calls[]``, ATIF's ``ToolCallSchema``)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # The arguments as sent, when they were not a JSON object (the call then failed).
    raw_arguments: str | None = None


class AgentModelTurn(_AttemptEvent):
    """One model call of the attempt and what it answered."""

    # 1 for the first call.
    turn: int
    # How many messages the call sent (the conversation so far; the rest is in the log).
    messages_in_count: int
    text: str | None = None
    text_truncated: bool = False
    text_chars: int = 0
    tool_calls: list[AgentToolCall] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int | None = None
    latency_ms: int = 0
    finish_reason: str | None = None


class AgentToolResult(_AttemptEvent):
    """What one tool call returned to the model (ATIF's ``ObservationResult``)."""

    turn: int
    call_id: str
    name: str
    # The command's exit code (``shell``); None for a tool that runs no command, or a
    # command that timed out.
    exit_code: int | None = None
    # The call could not be carried out (unknown tool, bad arguments, no such file):
    # the output says why, and the model saw it.
    is_error: bool = False
    output: str = ""
    truncated: bool = False
    output_chars: int = 0
    # When ``truncated``: the object in the artifacts bucket holding the whole output
    # (as the sandbox reported it: each stream up to its exec cap), named by its digest.
    output_object: str | None = None
    duration_ms: int = 0


# ``crashed``: the platform failed mid-attempt (the sandbox lost); the trial reruns
# from its initial state as the next attempt. ``boot_failed``: a product under test
# never became ready (or exited) during its boot; the trial is an error, not a fail.
AttemptEndReason = Literal[
    "done",
    "max_turns",
    "max_tokens",
    "wall_time",
    "cost",
    "model_error",
    "halted",
    "crashed",
    "boot_failed",
]


class AgentAttemptEnded(_AttemptEvent):
    """The attempt stopped: the model stopped calling tools (``done``), or why not."""

    reason: AttemptEndReason
    turns: int
    # input_tokens + output_tokens over every turn.
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int | None = None
    duration_ms: int = 0
    detail: str | None = None


class VerifierFinished(_AttemptEvent):
    """The task's tests ran against the state the agent left; ``reward`` is the score.

    A verifier that crashed or timed out has ``error_type`` set and no reward (an
    error, not a reward of 0).
    """

    reward: float | None = None
    # ``rewards.json``'s other keys.
    metadata: dict[str, Any] = Field(default_factory=dict)
    error_type: str | None = None
    detail: str | None = None
    duration_ms: int = 0


# What the run log's vocabulary (``RUN_EVENT_TYPES``) must register. ``AgentToolCall``
# is not a log entry of its own: it travels inside ``AgentModelTurn``.
AGENT_EVENT_TYPES: tuple[type[RunEventData], ...] = (
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
    AgentAttemptEnded,
    VerifierFinished,
)
