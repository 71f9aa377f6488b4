"""``/v1/runs/{id}/labels`` and ``/agreement``: people's grades of a run's tasks, and
how far the run's grader agrees with them (``operations.labels``).

Labelling needs ``runs:label``, a scope of its own, so a reviewer's token can grade
tasks without launching or changing runs; reading needs ``runs:read``.
"""

from typing import Annotated

from fastapi import APIRouter, Depends

from benchwright_gateway.adapters import BusPorts
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.operations import labels as labelling
from benchwright_gateway.ports import LabelPorts
from benchwright_gateway.requests import LabelRequest
from benchwright_shared.api.labels import Agreement, Label, LabelList

router = APIRouter(prefix="/v1/runs", tags=["labels"])


def bus_ports(ctx: Ctx) -> LabelPorts:
    return BusPorts(ctx)


Ports = Annotated[LabelPorts, Depends(bus_ports)]


@router.post("/{run_id}/labels", status_code=201, response_model=Label)
async def label(run_id: str, body: LabelRequest, caller: Caller, ports: Ports) -> Label:
    """Record the caller's grade of one task (``task``: index, row id or task id); a
    later label of the same task by the same person replaces theirs."""
    caller.require("runs:label")
    return await labelling.record(ports, caller.account, run_id, body)


@router.get("/{run_id}/labels", response_model=LabelList)
async def list_labels(run_id: str, caller: Caller, ports: Ports) -> LabelList:
    """The run's labels, each person's latest per task, oldest first."""
    caller.require("runs:read")
    return await labelling.list_labels(ports, caller.account, run_id)


@router.get("/{run_id}/agreement", response_model=Agreement)
async def agreement(run_id: str, caller: Caller, ports: Ports) -> Agreement:
    """The run's grader against people over the labelled tasks: raw agreement, Cohen's
    kappa with its interval, the confusion matrix, which way the grader errs, and the
    run's figure corrected for the grader's measured error."""
    caller.require("runs:read")
    return await labelling.measure(ports, caller.account, run_id)
