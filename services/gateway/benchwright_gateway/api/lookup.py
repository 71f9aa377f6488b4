"""Finding a caller's run and showing it: shared by the read and write routes."""

from typing import Any

from benchwright_gateway.adapters import BusPorts, run_cost
from benchwright_gateway.adapters import shown_run as show
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations.runs import owned_run

__all__ = ["load_run", "run_cost", "show"]


async def load_run(
    ctx: GatewayContext, caller: Principal, run_id: str, *, reading: bool = False
) -> dict[str, Any]:
    """The caller's run; with ``reading``, also another account's shared run.

    Anything else answers exactly as a missing run does.
    """
    return await owned_run(BusPorts(ctx), caller.account, run_id, reading=reading)
