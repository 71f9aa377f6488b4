"""A run's log, saved through the application, becomes its trace."""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.traces import EVALUATION_EVENT, RunTraces
from benchwright_shared.contracts import TaskOutcome
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolCall,
    AgentToolResult,
)
from benchwright_shared.telemetry import (
    Tracing,
    attempt_span,
    phase_span,
    run_span,
    run_trace_id,
    start_tracing,
    task_span,
)
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    yield receiver
    receiver.stop()


@pytest.fixture
def tracing(collector: OtlpReceiver) -> Tracing:
    found = start_tracing("orchestrator")
    assert found is not None
    return found


@pytest.fixture
def app(tracing: Tracing) -> RunsApplication:
    app = RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    app.observe = RunTraces(tracing).observe
    return app


def launched(app: RunsApplication, telemetry: dict[str, bool] | None = None) -> Run:
    run = Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="pinned",
        benchmark_id="bm_sums",
        benchmark_name="Sums",
        subset_id="sub_1",
        subset_slug="v1",
        impl_id="bm_sums:0123456789ab",
        sut={"model": "calc", "provider": "openai_compatible"},
        limit=None,
        metadata={},
        idempotency_key=None,
        telemetry=telemetry,
    )
    app.save(run)
    return run


def drive(app: RunsApplication, run: Run) -> None:
    """Fetch completes; Materialize records a pass, a fail and an err, then fails."""
    run.start_pipeline(["fetch", "materialize"])
    run.start_phase("fetch")
    app.save(run)
    run.complete_phase(phase="fetch", duration_ms=12)
    app.save(run)
    invocation = run.start_phase("materialize")
    app.save(run)
    outcomes = [
        TaskOutcome(index=0, task_id="t0", score=1.0, outcome="pass", duration_ms=40,
                    prompt_tokens=7, completion_tokens=3, calls=1),
        TaskOutcome(index=1, task_id="t1", score=0.0, outcome="fail", duration_ms=30),
        TaskOutcome(index=2, task_id="t2", outcome="err", error_type="scorer_error",
                    error="ZeroDivisionError"),
    ]  # fmt: skip
    run.record_results(outcomes, invocation)
    app.save(run)
    run.fail_phase(phase="materialize", error_type="infra:sandbox_lost", detail="gone",
                   stack_trace=None)  # fmt: skip
    app.save(run)
    run.finish(status="error", duration_ms=100, summary=run.summary(),
               error_type="infra:sandbox_lost", detail="gone")  # fmt: skip
    app.save(run)


def hex_id(span_id: int) -> str:
    return f"{span_id:016x}"


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    found: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def test_the_run_its_phases_and_its_tasks_are_one_trace(
    app: RunsApplication, tracing: Tracing, collector: OtlpReceiver
) -> None:
    run = launched(app)
    drive(app, run)
    tracing.shutdown()

    spans = by_name(collector.received())
    assert sorted(spans) == ["phase fetch", "phase materialize", "run", "task"]
    assert {s.trace_id for group in spans.values() for s in group} == {
        f"{run_trace_id(run.run_id):032x}"
    }
    (root,) = spans["run"]
    assert root.span_id == hex_id(run_span(run.run_id).span_id) and root.parent_span_id == ""
    assert root.error and root.attributes["error.type"] == "infra:sandbox_lost"
    assert root.attributes["benchwright.benchmark.id"] == "bm_sums"
    assert root.attributes["gen_ai.request.model"] == "calc"

    (fetch,), (materialize,) = spans["phase fetch"], spans["phase materialize"]
    assert fetch.parent_span_id == materialize.parent_span_id == root.span_id
    assert not fetch.error and fetch.start_ns < fetch.end_ns
    assert materialize.span_id == hex_id(phase_span(run.run_id, "materialize").span_id)
    assert materialize.error and materialize.attributes["error.type"] == "infra:sandbox_lost"
    assert root.start_ns <= fetch.start_ns and materialize.end_ns <= root.end_ns

    tasks = {s.attributes["benchwright.task.index"]: s for s in spans["task"]}
    assert sorted(tasks) == [0, 1, 2]
    for index, span in tasks.items():
        assert span.span_id == hex_id(task_span(run.run_id, index, 0).span_id)
        assert span.parent_span_id == materialize.span_id
    assert tasks[0].end_ns - tasks[0].start_ns == 40_000_000
    assert tasks[0].attributes["gen_ai.usage.input_tokens"] == 7

    def evaluation(span: ReceivedSpan) -> dict[str, Any]:
        (event,) = [e for e in span.events if e.name == EVALUATION_EVENT]
        return event.attributes

    assert evaluation(tasks[0]) == {
        "gen_ai.evaluation.name": "Sums",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
    }
    assert evaluation(tasks[1])["gen_ai.evaluation.score.label"] == "fail"
    assert evaluation(tasks[1])["gen_ai.evaluation.score.value"] == 0.0
    assert evaluation(tasks[2]) == {"gen_ai.evaluation.name": "Sums", "error.type": "scorer_error"}
    assert tasks[2].error and not tasks[0].error


