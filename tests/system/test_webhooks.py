"""Webhooks end to end: real runs on the embedded platform, a real endpoint on loopback,
verified with the SDK's ``construct_event``."""

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from benchwright.resources.webhooks import construct_event
from tests.conftest import (
    Platform,
    machine_database_url,
    machine_nats_url,
    platform_settings,
    reset_nats,
    reset_postgres,
)
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.slow, pytest.mark.connected]


@pytest.fixture(params=["embedded", "machine"])
async def platform(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Platform]:
    """The platform as tests/system/conftest.py starts it, with webhooks allowed to
    reach loopback and retrying fast."""
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "true")
    monkeypatch.setenv("BW_WEBHOOKS_BACKOFF_INITIAL_S", "0.3")
    if request.param == "machine":
        nats_url, db_url = machine_nats_url(), machine_database_url()
        if not (nats_url and db_url):
            pytest.skip("set BW_TEST_NATS_URL and BW_TEST_DATABASE_URL to run against them")
        await reset_nats(nats_url)
        reset_postgres(db_url)
        settings = platform_settings(tmp_path, nats_url, db_url)
    else:
        settings = platform_settings(tmp_path, None, None)
    running = await Platform(settings).start()
    yield running
    await running.shutdown()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


def sdk(platform: Platform) -> AsyncBenchwright:
    assert platform.client
    return AsyncBenchwright(api_key=platform.token, base_url=str(platform.client.base_url))


def pinned(model: FakeOpenAIServer, limit: int = 2) -> dict[str, Any]:
    return {
        "benchmark": "GSM8K",
        "sut": {"model": "fake", "provider": "openai_compatible", "api_base": model.base_url},
        "metadata": {"limit": limit, "pr": 7, "commit_sha": "c0ffee"},
    }


async def launch(platform: Platform, body: dict[str, Any]) -> dict[str, Any]:
    assert platform.client
    response = await platform.client.post("/v1/runs", json=body)
    assert response.status_code == 201, response.text
    return await platform.wait_terminal(response.json()["id"])


async def test_a_run_reaches_its_webhook_signed_and_retried(
    platform: Platform, receiver: WebhookReceiver, fake_model: FakeOpenAIServer
) -> None:
    async with sdk(platform) as bw:
        hook = await bw.webhooks.create(
            receiver.url, ["run.finished", "run.failed"], description="PR gate"
        )
        secret = hook.signing_secret
        assert secret and secret.startswith("whsec_")
        assert (await bw.webhooks.get(hook.id)).signing_secret is None

        # A run to completion: exactly one run.finished, signed, with the run as shown.
        done = await launch(platform, pinned(fake_model))
        assert done["status"] == "ok", done["error"]
        [got] = await receiver.wait_for(1, event="run.finished")
        event = bw.webhooks.construct_event(
            got.body, got.headers["x-benchwright-signature"], secret
        )
        assert event.type == "run.finished" and event.test is False
        run = event.data
        assert run["id"] == done["id"] and run["status"] == "ok"
        assert run["metadata"]["pr"] == 7 and run["metadata"]["commit_sha"] == "c0ffee"
        assert run["links"]["self"].endswith(f"/v1/runs/{done['id']}")
        assert run["summary"]["total"] == 2
        await asyncio.sleep(1.5)
        assert len(receiver.received) == 1
        [delivery] = (await bw.webhooks.deliveries(hook.id)).data
        assert delivery.status == "succeeded" and delivery.run_id == done["id"]
        assert delivery.id == got.headers["x-benchwright-delivery-id"]

        # The endpoint fails twice: the delivery is retried and each attempt recorded.
        receiver.fail_next(500, 502)
        second = await launch(platform, pinned(fake_model, limit=1))
        received = await receiver.wait_for(4, event="run.finished")  # the first run's, then 3
        mine = [r for r in received if second["id"].encode() in r.body]
        assert [r.answered for r in mine] == [500, 502, 200]
        assert len({r.headers["x-benchwright-delivery-id"] for r in mine}) == 1
        construct_event(mine[-1].body, mine[-1].headers["x-benchwright-signature"], secret)
        for _ in range(100):
            latest = (await bw.webhooks.deliveries(hook.id)).data[0]
            if latest.status != "pending":
                break
            await asyncio.sleep(0.1)
        assert latest.run_id == second["id"] and latest.status == "succeeded"
        assert [a.status_code for a in latest.attempts] == [500, 502, 200]
        assert [a.error for a in latest.attempts] == ["HTTP 500", "HTTP 502", None]
        succeeded = (await bw.webhooks.deliveries(hook.id, "succeeded")).data
        assert {d.run_id for d in succeeded} == {done["id"], second["id"]}


async def test_a_failed_run_raises_run_failed(
    platform: Platform, receiver: WebhookReceiver
) -> None:
    async with sdk(platform) as bw:
        hook = await bw.webhooks.create(receiver.url, ["run.failed"])
        assert hook.signing_secret
        # A natural-language launch that names no model fails in Find, before any sandbox.
        done = await launch(platform, {"request": "Run GSM8K, 2 questions", "driver": "builtin"})
        assert done["status"] == "error", done
        [got] = await receiver.wait_for(1, event="run.failed")
        event = construct_event(
            got.body, got.headers["x-benchwright-signature"], hook.signing_secret
        )
        assert event.type == "run.failed"
        assert (
            event.data["id"] == done["id"] and event.data["error"]["type"] == done["error"]["type"]
        )
        await asyncio.sleep(1.0)
        assert len(receiver.received) == 1
