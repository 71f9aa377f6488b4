"""Billing's application and its watch: alerts and refills from the ledger's spend, the
payment provider behind its port, what leaves the store for the bus."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from faststream.nats import NatsRouter

from benchwright_billing.adapters import payment_provider
from benchwright_billing.adapters.fake_payments import FakePaymentProvider
from benchwright_billing.app import LEDGER_SOURCE
from benchwright_billing.application import BillingApplication, translate_notification
from benchwright_billing.ports import Charge, PaymentError
from benchwright_billing.projections import LedgerProjection
from benchwright_billing.settings import BillingSettings
from benchwright_billing.watch import AccountWatch
from benchwright_shared import subjects
from benchwright_shared.contracts.billing import BillingAlertRaised
from benchwright_shared.projection_runner import ProjectionHost
from benchwright_shared.refusal import Refused
from benchwright_shared.settings import Settings
from benchwright_shared.store import BlockingStore

ACCOUNT = "acct_a"


class World:
    """The application, the ledger view and the watch, wired as the service wires them."""

    def __init__(self, tmp_path: Path, provider: Any) -> None:
        self.provider = provider
        self.app = BillingApplication(
            {}, markup=1.0, enforce=True, payment_provider=provider.name if provider else None
        )
        self.ledger = LedgerProjection()
        self.views = ProjectionHost(
            Settings(data_dir=tmp_path),
            "billing",
            NatsRouter(),
            {"ledger": (self.ledger, LEDGER_SOURCE)},
        )
        self.store = BlockingStore("billing-test")
        self.watch = AccountWatch(
            self.app, self.store, self.views, provider, interval_s=0.05, sweep_interval_s=60
        )
        self.ledger.on_line = self.watch.touch
        self.position = 0

    def spend(self, run_id: str, sandbox_micros: int) -> None:
        """A sandbox of ``run_id`` was killed having cost ``sandbox_micros``."""
        self.position += 1
        message = {
            "sandbox_id": f"sbx_{self.position}",
            "run_id": run_id,
            "role": "work",
            "reason": "run_finished",
            "duration_ms": 1000,
            "cost_micros": sandbox_micros,
            "metadata": {"account": ACCOUNT},
            "killed_at": datetime.now(UTC).isoformat(),
        }
        self.views.store.apply("ledger", self.position, message)

    def alerts_published(self) -> list[BillingAlertRaised]:
        notifications = self.app.recorder.select_notifications(
            start=0, limit=1000, inclusive_of_start=False
        )
        out = []
        for n in notifications:
            translated = translate_notification(self.app, n)
            if translated is not None:
                subject, payload = translated
                assert subject == subjects.BILLING_ALERT_RAISED
                out.append(BillingAlertRaised.model_validate(json.loads(payload)))
        return out

    def close(self) -> None:
        self.views.close()
        self.store.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    built = World(tmp_path, FakePaymentProvider())
    yield built
    built.close()


async def test_spend_past_the_alert_threshold_raises_one_alert_that_leaves_the_store(
    world: World,
) -> None:
    world.app.top_up(ACCOUNT, 5_000, "hosted", None)
    world.app.update_controls(
        ACCOUNT, {"monthly_cap_cents": 1_000, "alert_enabled": True, "alert_at_cap_pct": 50}
    )
    world.spend("run_1", 4_000_000)  # $4 of a $10 cap
    assert world.watch._touched == {ACCOUNT}
    await world.watch.check(ACCOUNT)
    assert world.app.alerts(ACCOUNT) == []
    world.spend("run_1", 1_000_000)  # $5: half the cap
    await world.watch.check(ACCOUNT)
    await world.watch.check(ACCOUNT)
    [alert] = world.app.alerts(ACCOUNT)
    assert alert.kind == "cap_threshold" and alert.threshold_pct == 50
    assert alert.month_spent.amount_cents == 500 and alert.balance.amount_cents == 4_500
    [published] = world.alerts_published()
    assert published.alert == alert
    world.spend("run_2", 5_000_000)  # the whole cap
    await world.watch.check(ACCOUNT)
    assert [a.threshold_pct for a in world.app.alerts(ACCOUNT)] == [100, 50]  # newest first
    assert [p.alert.threshold_pct for p in world.alerts_published()] == [50, 100]
    balance = world.app.balance(ACCOUNT, [], [])
    assert balance.payment_provider == "fake"


async def test_an_account_that_asked_for_nothing_is_not_looked_at(world: World) -> None:
    world.spend("run_1", 9_000_000)
    await world.watch.check(ACCOUNT)
    assert world.app.alerts(ACCOUNT) == [] and world.provider.calls == []
    # Nothing was stored for it either: checking is not opening an account.
    assert world.alerts_published() == []


async def test_a_low_balance_is_refilled_through_the_provider_once(world: World) -> None:
    world.app.top_up(ACCOUNT, 1_000, "hosted", None)
    world.app.update_controls(
        ACCOUNT,
        {
            "auto_refill_enabled": True,
            "auto_refill_amount_cents": 2_500,
            "auto_refill_threshold_cents": 500,
        },
    )
    world.spend("run_1", 6_000_000)  # $10 - $6 = $4, below the $5 threshold
    await world.watch.check(ACCOUNT)
    await world.watch.check(ACCOUNT)
    [(key, account, amount)] = world.provider.calls
    assert key.startswith("rfl_") and account == ACCOUNT and amount == 2_500
    balance = world.app.balance(ACCOUNT, *await world.watch._spend(ACCOUNT, datetime.now(UTC)))
    assert balance.balance.amount_cents == 400 + 2_500
    runs, _ = await world.watch._spend(ACCOUNT, datetime.now(UTC))
    refill = next(t for t in world.app.transactions(ACCOUNT, runs) if t.kind == "auto_refill")
    assert refill.id == key and refill.amount.amount_cents == 2_500
    assert refill.reference_id == world.provider.charges[key].reference
    assert refill.reference_id.startswith("fake_ch_")
    assert world.alerts_published() == []


async def test_a_declined_refill_raises_an_alert_and_is_not_tried_again(tmp_path: Path) -> None:
    world = World(tmp_path, FakePaymentProvider(decline=True))
    try:
        world.app.update_controls(
            ACCOUNT,
            {
                "auto_refill_enabled": True,
                "auto_refill_amount_cents": 1_000,
                "auto_refill_threshold_cents": 500,
            },
        )
        world.spend("run_1", 1_000_000)
        for _ in range(3):
            await world.watch.check(ACCOUNT)
        assert len(world.provider.calls) == 1
        [alert] = world.app.alerts(ACCOUNT)
        assert alert.kind == "refill_declined" and alert.refill_amount
        assert alert.refill_amount.amount_cents == 1_000
        assert alert.provider_reference == world.provider.charges[alert.refill_id or ""].reference
        assert [p.alert.id for p in world.alerts_published()] == [alert.id]
        runs, _ = await world.watch._spend(ACCOUNT, datetime.now(UTC))
        assert [t.kind for t in world.app.transactions(ACCOUNT, runs)] == ["trace_debit"]
    finally:
        world.close()


class Unreachable:
    name = "flaky"

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.down = True

    async def charge(self, *, account: str, amount_cents: int, idempotency_key: str) -> Charge:
        self.keys.append(idempotency_key)
        if self.down:
            raise PaymentError("connection refused")
        return Charge(succeeded=True, reference=f"ch_{idempotency_key}")


async def test_a_provider_that_does_not_answer_is_asked_again_with_the_same_key(
    tmp_path: Path,
) -> None:
    provider = Unreachable()
    world = World(tmp_path, provider)
    try:
        world.app.update_controls(
            ACCOUNT,
            {
                "auto_refill_enabled": True,
                "auto_refill_amount_cents": 1_000,
                "auto_refill_threshold_cents": 500,
            },
        )
        await world.watch.check(ACCOUNT)
        assert world.watch._touched == {ACCOUNT}  # to be looked at again
        provider.down = False
        await world.watch.check(ACCOUNT)
        assert len(provider.keys) == 2 and provider.keys[0] == provider.keys[1]
        runs, _ = await world.watch._spend(ACCOUNT, datetime.now(UTC))
        assert [t.reference_id for t in world.app.transactions(ACCOUNT, runs)] == [
            f"ch_{provider.keys[0]}"
        ]
    finally:
        world.close()


def test_without_a_provider_auto_refill_is_refused_naming_the_field(tmp_path: Path) -> None:
    app = BillingApplication({}, markup=1.0, enforce=False)
    with pytest.raises(Refused) as refused:
        app.update_controls(
            ACCOUNT,
            {
                "auto_refill_enabled": True,
                "auto_refill_amount_cents": 1_000,
                "auto_refill_threshold_cents": 500,
            },
        )
    assert refused.value.status == 400 and refused.value.field == "auto_refill_enabled"
    assert refused.value.code == "no_payment_provider"
    assert "BW_PAYMENT_PROVIDER" in refused.value.detail
    assert app.balance(ACCOUNT, [], []).payment_provider is None


def test_the_payment_provider_is_chosen_by_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert payment_provider(BillingSettings()) is None
    monkeypatch.setenv("BW_PAYMENT_PROVIDER", "fake")
    monkeypatch.setenv("BW_BILLING_FAKE_PAYMENTS_DECLINE", "true")
    chosen = payment_provider(BillingSettings())
    assert isinstance(chosen, FakePaymentProvider) and chosen.decline is True
    monkeypatch.setenv("BW_PAYMENT_PROVIDER", "stripe-ish")
    with pytest.raises(ValueError, match="not a payment provider"):
        payment_provider(BillingSettings())