def test_a_run_launched_without_traces_has_none(
    app: RunsApplication, tracing: Tracing, collector: OtlpReceiver
) -> None:
    drive(app, launched(app, telemetry={"traces": False}))
    traced = launched(app)
    traced.start_pipeline(["fetch"])
    traced.finish(status="ok", duration_ms=1, summary={})
    app.save(traced)
    tracing.shutdown()
    assert [(s.name, s.trace_id) for s in collector.received()] == [
        ("run", f"{run_trace_id(traced.run_id):032x}")
    ]


def test_a_failing_trace_never_fails_the_save(
    app: RunsApplication, tracing: Tracing, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the tracer broke")

    monkeypatch.setattr(tracing, "span", broken)
    run = launched(app)
    drive(app, run)
    stored = app.find_run(run.run_id)
    assert stored is not None and stored.lifecycle.status == "error"
    assert stored.version == run.version


def test_an_agents_attempt_its_turns_and_its_tool_calls_are_spans_under_the_task(
    app: RunsApplication, tracing: Tracing, collector: OtlpReceiver
) -> None:
    run = launched(app)
    run.start_pipeline(["materialize"])
    invocation = run.start_phase("materialize")
    ids = {"task_id": "fix-bug", "index": 0, "trial": 0}
    steps: list[Any] = [
        AgentAttemptStarted(**ids, attempt=1, agent="benchwright"),
        AgentAttemptEnded(**ids, attempt=1, reason="crashed", turns=0, detail="sandbox lost"),
        AgentAttemptStarted(**ids, attempt=2, agent="benchwright"),
        AgentModelTurn(
            **ids,
            attempt=2,
            turn=1,
            messages_in_count=2,
            tool_calls=[AgentToolCall(id="c1", name="shell", arguments={"command": "ls"})],
            input_tokens=30,
            output_tokens=8,
            latency_ms=250,
            finish_reason="tool_calls",
        ),
        AgentToolResult(
            **ids, attempt=2, turn=1, call_id="c1", name="shell", exit_code=2, duration_ms=15
        ),
        AgentModelTurn(**ids, attempt=2, turn=2, messages_in_count=4, text="done"),
        AgentAttemptEnded(**ids, attempt=2, reason="done", turns=2, input_tokens=30),
    ]
    for step in steps:
        run.record_agent_event(step)
        app.save(run)
    outcome = TaskOutcome(index=0, task_id="fix-bug", score=1.0, outcome="pass", duration_ms=900)
    run.record_results([outcome], invocation)
    app.save(run)
    tracing.shutdown()

    spans = by_name(collector.received())
    (task,) = spans["task"]
    attempts = {
        s.attributes["benchwright.agent.attempt"]: s for s in spans["invoke_agent benchwright"]
    }
    assert sorted(attempts) == [1, 2]
    assert attempts[1].error and attempts[1].attributes["error.type"] == "crashed"
    for number, attempt in attempts.items():
        assert attempt.parent_span_id == task.span_id
        assert attempt.span_id == hex_id(attempt_span(run.run_id, 0, 0, number).span_id)
    second = attempts[2]
    assert second.attributes["gen_ai.operation.name"] == "invoke_agent"
    turns = spans["chat calc"]
    assert [t.attributes["benchwright.agent.turn"] for t in turns] == [1, 2]
    assert all(t.parent_span_id == second.span_id and t.kind == "client" for t in turns)
    assert turns[0].end_ns - turns[0].start_ns == 250_000_000
    assert turns[0].attributes["gen_ai.usage.input_tokens"] == 30
    assert turns[0].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    (tool,) = spans["execute_tool shell"]
    assert tool.parent_span_id == second.span_id
    assert (
        tool.attributes["gen_ai.tool.call.id"] == "c1" and tool.end_ns - tool.start_ns == 15_000_000
    )
    assert not tool.error
