"""Finding a caller's run and showing it: shared by the read and write routes."""

import asyncio
from typing import Any

from benchwright_gateway import projections as views
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.render import render_run
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunCost, RunCost
from benchwright_shared.refusal import Refused

# What another account may see of a run: by link (unlisted) or listed too (public).
SHARED = ("unlisted", "public")


async def load_run(
    ctx: GatewayContext, caller: Principal, run_id: str, *, reading: bool = False
) -> dict[str, Any]:
    """The caller's run; with ``reading``, also another account's shared run.

    Anything else answers exactly as a missing run does.
    """
    row: dict[str, Any] | None = await ctx.read(views.get_run, run_id)
    mine = row is not None and row["account"] == caller.account
    shared = row is not None and reading and row.get("visibility") in SHARED
    if row is None or not (mine or shared):
        raise Refused(404, "run not found", f"no run {run_id!r}", field="run_id")
    return row


async def run_cost(ctx: GatewayContext, run_id: str) -> RunCost | None:
    try:
        return await ask(ctx.bus(), GetRunCost(run_id=run_id), RunCost, timeout=2.0)
    except Exception:
        return None  # billing is down: show the run, without its cost


async def show(ctx: GatewayContext, row: dict[str, Any]) -> dict[str, Any]:
    return render_run(row, await run_cost(ctx, row["run_id"]), ctx.settings.gateway_url)


async def wait_for_row(
    ctx: GatewayContext, run_id: str, *, until: Any = None, tries: int = 100
) -> dict[str, Any] | None:
    """Read-your-write: wait briefly for the read model to show ``run_id`` (as ``until`` wants)."""
    row: dict[str, Any] | None = None
    for _ in range(tries):
        row = await ctx.read(views.get_run, run_id)
        if (until is None and row is not None) or (until is not None and until(row)):
            return row
        await asyncio.sleep(0.05)
    return row
