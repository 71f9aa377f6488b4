"""``/v1/runs``: read runs, page their tasks and events, stream them, halt them."""

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query
from nats.js.api import DeliverPolicy
from sse_starlette import EventSourceResponse

from benchwright_gateway import projections as views
from benchwright_gateway.adapters import BusPorts
from benchwright_gateway.api import lookup
from benchwright_gateway.api.artifacts import KINDS, latest_described
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.deps import Caller, Ctx
from benchwright_gateway.api.guard import MAX_POSITION
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.operations import raise_for
from benchwright_gateway.operations.labels import corrected_summary
from benchwright_gateway.render import (
    RUN_FIELDS,
    parse_task_page_token,
    parse_task_row_id,
    render_run,
    render_task,
    render_task_error,
    render_trial,
    select_fields,
    task_page_token,
)
from benchwright_gateway.requests import HaltRequest
from benchwright_shared import subjects
from benchwright_shared.api.runs import (
    EventList,
    Fingerprint,
    FingerprintRecord,
    Run,
    RunList,
    TaskPage,
    TaskPayload,
)
from benchwright_shared.bus import ask, jetstream, send_command
from benchwright_shared.contracts import (
    GetRunEvents,
    GetSubsetRows,
    HaltRun,
    RunEventsPage,
    SubsetRows,
)
from benchwright_shared.contracts.run_events import PipelineFinished
from benchwright_shared.contracts.vault import BlockedHostsView, ReadBlockedHosts
from benchwright_shared.fingerprint import LOAD_BEARING_FIELDS, run_fingerprint
from benchwright_shared.refusal import Refused
from benchwright_shared.run_log import run_event_type
from benchwright_shared.scoring import summarize

TERMINAL_EVENT = run_event_type(PipelineFinished)
QUERY_TIMEOUT_S = 10.0
# What ``GET /v1/runs/{id}?expand=`` can add to a run, each under its own key.
EXPANSIONS = ("tasks_summary", "artifacts", "recent_events", "blocked_hosts")
RECENT_EVENTS = 20
# The most log entries one expansion reads (a run has a handful of artifacts per phase).
LOG_SCAN = 5000
# ``sort`` of ``/tasks``: a key of ``projections.TASK_SORTS``, ``-`` first for descending.
TaskSort = Literal[
    "index", "-index", "score", "-score", "duration_ms", "-duration_ms", "task_id", "-task_id"
]
# A list parameter is repeated (``?expand=a&expand=b``), comma-separated, or both.
ListParam = Annotated[list[str] | None, Query()]


def query_names(values: list[str] | None, known: tuple[str, ...], param: str) -> list[str] | None:
    """The names a list parameter gives, each checked against ``known`` (400 otherwise)."""
    if values is None:
        return None
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise Refused(
            400,
            f"unknown {param}",
            f"{param}: {unknown[0]!r} is not one of {', '.join(known)}",
            field=param,
            code="invalid_argument",
        )
    return names


router = APIRouter(prefix="/v1/runs", tags=["runs"])


async def load_run(
    ctx: GatewayContext, caller: Principal, run_id: str, *, reading: bool = True
) -> dict[str, Any]:
    # Reads also reach another account's unlisted or public run; writes never do.
    return await lookup.load_run(ctx, caller, run_id, reading=reading)


@router.get("", response_model=RunList, response_model_exclude_unset=True)
async def list_runs(
    ctx: Ctx,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    page_token: str | None = None,
    status: Annotated[str | None, Query(pattern="^(running|ok|error)$")] = None,
    benchmark: Annotated[str | None, Query(max_length=300)] = None,
    visibility: Annotated[str | None, Query(pattern="^(private|unlisted|public)$")] = None,
    started_gte: Annotated[datetime | None, Query(alias="started_at.gte")] = None,
    started_lt: Annotated[datetime | None, Query(alias="started_at.lt")] = None,
    finished_gte: Annotated[datetime | None, Query(alias="finished_at.gte")] = None,
    finished_lt: Annotated[datetime | None, Query(alias="finished_at.lt")] = None,
    sort: Annotated[str, Query(pattern="^-?(started_at|finished_at)$")] = "-started_at",
) -> RunList:
    """The caller's runs, newest first unless ``sort`` says otherwise; filters
    combine. ``next_page_token`` fetches the next page (None on the last)."""
    caller.require("runs:read")

    def iso(value: datetime | None) -> str | None:
        # Stored times are ISO text in UTC: a bare prefix compares correctly.
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") if value else None

    ranges = {
        "started_at": (iso(started_gte), iso(started_lt)),
        "finished_at": (iso(finished_gte), iso(finished_lt)),
    }
    rows = await ctx.read(
        lambda cur: views.list_runs(
            cur,
            caller.account,
            limit=limit + 1,
            after=page_token,
            status=status,
            benchmark=benchmark,
            visibility=visibility,
            ranges=ranges,
            sort=sort,
        )
    )
    more = len(rows) > limit
    rows = rows[:limit]
    data = [Run.model_validate(await lookup.show(ctx, r)) for r in rows]
    token = views.run_cursor(rows[-1], sort) if more and rows else None
    return RunList(object="list", data=data, next_page_token=token)


