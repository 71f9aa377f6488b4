"""An agent run's exports from its recorded events: ``format=atif`` (checked against
Harbor's own ``Trajectory`` model) and the conversations an ``inspect`` export
carries (read back with Inspect's own reader).

The log below is one run: ``fix-median`` trial 0 crashed in its first attempt and
solved the task in its second (two tool calls, then a final answer); its trial 1 is
under way; ``write-greeting`` ran Harbor's oracle (one scripted ``solve`` call, no
model); ``csv-top-region`` errored before any attempt (no trajectory to tell).
"""

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from harbor.models.trajectories import Trajectory

from benchwright_gateway.api import agent_logs
from benchwright_gateway.inspect_log import SampleSource, write_eval_log
from benchwright_gateway.trajectories import ATIF_VERSION, TrialLog, TrialLogs, atif
from benchwright_shared.contracts import RunEventsPage
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolCall,
    AgentToolResult,
    VerifierFinished,
)
from benchwright_shared.contracts.run_event_data import RunEventData
from benchwright_shared.contracts.run_events import MaterializeTaskResult, RunEvent
from benchwright_shared.refusal import Refused
from benchwright_shared.run_log import LogEntry, parse_run_event

RUN = "33333333-3333-3333-3333-333333333333"
T0 = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)
SYSTEM = "You are an agent in a sandbox. Use the tools."
INSTRUCTION = "Fix median(values) in /app/stats.py."
MEDIAN = {"task_id": "fix-median", "index": 1}
GREETING = {"task_id": "write-greeting", "index": 4}
READ = AgentToolCall(id="call-1", name="read_file", arguments={"path": "stats.py"})
TEST = AgentToolCall(id="call-2", name="shell", arguments={"command": "python3 -m pytest"})


def recorded() -> list[RunEvent]:
    data: list[RunEventData] = [
        # fix-median trial 0, attempt 1: lost with the sandbox after one turn.
        AgentAttemptStarted(**MEDIAN, agent="benchwright", model="scripted@openai_compatible"),
        AgentModelTurn(**MEDIAN, turn=1, messages_in_count=2, tool_calls=[READ]),
        AgentAttemptEnded(**MEDIAN, reason="crashed", turns=1, detail="sandbox lost"),
        # Attempt 2, from the task's initial state: what the export tells.
        AgentAttemptStarted(
            **MEDIAN,
            attempt=2,
            agent="benchwright",
            model="scripted@openai_compatible",
            instruction=INSTRUCTION,
            instruction_chars=len(INSTRUCTION),
            system_prompt=SYSTEM,
            tools=["shell", "read_file", "write_file", "edit_file"],
        ),
        AgentModelTurn(
            **MEDIAN,
            attempt=2,
            turn=1,
            messages_in_count=2,
            text="Let me look first.",
            text_chars=18,
            tool_calls=[READ, TEST],
            input_tokens=120,
            output_tokens=30,
            cost_micros=1500,
            latency_ms=40,
            finish_reason="tool_calls",
        ),
        # fix-median trial 1 starts meanwhile, and is still under way at the end.
        AgentAttemptStarted(
            **MEDIAN, trial=1, agent="benchwright", instruction=INSTRUCTION, system_prompt=SYSTEM
        ),
        AgentToolResult(
            **MEDIAN, attempt=2, turn=1, call_id="call-1", name="read_file", output="def median"
        ),
        AgentToolResult(
            **MEDIAN,
            attempt=2,
            turn=1,
            call_id="call-2",
            name="shell",
            exit_code=1,
            is_error=True,
            output="1 failed",
            truncated=True,
            output_chars=20_000,
            duration_ms=900,
        ),
        AgentModelTurn(
            **MEDIAN,
            trial=1,
            turn=1,
            messages_in_count=2,
            text="thinking",
            input_tokens=100,
            output_tokens=5,
        ),
        AgentModelTurn(
            **MEDIAN,
            attempt=2,
            turn=2,
            messages_in_count=5,
            text="median fixed",
            input_tokens=200,
            output_tokens=10,
            cost_micros=2500,
            finish_reason="stop",
        ),
        AgentAttemptEnded(
            **MEDIAN,
            attempt=2,
            reason="done",
            turns=2,
            tokens=360,
            input_tokens=320,
            output_tokens=40,
            cost_micros=4000,
            duration_ms=5000,
        ),
        VerifierFinished(**MEDIAN, attempt=2, reward=1.0, duration_ms=300),
        MaterializeTaskResult(**MEDIAN, score=1.0, outcome="pass"),
        # write-greeting: Harbor's oracle runs solve.sh, no model.
        AgentAttemptStarted(**GREETING, agent="oracle", instruction="Write a greeting."),
        AgentToolResult(
            **GREETING, turn=0, call_id="solve", name="shell", exit_code=0, output="ok"
        ),
        AgentAttemptEnded(**GREETING, reason="done", turns=0, duration_ms=20),
        VerifierFinished(**GREETING, reward=1.0),
        MaterializeTaskResult(**GREETING, score=1.0, outcome="pass"),
        # csv-top-region errored before any attempt.
        MaterializeTaskResult(
            task_id="csv-top-region", index=0, outcome="err", error_type="environment"
        ),
    ]
    return [
        RunEvent(
            run_id=RUN,
            seq=seq,
            type=type(d).__name__,
            ts=T0 + timedelta(seconds=seq),
            data=d.model_dump(mode="json"),
        )
        for seq, d in enumerate(data, start=1)
    ]


