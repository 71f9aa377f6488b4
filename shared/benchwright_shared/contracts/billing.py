"""Billing questions: an account's balance, controls, top-ups, transactions, exports,
alerts; and the one event billing publishes, ``BillingAlertRaised``.

Request/reply to the billing service. Amounts cross the API in cents (the guide's
unit for money held); the ledger itself counts micro-dollars.
"""

from datetime import date, datetime
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchwright_shared import subjects
from benchwright_shared.contracts.base import Contract, Problem

# ``auto_refill``: a charge of the account's payment method when its balance ran low.
TransactionKind = Literal["topup", "trace_debit", "auto_refill"]
# ``cap_threshold``: this month's spend reached ``alert_at_cap_pct`` (or all) of the
# monthly cap; ``refill_declined``: the payment provider refused an auto-refill.
AlertKind = Literal["cap_threshold", "refill_declined"]
ExportType = Literal["transactions", "runs"]


class Money(BaseModel):
    amount_cents: int
    currency: str = "USD"


class BillingControls(BaseModel):
    """What an account allows itself to spend, and when it refills."""

    model_config = ConfigDict(extra="forbid")

    monthly_cap_cents: int | None = Field(default=None, ge=0)
    auto_refill_enabled: bool = False
    auto_refill_amount_cents: int | None = Field(default=None, ge=100)
    auto_refill_threshold_cents: int | None = Field(default=None, ge=0)
    alert_enabled: bool = False
    alert_at_cap_pct: int | None = Field(default=None, ge=1, le=100)


class ReadBalance(Contract):
    subject: ClassVar[str] = subjects.READ_BALANCE

    account: str


class BalanceView(BaseModel):
    account: str = ""
    balance: Money = Money(amount_cents=0)
    month_spent: Money = Money(amount_cents=0)
    monthly_cap: Money | None = None
    # Whether launches need the floor and runs halt when money runs out.
    enforced: bool = False
    launch_floor: Money = Money(amount_cents=100)
    # Why an enforcing deployment stops this account's runs now (a halt reason).
    stop_reason: str | None = None
    controls: BillingControls = BillingControls()
    # The payment provider auto-refill charges (None: auto-refill cannot be enabled).
    payment_provider: str | None = None
    problem: Problem | None = None


class UpdateBillingControls(Contract):
    subject: ClassVar[str] = subjects.UPDATE_BILLING_CONTROLS

    account: str
    # Only the fields the caller named; the rest keep their values.
    changes: dict[str, object]


class CreateTopup(Contract):
    subject: ClassVar[str] = subjects.CREATE_TOPUP

    account: str
    amount_cents: int
    flow: str = "hosted"
    idempotency_key: str | None = None


class ReadTopup(Contract):
    subject: ClassVar[str] = subjects.READ_TOPUP

    account: str
    topup_id: str


class TopupView(BaseModel):
    id: str = ""
    amount: Money = Money(amount_cents=0)
    status: Literal["pending", "succeeded", "failed"] = "pending"
    flow: str = "hosted"
    # Where a person pays, when a payment provider is configured.
    checkout_url: str | None = None
    created_at: datetime | None = None
    problem: Problem | None = None


class ListTransactions(Contract):
    subject: ClassVar[str] = subjects.LIST_TRANSACTIONS

    account: str
    kind: TransactionKind | None = None
    limit: int = Field(default=100, ge=1, le=1000)
    page_token: str | None = None


class Transaction(BaseModel):
    id: str
    kind: TransactionKind
    # Signed: a top-up or a refill adds, a run's debit subtracts.
    amount: Money
    # The run (``trace_debit``), the top-up, or the payment provider's charge (``auto_refill``).
    reference_id: str
    created_at: datetime
    description: str = ""


class TransactionsPage(BaseModel):
    data: list[Transaction] = Field(default_factory=list)
    next_page_token: str | None = None
    problem: Problem | None = None


class ReadUsageTrend(Contract):
    subject: ClassVar[str] = subjects.READ_USAGE_TREND

    account: str
    days: int = Field(default=30, ge=1, le=366)


class UsageDay(BaseModel):
    date: date
    billed: Money
    model: Money
    runs: int


class UsageTrend(BaseModel):
    data: list[UsageDay] = Field(default_factory=list)


class ExportBilling(Contract):
    subject: ClassVar[str] = subjects.EXPORT_BILLING

    account: str
    type: ExportType = "transactions"


class BillingExport(BaseModel):
    csv: str = ""
    problem: Problem | None = None


class BillingAlert(BaseModel):
    """Something about an account's money it asked to hear of (``alert_enabled``),
    or that it must hear of (a declined auto-refill)."""

    id: str
    kind: AlertKind
    account: str
    # The month it belongs to (``YYYY-MM``, UTC): a threshold alerts once per month.
    period: str
    # ``cap_threshold``: the percentage of the monthly cap reached.
    threshold_pct: int | None = None
    month_spent: Money
    monthly_cap: Money | None = None
    balance: Money
    detail: str = ""
    created_at: datetime
    # ``refill_declined``: the refill, what it asked for, and the provider's reference.
    refill_id: str | None = None
    refill_amount: Money | None = None
    provider_reference: str | None = None


class BillingAlertRaised(Contract):
    """An alert billing recorded, relayed from its store (``Nats-Msg-Id`` =
    ``billing:<notification id>``); its ``alert.id`` is stable across redeliveries."""

    subject: ClassVar[str] = subjects.BILLING_ALERT_RAISED

    alert: BillingAlert


class ListBillingAlerts(Contract):
    subject: ClassVar[str] = subjects.LIST_BILLING_ALERTS

    account: str
    limit: int = Field(default=100, ge=1, le=1000)


class BillingAlertsPage(BaseModel):
    data: list[BillingAlert] = Field(default_factory=list)
    problem: Problem | None = None