async def tasks_summary(
    ctx: GatewayContext, run_id: str, version: int | None = None
) -> dict[str, Any]:
    """The aggregate over the run's settled tasks of one sweep (the latest), live."""
    return summarize(await ctx.read(views.task_outcomes, run_id, version))


async def events_page(ctx: GatewayContext, query: GetRunEvents) -> list[dict[str, Any]]:
    page = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
    raise_for(page.problem)
    return [e.model_dump(mode="json") for e in page.events]


async def latest_artifacts(ctx: GatewayContext, run_id: str) -> list[dict[str, Any]]:
    """The latest artifact of each kind, described as ``GET .../artifacts`` does."""
    query = GetRunEvents(run_id=run_id, types=list(KINDS), limit=LOG_SCAN)
    return latest_described(await events_page(ctx, query))


async def recent_events(ctx: GatewayContext, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The last ``RECENT_EVENTS`` entries of the run's log, oldest first."""
    # The read model may trail the log: read on from its last seq, keep the tail.
    after = max(int(row.get("last_seq") or 0) - RECENT_EVENTS, -1)
    query = GetRunEvents(run_id=row["run_id"], after_seq=after, limit=LOG_SCAN)
    return (await events_page(ctx, query))[-RECENT_EVENTS:]


async def run_blocked_hosts(
    ctx: GatewayContext, caller: Principal, run_id: str
) -> list[dict[str, Any]]:
    query = ReadBlockedHosts(account=caller.account, run_id=run_id)
    view = await ask(ctx.bus(), query, BlockedHostsView, timeout=QUERY_TIMEOUT_S)
    return [b.model_dump(mode="json") for b in view.data]


async def expansion(ctx: GatewayContext, name: str, caller: Principal, row: dict[str, Any]) -> Any:
    run_id = row["run_id"]
    if name == "tasks_summary":
        return await tasks_summary(ctx, run_id)
    if name == "artifacts":
        return await latest_artifacts(ctx, run_id)
    if name == "recent_events":
        return await recent_events(ctx, row)
    # The last of EXPANSIONS: ``query_names`` let no other name through.
    return await run_blocked_hosts(ctx, caller, run_id)


@router.get("/{run_id}", response_model=Run, response_model_exclude_unset=True)
async def get_run(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    expand: ListParam = None,
    fields: ListParam = None,
) -> Run:
    """One run. Both parameters take names comma-separated or repeated.

    ``expand`` adds, each under its own top-level key, what would take another
    call: ``tasks_summary`` (the live aggregate over the run's tasks, as
    ``/tasks`` reports it; ``summary`` is filled only when the run is terminal),
    ``artifacts`` (the latest of each kind, as ``/artifacts``; needs
    ``artifacts:read``), ``recent_events`` (the last 20 entries of the log, as
    ``/events``) and ``blocked_hosts`` (as ``/blocked-hosts``).

    ``fields`` answers only the named top-level fields, plus ``id`` and
    ``object`` (expansions come on top). Leaving ``cost`` out spares a billing
    query. An unknown name in either is a 400 naming the parameter.
    """
    caller.require("runs:read")
    wanted = query_names(expand, EXPANSIONS, "expand") or []
    selected = query_names(fields, RUN_FIELDS, "fields")
    if "artifacts" in wanted:
        caller.require("artifacts:read")
    row = await load_run(ctx, caller, run_id)
    costed = selected is None or "cost" in selected
    cost = await lookup.run_cost(ctx, run_id) if costed else None
    run = select_fields(render_run(row, cost, ctx.settings.gateway_url), selected)
    if run.get("summary") is not None:
        # People's labels widen the headline figure's interval by the grader's measured
        # error (docs/judges.md, "Calibration"); the plain interval stays as it was.
        corrected = await corrected_summary(BusPorts(ctx), row)
        if corrected is not None:
            run["summary"] = {**run["summary"], "judge_corrected": corrected.model_dump()}
    for name in wanted:
        run[name] = await expansion(ctx, name, caller, row)
    return Run.model_validate(run)


@router.get("/{run_id}/tasks", response_model=TaskPage, response_model_exclude_unset=True)
async def list_tasks(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    passed: bool | None = None,
    version: Annotated[int | None, Query(ge=1, le=MAX_POSITION)] = None,
    sort: TaskSort = "index",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    page_token: str | None = None,
) -> TaskPage:
    """One page of the run's task rows and the summary of the same sweep.

    ``version`` is a Materialize invocation (a run that restarted Materialize
    has several); by default the latest, the one the run's summary covers.
    ``sort`` is ``index``, ``score``, ``duration_ms`` or ``task_id``, ``-`` first
    for descending. A run launched with more than one trial a task has each
    trial's result on its rows (``trials``).
    """
    caller.require("runs:read")
    run = await load_run(ctx, caller, run_id)
    versions = await ctx.read(views.task_versions, run_id)
    if version is not None and version not in versions and run["status"] != "running":
        raise Refused(
            400,
            "unknown version",
            f"run {run_id} has task rows for versions {versions or 'none'}",
            field="version",
        )
    chosen = version or (versions[-1] if versions else 1)
    after = None
    if page_token:
        parsed = parse_task_page_token(page_token)
        if parsed is None or parsed[:2] != (sort, chosen):
            raise Refused(
                400,
                "invalid page_token",
                "the token is not one this listing (same sort and version) gave",
                field="page_token",
            )
        after = parsed[2]
    outcomes = None if passed is None else (("pass",) if passed else ("fail",))
    rows = await ctx.read(
        lambda cur: views.list_tasks(
            cur,
            run_id,
            version=chosen,
            outcomes=outcomes,
            sort=sort,
            after=after,
            limit=limit + 1,
            include_running=passed is None and run["status"] == "running",
        )
    )
    more = len(rows) > limit
    rows = rows[:limit]
    trials = None
    if views.trials_per_task(run.get("trials")) > 1:
        indexes = [int(r["idx"]) for r in rows]
        trials = await ctx.read(views.task_trials, run_id, chosen, indexes)
    token = None
    if more and rows:
        token = task_page_token(sort, chosen, views.task_key(rows[-1], sort))
    return TaskPage.model_validate(
        {
            "object": "list",
            "version": chosen,
            "versions": versions,
            "sort": sort,
            "summary": await tasks_summary(ctx, run_id, chosen),
            "data": [
                render_task(r, None if trials is None else trials.get(int(r["idx"]), []))
                for r in rows
            ],
            "next_page_token": token,
        }
    )


@router.get(
    "/{run_id}/tasks/{row_id}/payload",
    response_model=TaskPayload,
    response_model_exclude_unset=True,
)
async def task_payload(run_id: str, row_id: str, ctx: Ctx, caller: Caller) -> TaskPayload:
    caller.require("runs:read")
    run = await load_run(ctx, caller, run_id)
    key = parse_task_row_id(row_id)
    row = await ctx.read(views.get_task, run_id, *key) if key else None
    if row is None:
        raise Refused(404, "task not found", f"no task {row_id!r} in this run", field="task")
    task: dict[str, Any] = {}
    # A run whose tasks travelled with its launch (a Harbor dataset) has no subset.
    if run.get("subset_id"):
        source = await ask(
            ctx.bus(),
            GetSubsetRows(subset_id=run["subset_id"], offset=row["idx"], limit=1),
            SubsetRows,
            timeout=QUERY_TIMEOUT_S,
        )
        task = source.rows[0] if source.rows else {}
    trials = await ctx.read(views.task_trials, run_id, row["invocation"], [row["idx"]])
    return TaskPayload.model_validate(
        {
            "id": row_id,
            "object": "task_payload",
            "task_id": row["task_id"],
            "input": task.get("input"),
            "expected": task.get("expected"),
            "output": row.get("output"),
            "score": row.get("score"),
            "outcome": row.get("outcome"),
            "score_meta": json.loads(row["score_meta"]) if row.get("score_meta") else {},
            "error": render_task_error(row),
            "trials": [render_trial(t, full=True) for t in trials.get(row["idx"], [])],
        }
    )


@router.get("/{run_id}/events", response_model=EventList, response_model_exclude_unset=True)
async def list_events(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=-1, le=MAX_POSITION)] = None,
    types: str | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> EventList:
    caller.require("runs:read")
    await load_run(ctx, caller, run_id)
    wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
    page = await ask(
        ctx.bus(),
        GetRunEvents(run_id=run_id, after_seq=after_seq, types=wanted, limit=limit),
        RunEventsPage,
        timeout=QUERY_TIMEOUT_S,
    )
    data = [e.model_dump(mode="json") for e in page.events]
    return EventList.model_validate(
        {
            "object": "list",
            "data": data,
            "has_more": page.has_more,
            "next_after_seq": data[-1]["seq"] if data else after_seq,
        }
    )


