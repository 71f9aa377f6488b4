"""What a route may ask FastAPI for: the gateway's context and the caller.

Routes live in module-level routers and declare these as parameters
(``ctx: Ctx, caller: Caller``); the gateway puts its context and token check on
``app.state`` once, at start, so no router is built inside a closure.
"""

from typing import Annotated, Any

from fastapi import Depends, Request

from benchwright_gateway.api.auth import Principal, Verify, principal_dependency
from benchwright_gateway.context import GatewayContext


def context(request: Request) -> GatewayContext:
    ctx: GatewayContext = request.app.state.ctx
    return ctx


async def caller(request: Request) -> Principal:
    verify: Verify = request.app.state.verify
    return await principal_dependency(verify)(request)


def state(name: str) -> Any:
    """A dependency that hands the route one more object the gateway put on ``app.state``."""

    def read(request: Request) -> Any:
        return getattr(request.app.state, name)

    return Depends(read)


Ctx = Annotated[GatewayContext, Depends(context)]
Caller = Annotated[Principal, Depends(caller)]
