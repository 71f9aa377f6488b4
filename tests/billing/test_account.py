"""An account's money, without I/O: top-ups, controls, when runs must stop."""

from datetime import UTC, datetime

import pytest

from benchwright_billing.domain import (
    MICROS_PER_CENT,
    BillingAccount,
    billed_micros,
    cents,
    headroom_problem,
    merge_controls,
)
from benchwright_shared.refusal import Refused

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_a_top_up_credits_once_per_idempotency_key() -> None:
    account = BillingAccount("acct")
    first = account.top_up("top_1", 2_500, "hosted", "key-1", NOW)
    again = account.top_up("top_2", 2_500, "hosted", "key-1", NOW)
    assert first == again == "top_1"
    assert account.credits_micros == 2_500 * MICROS_PER_CENT
    account.top_up("top_3", 100, "hosted", None, NOW)
    assert account.credits_micros == 2_600 * MICROS_PER_CENT
    for bad in (0, 99, 10_000_001):
        with pytest.raises(Refused) as refused:
            account.top_up("top_x", bad, "hosted", None, NOW)
        assert refused.value.field == "amount_cents"


def test_controls_merge_and_refuse_what_cannot_hold() -> None:
    merged = merge_controls({}, {"monthly_cap_cents": 10_000}, payments=False)
    merged = merge_controls(merged, {"alert_enabled": True, "alert_at_cap_pct": 80}, payments=False)
    assert merged == {"monthly_cap_cents": 10_000, "alert_enabled": True, "alert_at_cap_pct": 80}
    refusals = [
        ({"auto_refill_enabled": True}, False, "auto_refill_enabled"),
        ({"auto_refill_enabled": True}, True, "auto_refill_amount_cents"),
        ({"alert_enabled": True}, False, "alert_at_cap_pct"),
        ({"colour": "red"}, False, "colour"),
    ]
    for changes, payments, field in refusals:
        with pytest.raises(Refused) as refused:
            merge_controls({}, changes, payments=payments)
        assert refused.value.field == field
    full = {
        "auto_refill_enabled": True,
        "auto_refill_amount_cents": 2_500,
        "auto_refill_threshold_cents": 500,
    }
    assert merge_controls({}, full, payments=True)["auto_refill_enabled"] is True


def test_what_a_run_costs_the_balance_and_when_runs_stop() -> None:
    # The platform's part with the markup; the model's spend is on the user's key.
    assert billed_micros(sandbox_micros=10_000, driver_micros=5_000, markup=1.2) == 18_000
    assert (cents(4_999), cents(5_000), cents(15_000)) == (0, 1, 2)
    assert headroom_problem(balance_micros=1, month_micros=0, monthly_cap_cents=None) is None
    assert (
        headroom_problem(balance_micros=0, month_micros=0, monthly_cap_cents=None)
        == "balance_exhausted"
    )
    assert (
        headroom_problem(balance_micros=10**6, month_micros=10**6, monthly_cap_cents=100)
        == "monthly_cap_reached"
    )
    assert (
        headroom_problem(balance_micros=10**6, month_micros=10**6 - 1, monthly_cap_cents=100)
        is None
    )