@router.post(
    "/{run_id}/halt", status_code=202, response_model=Run, response_model_exclude_unset=True
)
async def halt(run_id: str, ctx: Ctx, caller: Caller, body: HaltRequest | None = None) -> Run:
    """Stop a run: its sandboxes and proxy are torn down; it stays readable."""
    caller.require("runs:write")
    row = await load_run(ctx, caller, run_id, reading=False)
    if row["status"] != "running":
        raise Refused(
            409,
            "run already finished",
            f"run {run_id} is {row['status']}",
            field="run_id",
            code="run_finished",
        )
    kind = "operator_pause" if body and body.pause else "operator_kill"
    reason = kind + (f": {body.reason}" if body and body.reason else "")
    await send_command(
        ctx.bus(),
        HaltRun(
            command_id=f"halt:{run_id}",
            run_id=run_id,
            account=caller.account,
            halt_reason=reason,
        ),
    )
    return Run.model_validate(await lookup.show(ctx, row))


@router.get("/{run_id}/fingerprint", response_model=Fingerprint, response_model_exclude_unset=True)
async def fingerprint(run_id: str, ctx: Ctx, caller: Caller) -> Fingerprint:
    """How the run's fingerprint was derived, recomputed from its log now."""
    caller.require("runs:read")
    row = await load_run(ctx, caller, run_id)
    page = await ask(
        ctx.bus(),
        GetRunEvents(run_id=run_id, types=sorted(LOAD_BEARING_FIELDS), limit=5000),
        RunEventsPage,
        timeout=QUERY_TIMEOUT_S,
    )
    recomputed, records = run_fingerprint((e.type, e.data) for e in page.events)
    recorded = row.get("fingerprint")
    return Fingerprint(
        object="fingerprint",
        run_id=run_id,
        fingerprint=recorded,
        recomputed=recomputed if page.events else None,
        matches=(recorded == recomputed) if recorded else None,
        algorithm="sha256 over canonical JSON records joined by U+001E, first 12 hex",
        records=[
            FingerprintRecord(seq=e.seq, type=e.type, canonical=record)
            for e, record in zip(page.events, records, strict=True)
        ],
        rules={name: list(fields) for name, fields in LOAD_BEARING_FIELDS.items()},
    )


