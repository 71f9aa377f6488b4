"""An agent run's trials rebuilt from its log, and each one as Harbor's ATIF.

The agent events (``benchwright_shared.contracts.agent_events``) are read in log
order; ``TrialLogs`` keeps, for every (task, trial), the steps of its latest
attempt (a rerun after a crash starts again from the task's initial state, so an
older attempt's steps are not part of what the agent finally did) and hands a
trial back once its row (``MaterializeTaskResult``) is recorded: the verdict is
recorded before it in the same save, and a verified trial never starts another
attempt, so a trial handed back is final. Only trials under way are held, so a
reader streams a run of any size.

``atif`` writes one trial as an Agent Trajectory Interchange Format document
(``ATIF_VERSION``, the newest Harbor's ``Trajectory`` model accepts; checked in
the tests against ``harbor.models.trajectories.Trajectory``, while the gateway
itself does not need ``harbor``)::

    step 1 (system)   the system prompt, when the agent has one
    step 2 (user)     the instruction
    step (agent)      a model turn: its text, tool_calls, metrics (tokens, cost),
                      observation.results = the turn's tool results
    step (agent)      tool results with no model turn (Harbor's ``oracle`` runs
                      solve.sh as one such call): llm_call_count 0, no metrics
    final_metrics     the attempt's end (or, while it runs, the turns so far)
    extra.benchwright the run, task, trial, attempt, why it ended, the verifier's
                      verdict and the trial's outcome
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
    VerifierFinished,
)
from benchwright_shared.contracts.run_event_data import RunEventData
from benchwright_shared.contracts.run_events import MaterializeTaskResult
from benchwright_shared.run_log import LogEntry

__all__ = [
    "ATIF_VERSION",
    "TRAJECTORY_EVENTS",
    "TrialLog",
    "TrialLogs",
    "atif",
    "iso",
    "moment",
]

ATIF_VERSION = "ATIF-v1.8"
# What a reader asks the log for: the agent's steps and each trial's row.
TRAJECTORY_EVENTS = (
    "AgentAttemptStarted",
    "AgentModelTurn",
    "AgentToolResult",
    "AgentAttemptEnded",
    "VerifierFinished",
    "MaterializeTaskResult",
)
MICROS_PER_USD = 1_000_000
# The agent's version in an ATIF document: the events name the agent, not a release.
AGENT_VERSION = "unknown"

_AttemptEvent = AgentAttemptStarted | AgentModelTurn | AgentToolResult | AgentAttemptEnded


def iso(ts: Any) -> str:
    """A log entry's time as ISO 8601 text (typed entries carry a datetime)."""
    return ts.isoformat() if isinstance(ts, datetime) else str(ts)


def moment(ts: Any) -> datetime:
    """A log entry's time as a datetime (an entry off the wire carries its text)."""
    return ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts))


@dataclass
class TrialLog:
    """What one trial's latest attempt recorded, in log order."""

    task_id: str
    index: int
    trial: int
    attempt: int
    started: LogEntry[AgentAttemptStarted] | None = None
    turns: list[LogEntry[AgentModelTurn]] = field(default_factory=list)
    results: list[LogEntry[AgentToolResult]] = field(default_factory=list)
    ended: LogEntry[AgentAttemptEnded] | None = None
    verdict: LogEntry[VerifierFinished] | None = None
    row: LogEntry[MaterializeTaskResult] | None = None

    def results_of(self, turn: int) -> list[LogEntry[AgentToolResult]]:
        return [r for r in self.results if r.data.turn == turn]


