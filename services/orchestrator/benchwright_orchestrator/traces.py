"""A run's trace, written from its log as the log is saved.

Every Run event goes through ``RunsApplication.save``; once stored, the events of
each save come here (``RunsApplication.observe``), so no phase knows about traces
and a run saved by any path (the pipeline, a halt of a parked run) is traced alike.
Spans are written when what they cover has ended, with the times the log records:

* ``run``: from ``RunLaunched`` to ``PipelineFinished``, the root of the run's trace;
* ``phase <name>``: from ``PhaseStarted`` to ``PhaseCompleted`` or ``PhaseFailed``
  (an error status then), under the run;
* ``invoke_agent <agent>``: one per agent attempt at a trial (``AgentAttemptEnded``),
  under its task; under it, ``chat <model>`` per model turn (``AgentModelTurn``,
  starting its ``latency_ms`` before it was recorded) and ``execute_tool <name>`` per
  tool call (``AgentToolResult``), all with OpenTelemetry's ``gen_ai`` attributes;
* ``task``: one per trial of a task (``MaterializeTaskResult``), under the
  Materialize phase that ran it, ending when its result was recorded and starting
  its own ``duration_ms`` before; it carries a ``gen_ai.evaluation.result`` event
  with the score and the pass/fail label (OpenTelemetry's GenAI conventions). The
  proxy's model-call spans name it as their parent (``telemetry.task_span``).

Ids are derived from the run (``benchwright_shared.telemetry``), so the spans of a
run taken over by another copy still meet in one trace. A run launched with
``telemetry: {"traces": false}`` is not traced.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from eventsourcing.domain import DomainEventProtocol

from benchwright_orchestrator.application import to_run_event
from benchwright_orchestrator.domain import Run
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
)
from benchwright_shared.contracts.run_events import (
    MaterializeTaskResult,
    PhaseCompleted,
    PhaseFailed,
    PhaseStarted,
    PipelineFinished,
)
from benchwright_shared.run_log import LogEntry, RunEventHandlers
from benchwright_shared.telemetry import (
    Tracing,
    attempt_span,
    phase_span,
    run_span,
    run_tracing_choice,
    task_span,
)

log = logging.getLogger(__name__)

EVALUATION_EVENT = "gen_ai.evaluation.result"


@dataclass
class _Saved:
    """What a handler needs: the tracer, the run as saved, and what was remembered."""

    traces: "RunTraces"
    run: Run


_handlers: RunEventHandlers[_Saved] = RunEventHandlers()


class RunTraces:
    """Turns saved Run events into spans on ``tracing``."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing
        # (run id, phase) -> when its running invocation started, as this copy saw it.
        self.phase_starts: dict[tuple[str, str], datetime] = {}
        # (run id, index, trial, attempt) -> (its start, its agent), as this copy saw it.
        self.attempt_starts: dict[tuple[str, int, int, int], tuple[datetime, str]] = {}

    def observe(self, run: Run, events: Sequence[DomainEventProtocol[Any]]) -> None:
        """Write the spans ``events`` (just stored for ``run``) end. Never raises: a run
        does not fail for its trace."""
        traces, _ = run_tracing_choice(getattr(run, "telemetry", None))  # older runs: none
        if not traces:
            return
        saved = _Saved(self, run)
        for domain_event in events:
            try:
                _handlers.dispatch(saved, to_run_event(domain_event, check=False).model_dump())
            except Exception:
                log.exception("could not trace an event of run %s", run.run_id)


def _run_attributes(run: Run) -> dict[str, str | int | float | bool | None]:
    sut = run.sut or {}
    return {
        "benchwright.run.id": run.run_id,
        "benchwright.run.mode": run.mode,
        "benchwright.benchmark.id": run.benchmark_id,
        "benchwright.benchmark.name": run.benchmark_name,
        "benchwright.subset.id": run.subset_id,
        "benchwright.impl.id": run.impl_id,
        "gen_ai.request.model": sut.get("model"),
        "gen_ai.provider.name": sut.get("provider"),
    }


