"""Steering a run once it is launched: carry on after an operator's pause, answer the
review it waits on, publish or hide it, merge its metadata, delete it.

Each checks the run's state as the gateway's view has it, sends one command, and
waits briefly for the view to show the change (read-your-write).
"""

import json
import uuid
from typing import Literal

from benchwright_gateway.operations.runs import owned_run
from benchwright_gateway.ports import LaunchPorts, RunRow
from benchwright_gateway.render import run_etag
from benchwright_gateway.requests import RunPatch
from benchwright_shared.api.launch import DeletedRun, Run
from benchwright_shared.contracts import DeleteRun, ResolveRunHalt, UpdateRun
from benchwright_shared.refusal import Refused
from benchwright_shared.visibility import publish_problem

# Halts a review answer carries on from (``review_resolution``).
REVIEW_HALTS = ("agent_review", "restart_cap_exceeded")
# How long a delete waits for the view to drop the run, in reads (50 ms apart).
DELETE_TRIES = 600


async def resume(ports: LaunchPorts, account: str, run_id: str) -> Run:
    """Carry on a run an operator paused; any other halt is 409 ``not_paused``."""
    row = await owned_run(ports, account, run_id)
    reason = row.get("halt_reason") or ""
    if row["status"] != "running" or not reason.startswith("operator_pause"):
        raise Refused(
            409,
            "run is not paused",
            f"run {run_id} is {row['status']}"
            + (f", halted with {reason!r}" if reason else "")
            + "; only an operator_pause halt can be resumed"
            + (
                "; answer a review with PATCH review_resolution"
                if reason.startswith(REVIEW_HALTS)
                else ""
            ),
            field="run_id",
            code="not_paused",
        )
    return await ports.show(await _unpark(ports, account, row, "resume", None))


async def update(
    ports: LaunchPorts, account: str, run_id: str, body: RunPatch, if_match: str | None
) -> Run:
    """Answer the review the run waits on, then change its visibility and metadata.

    ``if_match`` (the run's ``etag``) refuses the change with 412 when the run moved
    on since the caller read it.
    """
    row = await owned_run(ports, account, run_id)
    if if_match is not None and if_match.strip('"') != run_etag(row):
        raise Refused(
            412,
            "run changed",
            f"the run is at {run_etag(row)}, not {if_match}; read it again",
            field="If-Match",
            code="precondition_failed",
        )
    if body.review_resolution is not None:
        row = await _answer_review(ports, account, row, body.review_resolution)
    if body.visibility is not None or body.metadata:
        row = await _change(ports, account, row, body)
    return await ports.show(row)


async def delete(ports: LaunchPorts, account: str, run_id: str) -> DeletedRun:
    """Irreversible: stop the run if it works, and remove it from every listing."""
    await owned_run(ports, account, run_id)
    await ports.send(DeleteRun(command_id=f"delete:{run_id}", run_id=run_id, account=account))
    await ports.wait_for_run(run_id, until=lambda r: r is None, tries=DELETE_TRIES)
    return DeletedRun(id=run_id, object="run", deleted=True)


async def _change(ports: LaunchPorts, account: str, row: RunRow, body: RunPatch) -> RunRow:
    run_id = row["run_id"]
    if body.visibility == "public":
        problem = publish_problem(row["status"], row.get("benchmark_id"))
        if problem:
            raise Refused(
                409,
                "run cannot be public",
                f"run {run_id} cannot be public: {problem}",
                field="visibility",
                code="not_publishable",
            )
    await ports.send(
        UpdateRun(
            command_id=f"update:{run_id}:{row.get('last_seq')}:{uuid.uuid4().hex[:8]}",
            run_id=run_id,
            account=account,
            visibility=body.visibility,
            metadata=body.metadata,
        )
    )
    wanted = {k: v for k, v in (body.metadata or {}).items() if v is not None}

    def applied(r: RunRow | None) -> bool:
        if r is None:
            return False
        shown = json.loads(r.get("metadata") or "{}")
        return (body.visibility is None or r.get("visibility") == body.visibility) and all(
            shown.get(k) == v for k, v in wanted.items()
        )

    return await ports.wait_for_run(run_id, until=applied) or row


async def _answer_review(ports: LaunchPorts, account: str, row: RunRow, resolution: str) -> RunRow:
    reason = row.get("halt_reason") or ""
    if row["status"] != "running" or not reason.startswith(REVIEW_HALTS):
        raise Refused(
            409,
            "run is not waiting for review",
            f"run {row['run_id']} is {row['status']}"
            + (f", halted with {reason!r}" if reason else ""),
            field="review_resolution",
            code="not_waiting",
        )
    return await _unpark(ports, account, row, "review_resolution", resolution)


async def _unpark(
    ports: LaunchPorts,
    account: str,
    row: RunRow,
    action: Literal["review_resolution", "resume"],
    resolution: str | None,
) -> RunRow:
    run_id = row["run_id"]
    await ports.send(
        ResolveRunHalt(
            command_id=f"unpark:{run_id}:{row.get('last_seq')}",
            run_id=run_id,
            account=account,
            action=action,
            resolution=resolution,
        )
    )
    fresh = await ports.wait_for_run(run_id, until=lambda r: r is not None and not r["halted"])
    return fresh or row
