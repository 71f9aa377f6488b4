"""A span per model call, by OpenTelemetry's GenAI conventions, under its task's span."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from benchwright_proxy.app import build
from benchwright_proxy.traces import input_messages, output_messages
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings
from benchwright_shared.telemetry import run_span, run_trace_id, task_span
from tests.proxy.conftest import ProxyEndpoint, fake_sut
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

ASK = {"model": "whatever", "messages": [{"role": "user", "content": "Say hello"}]}


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    yield receiver
    receiver.stop()


@pytest.fixture
async def traced(collector: OtlpReceiver, tmp_path: Path) -> AsyncIterator[ProxyEndpoint]:
    settings = Settings(data_dir=tmp_path, proxy_port=0, nats_url=None, database_url=None)
    service = build(settings)
    assert service.tracing is not None
    url = await service.runtime.serve_http()
    yield ProxyEndpoint(service, url)
    await service.stop()


async def bind(
    proxy: ProxyEndpoint, sut: SutRef, telemetry: dict[str, bool] | None = None
) -> tuple[str, str]:
    run_id = str(uuid.uuid4())
    _, key = await proxy.service.runtime.bind(run_id, "acct_test", sut, telemetry=telemetry)
    return run_id, key


async def exported(proxy: ProxyEndpoint, collector: OtlpReceiver) -> list[ReceivedSpan]:
    tracing = proxy.service.tracing
    assert tracing is not None
    assert await asyncio.to_thread(tracing.flush)
    return collector.received()


def test_the_span_attributes_are_the_conventions_names() -> None:
    for name in ("OPERATION_NAME", "PROVIDER_NAME", "REQUEST_MODEL", "RESPONSE_MODEL"):
        assert getattr(gen_ai, f"GEN_AI_{name}").startswith("gen_ai.")
    assert gen_ai.GEN_AI_OPERATION_NAME == "gen_ai.operation.name"
    assert gen_ai.GEN_AI_PROVIDER_NAME == "gen_ai.provider.name"
    assert gen_ai.GEN_AI_USAGE_INPUT_TOKENS == "gen_ai.usage.input_tokens"
    assert gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS == "gen_ai.usage.output_tokens"
    assert gen_ai.GEN_AI_INPUT_MESSAGES == "gen_ai.input.messages"
    assert gen_ai.GEN_AI_OUTPUT_MESSAGES == "gen_ai.output.messages"
    assert gen_ai.GEN_AI_EVALUATION_NAME == "gen_ai.evaluation.name"
    assert gen_ai.GEN_AI_EVALUATION_SCORE_VALUE == "gen_ai.evaluation.score.value"
    assert gen_ai.GEN_AI_EVALUATION_SCORE_LABEL == "gen_ai.evaluation.score.label"


def test_messages_take_the_conventions_shape() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "function": {"name": "add", "arguments": '{"a":2,"b":2}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "4"},
        ]
    }
    assert input_messages(body) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "2+2?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "add", "arguments": '{"a":2,"b":2}'}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "4"}]},
    ]
    answer = {
        "choices": [{"message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}]
    }
    assert output_messages(answer) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "4"}], "finish_reason": "stop"}
    ]


async def test_a_call_is_a_client_span_under_its_task(
    traced: ProxyEndpoint, collector: OtlpReceiver, fake_model: FakeOpenAIServer
) -> None:
    run_id, key = await bind(traced, fake_sut(fake_model))
    async with traced.client(key) as client:
        headers = {"X-Benchwright-Task": "3", "X-Benchwright-Trial": "1"}
        ok = await client.post("/v1/chat/completions", json=ASK, headers=headers)
        assert ok.status_code == 200
        adhoc = await client.post("/v1/chat/completions", json={**ASK, "temperature": 0})
        assert adhoc.status_code == 200

    spans = await exported(traced, collector)
    assert len(spans) == 2
    tasked, loose = sorted(spans, key=lambda s: "benchwright.task.index" not in s.attributes)
    assert {s.trace_id for s in spans} == {f"{run_trace_id(run_id):032x}"}
    assert tasked.parent_span_id == f"{task_span(run_id, 3, 1).span_id:016x}"
    assert loose.parent_span_id == f"{run_span(run_id).span_id:016x}"
    assert tasked.name == "chat fake" and tasked.kind == "client" and not tasked.error
    assert tasked.service == "benchwright-proxy"
    usage = ok.json()["usage"]
    assert {k: v for k, v in tasked.attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai_compatible",
        "gen_ai.request.model": "fake",
        "gen_ai.response.model": "fake",
        "gen_ai.response.id": ok.json()["id"],
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": usage["prompt_tokens"],
        "gen_ai.usage.output_tokens": usage["completion_tokens"],
    }
    assert (
        tasked.attributes["benchwright.task.index"],
        tasked.attributes["benchwright.task.trial"],
    ) == (3, 1)
    assert loose.attributes["gen_ai.request.temperature"] == 0
    assert "gen_ai.input.messages" not in tasked.attributes  # content only when asked


async def test_message_content_when_the_run_asks_and_none_when_it_opts_out(
    traced: ProxyEndpoint, collector: OtlpReceiver, fake_model: FakeOpenAIServer
) -> None:
    content_run, content_key = await bind(
        traced, fake_sut(fake_model), telemetry={"traces": True, "message_content": True}
    )
    _, dark_key = await bind(traced, fake_sut(fake_model), telemetry={"traces": False})
    for key in (content_key, dark_key):
        async with traced.client(key) as client:
            assert (await client.post("/v1/chat/completions", json=ASK)).status_code == 200

    (span,) = await exported(traced, collector)
    assert span.trace_id == f"{run_trace_id(content_run):032x}"
    assert json.loads(span.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Say hello"}]}
    ]
    (answer,) = json.loads(span.attributes["gen_ai.output.messages"])
    assert answer["role"] == "assistant" and answer["parts"][0]["type"] == "text"


async def test_a_failed_call_and_a_streamed_one(
    traced: ProxyEndpoint, collector: OtlpReceiver, streaming_model: FakeOpenAIServer
) -> None:
    streaming_model.state["failures"].append((400, {}))
    _, key = await bind(traced, fake_sut(streaming_model))
    async with traced.client(key) as client:
        refused = await client.post("/v1/chat/completions", json=ASK)
        assert refused.status_code == 400
        streamed = await client.post("/v1/chat/completions", json={**ASK, "stream": True})
        assert streamed.status_code == 200 and b"[DONE]" in streamed.content

    failed, ok = sorted(await exported(traced, collector), key=lambda s: not s.error)
    assert failed.error and failed.attributes["error.type"]
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    assert not ok.error and ok.attributes["gen_ai.response.model"] == "fake"
    assert ok.attributes["gen_ai.usage.output_tokens"] > 0


async def test_a_broken_tracer_never_fails_or_unmeters_a_call(
    traced: ProxyEndpoint, fake_model: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the tracer broke")

    assert traced.service.tracing is not None
    monkeypatch.setattr(traced.service.tracing, "span", broken)
    _, key = await bind(traced, fake_sut(fake_model))
    async with traced.client(key) as client:
        answer = await client.post("/v1/chat/completions", json=ASK)
    assert answer.status_code == 200
    (usage,) = traced.usage()
    assert usage.calls == 1 and usage.prompt_tokens == answer.json()["usage"]["prompt_tokens"]
