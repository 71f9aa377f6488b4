"""``AsyncBenchwright`` mirrors the sync client over the same fake gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from benchwright import AsyncBenchwright, NotFoundError, WaitTimeoutError

from .fakes import (
    RUN_ID,
    TOKEN,
    AsyncBrokenStream,
    FakeGateway,
    problem,
    run_body,
    run_events,
    sse_frames,
    sse_response,
)

RUN = f"/v1/runs/{RUN_ID}"


@pytest.fixture
async def abw(gateway: FakeGateway, sleeps: list[float]) -> AsyncIterator[AsyncBenchwright]:
    """An async client on the fake gateway whose backoff sleeps are recorded."""

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async with AsyncBenchwright(
        api_key=TOKEN, base_url="http://bw.test", http_client=gateway.async_client()
    ) as client:
        client._http.sleep = record
        yield client


async def test_launch_retries_with_the_same_key(
    abw: AsyncBenchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on(
        "POST",
        "/v1/runs",
        problem(502, "bad gateway", "upstream restarting"),
        httpx.Response(201, json=run_body()),
    )
    run = await abw.runs.launch(benchmark="GSM8K", sut={"model": "m", "provider": "local"})
    assert run.id == RUN_ID
    attempts = gateway.seen("POST", "/v1/runs")
    assert len(attempts) == 2 and len({r.headers["idempotency-key"] for r in attempts}) == 1
    assert json.loads(attempts[1].content)["sut"] == {"model": "m", "provider": "local"}
    assert len(sleeps) == 1


async def test_wait_and_timeout(abw: AsyncBenchwright, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        RUN,
        httpx.Response(200, json=run_body("running")),
        httpx.Response(200, json=run_body("ok")),
    )
    assert (await abw.runs.wait(RUN_ID, poll_interval=0.1)).status == "ok"

    gateway.on("GET", RUN, httpx.Response(200, json=run_body("running")))
    with pytest.raises(WaitTimeoutError):
        await abw.runs.wait(RUN_ID, timeout=0.0)


async def test_stream_resumes_without_duplicates(
    abw: AsyncBenchwright, gateway: FakeGateway
) -> None:
    log = run_events(total=2)
    broken = httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=AsyncBrokenStream(sse_frames(log[:5])),
    )
    gateway.on("GET", f"{RUN}/stream", broken, sse_response(log))
    events = [evt async for evt in abw.runs.stream(RUN_ID)]
    assert [e.seq for e in events] == list(range(len(log)))
    assert events[-1].data.status == "ok"
    assert gateway.seen("GET", f"{RUN}/stream")[1].headers["last-event-id"] == "4"


async def test_tasks_payload_is_awaitable(abw: AsyncBenchwright, gateway: FakeGateway) -> None:
    row = {"id": "t1_0", "task_id": "gsm8k/test/0", "index": 0, "outcome": "fail"}
    gateway.on(
        "GET",
        f"{RUN}/tasks",
        httpx.Response(200, json={"summary": {"total": 1, "failed": 1}, "data": [row]}),
    )
    gateway.on(
        "GET",
        f"{RUN}/tasks/t1_0/payload",
        httpx.Response(200, json={"id": "t1_0", "task_id": "gsm8k/test/0", "output": "42"}),
    )
    page = await abw.runs.tasks(RUN_ID, passed=False)
    assert page.summary.failed == 1
    assert (await page.payload(page.data[0].id)).output == "42"
    assert [r.task_id async for r in abw.runs.iter_tasks(RUN_ID)] == ["gsm8k/test/0"]


async def test_errors_are_typed(abw: AsyncBenchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"{RUN}/stream", problem(404, "run not found", "gone", field="run_id"))
    with pytest.raises(NotFoundError) as info:
        async for _ in abw.runs.stream(RUN_ID):
            pass
    assert info.value.field == "run_id"
