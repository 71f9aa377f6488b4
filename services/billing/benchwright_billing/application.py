"""Billing's application: top-ups, controls, alerts and refills in its event store,
spend from the ledger.

Reads combine the two: the account aggregate holds what came in (top-ups,
refills), what the account allows itself (controls) and what it was told
(alerts); the ledger view holds what went out. Alerts are relayed from the
store to ``bw.evt.billing.alert_raised.v1`` (``translate_notification``).
"""

import csv
import io
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import Notification

from benchwright_billing.domain import (
    MICROS_PER_CENT,
    BillingAccount,
    billed_micros,
    cents,
    headroom_problem,
)
from benchwright_billing.ports import Charge
from benchwright_shared.contracts.billing import (
    BalanceView,
    BillingAlert,
    BillingAlertRaised,
    BillingControls,
    Money,
    TopupView,
    Transaction,
    UsageDay,
)
from benchwright_shared.refusal import Refused
from benchwright_shared.relay import RelayedApplication


def money(micros: int) -> Money:
    return Money(amount_cents=cents(micros))


def month_start(now: datetime) -> str:
    """The first day (UTC) of ``now``'s month, ISO: where this month's spend starts."""
    return now.astimezone(UTC).date().replace(day=1).isoformat()


class BillingApplication(RelayedApplication):
    name = "billing"

    def __init__(
        self,
        env: dict[str, str],
        *,
        markup: float,
        enforce: bool,
        payment_provider: str | None = None,
    ) -> None:
        super().__init__(env=env)
        self.markup = markup
        self.enforce = enforce
        # The provider auto-refills charge (``BW_PAYMENT_PROVIDER``). Without one (a
        # self-hosted deployment) a top-up is a bookkeeping credit, applied at once,
        # and auto-refill, which needs a card, is refused.
        self.payment_provider = payment_provider

    @property
    def payments(self) -> bool:
        return self.payment_provider is not None

    def account(self, account: str) -> BillingAccount:
        try:
            found: BillingAccount = self.repository.get(BillingAccount.create_id(account))
        except AggregateNotFoundError:
            return BillingAccount(account)
        return found

    # -- writes ---------------------------------------------------------------------------
    def top_up(self, account: str, amount_cents: int, flow: str, key: str | None) -> TopupView:
        holder = self.account(account)
        topup_id = holder.top_up(
            f"top_{uuid.uuid4().hex[:24]}", amount_cents, flow, key, datetime.now(UTC)
        )
        self.save(holder)
        return self.topup(account, topup_id)

    def update_controls(self, account: str, changes: dict[str, object]) -> None:
        holder = self.account(account)
        holder.update_controls(changes, payments=self.payments)
        self.save(holder)

    # -- reads ----------------------------------------------------------------------------
    def topup(self, account: str, topup_id: str) -> TopupView:
        found = self.account(account).topups.get(topup_id)
        if found is None:
            raise Refused(404, "top-up not found", f"no top-up {topup_id!r}", field="topup_id")
        return TopupView(
            id=topup_id,
            amount=Money(amount_cents=found["amount_cents"]),
            status="succeeded",
            flow=found["flow"],
            created_at=datetime.fromisoformat(found["at"]),
        )

    def run_billed(self, run: dict[str, Any]) -> int:
        return billed_micros(run["sandbox"], run["driver"], self.markup, run.get("narration", 0))

    def _left_and_month(
        self,
        holder: BillingAccount,
        runs: list[dict[str, Any]],
        month_days: list[dict[str, Any]],
    ) -> tuple[int, int]:
        """(the balance, this month's billed spend), in micro-dollars."""
        left = holder.credits_micros - sum(self.run_billed(r) for r in runs)
        return left, self.billed_by_source(month_days)

    def balance(
        self, account: str, runs: list[dict[str, Any]], month_days: list[dict[str, Any]]
    ) -> BalanceView:
        holder = self.account(account)
        left, month = self._left_and_month(holder, runs, month_days)
        controls = BillingControls.model_validate(holder.controls)
        cap = controls.monthly_cap_cents
        stop = headroom_problem(balance_micros=left, month_micros=month, monthly_cap_cents=cap)
        # Shown as the statement adds up: credits less each debit as listed, in cents
        # (rounding the sum instead could differ from the transactions by a cent).
        statement = holder.credits_micros // MICROS_PER_CENT - sum(
            cents(self.run_billed(r)) for r in runs
        )
        return BalanceView(
            account=account,
            balance=Money(amount_cents=statement),
            month_spent=money(month),
            monthly_cap=Money(amount_cents=cap) if cap is not None else None,
            enforced=self.enforce,
            stop_reason=stop if self.enforce else None,
            controls=controls,
            payment_provider=self.payment_provider,
        )

    def billed_by_source(self, days: list[dict[str, Any]]) -> int:
        by_source = {"sandbox": 0, "driver": 0, "narration": 0}
        for row in days:
            if row["source"] in by_source:
                by_source[row["source"]] += int(row["micros"] or 0)
        return billed_micros(
            by_source["sandbox"], by_source["driver"], self.markup, by_source["narration"]
        )

    # -- alerts and auto-refill -----------------------------------------------------------
    def watched(self, account: str) -> bool:
        """Whether spend can alert or refill this account (else a check is skipped)."""
        return self.account(account).watched

    def check(
        self,
        account: str,
        runs: list[dict[str, Any]],
        month_days: list[dict[str, Any]],
        now: datetime,
    ) -> dict[str, Any] | None:
        """Raise the alerts the account's spend calls for and ask for an auto-refill
        when its balance ran below the threshold; the refill to charge, if any
        (``refill_id``, ``amount_cents``), newly asked for or still unanswered."""
        holder = self.account(account)
        if not holder.watched and holder.pending_refill() is None:
            return None
        left, month = self._left_and_month(holder, runs, month_days)
        refill_id = f"rfl_{uuid.uuid4().hex[:24]}" if self.payments else None
        refill = holder.watch(balance_micros=left, month_micros=month, now=now, refill_id=refill_id)
        if holder.pending_events:
            self.save(holder)
        return refill

    def settle_refill(
        self,
        account: str,
        refill_id: str,
        charge: Charge,
        runs: list[dict[str, Any]],
        month_days: list[dict[str, Any]],
        now: datetime,
    ) -> None:
        """Record the provider's answer to a refill: a credit, or a decline and its alert."""
        holder = self.account(account)
        left, month = self._left_and_month(holder, runs, month_days)
        holder.settle_refill(
            refill_id,
            succeeded=charge.succeeded,
            reference=charge.reference,
            detail=charge.detail,
            provider=self.payment_provider or "",
            balance_micros=left,
            month_micros=month,
            at=now,
        )
        if holder.pending_events:
            self.save(holder)

    def alerts(self, account: str, limit: int = 100) -> list[BillingAlert]:
        """The account's alerts, newest first."""
        found = self.account(account).alerts
        return [BillingAlert.model_validate(a) for a in reversed(found[-limit:])]

    def transactions(self, account: str, runs: list[dict[str, Any]]) -> list[Transaction]:
        """Every credit (top-ups, auto-refills) and run debit, newest first."""
        holder = self.account(account)
        out = [
            Transaction(
                id=topup_id,
                kind="topup",
                amount=Money(amount_cents=t["amount_cents"]),
                reference_id=topup_id,
                created_at=datetime.fromisoformat(t["at"]),
                description=f"top-up ({t['flow']})",
            )
            for topup_id, t in holder.topups.items()
        ]
        out += [
            Transaction(
                id=refill_id,
                kind="auto_refill",
                amount=Money(amount_cents=int(r["amount_cents"])),
                reference_id=str(r["reference"]),
                created_at=datetime.fromisoformat(r["settled_at"]),
                description=f"auto-refill ({r['provider']})",
            )
            for refill_id, r in holder.refills.items()
            if r["status"] == "succeeded"
        ]
        for run in runs:
            billed = self.run_billed(run)
            if billed:
                out.append(
                    Transaction(
                        id=f"txn_{run['run_id']}",
                        kind="trace_debit",
                        amount=Money(amount_cents=-cents(billed)),
                        reference_id=run["run_id"],
                        created_at=datetime.fromisoformat(run["at"]),
                        description="run spend: sandbox, Driver and narration",
                    )
                )
        return sorted(out, key=lambda t: (t.created_at, t.id), reverse=True)

    def trend(self, rows: list[dict[str, Any]], since: date, days: int) -> list[UsageDay]:
        by_day: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_day.setdefault(row["day"], []).append(row)
        out = []
        for offset in range(days):
            day = since + timedelta(days=offset)
            found = by_day.get(day.isoformat(), [])
            model = sum(int(r["micros"] or 0) for r in found if r["source"] == "model")
            out.append(
                UsageDay(
                    date=day,
                    billed=money(self.billed_by_source(found)),
                    model=money(model),
                    runs=max((int(r["runs"]) for r in found), default=0),
                )
            )
        return out


