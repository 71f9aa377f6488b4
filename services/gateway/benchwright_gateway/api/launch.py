"""``/v1/runs`` launches and run changes: launch (natural language, pinned, replay,
harness), fork, rescore, resume, review answers, visibility and deletion.

Each route parses, checks the caller's scope and calls one operation
(``benchwright_gateway.operations``), which does the work over ``BusPorts``.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Response

from benchwright_gateway.adapters import BusPorts
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.operations import launch as launching
from benchwright_gateway.operations import rescore as rescoring
from benchwright_gateway.operations import steering
from benchwright_gateway.operations.launch import Launched
from benchwright_gateway.ports import LaunchPorts
from benchwright_gateway.requests import ForkRequest, LaunchRequest, RescoreRequest, RunPatch
from benchwright_shared.api.launch import DeletedRun, Run

router = APIRouter(prefix="/v1/runs", tags=["runs"])


def bus_ports(ctx: Ctx) -> LaunchPorts:
    return BusPorts(ctx)


Ports = Annotated[LaunchPorts, Depends(bus_ports)]
IdempotencyKey = Annotated[str | None, Header(max_length=255)]


def answer(launched: Launched, response: Response) -> Run:
    """The launched run; 200 instead of 201 when an earlier launch made it."""
    if launched.repeated:
        response.status_code = 200
    return launched.run


# A run answers the keys it was given (``response_model_exclude_unset``): a repeated
# launch whose run is not read yet names only its identity and status.
@router.post("", status_code=201, response_model=Run, response_model_exclude_unset=True)
async def launch(
    body: LaunchRequest,
    caller: Caller,
    ports: Ports,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Run:
    """Launch a run: ``request`` (natural language), ``benchmark`` (pinned), ``replay``,
    or a harness task. A repeat with the same ``Idempotency-Key`` answers the first run."""
    caller.require("runs:write")
    return answer(await launching.launch(ports, caller.account, body, idempotency_key), response)


@router.post(
    "/{run_id}/fork", status_code=201, response_model=Run, response_model_exclude_unset=True
)
async def fork(
    run_id: str,
    body: ForkRequest,
    caller: Caller,
    ports: Ports,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Run:
    """Rewind a run to ``from_phase`` and carry on with ``description`` as guidance."""
    caller.require("runs:write")
    forked = await launching.fork(ports, caller.account, run_id, body, idempotency_key)
    return answer(forked, response)


@router.post(
    "/{run_id}/rescore", status_code=201, response_model=Run, response_model_exclude_unset=True
)
async def rescore(
    run_id: str,
    body: RescoreRequest,
    caller: Caller,
    ports: Ports,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Run:
    """Score a finished run's recorded outputs again with ``impl`` (a scorer of the same
    subset), in a new run derived from it; the model under test is not called."""
    caller.require("runs:write")
    rescored = await rescoring.rescore(ports, caller.account, run_id, body, idempotency_key)
    return answer(rescored, response)


@router.post(
    "/{run_id}/resume", status_code=202, response_model=Run, response_model_exclude_unset=True
)
async def resume(run_id: str, caller: Caller, ports: Ports) -> Run:
    """Carry on a run an operator paused. Any other halt answers 409 ``not_paused``."""
    caller.require("runs:write")
    return await steering.resume(ports, caller.account, run_id)


@router.patch("/{run_id}", response_model=Run, response_model_exclude_unset=True)
async def update(
    run_id: str,
    body: RunPatch,
    caller: Caller,
    ports: Ports,
    if_match: Annotated[str | None, Header(max_length=100)] = None,
) -> Run:
    """Publish or hide a run (``visibility``), answer the review it waits on
    (``review_resolution``: the Driver's guidance), and merge ``metadata``.

    ``If-Match`` (the run's ``etag``) refuses the change with 412 when the run
    moved on since the caller read it.
    """
    caller.require("runs:write")
    return await steering.update(ports, caller.account, run_id, body, if_match)


@router.delete("/{run_id}", response_model=DeletedRun)
async def delete(run_id: str, caller: Caller, ports: Ports) -> DeletedRun:
    """Irreversible: stop the run if it works, and remove it from every listing."""
    caller.require("runs:write")
    return await steering.delete(ports, caller.account, run_id)