@router.get(
    "/{run_id}/stream",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "The run's log as server-sent events, from the start or "
            "after `Last-Event-ID`.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    },
)
async def stream(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    last_event_id: Annotated[
        int | None, Header(alias="Last-Event-ID", ge=-1, le=MAX_POSITION)
    ] = None,
) -> EventSourceResponse:
    """A reconnecting client sends the id of the last event it got (``Last-Event-ID``,
    an event's ``seq``) and gets only what came after it."""
    caller.require("runs:read")
    await load_run(ctx, caller, run_id)
    after = -1 if last_event_id is None else last_event_id
    return EventSourceResponse(run_log(ctx, run_id, after), ping=15)


async def caught_up(ctx: GatewayContext, run_id: str, seq: int, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        row = await ctx.read(views.get_run, run_id)
        if row is not None and int(row.get("last_seq") or 0) >= seq:
            return
        await asyncio.sleep(0.05)


async def run_log(
    ctx: GatewayContext, run_id: str, after: int = -1
) -> AsyncIterator[dict[str, Any]]:
    """History then live, straight from the run's JetStream subject, from ``after``."""
    sub = await jetstream(ctx.bus()).subscribe(
        subjects.run_log_subject(run_id),
        stream=subjects.RUNS_STREAM,
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
    )
    try:
        async for msg in sub.messages:
            event = json.loads(msg.data)
            if event["seq"] <= after:
                if event["type"] == TERMINAL_EVENT:
                    return  # the client has the end already
                continue
            if event["type"] == TERMINAL_EVENT:
                # The stream runs ahead of the read model; hold the last event
                # until the read model has it, so a client that reads the run
                # or its tasks after the stream closes sees the finished state.
                await caught_up(ctx, run_id, event["seq"])
            yield {"event": event["type"], "id": str(event["seq"]), "data": json.dumps(event)}
            if event["type"] == TERMINAL_EVENT:
                return
    finally:
        await sub.unsubscribe()