@_handlers.on(PhaseStarted)
def _phase_started(saved: _Saved, entry: LogEntry[PhaseStarted]) -> None:
    saved.traces.phase_starts[(entry.run_id, entry.data.phase)] = entry.ts


@_handlers.on(PhaseCompleted, PhaseFailed)
def _phase_ended(saved: _Saved, entry: LogEntry[PhaseCompleted | PhaseFailed]) -> None:
    data, run, ended = entry.data, saved.run, entry.ts
    remembered = saved.traces.phase_starts.pop((entry.run_id, data.phase), None)
    if remembered is not None:
        started = remembered
    elif isinstance(data, PhaseCompleted):
        started = ended - timedelta(milliseconds=data.duration_ms)
    else:
        started = ended  # started before this copy held the run, and its log says no more
    invocation = run.progress.invocations.get(data.phase, 1)
    span = saved.traces.tracing.span(
        f"phase {data.phase}",
        parent=run_span(run.run_id),
        ref=phase_span(run.run_id, data.phase, invocation),
        start=started,
        attributes={
            "benchwright.run.id": run.run_id,
            "benchwright.phase.name": data.phase,
            "benchwright.phase.invocation": invocation,
        },
    )
    if isinstance(data, PhaseFailed):
        span.fail(data.error_type, data.detail[:500])
    span.end(ended)


@_handlers.on(MaterializeTaskResult)
def _task_result(saved: _Saved, entry: LogEntry[MaterializeTaskResult]) -> None:
    data, run, ended = entry.data, saved.run, entry.ts
    started = ended - timedelta(milliseconds=data.duration_ms)
    span = saved.traces.tracing.span(
        "task",
        parent=phase_span(run.run_id, "materialize", data.invocation),
        ref=task_span(run.run_id, data.index, data.trial),
        start=started,
        attributes={
            "benchwright.run.id": run.run_id,
            "benchwright.task.id": data.task_id,
            "benchwright.task.index": data.index,
            "benchwright.task.trial": data.trial,
            "benchwright.task.outcome": data.outcome,
            "benchwright.task.score": data.score,
            "benchwright.task.calls": data.calls,
            "gen_ai.usage.input_tokens": data.prompt_tokens,
            "gen_ai.usage.output_tokens": data.completion_tokens,
        },
    )
    evaluation: dict[str, str | int | float | bool | None] = {
        "gen_ai.evaluation.name": run.benchmark_name or run.benchmark_id or "benchwright",
        "gen_ai.evaluation.score.value": data.score,
    }
    if data.outcome == "err":
        # Nothing was judged: the event says why, as the convention's error.type.
        evaluation["error.type"] = data.error_type or "_OTHER"
        span.fail(data.error_type or "_OTHER", (data.error or "")[:500] or None)
    else:
        evaluation["gen_ai.evaluation.score.label"] = data.outcome
    span.event(EVALUATION_EVENT, evaluation, at=ended)
    span.end(ended)


def _attempt_key(
    run: Run, data: AgentAttemptEnded | AgentAttemptStarted
) -> tuple[str, int, int, int]:
    return (run.run_id, data.index, data.trial, data.attempt)


def _agent_attributes(
    run: Run, data: AgentModelTurn | AgentToolResult | AgentAttemptEnded
) -> dict[str, str | int | float | bool | None]:
    return {
        "benchwright.run.id": run.run_id,
        "benchwright.task.id": data.task_id,
        "benchwright.task.index": data.index,
        "benchwright.task.trial": data.trial,
        "benchwright.agent.attempt": data.attempt,
    }


@_handlers.on(AgentAttemptStarted)
def _attempt_started(saved: _Saved, entry: LogEntry[AgentAttemptStarted]) -> None:
    key = _attempt_key(saved.run, entry.data)
    saved.traces.attempt_starts[key] = (entry.ts, entry.data.agent)