@dataclass
class TrialLogs:
    """Assembles trials from log entries given in order; see the module's doc."""

    open: dict[tuple[int, int], TrialLog] = field(default_factory=dict)

    def add(self, entry: LogEntry[RunEventData]) -> TrialLog | None:
        """Take one entry; the trial it settles, if it does."""
        data = entry.data
        if isinstance(data, MaterializeTaskResult):
            settled = self.open.pop((data.index, data.trial), None)
            if settled is not None:
                settled.row = entry  # type: ignore[assignment]
            return settled
        if isinstance(data, VerifierFinished):
            log = self._current(data.index, data.trial, data.attempt)
            if log is not None:
                log.verdict = entry  # type: ignore[assignment]
            return None
        if isinstance(data, _AttemptEvent):
            self._step(entry, data)
        return None

    def rest(self) -> list[TrialLog]:
        """The trials not settled (a run under way, halted or failed), in task order."""
        return [self.open[key] for key in sorted(self.open)]

    def _current(self, index: int, trial: int, attempt: int) -> TrialLog | None:
        log = self.open.get((index, trial))
        return log if log is not None and log.attempt == attempt else None

    def _step(self, entry: LogEntry[Any], data: _AttemptEvent) -> None:
        key = (data.index, data.trial)
        log = self.open.get(key)
        if log is None or data.attempt > log.attempt:
            log = self.open[key] = TrialLog(data.task_id, data.index, data.trial, data.attempt)
        elif data.attempt < log.attempt:
            return  # a step of an attempt a rerun superseded
        if isinstance(data, AgentAttemptStarted):
            log.started = entry
        elif isinstance(data, AgentModelTurn):
            log.turns.append(entry)
        elif isinstance(data, AgentToolResult):
            log.results.append(entry)
        else:
            log.ended = entry


def atif(log: TrialLog, run_id: str) -> dict[str, Any]:
    """The trial as an ATIF ``Trajectory`` (a JSON object, ``None`` fields left out)."""
    start = log.started.data if log.started else None
    steps: list[dict[str, Any]] = []
    if start is not None:
        when = iso(log.started.ts) if log.started else None
        if start.system_prompt:
            steps.append(_step(steps, "system", start.system_prompt, timestamp=when))
        steps.append(
            _step(
                steps,
                "user",
                start.instruction,
                timestamp=when,
                extra=_cut(start.instruction_truncated, start.instruction_chars),
            )
        )
    turned = {t.data.turn for t in log.turns}
    # Tool results no model asked for (a scripted agent's commands) come first: such
    # an agent runs them before it would speak.
    for number in sorted({r.data.turn for r in log.results} - turned):
        steps.append(_dispatch(steps, log.results_of(number)))
    for turn in log.turns:
        steps.append(_agent_turn(steps, turn, log.results_of(turn.data.turn)))
    if not steps:  # an attempt whose start was lost: ATIF needs one step
        steps.append(_step(steps, "user", ""))
    document: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": f"{run_id}/{log.task_id}/trial-{log.trial}",
        "trajectory_id": f"{run_id}/{log.task_id}/trial-{log.trial}/attempt-{log.attempt}",
        "agent": _drop_none(
            {
                "name": start.agent if start else "unknown",
                "version": AGENT_VERSION,
                "model_name": start.model if start else None,
                "extra": {"tools": start.tools} if start and start.tools else None,
            }
        ),
        "steps": steps,
        "final_metrics": _final_metrics(log, len(steps)),
        "extra": {"benchwright": _about(log, run_id)},
    }
    return document


def _step(steps: list[dict[str, Any]], source: str, message: str, **fields: Any) -> dict[str, Any]:
    return _drop_none({"step_id": len(steps) + 1, "source": source, "message": message, **fields})


