"""``/v1/admin``: operator commands, such as rebuilding a read model."""

from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.context import GatewayContext
from benchwright_shared import subjects
from benchwright_shared.bus import ask
from benchwright_shared.contracts import (
    ListParked,
    ParkedMessages,
    RebuildProjection,
    RebuildResult,
)
from benchwright_shared.refusal import Refused

# Which service owns each projection.
PROJECTION_OWNERS = {
    "runs": "gateway",
    "run_summaries": "registry",
    "catalog": "registry",
    "ledger": "billing",
    "phase_cells": "registry",
}


def _owner(name: str) -> str:
    owner = PROJECTION_OWNERS.get(name)
    if owner is None:
        raise Refused(
            404,
            "unknown projection",
            f"known: {', '.join(sorted(PROJECTION_OWNERS))}",
            field="name",
        )
    return owner


def build_router(
    ctx: GatewayContext,
    principal: Callable[..., Awaitable[Principal]],
    rebuild_local: Callable[[str], Coroutine[Any, Any, RebuildResult]],
    parked_local: Callable[[str], Coroutine[Any, Any, ParkedMessages]],
) -> APIRouter:
    router = APIRouter(prefix="/v1/admin", tags=["admin"])

    @router.get("/projections/{name}/parked")
    async def parked(name: str, caller: Annotated[Principal, Depends(principal)]) -> dict[str, Any]:
        """Messages the read model could not apply and set aside, with their errors."""
        caller.require("admin")
        owner = _owner(name)
        if owner == "gateway":
            found = await parked_local(name)
        else:
            found = await ask(
                ctx.bus(),
                ListParked(projection=name),
                ParkedMessages,
                subject=subjects.parked_subject(owner),
            )
        if found.problem:
            raise Refused(found.problem.status, found.problem.title, found.problem.detail)
        return {"object": "list", "data": [m.model_dump() for m in found.data]}

    @router.post("/projections/{name}/rebuild")
    async def rebuild(
        name: str, caller: Annotated[Principal, Depends(principal)]
    ) -> dict[str, Any]:
        caller.require("admin")
        owner = _owner(name)
        if owner == "gateway":
            result = await rebuild_local(name)
        else:
            result = await ask(
                ctx.bus(),
                RebuildProjection(projection=name),
                RebuildResult,
                subject=subjects.rebuild_subject(owner),
                timeout=300,
            )
        if result.problem:
            raise Refused(result.problem.status, result.problem.title, result.problem.detail)
        return result.model_dump(exclude={"problem"})

    return router
