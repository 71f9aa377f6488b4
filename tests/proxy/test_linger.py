"""The proxy's linger: calls that finish after a run's key was revoked are metered apart."""

import asyncio
import threading
import uuid
from datetime import UTC, datetime

from benchwright_proxy.usage import CallRecord, UsageMeter
from benchwright_shared.contracts import DetachModel
from tests.proxy.conftest import ProxyEndpoint, fake_sut
from tests.support.fake_openai import FakeOpenAIServer

BODY = {"model": "fake", "messages": [{"role": "user", "content": "What is six times seven?"}]}


def call(run_id: str, *, linger: bool = False, cost: int = 3) -> CallRecord:
    return CallRecord(
        run_id=run_id,
        account="acct",
        model_id="openai_compatible/fake",
        provider="openai_compatible",
        prompt_tokens=10,
        completion_tokens=2,
        cost_micros=cost,
        latency_ms=5,
        ok=True,
        linger=linger,
    )


def test_lingering_calls_are_summed_in_a_window_of_their_own() -> None:
    meter = UsageMeter()
    meter.record(call("r1"))
    meter.record(call("r1"))
    meter.record(call("r1", linger=True, cost=1))
    windows = {u.source: u for u in meter.drain()}
    assert set(windows) == {"model", "proxy_linger"}
    assert (windows["model"].calls, windows["model"].cost_micros) == (2, 6)
    linger = windows["proxy_linger"]
    assert (linger.calls, linger.cost_micros, linger.prompt_tokens) == (1, 1, 10)
    assert linger.window_end <= datetime.now(UTC)
    assert meter.drain() == []


async def test_a_call_in_flight_at_detach_lingers_and_the_key_stops_at_once(
    proxy: ProxyEndpoint,
) -> None:
    release, asked = threading.Event(), threading.Event()

    def slow(prompt: str) -> str:
        asked.set()
        release.wait(10)
        return "The answer is 42."

    model = FakeOpenAIServer(slow, threaded=True).start()
    try:
        run_id = str(uuid.uuid4())
        key = await proxy.bind(fake_sut(model), run_id)
        async with proxy.client(key) as client:
            # One call before the teardown: the run's own spend.
            release.set()
            assert (await client.post("/v1/chat/completions", json=BODY)).status_code == 200
            release.clear()
            asked.clear()
            in_flight = asyncio.create_task(client.post("/v1/chat/completions", json=BODY))
            assert await asyncio.to_thread(asked.wait, 10)
            # The run is torn down while the second call waits on the upstream.
            runtime = proxy.service.runtime
            await runtime.detach(DetachModel(command_id="c1", run_id=run_id))
            refused = await client.post("/v1/chat/completions", json=BODY)
            assert refused.status_code == 401
            release.set()
            assert (await in_flight).status_code == 200
        by_source = {u.source: u for u in proxy.usage()}
        assert by_source["model"].calls == 1
        assert by_source["proxy_linger"].calls == 1
        assert by_source["proxy_linger"].run_id == run_id
        assert by_source["proxy_linger"].completion_tokens == 4

        # Attached again (a resumed run): its calls are its own spend once more.
        key = await proxy.bind(fake_sut(model), run_id)
        async with proxy.client(key) as client:
            assert (await client.post("/v1/chat/completions", json=BODY)).status_code == 200
        assert [u.source for u in proxy.usage()] == ["model"]
    finally:
        release.set()
        model.stop()


async def test_a_late_detach_of_a_replaced_key_leaves_the_resumed_run_working(
    proxy: ProxyEndpoint,
) -> None:
    # A parked run's detach and its resume's attach travel on two subjects: the detach
    # can arrive second. It names the attach it ends, so it cannot end the new one.
    model = FakeOpenAIServer(lambda prompt: "The answer is 42.").start()
    try:
        run_id, runtime = str(uuid.uuid4()), proxy.service.runtime
        sut = fake_sut(model)
        _, parked_key = await runtime.bind(run_id, "acct_test", sut, "attach-1")
        _, resumed_key = await runtime.bind(run_id, "acct_test", sut, "attach-2")
        late = DetachModel(command_id="d1", run_id=run_id, attach_command_id="attach-1")
        await runtime.detach(late)
        async with proxy.client(resumed_key) as client:
            assert (await client.post("/v1/chat/completions", json=BODY)).status_code == 200
        async with proxy.client(parked_key) as client:
            assert (await client.post("/v1/chat/completions", json=BODY)).status_code == 401
        assert [u.source for u in proxy.usage()] == ["model"]  # not lingering: attached

        # The detach of the attach in force revokes it.
        current = DetachModel(command_id="d2", run_id=run_id, attach_command_id="attach-2")
        await runtime.detach(current)
        async with proxy.client(resumed_key) as client:
            assert (await client.post("/v1/chat/completions", json=BODY)).status_code == 401
    finally:
        model.stop()
