"""Billing alerts reach the account's webhooks as ``billing.alert``: noted as the alerts
consumer notes them, delivered signed, once, only to the endpoints that asked."""

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchwright.resources.webhooks import construct_event
from benchwright_gateway.app import GatewayService
from benchwright_gateway.webhooks.delivery import account_event_of
from benchwright_shared.contracts.billing import BillingAlert, BillingAlertRaised, Money
from tests.gateway.test_webhooks_delivery import ACCOUNT, api, hook, settled, shut, started
from tests.support.webhook_receiver import WebhookReceiver


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def fast_webhooks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BW_WEBHOOKS_ALLOW_INSECURE_URLS", "true")
    monkeypatch.setenv("BW_WEBHOOKS_POLL_INTERVAL_S", "0.2")


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[GatewayService]:
    service = await started(tmp_path)
    yield service
    await shut(service)


def raised(account: str = ACCOUNT, alert_id: str = "alrt_" + "a" * 24) -> dict[str, Any]:
    alert = BillingAlert(
        id=alert_id,
        kind="cap_threshold",
        account=account,
        period="2026-11",
        threshold_pct=80,
        month_spent=Money(amount_cents=800),
        monthly_cap=Money(amount_cents=1_000),
        balance=Money(amount_cents=4_200),
        detail="this month's spend reached 80% of the monthly cap",
        created_at=datetime.now(UTC),
    )
    return BillingAlertRaised(alert=alert).model_dump(mode="json")


async def notice(service: GatewayService, *bodies: dict[str, Any]) -> None:
    """What the alerts consumer does with a batch."""
    events = [account_event_of(b) for b in bodies]
    await service.webhooks.call(service.webhooks.app.notice_account_events, events, now=time.time())
    service.webhooks.wake()


async def test_an_alert_is_delivered_signed_once_to_the_endpoints_that_want_it(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        alerts_hook, secret = await hook(http, receiver.url + "?alerts", ["billing.alert"])
        await hook(http, receiver.url + "?runs", ["run.finished", "run.failed"])
        body = raised()
        await notice(gateway, body, raised(account="acct_someone_else", alert_id="alrt_other"))
        [got] = await receiver.wait_for(1)
        assert got.path.endswith("?alerts")
        assert got.headers["x-benchwright-event"] == "billing.alert"
        event = construct_event(got.body, got.headers["x-benchwright-signature"], secret)
        assert event.type == "billing.alert" and event.test is False
        assert event.data["object"] == "billing_alert"
        assert event.data["id"] == body["alert"]["id"]
        assert event.data["kind"] == "cap_threshold" and event.data["threshold_pct"] == 80
        assert event.data["month_spent"]["amount_cents"] == 800
        delivery = await settled(http, alerts_hook)
        assert delivery["status"] == "succeeded" and delivery["event"] == "billing.alert"
        assert delivery["run_id"] is None
        # The alert comes again (a redelivered message, another gateway): nothing new.
        await notice(gateway, body)
        await asyncio.sleep(0.6)
        assert len(receiver.received) == 1


async def test_a_test_delivery_of_a_billing_alert(
    gateway: GatewayService, receiver: WebhookReceiver
) -> None:
    async with api(gateway) as http:
        whk, secret = await hook(http, receiver.url, ["billing.alert"])
        sent = await http.post(f"/v1/webhooks/{whk}/test", json={"event": "billing.alert"})
        assert sent.status_code == 202, sent.text
        [got] = await receiver.wait_for(1)
        event = construct_event(got.body, got.headers["x-benchwright-signature"], secret)
        assert event.type == "billing.alert" and event.test is True
        assert event.data["object"] == "billing_alert" and event.data["kind"] == "cap_threshold"
