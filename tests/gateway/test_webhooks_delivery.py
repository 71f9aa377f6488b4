"""The deliverer against a real endpoint on loopback, without NATS: the run's outcome is
noted as the run-log consumer would note it, the runs view is fed directly."""

import asyncio
import itertools
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwright.resources.webhooks import construct_event
from benchwright_gateway.app import GatewayService
from benchwright_gateway.webhooks.delivery import outcome_of
from benchwright_shared.settings import Settings
from tests.support.webhook_receiver import WebhookReceiver

ACCOUNT = "acct_hooks"
_positions = itertools.count(1)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def fast_webhooks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "true")
    monkeypatch.setenv("BW_WEBHOOKS_BACKOFF_INITIAL_S", "0.2")
    monkeypatch.setenv("BW_WEBHOOKS_POLL_INTERVAL_S", "0.2")


async def started(data_dir: Path) -> GatewayService:
    service = GatewayService(Settings(data_dir=data_dir))
    await service.webhooks.start()
    return service


async def shut(service: GatewayService) -> None:
    await service.webhooks.stop()
    service.app.close()
    service.views.close()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[GatewayService]:
    service = await started(tmp_path)
    yield service
    await shut(service)


def api(service: GatewayService) -> httpx.AsyncClient:
    token = service.app.mint_token(ACCOUNT, ["runs:read", "webhooks:read", "webhooks:write"], "t")
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.http),
        base_url="http://gw",
        headers={"Authorization": f"Bearer {token}"},
    )


def message(run_id: str, seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "seq": seq,
        "type": kind,
        "ts": datetime.now(UTC).isoformat(),
        "data": data,
    }


def project(service: GatewayService, *messages: dict[str, Any]) -> None:
    service.views.store.apply_many("runs", [(next(_positions), m) for m in messages])


def launched(run_id: str) -> dict[str, Any]:
    return message(
        run_id,
        0,
        "RunLaunched",
        account=ACCOUNT,
        benchmark_id="bm_x",
        benchmark_name="GSM8K",
        subset_id="sub_x",
        subset_slug="test",
        metadata={"pr": 42, "commit_sha": "abc123"},
    )


def finished(run_id: str, status: str = "ok", error_type: str | None = None) -> dict[str, Any]:
    return message(
        run_id,
        5,
        "PipelineFinished",
        status=status,
        duration_ms=10,
        summary={"total": 0},
        error_type=error_type,
        detail="broke" if error_type else None,
    )


async def notice(service: GatewayService, *messages: dict[str, Any]) -> None:
    """What the run-log consumer does with a batch."""
    outcomes = [o for o in (outcome_of(m) for m in messages) if o is not None]
    await service.webhooks.call(service.webhooks.app.notice_outcomes, outcomes, now=time.time())
    service.webhooks.wake()


async def hook(http: httpx.AsyncClient, url: str, events: list[str]) -> tuple[str, str]:
    made = await http.post("/v1/webhooks", json={"url": url, "events": events})
    assert made.status_code == 201, made.text
    return made.json()["id"], made.json()["signing_secret"]


