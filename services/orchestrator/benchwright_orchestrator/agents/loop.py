"""The platform's own agent (``agent: "benchwright"``): a tool-calling loop.

``run_agent`` sends the conversation to the model; each tool call it answers with
runs in the task's sandbox and its result goes back as a ``tool`` message (OpenAI
chat-completions format throughout). The attempt ends cleanly when the model
answers without calling a tool (``done``), or when a limit or a halt stops it.

Bounds, all checked between turns (before each model call):

* ``halted()`` is also checked before each tool call, so after a halt the attempt
  makes at most one more model call and one more tool call (each bounded by its own
  timeout) before it ends with ``halted``;
* ``max_turns``, ``max_tokens`` (input + output over the attempt) and ``cost_micros``
  are checked after the turn that crossed them, so the turn under way finishes;
* ``wall_time_s`` is checked between turns, and a shell command's timeout is cut to
  the time left, so an attempt overruns by at most one model call.

Every step is recorded through the ``Trajectory`` port before the loop goes on, in
the order of ``contracts.agent_events``. The attempt's start and end are saved at
once; a model turn is saved together with its tool results, once per turn (a turn
cut off half-way costs nothing: such an attempt is rerun from the task's initial
state).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchwright_orchestrator.agents.ports import (
    AgentModel,
    ModelRefused,
    ModelReply,
    TaskSandbox,
    Trajectory,
)
from benchwright_orchestrator.agents.tools import (
    TOOL_NAMES,
    TOOL_SCHEMAS,
    ToolCallError,
    parse_arguments,
    run_tool,
)
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolCall,
    AgentToolResult,
    AttemptEndReason,
    cap_text,
)

__all__ = [
    "AGENT_NAME",
    "SYSTEM_PROMPT",
    "AgentLimits",
    "AttemptEnd",
    "AttemptRef",
    "run_agent",
]

AGENT_NAME = "benchwright"

SYSTEM_PROMPT = (
    "You are an autonomous agent solving a task in a Linux environment. The task's "
    "files are in /app, the working directory. Use the tools to inspect and change the "
    "environment; nobody will answer questions. When the task is done, reply with a "
    "short summary and no tool call: that ends your attempt."
)


@dataclass(frozen=True, slots=True)
class AgentLimits:
    """When an attempt stops if the model has not stopped it first."""

    max_turns: int = 50
    # Input + output tokens over the attempt (None: no limit).
    max_tokens: int | None = None
    wall_time_s: float | None = None
    cost_micros: int | None = None
    # The longest tool output the model is shown (the rest is cut, and it is told so).
    tool_output_chars: int = 16_384


@dataclass(frozen=True, slots=True)
class AttemptRef:
    """Which attempt this is, as every event of it names it."""

    task_id: str
    index: int
    trial: int = 0
    attempt: int = 1
    agent: str = AGENT_NAME
    model: str | None = None


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    reason: AttemptEndReason
    turns: int
    input_tokens: int
    output_tokens: int
    cost_micros: int | None
    # The model's last text (its summary when ``done``).
    final_text: str | None = None
    detail: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _never() -> bool:
    return False


def _assistant_message(reply: ModelReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return message


def _event_call(call_id: str, name: str, raw: str) -> AgentToolCall:
    try:
        return AgentToolCall(id=call_id, name=name, arguments=parse_arguments(raw))
    except ToolCallError:
        return AgentToolCall(id=call_id, name=name, raw_arguments=raw)


def _for_model(output: str, cap: int) -> str:
    if len(output) <= cap:
        return output
    return f"{output[:cap]}\n[output cut: {len(output) - cap} more characters not shown]"


class _Attempt:
    """The running totals of one attempt (the loop's only state besides the messages)."""

    def __init__(self, ref: AttemptRef, started: float) -> None:
        self.ref = ref
        self.started = started
        self.turns = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_micros: int | None = None
        self.final_text: str | None = None

    def ids(self) -> dict[str, Any]:
        r = self.ref
        return {"task_id": r.task_id, "index": r.index, "trial": r.trial, "attempt": r.attempt}

    def add(self, reply: ModelReply) -> None:
        self.turns += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        if reply.cost_micros is not None:
            self.cost_micros = (self.cost_micros or 0) + reply.cost_micros
        self.final_text = reply.text

    def over_limit(self, limits: AgentLimits, now: float) -> AttemptEndReason | None:
        if self.turns >= limits.max_turns:
            return "max_turns"
        if limits.max_tokens is not None and (
            self.input_tokens + self.output_tokens >= limits.max_tokens
        ):
            return "max_tokens"
        if limits.cost_micros is not None and (self.cost_micros or 0) >= limits.cost_micros:
            return "cost"
        if limits.wall_time_s is not None and now - self.started >= limits.wall_time_s:
            return "wall_time"
        return None


async def run_agent(
    instruction: str,
    *,
    attempt: AttemptRef,
    model: AgentModel,
    sandbox: TaskSandbox,
    trajectory: Trajectory,
    limits: AgentLimits,
    clock: Callable[[], float] = time.monotonic,
    halted: Callable[[], bool] = _never,
    system_prompt: str = SYSTEM_PROMPT,
) -> AttemptEnd:
    """Run one attempt of the agent at ``instruction`` and say how it ended.

    Raises only for the platform's failures (the sandbox lost, the trajectory not
    recorded); the caller reruns such an attempt from the task's initial state.
    """
    state = _Attempt(attempt, clock())
    shown, cut, chars = cap_text(instruction)
    await trajectory.record(
        AgentAttemptStarted(
            **state.ids(),
            agent=attempt.agent,
            model=attempt.model,
            instruction=shown,
            instruction_truncated=cut,
            instruction_chars=chars,
            system_prompt=cap_text(system_prompt)[0],
            tools=list(TOOL_NAMES),
        )
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": instruction},
    ]

    async def end(reason: AttemptEndReason, detail: str | None = None) -> AttemptEnd:
        result = AttemptEnd(
            reason,
            state.turns,
            state.input_tokens,
            state.output_tokens,
            state.cost_micros,
            state.final_text,
            detail,
        )
        await trajectory.record(
            AgentAttemptEnded(
                **state.ids(),
                reason=reason,
                turns=state.turns,
                tokens=result.tokens,
                input_tokens=state.input_tokens,
                output_tokens=state.output_tokens,
                cost_micros=state.cost_micros,
                duration_ms=int((clock() - state.started) * 1000),
                detail=detail,
            )
        )
        return result

    while True:
        if halted():
            return await end("halted")
        over = state.over_limit(limits, clock())
        if over is not None:
            return await end(over)
        asked_at = clock()
        try:
            reply = await model.complete(messages, TOOL_SCHEMAS)
        except ModelRefused as exc:
            return await end("cost" if exc.reason == "cost" else "model_error", exc.detail)
        latency_ms = int((clock() - asked_at) * 1000)
        state.add(reply)
        text, text_cut, text_chars = cap_text(reply.text or "")
        await trajectory.record(
            AgentModelTurn(
                **state.ids(),
                turn=state.turns,
                messages_in_count=len(messages),
                text=text if reply.text is not None else None,
                text_truncated=text_cut,
                text_chars=text_chars,
                tool_calls=[_event_call(c.id, c.name, c.arguments) for c in reply.tool_calls],
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                cost_micros=reply.cost_micros,
                latency_ms=latency_ms,
                finish_reason=reply.finish_reason,
            ),
            # Saved with the turn's last tool result, or with the attempt's end.
            save=False,
        )
        messages.append(_assistant_message(reply))
        if not reply.tool_calls:
            return await end("done")
        last_call = reply.tool_calls[-1]
        for call in reply.tool_calls:
            if halted():
                return await end("halted")
            budget_s = (
                limits.wall_time_s - (clock() - state.started)
                if limits.wall_time_s is not None
                else float("inf")
            )
            outcome = await run_tool(
                sandbox, call.name, call.arguments, budget_s=max(budget_s, 1.0), clock=clock
            )
            output, output_cut, output_chars = cap_text(outcome.output)
            kept = await trajectory.keep(outcome.output) if output_cut else None
            await trajectory.record(
                AgentToolResult(
                    **state.ids(),
                    turn=state.turns,
                    call_id=call.id,
                    name=call.name,
                    exit_code=outcome.exit_code,
                    is_error=outcome.is_error,
                    output=output,
                    truncated=output_cut,
                    output_chars=output_chars,
                    output_object=kept,
                    duration_ms=outcome.duration_ms,
                ),
                save=call is last_call,
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": _for_model(outcome.output, limits.tool_output_chars),
                }
            )
