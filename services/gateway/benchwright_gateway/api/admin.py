"""``/v1/admin``: operator commands, such as rebuilding a read model."""

from typing import Annotated, Protocol

from fastapi import APIRouter

from benchwright_gateway.api import deps
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.operations import raise_for
from benchwright_shared import subjects
from benchwright_shared.api.admin import ParkedList, ProjectionRebuild
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


class LocalViews(Protocol):
    """The gateway's own read models (``app.state.views``, its ``ProjectionHost``):
    a rebuild and the parked messages, by projection name."""

    async def rebuild(self, projection: str) -> RebuildResult: ...

    async def parked(self, projection: str) -> ParkedMessages: ...


Views = Annotated[LocalViews, deps.state("views")]

router = APIRouter(prefix="/v1/admin", tags=["admin"])


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


@router.get(
    "/projections/{name}/parked", response_model=ParkedList, response_model_exclude_unset=True
)
async def parked(name: str, ctx: Ctx, caller: Caller, local: Views) -> ParkedList:
    """Messages the read model could not apply and set aside, with their errors."""
    caller.require("admin")
    owner = _owner(name)
    if owner == "gateway":
        found = await local.parked(name)
    else:
        found = await ask(
            ctx.bus(),
            ListParked(projection=name),
            ParkedMessages,
            subject=subjects.parked_subject(owner),
        )
    raise_for(found.problem)
    return ParkedList.model_validate(
        {"object": "list", "data": [m.model_dump() for m in found.data]}
    )


@router.post(
    "/projections/{name}/rebuild",
    response_model=ProjectionRebuild,
    response_model_exclude_unset=True,
)
async def rebuild(name: str, ctx: Ctx, caller: Caller, local: Views) -> ProjectionRebuild:
    """Replay the event log into the projection from scratch; compare ``digest`` with
    ``before_digest`` to see whether the live one had drifted from the log."""
    caller.require("admin")
    owner = _owner(name)
    if owner == "gateway":
        result = await local.rebuild(name)
    else:
        result = await ask(
            ctx.bus(),
            RebuildProjection(projection=name),
            RebuildResult,
            subject=subjects.rebuild_subject(owner),
            timeout=300,
        )
    raise_for(result.problem)
    return ProjectionRebuild.model_validate(result.model_dump(exclude={"problem"}))