def _agent_turn(
    steps: list[dict[str, Any]],
    entry: LogEntry[AgentModelTurn],
    results: list[LogEntry[AgentToolResult]],
) -> dict[str, Any]:
    turn = entry.data
    calls = [
        _drop_none(
            {
                "tool_call_id": call.id,
                "function_name": call.name,
                "arguments": call.arguments,
                "extra": {"raw_arguments": call.raw_arguments} if call.raw_arguments else None,
            }
        )
        for call in turn.tool_calls
    ]
    asked = {call.id for call in turn.tool_calls}
    metrics = {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "cost_usd": _usd(turn.cost_micros),
    }
    return _step(
        steps,
        "agent",
        turn.text or "",
        timestamp=iso(entry.ts),
        tool_calls=calls or None,
        observation=_observation(r for r in results if r.data.call_id in asked),
        metrics=_drop_none(metrics),
        llm_call_count=1,
        extra=_drop_none(
            {
                "turn": turn.turn,
                "latency_ms": turn.latency_ms,
                "finish_reason": turn.finish_reason,
                "messages_in_count": turn.messages_in_count,
                **(_cut(turn.text_truncated, turn.text_chars) or {}),
            }
        ),
    )


def _dispatch(
    steps: list[dict[str, Any]], results: list[LogEntry[AgentToolResult]]
) -> dict[str, Any]:
    """Tool calls an agent made without a model (``llm_call_count`` 0)."""
    calls = [
        {"tool_call_id": r.data.call_id, "function_name": r.data.name, "arguments": {}}
        for r in results
    ]
    return _step(
        steps,
        "agent",
        "",
        timestamp=iso(results[0].ts),
        tool_calls=calls,
        observation=_observation(results),
        llm_call_count=0,
    )


def _observation(results: Iterable[LogEntry[AgentToolResult]]) -> dict[str, Any] | None:
    found = [
        {
            "source_call_id": r.data.call_id,
            "content": r.data.output,
            "extra": _drop_none(
                {
                    "name": r.data.name,
                    "exit_code": r.data.exit_code,
                    "is_error": r.data.is_error,
                    "duration_ms": r.data.duration_ms,
                    "timestamp": iso(r.ts),
                    **(_cut(r.data.truncated, r.data.output_chars) or {}),
                }
            ),
        }
        for r in results
    ]
    return {"results": found} if found else None


def _final_metrics(log: TrialLog, steps: int) -> dict[str, Any]:
    if log.ended is not None:
        end = log.ended.data
        prompt, completion, cost = end.input_tokens, end.output_tokens, end.cost_micros
    else:  # still running (or lost): what the turns so far add up to
        prompt = sum(t.data.input_tokens for t in log.turns)
        completion = sum(t.data.output_tokens for t in log.turns)
        costs = [t.data.cost_micros for t in log.turns if t.data.cost_micros is not None]
        cost = sum(costs) if costs else None
    return _drop_none(
        {
            "total_prompt_tokens": prompt,
            "total_completion_tokens": completion,
            "total_cost_usd": _usd(cost),
            "total_steps": steps,
        }
    )


def _about(log: TrialLog, run_id: str) -> dict[str, Any]:
    ended = log.ended.data if log.ended else None
    verdict = log.verdict.data if log.verdict else None
    row = log.row.data if log.row else None
    return _drop_none(
        {
            "run_id": run_id,
            "task_id": log.task_id,
            "index": log.index,
            "trial": log.trial,
            "attempt": log.attempt,
            "ended": _drop_none(
                {
                    "reason": ended.reason,
                    "turns": ended.turns,
                    "duration_ms": ended.duration_ms,
                    "detail": ended.detail,
                    "timestamp": iso(log.ended.ts) if log.ended else None,
                }
            )
            if ended
            else None,
            "verifier": verdict.model_dump(
                include={"reward", "metadata", "error_type", "detail", "duration_ms"},
                exclude_none=True,
            )
            if verdict
            else None,
            "result": row.model_dump(
                include={"outcome", "score", "error_type", "error", "invocation"},
                exclude_none=True,
            )
            if row
            else None,
        }
    )


def _cut(truncated: bool, chars: int) -> dict[str, Any] | None:
    """Marks a text the event cut (its whole length kept)."""
    return {"truncated": True, "chars": chars} if truncated else None


def _usd(micros: int | None) -> float | None:
    return micros / MICROS_PER_USD if micros is not None else None


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
