"""An agent run's trials read from its log for the exports (``format=atif``, and the
conversations an ``inspect`` export carries); ``benchwright_gateway.trajectories``
assembles them."""

import json
from collections.abc import AsyncIterator
from typing import Any

from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_gateway.trajectories import TRAJECTORY_EVENTS, TrialLog, TrialLogs, atif
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.refusal import Refused
from benchwright_shared.run_log import parse_run_event

__all__ = ["atif_lines", "conversations", "require_agent_run", "trial_logs"]

PAGE = 500
QUERY_TIMEOUT_S = 10.0
AGENT_HARNESS_METADATA = "harbor_harness"


async def require_agent_run(ctx: GatewayContext, run: dict[str, Any]) -> None:
    """Refuse ``format=atif`` for a run whose tasks no agent attempted.

    An agent run says so in its metadata from its launch on (a run not started yet
    exports nothing); a run launched otherwise counts if its log holds an attempt.
    """
    if AGENT_HARNESS_METADATA in (run.get("metadata") or {}):
        return
    query = GetRunEvents(run_id=run["id"], types=["AgentAttemptStarted"], limit=1)
    page = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
    raise_for(page.problem)
    if not page.events:
        raise Refused(
            400,
            "not an agent run",
            f"run {run['id']} has no agent trajectories: format=atif exports the "
            "attempts of an agent run (harness 'harbor'); use jsonl, csv, markdown, "
            "lm-eval, lm-eval-samples or inspect",
            field="format",
        )


async def trial_logs(ctx: GatewayContext, run_id: str) -> AsyncIterator[TrialLog]:
    """Each trial of the run as it settles in the log, then those not settled."""
    logs = TrialLogs()
    after: int | None = None
    while True:
        query = GetRunEvents(
            run_id=run_id, after_seq=after, types=list(TRAJECTORY_EVENTS), limit=PAGE
        )
        page = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
        raise_for(page.problem)
        for event in page.events:
            entry = parse_run_event(event)
            settled = logs.add(entry) if entry is not None else None
            if settled is not None:
                yield settled
        if not page.has_more or not page.events:
            break
        after = page.events[-1].seq
    for log in logs.rest():
        yield log


async def atif_lines(logs: AsyncIterator[TrialLog], run_id: str) -> AsyncIterator[bytes]:
    """JSON Lines: one ATIF trajectory per trial."""
    async for log in logs:
        yield (json.dumps(atif(log, run_id), ensure_ascii=False) + "\n").encode()


async def conversations(ctx: GatewayContext, run_id: str) -> dict[tuple[int, int], TrialLog]:
    """Every trial's log by (index, trial): an ``inspect`` export's samples are
    written in task order, their trials settled in any."""
    return {(log.index, log.trial): log async for log in trial_logs(ctx, run_id)}
