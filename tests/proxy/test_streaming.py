"""Streaming through the proxy: Server-Sent Events pass on as they arrive, usage is metered."""

import asyncio
import itertools
import json
import time
from typing import Any

import httpx
import pytest

from benchwright_proxy.providers.openai_compatible import OpenAICompatibleProvider
from tests.proxy.conftest import ProxyEndpoint, fake_sut
from tests.support.fake_openai import FakeOpenAIServer, default_answer

BODY: dict[str, Any] = {
    "model": "anything",
    "messages": [{"role": "user", "content": "What is six times seven?"}],
    "stream": True,
}


def events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) for each event of an SSE body."""
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name = None
        data = []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        out.append((name, "\n".join(data)))
    return out


def chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(data) for _, data in events(text) if data != "[DONE]"]


def content(text: str) -> str:
    return "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks(text) if c["choices"]
    )


async def test_a_stream_passes_through_and_its_usage_is_metered(
    proxy: ProxyEndpoint, streaming_model: FakeOpenAIServer
) -> None:
    key = await proxy.bind(fake_sut(streaming_model))
    async with proxy.client(key) as client:
        response = await client.post("/v1/chat/completions", json=BODY)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert content(response.text) == default_answer("")
    assert events(response.text)[-1] == (None, "[DONE]")
    # The proxy asked for usage on its own behalf: the client, which did not, never sees it.
    assert all(c["choices"] for c in chunks(response.text))
    [usage] = proxy.usage()
    assert usage.calls == 1 and usage.failed_calls == 0
    assert usage.prompt_tokens == 5 and usage.completion_tokens == 7


async def test_a_client_that_asks_for_usage_gets_the_usage_chunk(
    proxy: ProxyEndpoint, streaming_model: FakeOpenAIServer
) -> None:
    key = await proxy.bind(fake_sut(streaming_model))
    body = {**BODY, "stream_options": {"include_usage": True}}
    async with proxy.client(key) as client:
        response = await client.post("/v1/chat/completions", json=body)
    last = chunks(response.text)[-1]
    assert last["choices"] == [] and last["usage"]["completion_tokens"] == 7
    assert proxy.usage()[0].completion_tokens == 7


async def test_the_first_chunk_reaches_the_client_before_the_upstream_finishes(
    proxy: ProxyEndpoint,
) -> None:
    # Seven words, 0.15 s apart: the upstream takes about a second to finish.
    upstream = FakeOpenAIServer(streaming=True, stream_chunk_delay_s=0.15).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        arrivals: list[tuple[float, str]] = []
        async with (
            proxy.client(key) as client,
            client.stream("POST", "/v1/chat/completions", json=BODY) as response,
        ):
            started = time.monotonic()
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    arrivals.append((time.monotonic() - started, line))
        assert response.status_code == 200
        words = [t for t, line in arrivals if '"content": "' in line and '""' not in line]
        assert len(words) == 7
        assert words[-1] >= 0.9  # the whole answer took the upstream's time...
        assert words[0] < 0.4  # ...but its first word was not held back for it
        assert all(b - a > 0.05 for a, b in itertools.pairwise(words))
    finally:
        upstream.stop()


async def test_an_upstream_that_reports_no_usage_is_counted_without_tokens(
    proxy: ProxyEndpoint,
) -> None:
    upstream = FakeOpenAIServer(streaming=True, stream_usage=False).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        async with proxy.client(key) as client:
            response = await client.post("/v1/chat/completions", json=BODY)
        assert content(response.text) == default_answer("")
        [usage] = proxy.usage()
        assert usage.calls == 1 and usage.failed_calls == 0
        assert usage.prompt_tokens == usage.completion_tokens == usage.cost_micros == 0
    finally:
        upstream.stop()


@pytest.mark.parametrize(
    ("failures", "status"),
    [([(400, {})], 400), ([(429, {"Retry-After": "0"})] * 5, 429)],
)
async def test_a_failure_before_the_first_byte_is_an_ordinary_error_response(
    proxy: ProxyEndpoint, failures: list[tuple[int, dict[str, str]]], status: int
) -> None:
    upstream = FakeOpenAIServer(failures=failures, streaming=True).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        async with proxy.client(key) as client:
            response = await client.post("/v1/chat/completions", json=BODY)
        assert response.status_code == status
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"]["type"] == "upstream_error"
        assert upstream.state["calls"] == len(failures)
        assert proxy.usage()[0].failed_calls == 1
    finally:
        upstream.stop()


async def test_a_stream_that_breaks_ends_with_an_error_event(proxy: ProxyEndpoint) -> None:
    upstream = FakeOpenAIServer(streaming=True, stream_break_after=2).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        async with proxy.client(key) as client:
            response = await client.post("/v1/chat/completions", json=BODY)
        assert response.status_code == 200
        received = events(response.text)
        assert content(response.text.rsplit("event: error", 1)[0]) == "Let me"
        name, data = received[-1]
        assert name == "error"
        error = json.loads(data)["error"]
        assert error["code"] == 502 and "RemoteProtocolError" in error["message"]
        assert (None, "[DONE]") not in received
        [usage] = proxy.usage()
        assert usage.calls == 1 and usage.failed_calls == 1
    finally:
        upstream.stop()


async def test_openais_client_reads_the_stream_and_the_error_event(proxy: ProxyEndpoint) -> None:
    openai = pytest.importorskip("openai")
    good = FakeOpenAIServer(streaming=True).start()
    broken = FakeOpenAIServer(streaming=True, stream_break_after=1).start()
    try:
        for upstream, should_fail in ((good, False), (broken, True)):
            key = await proxy.bind(fake_sut(upstream))
            client = openai.AsyncOpenAI(base_url=f"{proxy.url}/v1", api_key=key, max_retries=0)
            text = ""
            try:
                stream = await client.chat.completions.create(
                    model="m", messages=BODY["messages"], stream=True
                )
                async for chunk in stream:
                    text += chunk.choices[0].delta.content or ""
            except openai.APIError as exc:
                assert should_fail and "RemoteProtocolError" in exc.message
            else:
                assert not should_fail and text == default_answer("")
            finally:
                await client.close()
    finally:
        good.stop()
        broken.stop()


async def test_a_client_that_goes_away_closes_the_upstream_stream(proxy: ProxyEndpoint) -> None:
    upstream = FakeOpenAIServer(streaming=True, stream_chunk_delay_s=0.5).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        async with (
            proxy.client(key) as client,
            client.stream("POST", "/v1/chat/completions", json=BODY) as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break  # one chunk, then hang up
        assert upstream.state["in_flight"] == 1  # the upstream is still on word one
        for _ in range(100):
            if upstream.state["in_flight"] == 0:
                break
            await asyncio.sleep(0.02)
        # Seven words at 0.5 s would take 3.5 s; the proxy hung up on the upstream at once.
        assert upstream.state["in_flight"] == 0
        provider = await proxy.service.runtime.pool.get(fake_sut(upstream))
        assert isinstance(provider, OpenAICompatibleProvider)
        assert provider.upstream(fake_sut(upstream)).limiter.in_flight == 0  # its slot is free
        for _ in range(50):
            if usage := proxy.usage():
                break
            await asyncio.sleep(0.02)
        assert usage[0].calls == 1
    finally:
        upstream.stop()


async def test_a_stream_needs_the_runs_key(
    proxy: ProxyEndpoint, streaming_model: FakeOpenAIServer
) -> None:
    key = await proxy.bind(fake_sut(streaming_model))
    async with httpx.AsyncClient(base_url=proxy.url) as client:
        response = await client.post(
            "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}x"}
        )
    assert response.status_code == 401
    assert streaming_model.state["calls"] == 0