@_handlers.on(AgentModelTurn)
def _model_turn(saved: _Saved, entry: LogEntry[AgentModelTurn]) -> None:
    data, run = entry.data, saved.run
    model = (run.sut or {}).get("model")
    span = saved.traces.tracing.span(
        f"chat {model}" if model else "chat",
        parent=attempt_span(run.run_id, data.index, data.trial, data.attempt),
        kind="client",
        start=entry.ts - timedelta(milliseconds=data.latency_ms),
        attributes={
            **_agent_attributes(run, data),
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.provider.name": (run.sut or {}).get("provider"),
            "gen_ai.usage.input_tokens": data.input_tokens,
            "gen_ai.usage.output_tokens": data.output_tokens,
            "gen_ai.response.finish_reasons": [data.finish_reason] if data.finish_reason else None,
            "benchwright.agent.turn": data.turn,
            "benchwright.agent.tool_calls": len(data.tool_calls),
        },
    )
    span.end(entry.ts)


@_handlers.on(AgentToolResult)
def _tool_result(saved: _Saved, entry: LogEntry[AgentToolResult]) -> None:
    data, run = entry.data, saved.run
    span = saved.traces.tracing.span(
        f"execute_tool {data.name}",
        parent=attempt_span(run.run_id, data.index, data.trial, data.attempt),
        start=entry.ts - timedelta(milliseconds=data.duration_ms),
        attributes={
            **_agent_attributes(run, data),
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": data.name,
            "gen_ai.tool.call.id": data.call_id,
            "gen_ai.tool.type": "function",
            "benchwright.tool.exit_code": data.exit_code,
        },
    )
    if data.is_error:
        span.fail("tool_error", data.output[:500] or None)
    span.end(entry.ts)


@_handlers.on(AgentAttemptEnded)
def _attempt_ended(saved: _Saved, entry: LogEntry[AgentAttemptEnded]) -> None:
    data, run = entry.data, saved.run
    remembered = saved.traces.attempt_starts.pop(_attempt_key(run, data), None)
    started, agent = remembered or (
        entry.ts - timedelta(milliseconds=data.duration_ms),
        str((run.harness or {}).get("agent") or "agent"),
    )
    span = saved.traces.tracing.span(
        f"invoke_agent {agent}",
        parent=task_span(run.run_id, data.index, data.trial),
        ref=attempt_span(run.run_id, data.index, data.trial, data.attempt),
        start=started,
        attributes={
            **_agent_attributes(run, data),
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.usage.input_tokens": data.input_tokens,
            "gen_ai.usage.output_tokens": data.output_tokens,
            "benchwright.agent.turns": data.turns,
            "benchwright.agent.end_reason": data.reason,
        },
    )
    if data.reason in ("crashed", "model_error", "boot_failed"):
        span.fail(data.reason, (data.detail or "")[:500] or None)
    span.end(entry.ts)


@_handlers.on(PipelineFinished)
def _finished(saved: _Saved, entry: LogEntry[PipelineFinished]) -> None:
    data, run = entry.data, saved.run
    for key in [k for k in saved.traces.phase_starts if k[0] == run.run_id]:
        del saved.traces.phase_starts[key]  # a phase a halt left open
    for attempt in [k for k in saved.traces.attempt_starts if k[0] == run.run_id]:
        del saved.traces.attempt_starts[attempt]  # an attempt a halt left open
    ref = run_span(run.run_id)
    summary = data.summary or {}
    span = saved.traces.tracing.span(
        "run",
        parent=None,
        ref=ref,
        start=run.created_on,
        attributes={
            **_run_attributes(run),
            "benchwright.run.status": data.status,
            "benchwright.run.tasks": summary.get("total"),
            "benchwright.run.pass_rate": summary.get("pass_rate"),
        },
    )
    if data.status == "error":
        span.fail(data.error_type or "_OTHER", (data.detail or "")[:500] or None)
    span.end(entry.ts)