def transactions_csv(transactions: list[Transaction]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "created_at", "kind", "amount_cents", "currency", "reference_id"])
    for t in transactions:
        writer.writerow(
            [
                t.id,
                t.created_at.isoformat(),
                t.kind,
                t.amount.amount_cents,
                t.amount.currency,
                t.reference_id,
            ]
        )
    return out.getvalue()


def runs_csv(runs: list[dict[str, Any]], markup: float) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "run_id",
            "last_cost_at",
            "model_micros",
            "judge_micros",
            "sandbox_micros",
            "driver_micros",
            "billed_cents",
        ]
    )
    for run in runs:
        billed = billed_micros(run["sandbox"], run["driver"], markup, run.get("narration", 0))
        writer.writerow(
            [
                run["run_id"],
                run["at"],
                run["model"],
                run["judge"],
                run["sandbox"],
                run["driver"],
                cents(billed),
            ]
        )
    return out.getvalue()


ALERT_RAISED = "BillingAccount.AlertRaised"


def translate_notification(
    app: Application[Any], notification: Notification
) -> tuple[str, bytes] | None:
    """Relay translator: an account's ``AlertRaised`` becomes ``BillingAlertRaised``;
    every other private event stays private."""
    if not notification.topic.endswith(ALERT_RAISED):
        return None
    event = app.mapper.to_domain_event(notification)
    raised = BillingAlertRaised(alert=BillingAlert.model_validate(event.alert))  # type: ignore[attr-defined]
    return raised.subject, raised.to_bytes()
