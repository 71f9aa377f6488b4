"""Alerts and auto-refills, without I/O: when they fire, and that each fires once."""

from datetime import UTC, datetime

from benchwright_billing.domain import (
    MICROS_PER_CENT,
    BillingAccount,
    cap_thresholds,
    thresholds_reached,
)

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
NEXT_MONTH = datetime(2026, 12, 1, 0, 5, tzinfo=UTC)
DOLLAR = 100 * MICROS_PER_CENT


def capped(cap_cents: int = 1_000, pct: int = 80) -> BillingAccount:
    account = BillingAccount("acct")
    account.update_controls(
        {"monthly_cap_cents": cap_cents, "alert_enabled": True, "alert_at_cap_pct": pct},
        payments=False,
    )
    return account


def refilling() -> BillingAccount:
    account = BillingAccount("acct")
    account.update_controls(
        {
            "auto_refill_enabled": True,
            "auto_refill_amount_cents": 2_500,
            "auto_refill_threshold_cents": 500,
        },
        payments=True,
    )
    return account


def kinds(account: BillingAccount) -> list[tuple[str, int | None]]:
    return [(a["kind"], a["threshold_pct"]) for a in account.alerts]


def test_the_thresholds_an_account_hears_of() -> None:
    assert cap_thresholds({}) == []
    assert cap_thresholds({"alert_enabled": True, "alert_at_cap_pct": 80}) == []  # no cap
    on = {"alert_enabled": True, "alert_at_cap_pct": 80, "monthly_cap_cents": 1_000}
    assert cap_thresholds(on) == [80, 100]
    assert cap_thresholds({**on, "alert_at_cap_pct": 100}) == [100]
    assert cap_thresholds({**on, "alert_enabled": False}) == []
    assert thresholds_reached(8 * DOLLAR - 1, 1_000, [80, 100]) == []
    assert thresholds_reached(8 * DOLLAR, 1_000, [80, 100]) == [80]
    assert thresholds_reached(10 * DOLLAR, 1_000, [80, 100]) == [80, 100]
    # A cap of nothing: the first cent spent reaches it, not the absence of spend.
    assert thresholds_reached(0, 0, [80, 100]) == []
    assert thresholds_reached(1, 0, [80, 100]) == [80, 100]


def test_a_threshold_alerts_once_per_month() -> None:
    account = capped()
    account.watch(balance_micros=DOLLAR, month_micros=7 * DOLLAR, now=NOW, refill_id=None)
    assert account.alerts == []
    account.watch(balance_micros=DOLLAR, month_micros=8 * DOLLAR, now=NOW, refill_id=None)
    assert kinds(account) == [("cap_threshold", 80)]
    [alert] = account.alerts
    assert alert["period"] == "2026-11" and alert["month_spent"]["amount_cents"] == 800
    assert alert["monthly_cap"]["amount_cents"] == 1_000 and alert["id"].startswith("alrt_")
    # Spend goes on growing: 80 % is not said again; the cap itself is said once.
    for spent in (9, 10, 12, 15):
        account.watch(balance_micros=DOLLAR, month_micros=spent * DOLLAR, now=NOW, refill_id=None)
    assert kinds(account) == [("cap_threshold", 80), ("cap_threshold", 100)]
    assert "runs stop" in account.alerts[-1]["detail"]
    # A new month starts over.
    account.watch(balance_micros=DOLLAR, month_micros=8 * DOLLAR, now=NEXT_MONTH, refill_id=None)
    assert kinds(account)[-1] == ("cap_threshold", 80)
    assert account.alerts[-1]["period"] == "2026-12"


def test_a_new_cap_is_a_new_threshold_and_the_same_crossing_has_the_same_id() -> None:
    first, second = capped(), capped()
    for account in (first, second):
        account.watch(balance_micros=DOLLAR, month_micros=8 * DOLLAR, now=NOW, refill_id=None)
    # Two copies of billing noticing the same crossing name the same alert.
    assert first.alerts[0]["id"] == second.alerts[0]["id"]
    first.update_controls({"monthly_cap_cents": 2_000}, payments=False)
    first.watch(balance_micros=DOLLAR, month_micros=16 * DOLLAR, now=NOW, refill_id=None)
    assert kinds(first) == [("cap_threshold", 80), ("cap_threshold", 80)]
    assert first.alerts[-1]["monthly_cap"]["amount_cents"] == 2_000


def test_alerts_off_say_nothing() -> None:
    account = capped()
    account.update_controls({"alert_enabled": False}, payments=False)
    account.watch(balance_micros=DOLLAR, month_micros=50 * DOLLAR, now=NOW, refill_id=None)
    assert account.alerts == [] and not account.watched


def test_a_low_balance_asks_for_one_refill_at_a_time() -> None:
    account = refilling()
    assert account.watched
    # Above the threshold: nothing.
    assert (
        account.watch(balance_micros=5 * DOLLAR, month_micros=0, now=NOW, refill_id="rfl_1") is None
    )
    refill = account.watch(balance_micros=4 * DOLLAR, month_micros=0, now=NOW, refill_id="rfl_1")
    assert refill is not None and refill["refill_id"] == "rfl_1"
    assert refill["amount_cents"] == 2_500 and refill["status"] == "pending"
    # Unanswered, it is the one to charge again (same id, same idempotency key).
    again = account.watch(balance_micros=4 * DOLLAR, month_micros=0, now=NOW, refill_id="rfl_2")
    assert again is not None and again["refill_id"] == "rfl_1"
    assert list(account.refills) == ["rfl_1"]
    # No payment provider now: nothing new is asked for.
    account.settle_refill(
        "rfl_1",
        succeeded=True,
        reference="ch_1",
        detail="",
        provider="fake",
        balance_micros=4 * DOLLAR,
        month_micros=0,
        at=NOW,
    )
    assert account.credits_micros == 25 * DOLLAR
    assert account.refills["rfl_1"]["status"] == "succeeded"
    assert account.refills["rfl_1"]["reference"] == "ch_1"
    assert account.watch(balance_micros=0, month_micros=0, now=NOW, refill_id=None) is None
    # A repeated answer changes nothing.
    account.settle_refill(
        "rfl_1",
        succeeded=True,
        reference="ch_1",
        detail="",
        provider="fake",
        balance_micros=0,
        month_micros=0,
        at=NOW,
    )
    assert account.credits_micros == 25 * DOLLAR


def test_a_declined_refill_alerts_and_stops_refills_until_a_top_up() -> None:
    account = refilling()
    account.watch(balance_micros=0, month_micros=3 * DOLLAR, now=NOW, refill_id="rfl_1")
    account.settle_refill(
        "rfl_1",
        succeeded=False,
        reference="ch_x",
        detail="card_declined",
        provider="fake",
        balance_micros=0,
        month_micros=3 * DOLLAR,
        at=NOW,
    )
    assert account.credits_micros == 0 and account.refill_blocked
    # Said even though the account never turned alerts on: it needs to act.
    [alert] = account.alerts
    assert alert["kind"] == "refill_declined" and alert["refill_id"] == "rfl_1"
    assert alert["provider_reference"] == "ch_x" and "card_declined" in alert["detail"]
    assert alert["refill_amount"]["amount_cents"] == 2_500
    assert account.watch(balance_micros=0, month_micros=0, now=NOW, refill_id="rfl_2") is None
    account.top_up("top_1", 100, "hosted", None, NOW)
    assert not account.refill_blocked
    refill = account.watch(balance_micros=0, month_micros=0, now=NOW, refill_id="rfl_3")
    assert refill is not None and refill["refill_id"] == "rfl_3"