def assembled() -> tuple[list[TrialLog], list[TrialLog]]:
    """(trials settled in log order, those left open at its end)."""
    logs = TrialLogs()
    settled = []
    for event in recorded():
        entry: LogEntry[RunEventData] | None = parse_run_event(event)
        assert entry is not None
        done = logs.add(entry)
        if done is not None:
            settled.append(done)
    return settled, logs.rest()


def test_each_trial_keeps_its_latest_attempt_and_settles_with_its_row() -> None:
    settled, running = assembled()
    assert [(t.task_id, t.trial, t.attempt) for t in settled] == [
        ("fix-median", 0, 2),
        ("write-greeting", 0, 1),
    ]
    median = settled[0]
    assert [t.data.turn for t in median.turns] == [1, 2]
    assert [r.data.call_id for r in median.results] == ["call-1", "call-2"]
    assert median.row is not None and median.row.data.outcome == "pass"
    assert median.verdict is not None and median.verdict.data.reward == 1.0
    assert [(t.task_id, t.trial, len(t.turns), t.ended) for t in running] == [
        ("fix-median", 1, 1, None)
    ]


def test_a_trial_is_an_atif_trajectory_harbor_accepts() -> None:
    (median, oracle), (running,) = assembled()
    document = atif(median, RUN)
    trajectory = Trajectory.model_validate(document)
    # Nothing is lost or added on the way through Harbor's model.
    assert trajectory.to_json_dict() == document
    assert (
        trajectory.schema_version
        == ATIF_VERSION
        == Trajectory.model_fields["schema_version"].default
    )
    assert trajectory.agent.name == "benchwright"
    assert trajectory.agent.model_name == "scripted@openai_compatible"
    steps = trajectory.steps
    assert [(s.step_id, s.source) for s in steps] == [
        (1, "system"),
        (2, "user"),
        (3, "agent"),
        (4, "agent"),
    ]
    assert steps[0].message == SYSTEM and steps[1].message == INSTRUCTION
    first, last = steps[2], steps[3]
    assert first.message == "Let me look first."
    assert first.tool_calls is not None
    assert [(c.tool_call_id, c.function_name, c.arguments) for c in first.tool_calls] == [
        ("call-1", "read_file", {"path": "stats.py"}),
        ("call-2", "shell", {"command": "python3 -m pytest"}),
    ]
    assert first.observation is not None
    results = first.observation.results
    assert [(r.source_call_id, r.content) for r in results] == [
        ("call-1", "def median"),
        ("call-2", "1 failed"),
    ]
    assert results[1].extra == {
        "name": "shell",
        "exit_code": 1,
        "is_error": True,
        "duration_ms": 900,
        "timestamp": (T0 + timedelta(seconds=8)).isoformat(),
        "truncated": True,
        "chars": 20_000,
    }
    assert first.metrics is not None
    assert (first.metrics.prompt_tokens, first.metrics.completion_tokens) == (120, 30)
    assert first.metrics.cost_usd == pytest.approx(0.0015)
    assert last.message == "median fixed" and last.tool_calls is None
    assert last.observation is None
    final = trajectory.final_metrics
    assert final is not None
    assert (final.total_prompt_tokens, final.total_completion_tokens) == (320, 40)
    assert final.total_cost_usd == pytest.approx(0.004) and final.total_steps == 4
    about = (trajectory.extra or {})["benchwright"]
    assert about["attempt"] == 2 and about["ended"]["reason"] == "done"
    assert about["verifier"]["reward"] == 1.0 and about["result"]["outcome"] == "pass"

    # The oracle's solve.sh: an agent step with no model call.
    scripted = Trajectory.model_validate(atif(oracle, RUN))
    assert scripted.agent.name == "oracle"
    (_, dispatch) = scripted.steps
    assert dispatch.llm_call_count == 0 and dispatch.metrics is None
    assert dispatch.tool_calls is not None and dispatch.tool_calls[0].tool_call_id == "solve"

    # A trial under way: its steps so far, the turns so far in its metrics, no end.
    partial = Trajectory.model_validate(atif(running, RUN))
    assert [s.source for s in partial.steps] == ["system", "user", "agent"]
    assert partial.final_metrics is not None
    assert partial.final_metrics.total_prompt_tokens == 100
    assert "ended" not in (partial.extra or {})["benchwright"]


