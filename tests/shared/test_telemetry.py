"""Tracing's switch, the ids every service derives alike, and spans placed by them."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchwright_shared.telemetry import (
    Tracing,
    content_capture_configured,
    phase_span,
    run_span,
    run_trace_id,
    run_tracing_choice,
    start_tracing,
    task_span,
    tracing_configured,
)
from tests.support.otlp_receiver import OtlpReceiver

RUN = "0b1c9d5e-8f4a-4c1e-9a7b-2f3e4d5c6b7a"


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    yield receiver
    receiver.stop()


def test_tracing_is_on_only_with_an_endpoint_and_not_switched_off() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert not tracing_configured(environ={})
    assert not tracing_configured(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "  "})
    assert tracing_configured(environ=endpoint)
    assert tracing_configured(environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"})
    assert not tracing_configured(False, environ=endpoint)  # BW_TRACING=false
    assert content_capture_configured(
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "True"}
    )
    assert not content_capture_configured({})


def test_a_launch_may_leave_its_run_out_or_ask_for_message_content() -> None:
    assert run_tracing_choice(None) == (True, False)
    assert run_tracing_choice({"traces": False}) == (False, False)
    assert run_tracing_choice({"message_content": True}) == (True, True)


def test_span_ids_are_functions_of_the_run_and_what_names_the_span() -> None:
    refs = [
        run_span(RUN),
        phase_span(RUN, "fetch"),
        phase_span(RUN, "fetch", 2),
        phase_span(RUN, "materialize"),
        task_span(RUN, 0, 0),
        task_span(RUN, 0, 1),
        task_span(RUN, 1, 0),
    ]
    assert len({r.span_id for r in refs}) == len(refs)
    assert {r.trace_id for r in refs} == {run_trace_id(RUN)}
    assert all(0 < r.span_id < 2**64 for r in refs) and 0 < run_trace_id(RUN) < 2**128
    assert task_span(RUN, 3, 0) == task_span(RUN, 3, 0)  # in any process
    assert run_trace_id(RUN) != run_trace_id("another run")


def _modules_after(code: str, env: dict[str, str], tmp_path: Path) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; what it printed as JSON."""
    found = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    result: dict[str, object] = json.loads(found.stdout.strip().splitlines()[-1])
    return result


SERVICES = """
import json, sys
from benchwright_shared.settings import Settings
from benchwright_orchestrator.app import build as orchestrator
from benchwright_proxy.app import build as proxy
settings = Settings(data_dir={data_dir!r}, injector_enabled=False)
built = [orchestrator(settings), proxy(settings)]
print(json.dumps({{
    "tracing": [s.tracing is not None for s in built],
    "sdk": sorted(
        m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))
    ),
}}))
"""


def test_off_the_services_build_no_tracer_and_import_no_sdk(tmp_path: Path) -> None:
    code = SERVICES.format(data_dir=str(tmp_path))
    off = _modules_after(code, {}, tmp_path)
    assert off == {"tracing": [False, False], "sdk": []}
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    switched_off = _modules_after(code, {**endpoint, "BW_TRACING": "false"}, tmp_path)
    assert switched_off == {"tracing": [False, False], "sdk": []}
    on = _modules_after(code, endpoint, tmp_path)
    assert on["tracing"] == [True, True]
    assert "opentelemetry.sdk.trace" in on["sdk"]  # type: ignore[operator]


def test_spans_take_the_derived_ids_and_parents(collector: OtlpReceiver) -> None:
    tracing = start_tracing("orchestrator")
    assert isinstance(tracing, Tracing)
    began = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    phase = tracing.span(
        "phase materialize",
        parent=run_span(RUN),
        ref=phase_span(RUN, "materialize"),
        start=began,
        attributes={"benchwright.phase.name": "materialize", "absent": None},
    )
    phase.fail("infra:sandbox_lost", "the sandbox went away")
    phase.end(began + timedelta(seconds=3))
    root = tracing.span("run", parent=None, ref=run_span(RUN), start=began)
    root.event("note", {"k": 1}, at=began + timedelta(seconds=1))
    root.end(began + timedelta(seconds=4))
    child = tracing.span("chat m", parent=task_span(RUN, 2, 0), kind="client")
    child.end()
    tracing.shutdown()

    spans = {s.name: s for s in collector.received()}
    assert set(spans) == {"phase materialize", "run", "chat m"}
    trace = f"{run_trace_id(RUN):032x}"
    assert {s.trace_id for s in spans.values()} == {trace}
    assert {s.service for s in spans.values()} == {"benchwright-orchestrator"}
    run, materialize, chat = spans["run"], spans["phase materialize"], spans["chat m"]
    assert (run.span_id, run.parent_span_id) == (f"{run_span(RUN).span_id:016x}", "")
    assert materialize.span_id == f"{phase_span(RUN, 'materialize').span_id:016x}"
    assert materialize.parent_span_id == run.span_id
    assert materialize.error and materialize.attributes == {
        "benchwright.phase.name": "materialize",
        "error.type": "infra:sandbox_lost",
    }
    assert materialize.end_ns - materialize.start_ns == 3_000_000_000
    assert [e.name for e in run.events] == ["note"] and not run.error
    assert chat.parent_span_id == f"{task_span(RUN, 2, 0).span_id:016x}"
    assert chat.kind == "client" and chat.span_id not in (run.span_id, materialize.span_id)


def test_otel_service_name_names_the_process(
    collector: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "bench-lab")
    tracing = start_tracing("proxy")
    assert tracing is not None
    tracing.span("chat m", parent=run_span(RUN), kind="client").end()
    tracing.shutdown()
    assert [s.service for s in collector.received()] == ["bench-lab"]
