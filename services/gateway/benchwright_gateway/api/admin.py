"""``/v1/admin``: operator commands, such as rebuilding a read model."""

from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.context import GatewayContext
from benchwright_gateway.api.errors import ProblemError
from benchwright_shared import subjects
from benchwright_shared.bus import ask
from benchwright_shared.contracts import RebuildProjection, RebuildResult

# Which service owns each projection.
PROJECTION_OWNERS = {
    "runs": "gateway",
    "run_summaries": "registry",
    "catalog": "registry",
    "ledger": "billing",
    "phase_cells": "registry",
}


def build_router(
    ctx: GatewayContext,
    principal: Callable[..., Awaitable[Principal]],
    rebuild_local: Callable[[str], Coroutine[Any, Any, RebuildResult]],
) -> APIRouter:
    router = APIRouter(prefix="/v1/admin", tags=["admin"])

    @router.post("/projections/{name}/rebuild")
    async def rebuild(
        name: str, caller: Annotated[Principal, Depends(principal)]
    ) -> dict[str, Any]:
        caller.require("admin")
        owner = PROJECTION_OWNERS.get(name)
        if owner is None:
            raise ProblemError(
                404,
                "unknown projection",
                f"known: {', '.join(sorted(PROJECTION_OWNERS))}",
                field="name",
            )
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
            raise ProblemError(result.problem.status, result.problem.title, result.problem.detail)
        return result.model_dump(exclude={"problem"})

    return router