class _PagedLog:
    """Answers ``GetRunEvents`` from the recorded log, two entries a page."""

    def __init__(self, events: list[RunEvent]) -> None:
        self.events = events
        self.asked: list[Any] = []

    async def __call__(self, bus: Any, query: Any, answer: Any, timeout: float) -> RunEventsPage:
        self.asked.append(query)
        wanted = [
            e
            for e in self.events
            if e.seq > (query.after_seq or 0) and (query.types is None or e.type in query.types)
        ]
        size = min(query.limit, 2)
        return RunEventsPage(events=wanted[:size], has_more=len(wanted) > size)


class _Context:
    def bus(self) -> None:
        return None


async def test_the_atif_export_reads_the_log_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    log = _PagedLog(recorded())
    monkeypatch.setattr(agent_logs, "ask", log)
    lines = [
        line
        async for chunk in agent_logs.atif_lines(
            agent_logs.trial_logs(_Context(), RUN),  # type: ignore[arg-type]
            RUN,
        )
        for line in chunk.decode().splitlines()
    ]
    trajectories = [Trajectory.model_validate_json(line) for line in lines]
    assert [t.trajectory_id for t in trajectories] == [
        f"{RUN}/fix-median/trial-0/attempt-2",
        f"{RUN}/write-greeting/trial-0/attempt-1",
        f"{RUN}/fix-median/trial-1/attempt-1",
    ]
    assert len(log.asked) > 5  # paged, not read in one piece


async def test_a_run_no_agent_ran_is_refused_naming_the_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agent_logs, "ask", _PagedLog([]))
    run = {"id": RUN, "metadata": {}}
    with pytest.raises(Refused) as refused:
        await agent_logs.require_agent_run(_Context(), run)  # type: ignore[arg-type]
    assert refused.value.status == 400 and refused.value.field == "format"
    # A run launched as an agent run is one before its first attempt...
    await agent_logs.require_agent_run(_Context(), {"id": RUN, "metadata": {"harbor_harness": {}}})  # type: ignore[arg-type]
    # ...and so is any run whose log holds an attempt.
    monkeypatch.setattr(agent_logs, "ask", _PagedLog(recorded()))
    await agent_logs.require_agent_run(_Context(), run)  # type: ignore[arg-type]


def _source(log: TrialLog) -> SampleSource:
    return SampleSource(
        task_id=log.task_id,
        index=log.index,
        trial=log.trial,
        outcome="pass",
        score=1.0,
        output="median fixed",
        error_type=None,
        error=None,
        duration_ms=5000,
        score_meta={},
        cost=None,
        input=None,
        expected=None,
        conversation=log,
    )


async def _pages(sources: list[SampleSource]) -> AsyncIterator[list[SampleSource]]:
    yield sources


def test_an_inspect_sample_carries_the_agents_conversation(tmp_path: Path) -> None:
    (median, oracle), _ = assembled()
    run = {
        "id": RUN,
        "status": "ok",
        "created_at": T0.isoformat(),
        "model": {"provider": "openai_compatible", "model": "scripted"},
        "benchmark": {"name": "harbor:benchwright-starter"},
        "subset": {},
        "summary": {"total": 2, "passed": 2, "failed": 0, "pass_rate": 1.0},
    }

    async def written() -> bytes:
        pages = _pages([_source(median), _source(oracle)])
        return b"".join([chunk async for chunk in write_eval_log(run, pages)])

    path = tmp_path / "agent.eval"
    path.write_bytes(asyncio.run(written()))
    from inspect_ai.log import read_eval_log

    samples = {str(s.id): s for s in read_eval_log(str(path)).samples or []}
    sample = samples["fix-median"]
    assert sample.input == INSTRUCTION
    assert [m.role for m in sample.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    reply = sample.messages[2]
    assert reply.role == "assistant" and reply.tool_calls is not None
    assert [(c.id, c.function, c.arguments) for c in reply.tool_calls] == [
        ("call-1", "read_file", {"path": "stats.py"}),
        ("call-2", "shell", {"command": "python3 -m pytest"}),
    ]
    failed = sample.messages[4]
    assert failed.role == "tool" and failed.tool_call_id == "call-2"
    assert failed.error is not None and failed.text == "1 failed"
    assert sample.messages[5].text == "median fixed"
    kinds = [e.event for e in sample.events]
    assert kinds == ["model", "tool", "tool", "model"]
    first_call = sample.events[0]
    assert first_call.event == "model"
    # The model saw the system prompt and the instruction; it answered with the calls.
    assert [m.role for m in first_call.input] == ["system", "user"]
    assert first_call.output.usage is not None and first_call.output.usage.input_tokens == 120
    second_call = sample.events[3]
    assert second_call.event == "model" and len(second_call.input) == 5
    # The oracle's solve.sh is a tool event with no model call.
    scripted = samples["write-greeting"]
    assert [e.event for e in scripted.events] == ["tool"]
    assert [m.role for m in scripted.messages] == ["user"]
