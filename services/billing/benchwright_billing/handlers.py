"""Billing's questions, answered over request/reply.

A refusal is raised, never caught here: the bus answers it as the reply's ``problem``.
"""

from datetime import UTC, date, datetime, timedelta

from faststream.nats import NatsRouter

from benchwright_billing.application import (
    BillingApplication,
    month_start,
    runs_csv,
    transactions_csv,
)
from benchwright_billing.projections import account_days, account_runs
from benchwright_billing.watch import AccountWatch
from benchwright_shared import subjects
from benchwright_shared.contracts.billing import (
    BalanceView,
    BillingAlertsPage,
    BillingExport,
    CreateTopup,
    ExportBilling,
    ListBillingAlerts,
    ListTransactions,
    ReadBalance,
    ReadTopup,
    ReadUsageTrend,
    TopupView,
    TransactionsPage,
    UpdateBillingControls,
    UsageTrend,
)
from benchwright_shared.projection_runner import ProjectionHost
from benchwright_shared.refusal import Refused
from benchwright_shared.store import BlockingStore


def register(
    router: NatsRouter,
    app: BillingApplication,
    store: BlockingStore,
    views: ProjectionHost,
    watch: AccountWatch,
) -> None:
    async def balance(account: str) -> BalanceView:
        runs = await views.read(lambda cur: account_runs(cur, account))
        month = await views.read(
            lambda cur: account_days(cur, account, month_start(datetime.now(UTC)))
        )
        return await store.run(app.balance, account, runs, month)

    @router.subscriber(subjects.READ_BALANCE, queue="billing")
    async def read_balance(query: ReadBalance) -> BalanceView:
        return await balance(query.account)

    @router.subscriber(subjects.UPDATE_BILLING_CONTROLS, queue="billing")
    async def update_controls(command: UpdateBillingControls) -> BalanceView:
        await store.run(app.update_controls, command.account, command.changes)
        # A cap already passed alerts now; a balance already low refills now.
        watch.touch(command.account)
        return await balance(command.account)

    @router.subscriber(subjects.CREATE_TOPUP, queue="billing")
    async def create_topup(command: CreateTopup) -> TopupView:
        topup = await store.run(
            app.top_up, command.account, command.amount_cents, command.flow, command.idempotency_key
        )
        watch.touch(command.account)  # a top-up lifts a declined refill's block
        return topup

    @router.subscriber(subjects.LIST_BILLING_ALERTS, queue="billing")
    async def list_alerts(query: ListBillingAlerts) -> BillingAlertsPage:
        return BillingAlertsPage(data=await store.run(app.alerts, query.account, query.limit))

    @router.subscriber(subjects.READ_TOPUP, queue="billing")
    async def read_topup(query: ReadTopup) -> TopupView:
        return await store.run(app.topup, query.account, query.topup_id)

    @router.subscriber(subjects.LIST_TRANSACTIONS, queue="billing")
    async def list_transactions(query: ListTransactions) -> TransactionsPage:
        runs = await views.read(lambda cur: account_runs(cur, query.account))
        found = await store.run(app.transactions, query.account, runs)
        if query.kind:
            found = [t for t in found if t.kind == query.kind]
        try:
            start = int(query.page_token or 0)
        except ValueError:
            raise Refused(
                400, "bad page token", "page_token is not one we issued", field="page_token"
            ) from None
        end = start + query.limit
        return TransactionsPage(
            data=found[start:end], next_page_token=str(end) if end < len(found) else None
        )

    @router.subscriber(subjects.READ_USAGE_TREND, queue="billing")
    async def usage_trend(query: ReadUsageTrend) -> UsageTrend:
        since: date = datetime.now(UTC).date() - timedelta(days=query.days - 1)
        rows = await views.read(lambda cur: account_days(cur, query.account, since.isoformat()))
        return UsageTrend(data=app.trend(rows, since, query.days))

    @router.subscriber(subjects.EXPORT_BILLING, queue="billing")
    async def export(query: ExportBilling) -> BillingExport:
        runs = await views.read(lambda cur: account_runs(cur, query.account))
        if query.type == "runs":
            return BillingExport(csv=runs_csv(runs, app.markup))
        return BillingExport(
            csv=transactions_csv(await store.run(app.transactions, query.account, runs))
        )
