"""Adaptive concurrency: a provider that answers 429 gets fewer calls at once, then more."""

import asyncio
import time
from typing import Any

import pytest

from benchwright_proxy.limiter import AIMDLimiter
from benchwright_proxy.providers import ProviderError
from benchwright_proxy.providers.openai_compatible import OpenAICompatibleProvider
from benchwright_shared.contracts import SutRef
from tests.proxy.conftest import ProxyEndpoint, fake_sut
from tests.support.fake_openai import FakeOpenAIServer

BODY = {"messages": [{"role": "user", "content": "hi"}]}


async def test_a_429_halves_the_limit_once_per_round() -> None:
    limiter = AIMDLimiter(8)
    permits = [await limiter.acquire() for _ in range(8)]
    for permit in permits:  # eight 429s from one round of calls: one halving
        limiter.rate_limited(permit)
        permit.release()
    assert limiter.limit == 4
    later = await limiter.acquire()
    limiter.rate_limited(later)  # a call let in after the halving: the news is fresh
    later.release()
    assert limiter.limit == 2
    for _ in range(3):
        permit = await limiter.acquire()
        limiter.rate_limited(permit)
        permit.release()
    assert limiter.limit == 1  # never below one


async def test_each_rounds_worth_of_successes_adds_one_up_to_the_ceiling() -> None:
    limiter = AIMDLimiter(4)
    limiter.rate_limited(await limiter.acquire())
    limiter.rate_limited(await limiter.acquire())
    assert limiter.limit == 1
    grown = []
    for _ in range(20):
        limiter.succeeded()
        grown.append(limiter.limit)
    # 1 success lifts 1 -> 2, 2 more 2 -> 3, 3 more 3 -> 4; the ceiling holds.
    assert grown[:6] == [2, 2, 3, 3, 3, 4] and max(grown) == 4


async def test_calls_over_the_limit_wait_their_turn_and_a_cancelled_one_leaves() -> None:
    limiter = AIMDLimiter(1)
    first = await limiter.acquire()
    order: list[str] = []

    async def call(name: str) -> None:
        permit = await limiter.acquire()
        order.append(name)
        permit.release()

    a = asyncio.create_task(call("a"))
    b = asyncio.create_task(call("b"))
    c = asyncio.create_task(call("c"))
    await asyncio.sleep(0.01)
    assert limiter.waiting == 3 and not order
    b.cancel()
    await asyncio.sleep(0)
    first.release()
    await asyncio.gather(a, c)
    assert order == ["a", "c"]
    assert limiter.in_flight == 0 and limiter.waiting == 0
    first.release()  # a second release of a permit changes nothing
    assert limiter.in_flight == 0


def _slow(prompt: str) -> str:
    time.sleep(0.05)  # threaded: calls overlap as a real server's would
    return "The answer is 42."


async def _batch(provider: OpenAICompatibleProvider, sut: SutRef, n: int) -> list[dict[str, Any]]:
    return await asyncio.gather(*(provider.chat(sut, BODY) for _ in range(n)))


async def test_a_rate_limiting_upstream_gets_fewer_calls_at_once_and_then_more() -> None:
    # Fourteen 429s: the eight calls of the first round, then the four and the two
    # let in after each halving.
    upstream = FakeOpenAIServer(
        _slow, failures=[(429, {"Retry-After": "0.05"})] * 14, threaded=True
    ).start()
    provider = OpenAICompatibleProvider(max_concurrency=8, backoff_initial_s=0.01)
    sut = SutRef(model="m", provider="vllm", api_base=upstream.base_url)
    limiter = provider.upstream(sut).limiter
    limits: list[int] = []

    async def watch() -> None:
        while True:
            limits.append(limiter.limit)
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    try:
        results = await _batch(provider, sut, 40)
        assert len(results) == 40 and all(r["choices"][0]["message"]["content"] for r in results)
        assert min(limits) == 1
        seen = upstream.state["in_flight_at_arrival"]
        assert max(seen) <= 8  # the ceiling
        # The first calls after the 429s reached the upstream one or two at a time.
        assert max(seen[14:18]) <= 2

        # It recovers: a round's worth of successes adds one, back to the ceiling.
        before = len(seen)
        await _batch(provider, sut, 64)
        assert limiter.limit == 8
        assert max(upstream.state["in_flight_at_arrival"][before:]) == 8
    finally:
        watcher.cancel()
        upstream.stop()
        await provider.close()


async def test_the_attempt_ceiling_holds_under_rate_limiting() -> None:
    upstream = FakeOpenAIServer(failures=[(429, {"Retry-After": "0"})] * 10).start()
    provider = OpenAICompatibleProvider(max_concurrency=4, max_attempts=3)
    sut = SutRef(model="m", provider="vllm", api_base=upstream.base_url)
    try:
        with pytest.raises(ProviderError) as info:
            await provider.chat(sut, BODY)
        assert info.value.status == 429 and upstream.state["calls"] == 3
        assert provider.upstream(sut).limiter.limit == 1
        assert provider.upstream(sut).limiter.in_flight == 0
    finally:
        upstream.stop()
        await provider.close()


async def test_through_the_proxy_a_429_burst_still_ends_in_answers(proxy: ProxyEndpoint) -> None:
    upstream = FakeOpenAIServer(
        _slow, failures=[(429, {"Retry-After": "0.02"})] * 6, threaded=True
    ).start()
    try:
        key = await proxy.bind(fake_sut(upstream))
        async with proxy.client(key) as client:
            responses = await asyncio.gather(
                *(client.post("/v1/chat/completions", json=BODY) for _ in range(12))
            )
        assert [r.status_code for r in responses] == [200] * 12
        [usage] = proxy.usage()
        assert usage.calls == 12 and usage.failed_calls == 0
    finally:
        upstream.stop()


async def test_the_ceiling_comes_from_the_proxys_settings(tmp_path: object) -> None:
    from benchwright_proxy.http import ProviderPool
    from benchwright_proxy.settings import ProxySettings
    from benchwright_shared.settings import Settings

    pool = ProviderPool(
        Settings(data_dir=tmp_path), ProxySettings(upstream_concurrency=3, upstream_max_attempts=2)
    )
    sut = SutRef(model="m", provider="vllm", api_base="http://127.0.0.1:9/v1")
    provider = await pool.get(sut)
    assert isinstance(provider, OpenAICompatibleProvider)
    upstream = provider.upstream(sut)
    assert upstream.limiter.ceiling == 3 and upstream.max_attempts == 2
    await pool.close()
