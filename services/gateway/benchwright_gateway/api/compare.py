"""``GET /v1/runs/{id}/compare?with=``: a paired comparison of two runs' tasks.

The run in the path is A, the reference; ``with`` names B. What the comparison finds
(flips, McNemar, the paired bootstrap, the verdict) is ``benchwright_gateway.comparison``;
this route reads both runs as the caller may see them and what set each up.
"""

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query

from benchwright_gateway import comparison
from benchwright_gateway import projections as views
from benchwright_gateway.api import lookup
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_shared.api.compare import RunComparison
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.refusal import Refused

QUERY_TIMEOUT_S = 10.0
# A run logs a handful of set-up entries per phase; a resumed one a few more.
SETUP_ENTRIES = 500

router = APIRouter(prefix="/v1/runs", tags=["runs"])


async def setup_entries(ctx: GatewayContext, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    query = GetRunEvents(run_id=run_id, types=sorted(comparison.PART_EVENTS), limit=SETUP_ENTRIES)
    page = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
    raise_for(page.problem)
    return [(e.type, e.data) for e in page.events]


async def side(ctx: GatewayContext, caller: Principal, run_id: str, field: str) -> dict[str, Any]:
    try:
        row = await lookup.load_run(ctx, caller, run_id, reading=True)
    except Refused as refused:
        raise Refused(404, "run not found", f"no run {run_id!r}", field=field) from refused
    run, tasks, entries = await asyncio.gather(
        lookup.show(ctx, row),
        ctx.read(views.task_results, run_id),
        setup_entries(ctx, run_id),
    )
    return {"run": run, "tasks": tasks, "parts": comparison.run_parts(run, entries)}


@router.get("/{run_id}/compare", response_model=RunComparison, response_model_exclude_unset=True)
async def compare(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    with_: Annotated[str, Query(alias="with", min_length=1, max_length=200)],
    alpha: Annotated[float, Query(gt=0, le=0.5)] = 0.05,
) -> RunComparison:
    """Run ``with`` (B) against this run (A), task by task over the tasks both ran:
    flips, score deltas, McNemar's exact test, a paired bootstrap interval of the
    mean difference at ``1 - alpha``, a verdict, and what differs between the runs."""
    caller.require("runs:read")
    a = await side(ctx, caller, run_id, "run_id")
    b = await side(ctx, caller, with_, "with")
    found = comparison.compare(a["tasks"], b["tasks"], alpha=alpha, labels=(run_id, with_))
    return RunComparison.model_validate(
        {
            "object": "run_comparison",
            "a": _brief(a["run"]),
            "b": _brief(b["run"]),
            **found,
            "differences": comparison.differences(a["parts"], b["parts"]),
        }
    )


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    """Which run a side is, and whether it is still running (its tasks may grow)."""
    return {
        "id": run["id"],
        "status": run["status"],
        "model": run.get("model"),
        "benchmark": run.get("benchmark"),
        "subset": run.get("subset"),
        "summary": run.get("summary"),
    }
