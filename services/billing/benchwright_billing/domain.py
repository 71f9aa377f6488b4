"""Billing rules: how costs add up, what an account holds. No I/O here."""

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event


@dataclass(frozen=True)
class CostLine:
    """One cost-bearing fact: who, which run, from which source, how much."""

    account: str
    run_id: str
    source: str  # "model" | "sandbox" | "driver"
    micros: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


SOURCES = ("model", "sandbox", "driver")


def validate(line: CostLine) -> CostLine:
    if line.source not in SOURCES:
        raise ValueError(f"unknown cost source {line.source!r}")
    if line.micros < 0:
        raise ValueError("a cost is never negative")
    return line


# -- an account's money ----------------------------------------------------------------

# Cents per micro-dollar: the API shows cents, the ledger counts micro-dollars.
MICROS_PER_CENT = 10_000


class BillingError(Exception):
    """A refused billing change; ``field`` names what the caller got wrong."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        field: str | None = None,
        *,
        code: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.field = field
        self.code = code


def cents(micros: int) -> int:
    """Micro-dollars to cents, half up: what a person reads on a statement."""
    return (micros + MICROS_PER_CENT // 2) // MICROS_PER_CENT


def billed_micros(sandbox_micros: int, driver_micros: int, markup: float) -> int:
    """What a run takes from the balance: the platform's part (sandbox and Driver)
    with the markup; the model's spend is paid by the account's own provider key."""
    return round((sandbox_micros + driver_micros) * markup)


CONTROL_FIELDS = frozenset(
    {
        "monthly_cap_cents",
        "auto_refill_enabled",
        "auto_refill_amount_cents",
        "auto_refill_threshold_cents",
        "alert_enabled",
        "alert_at_cap_pct",
    }
)


def merge_controls(
    current: dict[str, object], changes: dict[str, object], *, payments: bool
) -> dict[str, object]:
    """The controls after ``changes``; ``BillingError`` for a change that cannot hold."""
    unknown = sorted(set(changes) - CONTROL_FIELDS)
    if unknown:
        raise BillingError(400, "unknown control", f"no billing control {unknown[0]!r}", unknown[0])
    merged = {**current, **changes}
    if merged.get("auto_refill_enabled"):
        if not payments:
            raise BillingError(
                400,
                "payment method required",
                "auto-refill needs a saved payment method; this deployment has no payment "
                "provider (top up with POST /v1/billing/topups instead)",
                "auto_refill_enabled",
            )
        for needed in ("auto_refill_amount_cents", "auto_refill_threshold_cents"):
            if merged.get(needed) is None:
                raise BillingError(400, "incomplete auto-refill", f"set {needed}", needed)
    if merged.get("alert_enabled") and merged.get("alert_at_cap_pct") is None:
        raise BillingError(400, "incomplete alert", "set alert_at_cap_pct", "alert_at_cap_pct")
    return merged


def headroom_problem(
    *, balance_micros: int, month_micros: int, monthly_cap_cents: int | None
) -> str | None:
    """Why an enforcing deployment stops an account's runs now, or None."""
    if balance_micros <= 0:
        return "balance_exhausted"
    if monthly_cap_cents is not None and month_micros >= monthly_cap_cents * MICROS_PER_CENT:
        return "monthly_cap_reached"
    return None


class BillingAccount(Aggregate):
    """One account's credits and controls. Debits are not stored here: they are the
    ledger's cost lines, summed on read, so a cost is recorded once, where it arrives."""

    @staticmethod
    def create_id(account: str) -> uuid.UUID:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"benchwright:billing:{account}")

    @event("Opened")
    def __init__(self, account: str) -> None:
        self.account = account
        self.credits_micros = 0
        self.topups: dict[str, dict[str, Any]] = {}
        self.topup_keys: dict[str, str] = {}  # idempotency key -> topup id
        self.controls: dict[str, object] = {}

    def top_up(
        self, topup_id: str, amount_cents: int, flow: str, key: str | None, at: datetime
    ) -> str:
        """Credit ``amount_cents``; a repeated idempotency key returns the first top-up,
        and is refused when it comes with a different top-up."""
        if key is not None and key in self.topup_keys:
            first = self.topup_keys[key]
            if (self.topups[first]["amount_cents"], self.topups[first]["flow"]) != (
                amount_cents,
                flow,
            ):
                raise BillingError(
                    409,
                    "idempotency key reused",
                    "this Idempotency-Key was used for a different top-up",
                    "Idempotency-Key",
                    code="idempotency_key_reused",
                )
            return first
        if not 100 <= amount_cents <= 10_000_000:
            raise BillingError(
                400, "bad amount", "a top-up is between 100 and 10,000,000 cents", "amount_cents"
            )
        self._topped_up(topup_id=topup_id, amount_cents=amount_cents, flow=flow, key=key, at=at)
        return topup_id

    @event("ToppedUp")
    def _topped_up(
        self, topup_id: str, amount_cents: int, flow: str, key: str | None, at: datetime
    ) -> None:
        self.credits_micros += amount_cents * MICROS_PER_CENT
        self.topups[topup_id] = {"amount_cents": amount_cents, "flow": flow, "at": at.isoformat()}
        if key is not None:
            self.topup_keys[key] = topup_id

    def update_controls(self, changes: dict[str, object], *, payments: bool) -> None:
        self._controls_set(controls=merge_controls(self.controls, changes, payments=payments))

    @event("ControlsSet")
    def _controls_set(self, controls: dict[str, object]) -> None:
        self.controls = dict(controls)
