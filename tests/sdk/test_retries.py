"""Transient failures are retried with backoff, and launches keep their idempotency key."""

from __future__ import annotations

import json

import httpx
import pytest

from benchwright import Benchwright, InternalServerError
from benchwright._retry import RetryPolicy, parse_retry_after

from .fakes import RUN_ID, FakeGateway, problem, run_body

SUT = {"model": "qwen/qwen3-32b", "provider": "openrouter"}


def test_launch_retries_503_then_429_with_the_same_idempotency_key(
    bw: Benchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on(
        "POST",
        "/v1/runs",
        problem(503, "unavailable", "orchestrator is starting"),
        httpx.Response(429, json={"title": "slow down"}, headers={"Retry-After": "3"}),
        httpx.Response(201, json=run_body()),
    )
    run = bw.runs.launch(benchmark="GSM8K", sut=SUT, metadata={"limit": 5})
    assert run.id == RUN_ID
    attempts = gateway.seen("POST", "/v1/runs")
    keys = {r.headers["idempotency-key"] for r in attempts}
    assert len(attempts) == 3 and len(keys) == 1
    assert {r.content for r in attempts} == {attempts[0].content}
    assert json.loads(attempts[0].content) == {
        "benchmark": "GSM8K",
        "sut": SUT,
        "metadata": {"limit": 5},
    }
    # The first delay is exponential backoff; the second obeys Retry-After exactly.
    assert 0 < sleeps[0] <= 0.5 and sleeps[1] == 3.0


def test_caller_supplied_idempotency_key_is_sent(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/runs", httpx.Response(200, json=run_body()))
    bw.runs.launch(benchmark="GSM8K", sut=SUT, idempotency_key="gha-42")
    assert gateway.seen("POST", "/v1/runs")[0].headers["idempotency-key"] == "gha-42"


def test_each_launch_gets_a_fresh_key(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/runs", httpx.Response(201, json=run_body()))
    bw.runs.launch(benchmark="GSM8K", sut=SUT)
    bw.runs.launch(benchmark="GSM8K", sut=SUT)
    first, second = (r.headers["idempotency-key"] for r in gateway.seen("POST", "/v1/runs"))
    assert first != second


def test_gives_up_after_max_retries(
    bw: Benchwright, gateway: FakeGateway, sleeps: list[float]
) -> None:
    gateway.on("GET", f"/v1/runs/{RUN_ID}", problem(500, "boom", "database unavailable"))
    with pytest.raises(InternalServerError, match="boom: database unavailable"):
        bw.runs.get(RUN_ID)
    assert len(gateway.seen("GET", f"/v1/runs/{RUN_ID}")) == 3
    assert len(sleeps) == 2


def test_post_without_a_key_is_not_retried_on_5xx(sleeps: list[float]) -> None:
    gateway = FakeGateway()
    gateway.on("POST", "/v1/things", problem(503, "unavailable", "try later"))
    bw = Benchwright(
        api_key="bw_live_pat_x", base_url="http://bw.test", http_client=gateway.client()
    )
    bw._http.sleep = sleeps.append
    with pytest.raises(InternalServerError):
        bw._http.request("POST", "/v1/things", json={})
    assert len(gateway.requests) == 1 and sleeps == []


def test_read_timeout_on_a_get_is_retried(bw: Benchwright, sleeps: list[float]) -> None:
    calls = 0

    def flaky(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(200, json=run_body("ok"))

    bw._http._client = httpx.Client(transport=httpx.MockTransport(flaky))
    assert bw.runs.get(RUN_ID).status == "ok"
    assert calls == 2 and len(sleeps) == 1


def test_not_implemented_is_not_retried(bw: Benchwright, gateway: FakeGateway) -> None:
    gateway.on("GET", f"/v1/runs/{RUN_ID}", problem(501, "not implemented", "later"))
    with pytest.raises(InternalServerError):
        bw.runs.get(RUN_ID)
    assert len(gateway.requests) == 1


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=4.0)
    for attempt, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 4.0)]:
        assert ceiling / 2 <= policy.delay(attempt) <= ceiling


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None
    huge = httpx.Response(429, headers={"Retry-After": "3600"})
    assert RetryPolicy().delay(0, huge) == 60.0
