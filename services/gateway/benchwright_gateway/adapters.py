"""``BusPorts``: the operations' ports (``ports.py``) over the gateway's context.

Questions to other services go over NATS request/reply, commands out durably, the
runs view is read through the gateway's blocking store, and idempotency records
and account settings come from the gateway's own application.
"""

import asyncio
from collections.abc import Callable
from typing import Any

from benchwright_gateway import labels_view
from benchwright_gateway import projections as views
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.ports import LaunchRecord, RunRow
from benchwright_gateway.render import render_run
from benchwright_shared.api.launch import Run
from benchwright_shared.bus import ask, send_command
from benchwright_shared.contracts import (
    BenchmarkResolution,
    Contract,
    GetImpl,
    GetRunCost,
    GetSubsetRows,
    ImplCode,
    ResolveBenchmark,
    RunCost,
    SubsetRows,
)
from benchwright_shared.contracts.billing import BalanceView, ReadBalance
from benchwright_shared.contracts.queries import (
    CheckProviderKeys,
    ModelCallPrices,
    PriceModelCalls,
    ProviderKeys,
)
from benchwright_shared.contracts.registry import ReadSubset, RegistryAnswer

QUERY_TIMEOUT_S = 10.0
# A run is shown without its cost rather than late when billing is slow or down.
COST_TIMEOUT_S = 2.0
# Between reads of the view while waiting for a write to show.
VIEW_POLL_S = 0.05
# How many reads (VIEW_POLL_S apart) a label waits for the view to show it.
LABEL_TRIES = 200


async def run_cost(ctx: GatewayContext, run_id: str) -> RunCost | None:
    try:
        return await ask(ctx.bus(), GetRunCost(run_id=run_id), RunCost, timeout=COST_TIMEOUT_S)
    except Exception:
        return None  # billing is down: show the run, without its cost


async def shown_run(ctx: GatewayContext, row: RunRow) -> dict[str, Any]:
    """A run as the API shows it, its cost included when billing answers."""
    return render_run(row, await run_cost(ctx, row["run_id"]), ctx.settings.gateway_url)


class BusPorts:
    """Every port of ``ports.LaunchPorts``, for one request's use."""

    def __init__(self, ctx: GatewayContext) -> None:
        self.ctx = ctx

    # -- the registry, billing and the proxy -------------------------------------------------
    async def resolve(self, query: ResolveBenchmark) -> BenchmarkResolution:
        return await ask(self.ctx.bus(), query, BenchmarkResolution, timeout=QUERY_TIMEOUT_S)

    async def subset(self, query: ReadSubset) -> RegistryAnswer:
        return await ask(self.ctx.bus(), query, RegistryAnswer, timeout=QUERY_TIMEOUT_S)

    async def subset_rows(self, query: GetSubsetRows) -> SubsetRows:
        return await ask(self.ctx.bus(), query, SubsetRows, timeout=QUERY_TIMEOUT_S)

    async def impl(self, query: GetImpl) -> ImplCode:
        return await ask(self.ctx.bus(), query, ImplCode, timeout=QUERY_TIMEOUT_S)

    @property
    def billing_enforced(self) -> bool:
        return self.ctx.settings.billing_enforce

    async def balance(self, account: str) -> BalanceView:
        return await ask(
            self.ctx.bus(), ReadBalance(account=account), BalanceView, timeout=QUERY_TIMEOUT_S
        )

    async def price(self, query: PriceModelCalls) -> ModelCallPrices:
        return await ask(self.ctx.bus(), query, ModelCallPrices, timeout=QUERY_TIMEOUT_S)

    async def provider_keys(self, query: CheckProviderKeys) -> ProviderKeys:
        return await ask(self.ctx.bus(), query, ProviderKeys, timeout=QUERY_TIMEOUT_S)

    async def send(self, command: Contract) -> None:
        await send_command(self.ctx.bus(), command)

    # -- the runs view -----------------------------------------------------------------------
    async def run(self, run_id: str) -> RunRow | None:
        row: RunRow | None = await self.ctx.read(views.get_run, run_id)
        return row

    async def latest_outcomes(self, run_id: str) -> dict[int, tuple[str, str]]:
        outcomes: dict[int, tuple[str, str]] = await self.ctx.read(views.latest_outcomes, run_id)
        return outcomes

    async def recorded_outputs(self, run_id: str) -> int:
        count: int = await self.ctx.read(views.recorded_outputs, run_id)
        return count

    async def wait_for_run(
        self, run_id: str, until: Callable[[RunRow | None], bool] | None = None, tries: int = 100
    ) -> RunRow | None:
        row: RunRow | None = None
        for _ in range(tries):
            row = await self.run(run_id)
            if (until is None and row is not None) or (until is not None and until(row)):
                return row
            await asyncio.sleep(VIEW_POLL_S)
        return row

    async def show(self, row: RunRow) -> Run:
        return Run.model_validate(await shown_run(self.ctx, row))

    # -- people's labels ---------------------------------------------------------------------
    async def graded_rows(self, run_id: str, *, per_trial: bool) -> list[RunRow]:
        rows: list[RunRow] = await self.ctx.read(
            lambda cur: labels_view.graded_rows(cur, run_id, per_trial=per_trial)
        )
        return rows

    async def labels(self, run_id: str, invocation: int | None = None) -> list[RunRow]:
        rows: list[RunRow] = await self.ctx.read(labels_view.run_labels, run_id, invocation)
        return rows

    async def wait_for_label(self, run_id: str, label_id: str) -> RunRow | None:
        for _ in range(LABEL_TRIES):
            row: RunRow | None = await self.ctx.read(labels_view.find_label, run_id, label_id)
            if row is not None:
                return row
            await asyncio.sleep(VIEW_POLL_S)
        return None

    # -- the gateway's own application -------------------------------------------------------
    async def defaults(self, account: str) -> dict[str, Any]:
        held = await self.ctx.call(self.ctx.app.account_settings, account)
        return dict(held.values)

    async def find_launch(self, account: str, key: str) -> LaunchRecord | None:
        found: LaunchRecord | None = await self.ctx.call(self.ctx.app.find_launch, account, key)
        return found

    async def remember_launch(
        self, account: str, key: str, body_sha256: str, run_id: str
    ) -> LaunchRecord:
        record: LaunchRecord = await self.ctx.call(
            self.ctx.app.remember_launch, account, key, body_sha256, run_id
        )
        return record
