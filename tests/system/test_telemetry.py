"""OpenTelemetry end to end: the embedded platform exports a run's trace to an OTLP/HTTP
collector on loopback, which decodes it. One trace per run: the run span, its phases
under it, a span per task under Materialize with its evaluation event, and the proxy's
``chat`` client spans under their tasks, with the tokens used."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from benchwright_shared.telemetry import phase_span, run_span, run_trace_id, task_span
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.system.test_authoring import TASK_IMPL, WRONG, arithmetic
from tests.system.test_leaderboards import finish

pytestmark = [pytest.mark.slow, pytest.mark.connected]

ROWS = [
    {"task_id": f"sum-{a}-{b}", "input": {"a": a, "b": b}, "expected": str(a + b)}
    for a, b in [(2, 3), (13, 29), (40, 2), (6, 1)]
]
PINNED_PHASES = {"fetch", "setup", "attach", "materialize", "report"}


@pytest.fixture
def calculator() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(arithmetic).start()
    yield server
    server.stop()


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    """The collector, named to the platform's services the standard way (before they start)."""
    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # export within 0.1 s
    for name in ("OTEL_SERVICE_NAME", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
        monkeypatch.delenv(name, raising=False)
    yield receiver
    receiver.stop()


async def started(settings: Any) -> tuple[Platform, AsyncBenchwright]:
    platform = await Platform(settings).start()
    assert platform.client is not None
    base_url = str(platform.client.base_url).rstrip("/")
    return platform, AsyncBenchwright(api_key=platform.token, base_url=base_url)


@pytest.fixture
async def traced(
    collector: OtlpReceiver, tmp_path: Path
) -> AsyncIterator[tuple[Platform, AsyncBenchwright]]:
    platform, bw = await started(platform_settings(tmp_path, None, None))
    yield platform, bw
    await bw.aclose()
    await platform.shutdown()


async def pinned_run(bw: AsyncBenchwright, calculator: FakeOpenAIServer, **launch: Any) -> str:
    bm = await bw.benchmarks.create(name="Traced Sums", category="math")
    sub = await bw.benchmarks.subsets.create(benchmark=bm.id, slug="v1", tasks=ROWS)
    impl = await bw.impls.create(subset=sub.id, label="sums", code=TASK_IMPL)
    sut = {"model": "calc", "provider": "openai_compatible", "api_base": calculator.base_url}
    run = await bw.runs.launch(benchmark=bm.id, subset=sub.id, impl=impl.id, sut=sut, **launch)
    finished = await finish(bw, run.id)
    return str(finished.id)


def of_run(spans: list[ReceivedSpan], run_id: str) -> list[ReceivedSpan]:
    trace = f"{run_trace_id(run_id):032x}"
    return [s for s in spans if s.trace_id == trace]


def complete(run_id: str) -> Any:
    """A check: the run's span, and a model call per task, have arrived."""

    def check(spans: list[ReceivedSpan]) -> bool:
        mine = of_run(spans, run_id)
        calls = [s for s in mine if s.name == "chat calc"]
        return any(s.name == "run" for s in mine) and len(calls) >= len(ROWS)

    return check


def hex_id(span_id: int) -> str:
    return f"{span_id:016x}"


async def test_a_run_is_one_trace_of_phases_tasks_and_model_calls(
    traced: tuple[Platform, AsyncBenchwright],
    collector: OtlpReceiver,
    calculator: FakeOpenAIServer,
) -> None:
    _, bw = traced
    run_id = await pinned_run(bw, calculator)
    spans = of_run(await collector.wait_for(complete(run_id)), run_id)

    (root,) = [s for s in spans if s.name == "run"]
    assert root.parent_span_id == "" and root.span_id == hex_id(run_span(run_id).span_id)
    assert root.service == "benchwright-orchestrator" and not root.error
    assert root.attributes["benchwright.run.status"] == "ok"

    phases = {
        s.attributes["benchwright.phase.name"]: s for s in spans if s.name.startswith("phase ")
    }
    assert set(phases) == PINNED_PHASES
    assert {s.parent_span_id for s in phases.values()} == {root.span_id}
    assert all(root.start_ns <= s.start_ns <= s.end_ns <= root.end_ns for s in phases.values())
    materialize = phases["materialize"]
    assert materialize.span_id == hex_id(phase_span(run_id, "materialize").span_id)

    tasks = {s.attributes["benchwright.task.index"]: s for s in spans if s.name == "task"}
    assert sorted(tasks) == list(range(len(ROWS)))
    wrong = {f"sum-{a}-{b}" for a, b in WRONG}
    for index, task in tasks.items():
        assert task.parent_span_id == materialize.span_id
        assert task.span_id == hex_id(task_span(run_id, index, 0).span_id)
        (evaluation,) = [e for e in task.events if e.name == "gen_ai.evaluation.result"]
        failed = task.attributes["benchwright.task.id"] in wrong
        assert evaluation.attributes == {
            "gen_ai.evaluation.name": "Traced Sums",
            "gen_ai.evaluation.score.value": 0.0 if failed else 1.0,
            "gen_ai.evaluation.score.label": "fail" if failed else "pass",
        }

    calls = [s for s in spans if s.name == "chat calc"]
    assert {s.parent_span_id for s in calls} == {t.span_id for t in tasks.values()}
    for call in calls:
        task = tasks[call.attributes["benchwright.task.index"]]
        assert call.parent_span_id == task.span_id
        assert call.kind == "client" and call.service == "benchwright-proxy" and not call.error
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.provider.name"] == "openai_compatible"
        assert call.attributes["gen_ai.request.model"] == "calc"
        assert call.attributes["gen_ai.response.model"] == "calc"
        assert call.attributes["gen_ai.usage.input_tokens"] > 0
        assert call.attributes["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.input.messages" not in call.attributes
    # The task's tokens, as the runtime summed the proxy's stamps, are the calls' own.
    for index, task in tasks.items():
        mine = [c for c in calls if c.attributes["benchwright.task.index"] == index]
        used = sum(c.attributes["gen_ai.usage.input_tokens"] for c in mine)
        assert task.attributes["gen_ai.usage.input_tokens"] == used


async def test_the_launch_switch_leaves_a_run_out_or_adds_its_messages(
    traced: tuple[Platform, AsyncBenchwright],
    collector: OtlpReceiver,
    calculator: FakeOpenAIServer,
) -> None:
    _, bw = traced
    dark = await pinned_run(bw, calculator, telemetry={"traces": False})
    talking = await pinned_run(bw, calculator, telemetry={"message_content": True})
    spans = await collector.wait_for(complete(talking))
    assert of_run(spans, dark) == []  # exported before the later run's, had there been any
    calls = [s for s in of_run(spans, talking) if s.name == "chat calc"]
    assert all("What is" in s.attributes["gen_ai.input.messages"] for s in calls)
    assert all("The sum is" in s.attributes["gen_ai.output.messages"] for s in calls)


async def test_switched_off_by_the_deployment_nothing_is_sent(
    collector: OtlpReceiver,
    calculator: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("BW_TRACING", "false")
    platform, bw = await started(platform_settings(tmp_path, None, None))
    try:
        await pinned_run(bw, calculator)
    finally:
        await bw.aclose()
        await platform.shutdown()  # what a tracer had batched would go out now
    assert collector.exports == 0 and collector.received() == []
