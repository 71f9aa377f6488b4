"""``/v1/billing``: balance, controls, top-ups, transactions, alerts, usage trend, export.

The gateway checks the caller and the body; the billing service owns the money
and answers over NATS request/reply.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.operations import raise_for
from benchwright_shared.api.account import (
    Balance,
    BillingAlertList,
    Topup,
    TransactionList,
    UsageTrendList,
)
from benchwright_shared.bus import ask
from benchwright_shared.contracts.billing import (
    BalanceView,
    BillingAlertsPage,
    BillingControls,
    BillingExport,
    CreateTopup,
    ExportBilling,
    ListBillingAlerts,
    ListTransactions,
    ReadBalance,
    ReadTopup,
    ReadUsageTrend,
    TopupView,
    TransactionKind,
    TransactionsPage,
    UpdateBillingControls,
    UsageTrend,
)

TIMEOUT_S = 10.0


class TopupIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    amount_cents: int = Field(ge=100, le=10_000_000)
    flow: Literal["hosted"] = "hosted"
    idempotency_key: str | None = Field(default=None, max_length=255)


def _balance(view: BalanceView) -> Balance:
    return Balance.model_validate(view.model_dump(exclude={"problem"}))


def _topup(view: TopupView) -> Topup:
    return Topup.model_validate(view.model_dump(exclude={"problem"}))


router = APIRouter(prefix="/v1/billing", tags=["billing"])


@router.get("/balance")
async def balance(ctx: Ctx, caller: Caller) -> Balance:
    """The account's balance, this month's spend and its cap."""
    caller.require("billing:read")
    view = await ask(ctx.bus(), ReadBalance(account=caller.account), BalanceView)
    raise_for(view.problem)
    return _balance(view)


@router.patch("/controls")
async def update_controls(body: BillingControls, ctx: Ctx, caller: Caller) -> Balance:
    """Change the monthly cap, auto-refill or alerts; fields left out keep their value."""
    caller.require("billing:write")
    changes = body.model_dump(exclude_unset=True)
    command = UpdateBillingControls(account=caller.account, changes=changes)
    view = await ask(ctx.bus(), command, BalanceView, timeout=TIMEOUT_S)
    raise_for(view.problem)
    return _balance(view)


@router.post("/topups", status_code=201)
async def create_topup(
    body: TopupIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Topup:
    """Add money to the balance. Without a payment provider the credit applies at once."""
    caller.require("billing:write")
    command = CreateTopup(
        account=caller.account,
        amount_cents=body.amount_cents,
        flow=body.flow,
        idempotency_key=idempotency_key or body.idempotency_key,
    )
    view = await ask(ctx.bus(), command, TopupView, timeout=TIMEOUT_S)
    raise_for(view.problem)
    return _topup(view)


@router.get("/topups/{topup_id}")
async def get_topup(topup_id: str, ctx: Ctx, caller: Caller) -> Topup:
    """One top-up, by id: whether its payment went through."""
    caller.require("billing:read")
    query = ReadTopup(account=caller.account, topup_id=topup_id)
    view = await ask(ctx.bus(), query, TopupView, timeout=TIMEOUT_S)
    raise_for(view.problem)
    return _topup(view)


@router.get("/transactions")
async def transactions(
    ctx: Ctx,
    caller: Caller,
    kind: TransactionKind | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    page_token: str | None = None,
) -> TransactionList:
    """Top-ups, auto-refills (``reference_id``: the provider's charge) and per-run
    debits (``trace_debit``, ``reference_id``: the run), newest first."""
    caller.require("billing:read")
    query = ListTransactions(account=caller.account, kind=kind, limit=limit, page_token=page_token)
    page = await ask(ctx.bus(), query, TransactionsPage, timeout=TIMEOUT_S)
    raise_for(page.problem)
    return TransactionList(data=page.data, next_page_token=page.next_page_token)


@router.get("/alerts")
async def alerts(
    ctx: Ctx, caller: Caller, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> BillingAlertList:
    """Alerts about the account's money, newest first: a threshold of the monthly cap
    reached (``cap_threshold``, once per month each) or a declined auto-refill
    (``refill_declined``). Each is also delivered to webhooks for ``billing.alert``."""
    caller.require("billing:read")
    query = ListBillingAlerts(account=caller.account, limit=limit)
    page = await ask(ctx.bus(), query, BillingAlertsPage, timeout=TIMEOUT_S)
    raise_for(page.problem)
    return BillingAlertList(data=page.data)


@router.get("/usage_trend")
async def usage_trend(
    ctx: Ctx, caller: Caller, days: Annotated[int, Query(ge=1, le=366)] = 30
) -> UsageTrendList:
    """Spend per day (UTC): billed, model, and how many runs."""
    caller.require("billing:read")
    query = ReadUsageTrend(account=caller.account, days=days)
    trend = await ask(ctx.bus(), query, UsageTrend, timeout=TIMEOUT_S)
    return UsageTrendList(data=trend.data)


@router.get(
    "/export",
    response_class=Response,
    responses={
        200: {
            "description": "CSV, with a header row.",
            "content": {"text/csv": {"schema": {"type": "string"}}},
        }
    },
)
async def export(
    ctx: Ctx, caller: Caller, type: Literal["transactions", "runs"] = "transactions"
) -> Response:
    """The account's transactions (or per-run spend) as CSV."""
    caller.require("billing:read")
    query = ExportBilling(account=caller.account, type=type)
    found = await ask(ctx.bus(), query, BillingExport, timeout=TIMEOUT_S)
    raise_for(found.problem)
    return Response(
        found.csv,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="benchwright-{type}.csv"'},
    )
