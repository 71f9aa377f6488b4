"""Billing alerts and auto-refill through the whole platform.

A run's sandboxes cost a dollar a second. The account asked to hear at half its
monthly cap and refills from the fake payment provider when its balance runs
low: the run's spend raises two alerts (50 % and 100 % of the cap), each
delivered once, signed, to the account's ``billing.alert`` webhook, and a refill
lands in the transactions with the provider's reference. With a provider that
declines, the refill's refusal is an alert of its own.
"""

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import AsyncBenchwright
from benchwright.resources.webhooks import construct_event
from tests.conftest import Platform, platform_settings
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.webhook_receiver import WebhookReceiver
from tests.system.test_pinned_run import launch_body

pytestmark = [pytest.mark.slow, pytest.mark.connected]

RATE_MICROS = 1_000_000  # a dollar per sandbox-second


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def paying(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "true")
    monkeypatch.setenv("BW_PAYMENT_PROVIDER", "fake")
    monkeypatch.setenv("BW_BILLING_WATCH_INTERVAL_S", "0.2")


async def started(tmp_path: Path) -> Platform:
    settings = platform_settings(tmp_path, None, None).model_copy(
        update={"sandbox_rate_local_micros": RATE_MICROS}
    )
    return await Platform(settings).start()


@pytest.fixture
async def platform(paying: None, tmp_path: Path) -> AsyncIterator[Platform]:
    running = await started(tmp_path)
    yield running
    await running.shutdown()


def sdk(platform: Platform) -> AsyncBenchwright:
    assert platform.client
    return AsyncBenchwright(api_key=platform.token, base_url=str(platform.client.base_url))


async def eventually(check: Any, timeout: float = 30) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("never happened")
        await asyncio.sleep(0.2)


async def test_spend_raises_signed_alerts_once_and_a_low_balance_refills(
    platform: Platform, receiver: WebhookReceiver, fake_model: FakeOpenAIServer
) -> None:
    async with sdk(platform) as bw:
        hook = await bw.webhooks.create(receiver.url, ["billing.alert"], description="money")
        secret = hook.signing_secret
        assert secret
        await bw.billing.topups.create(500)
        controls = await bw.billing.controls.update(
            monthly_cap_cents=100,
            alert_enabled=True,
            alert_at_cap_pct=50,
            auto_refill_enabled=True,
            auto_refill_amount_cents=5_000,
            auto_refill_threshold_cents=400,
        )
        assert controls.payment_provider == "fake"
        assert controls.controls.auto_refill_enabled is True

        # A run's sandboxes cost a few dollars: past the whole $1 cap, below $4 left.
        assert platform.client
        launched = await platform.client.post("/v1/runs", json=launch_body(fake_model, limit=2))
        assert launched.status_code == 201, launched.text
        run = await platform.wait_terminal(launched.json()["id"])
        assert run["status"] == "ok", run["error"]

        got = await receiver.wait_for(2, event="billing.alert")
        events = [
            construct_event(r.body, r.headers["x-benchwright-signature"], secret) for r in got
        ]
        assert sorted(e.data["threshold_pct"] for e in events) == [50, 100]
        assert {e.type for e in events} == {"billing.alert"}
        assert all(e.data["kind"] == "cap_threshold" and not e.test for e in events)
        assert all(e.data["monthly_cap"]["amount_cents"] == 100 for e in events)

        listed = (await bw.billing.alerts.list()).data
        assert sorted(a.id for a in listed) == sorted(e.data["id"] for e in events)

        async def refilled() -> Any:
            page = await bw.billing.transactions.list(filters={"kind": "auto_refill"})
            return page.data

        [refill] = await eventually(refilled)
        assert refill.amount.amount_cents == 5_000
        assert refill.reference_id.startswith("fake_ch_")
        balance = await bw.billing.balance.get()
        debits = (await bw.billing.transactions.list(filters={"kind": "trace_debit"})).data
        spent = -sum(t.amount.amount_cents for t in debits)
        assert spent > 100
        assert abs(balance.balance.amount_cents - (500 + 5_000 - spent)) <= 1

        # More alerts never come for the same crossings, and the run shows every cost key.
        await asyncio.sleep(1.5)
        assert len(receiver.of_event("billing.alert")) == 2
        cost = (await platform.client.get(f"/v1/runs/{run['id']}")).json()["cost"]
        assert cost["narration"]["calls"] == 0 and cost["narration"]["amount_usd"] == 0
        assert cost["proxy_linger"]["amount_usd"] >= 0 and "calls" in cost["proxy_linger"]
        assert cost["billed"]["amount_cents"] == -debits[0].amount.amount_cents
        assert cost["incurred"]["amount_usd"] >= cost["sandbox"]["amount_usd"] > 0


async def test_a_declined_refill_is_an_alert(
    monkeypatch: pytest.MonkeyPatch, paying: None, tmp_path: Path, receiver: WebhookReceiver
) -> None:
    monkeypatch.setenv("BW_BILLING_FAKE_PAYMENTS_DECLINE", "true")
    platform = await started(tmp_path)
    try:
        async with sdk(platform) as bw:
            hook = await bw.webhooks.create(receiver.url, ["billing.alert"])
            assert hook.signing_secret
            # Nothing in the balance, a threshold above it: the refill is due at once.
            await bw.billing.controls.update(
                auto_refill_enabled=True,
                auto_refill_amount_cents=2_000,
                auto_refill_threshold_cents=500,
            )
            [got] = await receiver.wait_for(1, event="billing.alert")
            event = construct_event(
                got.body, got.headers["x-benchwright-signature"], hook.signing_secret
            )
            assert event.data["kind"] == "refill_declined"
            assert event.data["refill_amount"]["amount_cents"] == 2_000
            assert event.data["provider_reference"].startswith("fake_ch_")
            [alert] = (await bw.billing.alerts.list()).data
            assert alert.id == event.data["id"]
            page = await bw.billing.transactions.list()
            assert page.data == []  # no money moved
            assert (await bw.billing.balance.get()).balance.amount_cents == 0
            # Not tried again on its own: a top-up (a new card, say) clears the way.
            await asyncio.sleep(1.0)
            assert len(receiver.received) == 1
    finally:
        await platform.shutdown()
