"""Billing's application: top-ups and controls in its event store, spend from the ledger.

Reads combine the two: the account aggregate holds what came in (top-ups) and
what the account allows itself (controls); the ledger view holds what went out.
"""

import csv
import io
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application

from benchwright_billing.domain import (
    BillingAccount,
    BillingError,
    billed_micros,
    cents,
    headroom_problem,
)
from benchwright_shared.contracts.billing import (
    BalanceView,
    BillingControls,
    Money,
    TopupView,
    Transaction,
    UsageDay,
)


def money(micros: int) -> Money:
    return Money(amount_cents=cents(micros))


class BillingApplication(Application[uuid.UUID]):
    name = "billing"

    def __init__(self, env: dict[str, str], *, markup: float, enforce: bool) -> None:
        super().__init__(env=env)
        self.markup = markup
        self.enforce = enforce
        # No payment provider in a self-hosted deployment: a top-up is a bookkeeping
        # credit, applied at once, and auto-refill (which needs a card) is refused.
        self.payments = False

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
            raise BillingError(404, "top-up not found", f"no top-up {topup_id!r}", "topup_id")
        return TopupView(
            id=topup_id,
            amount=Money(amount_cents=found["amount_cents"]),
            status="succeeded",
            flow=found["flow"],
            created_at=datetime.fromisoformat(found["at"]),
        )

    def run_billed(self, run: dict[str, Any]) -> int:
        return billed_micros(run["sandbox"], run["driver"], self.markup)

    def balance(
        self, account: str, runs: list[dict[str, Any]], month_days: list[dict[str, Any]]
    ) -> BalanceView:
        holder = self.account(account)
        left = holder.credits_micros - sum(self.run_billed(r) for r in runs)
        month = self.billed_by_source(month_days)
        controls = BillingControls.model_validate(holder.controls)
        cap = controls.monthly_cap_cents
        stop = headroom_problem(balance_micros=left, month_micros=month, monthly_cap_cents=cap)
        return BalanceView(
            account=account,
            balance=money(left),
            month_spent=money(month),
            monthly_cap=Money(amount_cents=cap) if cap is not None else None,
            enforced=self.enforce,
            stop_reason=stop if self.enforce else None,
            controls=controls,
        )

    def billed_by_source(self, days: list[dict[str, Any]]) -> int:
        by_source = {"sandbox": 0, "driver": 0}
        for row in days:
            if row["source"] in by_source:
                by_source[row["source"]] += int(row["micros"] or 0)
        return billed_micros(by_source["sandbox"], by_source["driver"], self.markup)

    def transactions(self, account: str, runs: list[dict[str, Any]]) -> list[Transaction]:
        """Every credit and run debit, newest first."""
        out = [
            Transaction(
                id=topup_id,
                kind="topup",
                amount=Money(amount_cents=t["amount_cents"]),
                reference_id=topup_id,
                created_at=datetime.fromisoformat(t["at"]),
                description=f"top-up ({t['flow']})",
            )
            for topup_id, t in self.account(account).topups.items()
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
                        description="run spend: sandbox and Driver",
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
            "sandbox_micros",
            "driver_micros",
            "billed_cents",
        ]
    )
    for run in runs:
        billed = billed_micros(run["sandbox"], run["driver"], markup)
        writer.writerow(
            [run["run_id"], run["at"], run["model"], run["sandbox"], run["driver"], cents(billed)]
        )
    return out.getvalue()
