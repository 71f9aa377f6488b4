"""``POST /v1/runs/estimate``: what a launch would cost, from what it would run.

The body is a launch body, checked and resolved exactly as a launch is; nothing is
started (``benchwright_gateway.operations.estimate`` does the work).
"""

from fastapi import APIRouter

from benchwright_gateway.api.deps import Caller
from benchwright_gateway.api.launch import Ports
from benchwright_gateway.operations import estimate as estimating
from benchwright_gateway.requests import LaunchRequest
from benchwright_shared.api.estimate import RunEstimate

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post("/estimate", response_model=RunEstimate)
async def estimate(body: LaunchRequest, caller: Caller, ports: Ports) -> RunEstimate:
    """What the launch ``body`` would cost, before it runs (nothing is launched):
    its model calls and tokens as a range, priced as the proxy bills them."""
    caller.require("runs:read")
    return await estimating.estimate(ports, caller.account, body)