async def deliveries_of(http: httpx.AsyncClient, whk: str, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (
        await http.get(f"/v1/webhooks/{whk}/deliveries", params=params)
    ).json()["data"]
    return found


async def settled(http: httpx.AsyncClient, whk: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = await deliveries_of(http, whk)
        if found and found[0]["status"] != "pending":
            return found[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"delivery still pending: {found}")
        await asyncio.sleep(0.05)


async def test_a_finished_run_is_posted_once_signed_with_the_run_as_shown(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        whk, secret = await hook(http, receiver.url, ["run.finished", "run.failed"])
        run_id = str(uuid.uuid4())
        project(gateway, launched(run_id))
        done = finished(run_id)
        # The outcome is noted before the runs view has it: the deliverer waits for it.
        await notice(gateway, done)
        await asyncio.sleep(0.5)
        assert receiver.received == []
        project(gateway, done)
        [got] = await receiver.wait_for(1)
        event = construct_event(got.body, got.headers["x-benchwright-signature"], secret)
        assert event.type == "run.finished" and event.id.startswith("evt_")
        assert event.test is False
        assert got.headers["x-benchwright-event"] == "run.finished"
        assert got.headers["x-benchwright-delivery-id"].startswith("whd_")
        assert got.headers["content-type"] == "application/json"
        shown = (await http.get(f"/v1/runs/{run_id}")).json()
        assert event.data == shown
        assert event.data["metadata"] == {"pr": 42, "commit_sha": "abc123"}
        assert event.data["links"]["self"].endswith(f"/v1/runs/{run_id}")
        delivery = await settled(http, whk)
        assert delivery["status"] == "succeeded" and delivery["run_id"] == run_id
        assert delivery["id"] == got.headers["x-benchwright-delivery-id"]
        assert delivery["event_id"] == event.id
        assert [a["status_code"] for a in delivery["attempts"]] == [200]
        # The run log redelivers the terminal event: nothing is sent again.
        await notice(gateway, done)
        await asyncio.sleep(0.6)
        assert len(receiver.received) == 1
        assert len(await deliveries_of(http, whk)) == 1


async def test_failures_are_retried_with_every_attempt_recorded(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    receiver.fail_next(500, 503)
    async with api(gateway) as http:
        whk, secret = await hook(http, receiver.url, ["run.failed"])
        run_id = str(uuid.uuid4())
        done = finished(run_id, "error", "runtime_broken")
        project(gateway, launched(run_id), done)
        await notice(gateway, done)
        received = await receiver.wait_for(3)
        assert [r.answered for r in received] == [500, 503, 200]
        assert len({r.headers["x-benchwright-delivery-id"] for r in received}) == 1
        assert len({r.body for r in received}) == 1  # the same event, byte for byte
        # Backoff: each retry waited at least its doubling delay at the lowest jitter
        # (0.2 s, then 0.4 s, times 0.8). A loaded machine only waits longer, so gaps
        # are bounded below, never compared with each other.
        gaps = [b.at - a.at for a, b in itertools.pairwise(received)]
        assert gaps[0] >= 0.2 * 0.8 and gaps[1] >= 0.4 * 0.8, gaps
        event = construct_event(
            received[-1].body, received[-1].headers["x-benchwright-signature"], secret
        )
        assert event.type == "run.failed" and event.data["error"]["type"] == "runtime_broken"
        delivery = await settled(http, whk)
        assert delivery["status"] == "succeeded" and delivery["attempt_count"] == 3
        attempts = delivery["attempts"]
        assert [a["status_code"] for a in attempts] == [500, 503, 200]
        assert [a["error"] for a in attempts] == ["HTTP 500", "HTTP 503", None]
        assert all(a["duration_ms"] >= 0 and a["at"] for a in attempts)
        assert await deliveries_of(http, whk, status="failed") == []


async def test_a_halted_run_goes_only_to_endpoints_that_want_run_halted(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        await hook(http, receiver.url + "?only=finished", ["run.finished"])
        await hook(http, receiver.url + "?only=halted", ["run.halted"])
        run_id = str(uuid.uuid4())
        done = finished(run_id, "error", "halted")
        project(gateway, launched(run_id), done)
        await notice(gateway, done)
        [got] = await receiver.wait_for(1)
        await asyncio.sleep(0.4)
        assert len(receiver.received) == 1
        assert (
            got.path.endswith("only=halted") and got.headers["x-benchwright-event"] == "run.halted"
        )


async def test_pending_deliveries_survive_a_restart(
    tmp_path: Path, receiver: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_BACKOFF_INITIAL_S", "1.5")
    first = await started(tmp_path)
    receiver.fail_next(500)
    async with api(first) as http:
        whk, secret = await hook(http, receiver.url, ["run.finished"])
        run_id = str(uuid.uuid4())
        done = finished(run_id)
        project(first, launched(run_id), done)
        await notice(first, done)
        await receiver.wait_for(1)
        await asyncio.sleep(0.2)
        [pending] = await deliveries_of(http, whk, status="pending")
        assert [a["status_code"] for a in pending["attempts"]] == [500]
    await shut(first)

    second = await started(tmp_path)
    try:
        received = await receiver.wait_for(2)
        assert [r.answered for r in received] == [500, 200]
        construct_event(received[1].body, received[1].headers["x-benchwright-signature"], secret)
        async with api(second) as http:
            delivery = await settled(http, whk)
        assert delivery["id"] == pending["id"] and delivery["status"] == "succeeded"
        assert [a["status_code"] for a in delivery["attempts"]] == [500, 200]
    finally:
        await shut(second)


async def test_a_test_delivery_and_a_manual_retry(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        whk, secret = await hook(http, receiver.url, ["run.finished"])
        sent = (await http.post(f"/v1/webhooks/{whk}/test")).json()
        [ping] = await receiver.wait_for(1)
        event = construct_event(ping.body, ping.headers["x-benchwright-signature"], secret)
        assert event.type == "ping" and event.test is True and event.data["webhook_id"] == whk
        assert (await settled(http, whk))["status"] == "succeeded"
        again = await http.post(f"/v1/webhooks/{whk}/deliveries/{sent['id']}/retry")
        assert again.status_code == 202, again.text
        assert again.json()["status"] == "pending"
        received = await receiver.wait_for(2)
        assert received[1].body == ping.body
        assert received[1].headers["x-benchwright-delivery-id"] == sent["id"]
        # A made-up run event is shaped like a real run.
        await http.post(f"/v1/webhooks/{whk}/test", json={"event": "run.failed"})
        sample = (await receiver.wait_for(1, event="run.failed"))[0]
        run = json.loads(sample.body)["data"]
        assert run["object"] == "run" and run["status"] == "error" and "links" in run


async def test_a_rotation_with_overlap_signs_with_both_secrets(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        whk, old = await hook(http, receiver.url, ["run.finished"])
        new = (
            await http.post(
                f"/v1/webhooks/{whk}/rotate_secret", json={"expire_previous_after_s": 600}
            )
        ).json()["signing_secret"]
        await http.post(f"/v1/webhooks/{whk}/test")
        [got] = await receiver.wait_for(1)
        header = got.headers["x-benchwright-signature"]
        assert header.count("v1=") == 2
        assert (
            construct_event(got.body, header, old).id == construct_event(got.body, header, new).id
        )


async def test_a_private_address_is_refused_at_delivery_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "false")
    service = GatewayService(Settings(data_dir=tmp_path))
    try:
        loop = asyncio.get_running_loop()

        async def resolve(host: str, port: int, **kw: Any) -> list[Any]:
            address = "10.0.0.5" if host == "rebinds.example.com" else "93.184.216.34"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

        monkeypatch.setattr(loop, "getaddrinfo", resolve)
        refusal = await service.webhooks._refusal("https://rebinds.example.com/h")
        assert refusal == "refused: rebinds.example.com resolves to a non-public address"
        assert await service.webhooks._refusal("https://public.example.com/h") is None
        assert (await service.webhooks._refusal("http://127.0.0.1:9/h") or "").startswith(
            "refused: the URL must use https"
        )
    finally:
        service.webhooks.close()
        service.app.close()
        service.views.close()
