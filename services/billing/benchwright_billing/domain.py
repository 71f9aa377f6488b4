"""Billing rules: how costs add up, what an account holds, when it is alerted and
refilled. No I/O here."""

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from benchwright_shared.refusal import Refused


@dataclass(frozen=True)
class CostLine:
    """One cost-bearing fact: who, which run, from which source, how much."""

    account: str
    run_id: str
    source: str  # one of SOURCES
    micros: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


# ``model``: the SUT's calls; ``judge``: the run's judges' (decision 0061), paid like the
# model's by the account's provider key; ``proxy_linger``: its calls that finished after the run's
# key was revoked; ``narration``: the run-summary LLM's (none today: narration asks no
# model); ``sandbox`` and ``driver``: the platform's own spend.
SOURCES = ("model", "judge", "sandbox", "driver", "narration", "proxy_linger")


def validate(line: CostLine) -> CostLine:
    if line.source not in SOURCES:
        raise ValueError(f"unknown cost source {line.source!r}")
    if line.micros < 0:
        raise ValueError("a cost is never negative")
    return line


# -- an account's money ----------------------------------------------------------------

# Cents per micro-dollar: the API shows cents, the ledger counts micro-dollars.
MICROS_PER_CENT = 10_000


def cents(micros: int) -> int:
    """Micro-dollars to cents, half up: what a person reads on a statement."""
    return (micros + MICROS_PER_CENT // 2) // MICROS_PER_CENT


def billed_micros(
    sandbox_micros: int, driver_micros: int, markup: float, narration_micros: int = 0
) -> int:
    """What a run takes from the balance: the platform's part (sandbox, Driver and
    narration) with the markup; the model's spend is paid by the account's own
    provider key."""
    return round((sandbox_micros + driver_micros + narration_micros) * markup)


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
    """The controls after ``changes``; ``Refused`` for a change that cannot hold."""
    unknown = sorted(set(changes) - CONTROL_FIELDS)
    if unknown:
        raise Refused(
            400, "unknown control", f"no billing control {unknown[0]!r}", field=unknown[0]
        )
    merged = {**current, **changes}
    if merged.get("auto_refill_enabled"):
        if not payments:
            raise Refused(
                400,
                "payment method required",
                "auto-refill needs a saved payment method; this deployment has no payment "
                "provider (BW_PAYMENT_PROVIDER): top up with POST /v1/billing/topups instead",
                field="auto_refill_enabled",
                code="no_payment_provider",
            )
        for needed in ("auto_refill_amount_cents", "auto_refill_threshold_cents"):
            if merged.get(needed) is None:
                raise Refused(400, "incomplete auto-refill", f"set {needed}", field=needed)
    if merged.get("alert_enabled") and merged.get("alert_at_cap_pct") is None:
        raise Refused(400, "incomplete alert", "set alert_at_cap_pct", field="alert_at_cap_pct")
    return merged


def period_of(at: datetime) -> str:
    """The month (UTC) a moment belongs to, ``YYYY-MM``: the unit of the monthly cap."""
    return at.astimezone(UTC).strftime("%Y-%m")


def cap_thresholds(controls: dict[str, object]) -> list[int]:
    """The percentages of the monthly cap the account hears of: its ``alert_at_cap_pct``
    and the cap itself (where its runs stop), when alerts are on and a cap is set."""
    if not controls.get("alert_enabled") or controls.get("monthly_cap_cents") is None:
        return []
    pct = controls.get("alert_at_cap_pct")
    return sorted({int(str(pct)), 100}) if pct is not None else [100]


def thresholds_reached(month_micros: int, cap_cents: int, thresholds: list[int]) -> list[int]:
    """Which of ``thresholds`` (percent of ``cap_cents``) this month's spend has reached.
    Nothing is reached before anything is spent (a cap of 0 alerts on the first cent)."""
    if month_micros <= 0:
        return []
    return [p for p in thresholds if month_micros * 100 >= p * cap_cents * MICROS_PER_CENT]


def alert_id(*parts: object) -> str:
    """A stable id: two copies that notice the same crossing name the same alert."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return f"alrt_{digest[:24]}"


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
        # Alerts raised, oldest first (``BillingAlert``-shaped dicts), and the crossings
        # they were for (``<period>:<pct>:<cap cents>``), so each fires once.
        self.alerts: list[dict[str, Any]] = []
        self.alerted: dict[str, str] = {}
        # Auto-refills by id: amount, status (pending, succeeded, declined), the
        # provider's reference. A declined one stops refills until a top-up or a
        # change of the controls (a new card, say) clears ``refill_blocked``.
        self.refills: dict[str, dict[str, Any]] = {}
        self.refill_blocked = False

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
                raise Refused(
                    409,
                    "idempotency key reused",
                    "this Idempotency-Key was used for a different top-up",
                    field="Idempotency-Key",
                    code="idempotency_key_reused",
                )
            return first
        if not 100 <= amount_cents <= 10_000_000:
            raise Refused(
                400,
                "bad amount",
                "a top-up is between 100 and 10,000,000 cents",
                field="amount_cents",
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
        self.refill_blocked = False

    def update_controls(self, changes: dict[str, object], *, payments: bool) -> None:
        self._controls_set(controls=merge_controls(self.controls, changes, payments=payments))

    @event("ControlsSet")
    def _controls_set(self, controls: dict[str, object]) -> None:
        self.controls = dict(controls)
        self.refill_blocked = False

    # -- alerts and auto-refill ----------------------------------------------------------
    @property
    def watched(self) -> bool:
        """Whether spend can make this account hear of something or be refilled."""
        return bool(cap_thresholds(self.controls)) or bool(self.controls.get("auto_refill_enabled"))

    def pending_refill(self) -> dict[str, Any] | None:
        """The refill asked for and not yet answered by the provider, if any."""
        for refill_id, refill in self.refills.items():
            if refill["status"] == "pending":
                return {"refill_id": refill_id, **refill}
        return None

    def watch(
        self, *, balance_micros: int, month_micros: int, now: datetime, refill_id: str | None
    ) -> dict[str, Any] | None:
        """Do what the account's money calls for now; the refill to charge, if any.

        Each threshold of the monthly cap reached this month is alerted once
        (``cap_threshold``); with auto-refill on and the balance below its
        threshold, a refill of ``auto_refill_amount_cents`` is asked for under
        ``refill_id`` (the provider's idempotency key), unless one is pending
        already or a declined one has not been dealt with. No ``refill_id``: no
        payment provider to charge now, so no refill is asked for.
        """
        period = period_of(now)
        cap = self.controls.get("monthly_cap_cents")
        if cap is not None:
            cap_cents = int(str(cap))
            for pct in thresholds_reached(month_micros, cap_cents, cap_thresholds(self.controls)):
                crossing = f"{period}:{pct}:{cap_cents}"
                if crossing in self.alerted:
                    continue
                spent = cents(month_micros)
                self._alert_raised(
                    alert={
                        "id": alert_id(self.account, crossing),
                        "kind": "cap_threshold",
                        "account": self.account,
                        "period": period,
                        "threshold_pct": pct,
                        "month_spent": {"amount_cents": spent, "currency": "USD"},
                        "monthly_cap": {"amount_cents": cap_cents, "currency": "USD"},
                        "balance": {"amount_cents": cents(balance_micros), "currency": "USD"},
                        "detail": f"this month's spend ({spent} cents) reached {pct}% of the "
                        f"monthly cap ({cap_cents} cents)"
                        + ("; runs stop until the cap is raised" if pct >= 100 else ""),
                        "created_at": now.isoformat(),
                    },
                    crossing=crossing,
                )
        pending = self.pending_refill()
        if pending is not None:
            return pending
        if (
            refill_id is not None
            and self.controls.get("auto_refill_enabled")
            and not self.refill_blocked
            and balance_micros
            < int(str(self.controls.get("auto_refill_threshold_cents") or 0)) * MICROS_PER_CENT
        ):
            amount = int(str(self.controls["auto_refill_amount_cents"]))
            self._refill_requested(refill_id=refill_id, amount_cents=amount, at=now)
            return self.pending_refill()
        return None

    def settle_refill(
        self,
        refill_id: str,
        *,
        succeeded: bool,
        reference: str,
        detail: str,
        provider: str,
        balance_micros: int,
        month_micros: int,
        at: datetime,
    ) -> None:
        """Record the provider's answer to a pending refill (a repeated answer is ignored).

        A success credits the amount; a decline blocks further refills and raises
        a ``refill_declined`` alert, whether or not the account asked for alerts.
        """
        refill = self.refills.get(refill_id)
        if refill is None or refill["status"] != "pending":
            return
        if succeeded:
            self._refilled(refill_id=refill_id, reference=reference, provider=provider, at=at)
            return
        self._refill_declined(refill_id=refill_id, reference=reference, detail=detail, at=at)
        amount = int(refill["amount_cents"])
        cap = self.controls.get("monthly_cap_cents")
        self._alert_raised(
            alert={
                "id": alert_id(self.account, "refill", refill_id),
                "kind": "refill_declined",
                "account": self.account,
                "period": period_of(at),
                "threshold_pct": None,
                "month_spent": {"amount_cents": cents(month_micros), "currency": "USD"},
                "monthly_cap": (
                    {"amount_cents": int(str(cap)), "currency": "USD"} if cap is not None else None
                ),
                "balance": {"amount_cents": cents(balance_micros), "currency": "USD"},
                "detail": f"the auto-refill of {amount} cents was declined by {provider}: "
                f"{detail or 'no reason given'}; no further refills until a top-up or a "
                "change of the billing controls",
                "created_at": at.isoformat(),
                "refill_id": refill_id,
                "refill_amount": {"amount_cents": amount, "currency": "USD"},
                "provider_reference": reference or None,
            },
            crossing=f"refill:{refill_id}",
        )

    @event("AlertRaised")
    def _alert_raised(self, alert: dict[str, Any], crossing: str) -> None:
        self.alerts.append(dict(alert))
        self.alerted[crossing] = str(alert["id"])

    @event("RefillRequested")
    def _refill_requested(self, refill_id: str, amount_cents: int, at: datetime) -> None:
        self.refills[refill_id] = {
            "amount_cents": amount_cents,
            "status": "pending",
            "reference": None,
            "provider": None,
            "requested_at": at.isoformat(),
            "settled_at": None,
        }

    @event("Refilled")
    def _refilled(self, refill_id: str, reference: str, provider: str, at: datetime) -> None:
        refill = self.refills[refill_id]
        refill.update(status="succeeded", reference=reference, provider=provider)
        refill["settled_at"] = at.isoformat()
        self.credits_micros += int(refill["amount_cents"]) * MICROS_PER_CENT

    @event("RefillDeclined")
    def _refill_declined(self, refill_id: str, reference: str, detail: str, at: datetime) -> None:
        refill = self.refills[refill_id]
        refill.update(status="declined", reference=reference or None, detail=detail)
        refill["settled_at"] = at.isoformat()
        self.refill_blocked = True
