"""``/v1/runs``: launch, read, page tasks and events, stream."""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Response
from nats.js.api import DeliverPolicy
from sse_starlette import EventSourceResponse

from benchwright_gateway import projections as views
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.context import GatewayContext
from benchwright_gateway.api.errors import ProblemError
from benchwright_gateway.api.models import HaltRequest, LaunchRequest
from benchwright_gateway.api.render import parse_task_row_id, render_run, render_task
from benchwright_gateway.domain import body_fingerprint
from benchwright_shared import subjects
from benchwright_shared.bus import ask, jetstream, send_command
from benchwright_shared.contracts import (
    BenchmarkResolution,
    GetRunCost,
    GetRunEvents,
    GetSubsetRows,
    HaltRun,
    LaunchRun,
    ResolveBenchmark,
    RunCost,
    RunEventsPage,
    SubsetRows,
    SutRef,
)
from benchwright_shared.fingerprint import LOAD_BEARING_FIELDS, run_fingerprint
from benchwright_shared.ids import new_run_id
from benchwright_shared.scoring import DEFAULT_TRIALS, summarize

TERMINAL_EVENT = "PipelineFinished"
QUERY_TIMEOUT_S = 10.0


def build_router(ctx: GatewayContext, principal: Callable[..., Awaitable[Principal]]) -> APIRouter:
    router = APIRouter(prefix="/v1/runs", tags=["runs"])
    Caller = Annotated[Principal, Depends(principal)]

    async def load_run(caller: Principal, run_id: str) -> dict[str, Any]:
        row: dict[str, Any] | None = await ctx.read(views.get_run, run_id)
        # Another account's run answers exactly as a missing one does.
        if row is None or row["account"] != caller.account:
            raise ProblemError(404, "run not found", f"no run {run_id!r}", field="run_id")
        return row

    async def run_cost(run_id: str) -> RunCost | None:
        try:
            return await ask(ctx.bus(), GetRunCost(run_id=run_id), RunCost, timeout=2.0)
        except Exception:
            return None  # billing is down: show the run, without its cost

    async def show(row: dict[str, Any]) -> dict[str, Any]:
        return render_run(row, await run_cost(row["run_id"]), ctx.settings.gateway_url)

    @router.post("", status_code=201)
    async def launch(
        body: LaunchRequest,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> dict[str, Any]:
        caller.require("runs:write")
        if body.request is not None:
            raise ProblemError(
                400,
                "natural-language launches are not available yet",
                "pin a catalog benchmark with 'benchmark' (and optionally 'subset')",
                field="request",
                code="not_supported",
            )
        if body.benchmark is None:
            raise ProblemError(400, "invalid request", "'benchmark' is required", field="benchmark")
        fingerprint = body_fingerprint(body.model_dump(mode="json"))
        if idempotency_key:
            earlier = await ctx.call(ctx.app.find_launch, caller.account, idempotency_key)
            if earlier is not None:
                return await replay_launch(
                    caller, earlier.run_id, earlier.body_sha256, fingerprint, response
                )
        resolution = await ask(
            ctx.bus(),
            ResolveBenchmark(
                account=caller.account, benchmark=body.benchmark, subset=body.subset, impl=body.impl
            ),
            BenchmarkResolution,
            timeout=QUERY_TIMEOUT_S,
        )
        if resolution.problem:
            p = resolution.problem
            raise ProblemError(p.status, p.title, p.detail, field=p.field, code="not_found")
        run_id = new_run_id()
        if idempotency_key:
            record = await ctx.call(
                ctx.app.remember_launch, caller.account, idempotency_key, fingerprint, run_id
            )
            if record.run_id != run_id:  # lost a race with an identical request
                return await replay_launch(
                    caller, record.run_id, record.body_sha256, fingerprint, response
                )
        assert resolution.benchmark_id and resolution.subset_id and resolution.subset_slug
        command = LaunchRun(
            command_id=f"launch:{run_id}",
            run_id=run_id,
            account=caller.account,
            benchmark_id=resolution.benchmark_id,
            benchmark_name=resolution.benchmark_name or body.benchmark,
            subset_id=resolution.subset_id,
            subset_slug=resolution.subset_slug,
            impl_id=resolution.impl_id,
            sut=SutRef(
                model=body.sut.model,
                provider=body.sut.provider,
                api_base=str(body.sut.api_base) if body.sut.api_base else None,
            ),
            limit=body.task_cap(),
            trials=body.trials.model_dump() if body.trials else dict(DEFAULT_TRIALS),
            metadata=body.metadata.model_dump(exclude_none=True),
            idempotency_key=idempotency_key,
            requested_at=datetime.now(UTC),
        )
        await send_command(ctx.bus(), command)
        return await show(await wait_for_run(caller, run_id, command))

    async def replay_launch(
        caller: Principal, run_id: str, stored: str, fingerprint: str, response: Response
    ) -> dict[str, Any]:
        if stored != fingerprint:
            raise ProblemError(
                409,
                "idempotency key reused",
                "this Idempotency-Key was used for a different request body",
                field="Idempotency-Key",
                code="idempotency_key_reused",
            )
        response.status_code = 200
        row = await ctx.read(views.get_run, run_id)
        if row is None:
            return {"id": run_id, "object": "run", "status": "running", "display_status": "running"}
        return await show(row)

    async def wait_for_run(caller: Principal, run_id: str, command: LaunchRun) -> dict[str, Any]:
        """Read-your-write: wait briefly for the projection to show the new run."""
        for _ in range(100):
            row = await ctx.read(views.get_run, run_id)
            if row is not None:
                return row  # type: ignore[no-any-return]
            await asyncio.sleep(0.05)
        return {
            "run_id": run_id,
            "account": caller.account,
            "status": "running",
            "phase": None,
            "benchmark_id": command.benchmark_id,
            "benchmark_name": command.benchmark_name,
            "subset_id": command.subset_id,
            "subset_slug": command.subset_slug,
            "impl_id": command.impl_id,
            "model": command.sut.model_dump_json(),
            "metadata": json.dumps(command.metadata),
            "created_at": command.requested_at.isoformat(),
        }

    @router.get("")
    async def list_runs(
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        page_token: str | None = None,
        status: Annotated[str | None, Query(pattern="^(running|ok|error)$")] = None,
    ) -> dict[str, Any]:
        caller.require("runs:read")
        rows = await ctx.read(
            lambda cur: views.list_runs(
                cur, caller.account, limit=limit + 1, before=page_token, status=status
            )
        )
        more = len(rows) > limit
        rows = rows[:limit]
        data = [await show(r) for r in rows]
        token = (rows[-1]["created_at"] + rows[-1]["run_id"]) if more and rows else None
        return {"object": "list", "data": data, "next_page_token": token}

    @router.get("/{run_id}")
    async def get_run(run_id: str, caller: Caller) -> dict[str, Any]:
        caller.require("runs:read")
        return await show(await load_run(caller, run_id))

    @router.get("/{run_id}/tasks")
    async def list_tasks(
        run_id: str,
        caller: Caller,
        passed: bool | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        page_token: str | None = None,
    ) -> dict[str, Any]:
        caller.require("runs:read")
        await load_run(caller, run_id)
        after = parse_task_row_id(page_token) if page_token else None
        if page_token and after is None:
            raise ProblemError(400, "invalid page_token", field="page_token")
        outcomes = None if passed is None else (("pass",) if passed else ("fail",))
        rows = await ctx.read(
            lambda cur: views.list_tasks(
                cur, run_id, outcomes=outcomes, after=after, limit=limit + 1
            )
        )
        more = len(rows) > limit
        rows = rows[:limit]
        summary = summarize(await ctx.read(views.task_outcomes, run_id))
        return {
            "object": "list",
            "summary": summary,
            "data": [render_task(r) for r in rows],
            "next_page_token": render_task(rows[-1])["id"] if more and rows else None,
        }

    @router.get("/{run_id}/tasks/{row_id}/payload")
    async def task_payload(run_id: str, row_id: str, caller: Caller) -> dict[str, Any]:
        caller.require("runs:read")
        run = await load_run(caller, run_id)
        key = parse_task_row_id(row_id)
        row = await ctx.read(views.get_task, run_id, *key) if key else None
        if row is None:
            raise ProblemError(
                404, "task not found", f"no task {row_id!r} in this run", field="task"
            )
        source = await ask(
            ctx.bus(),
            GetSubsetRows(subset_id=run["subset_id"], offset=row["idx"], limit=1),
            SubsetRows,
            timeout=QUERY_TIMEOUT_S,
        )
        task = source.rows[0] if source.rows else {}
        return {
            "id": row_id,
            "object": "task_payload",
            "task_id": row["task_id"],
            "input": task.get("input"),
            "expected": task.get("expected"),
            "output": row.get("output"),
            "score": row.get("score"),
            "outcome": row.get("outcome"),
            "score_meta": json.loads(row["score_meta"]) if row.get("score_meta") else {},
            "error": (
                {"type": row["error_type"], "message": row.get("error")}
                if row.get("error_type")
                else None
            ),
        }

    @router.get("/{run_id}/events")
    async def list_events(
        run_id: str,
        caller: Caller,
        after_seq: Annotated[int | None, Query(ge=-1)] = None,
        types: str | None = None,
        limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    ) -> dict[str, Any]:
        caller.require("runs:read")
        await load_run(caller, run_id)
        wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
        page = await ask(
            ctx.bus(),
            GetRunEvents(run_id=run_id, after_seq=after_seq, types=wanted, limit=limit),
            RunEventsPage,
            timeout=QUERY_TIMEOUT_S,
        )
        data = [e.model_dump(mode="json") for e in page.events]
        return {
            "object": "list",
            "data": data,
            "has_more": page.has_more,
            "next_after_seq": data[-1]["seq"] if data else after_seq,
        }

    @router.post("/{run_id}/halt", status_code=202)
    async def halt(run_id: str, caller: Caller, body: HaltRequest | None = None) -> dict[str, Any]:
        """Stop a run: its sandboxes and proxy are torn down; it stays readable."""
        caller.require("runs:write")
        row = await load_run(caller, run_id)
        if row["status"] != "running":
            raise ProblemError(
                409,
                "run already finished",
                f"run {run_id} is {row['status']}",
                field="run_id",
                code="run_finished",
            )
        reason = "operator_kill" + (f": {body.reason}" if body and body.reason else "")
        await send_command(
            ctx.bus(),
            HaltRun(
                command_id=f"halt:{run_id}",
                run_id=run_id,
                account=caller.account,
                halt_reason=reason,
            ),
        )
        return await show(row)

    @router.get("/{run_id}/fingerprint")
    async def fingerprint(run_id: str, caller: Caller) -> dict[str, Any]:
        """How the run's fingerprint was derived, recomputed from its log now."""
        caller.require("runs:read")
        row = await load_run(caller, run_id)
        page = await ask(
            ctx.bus(),
            GetRunEvents(run_id=run_id, types=sorted(LOAD_BEARING_FIELDS), limit=5000),
            RunEventsPage,
            timeout=QUERY_TIMEOUT_S,
        )
        recomputed, records = run_fingerprint((e.type, e.data) for e in page.events)
        recorded = row.get("fingerprint")
        return {
            "object": "fingerprint",
            "run_id": run_id,
            "fingerprint": recorded,
            "recomputed": recomputed if page.events else None,
            "matches": (recorded == recomputed) if recorded else None,
            "algorithm": "sha256 over canonical JSON records joined by U+001E, first 12 hex",
            "records": [
                {"seq": e.seq, "type": e.type, "canonical": record}
                for e, record in zip(page.events, records, strict=True)
            ],
            "rules": {name: list(fields) for name, fields in LOAD_BEARING_FIELDS.items()},
        }

    @router.get("/{run_id}/stream")
    async def stream(run_id: str, caller: Caller) -> EventSourceResponse:
        caller.require("runs:read")
        await load_run(caller, run_id)
        return EventSourceResponse(run_log(run_id), ping=15)

    async def caught_up(run_id: str, seq: int, timeout: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            row = await ctx.read(views.get_run, run_id)
            if row is not None and int(row.get("last_seq") or 0) >= seq:
                return
            await asyncio.sleep(0.05)

    async def run_log(run_id: str) -> AsyncIterator[dict[str, Any]]:
        """History then live, straight from the run's JetStream subject."""
        sub = await jetstream(ctx.bus()).subscribe(
            subjects.run_log_subject(run_id),
            stream=subjects.RUNS_STREAM,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
        )
        try:
            async for msg in sub.messages:
                event = json.loads(msg.data)
                if event["type"] == TERMINAL_EVENT:
                    # The stream runs ahead of the read model; hold the last event
                    # until the read model has it, so a client that reads the run
                    # or its tasks after the stream closes sees the finished state.
                    await caught_up(run_id, event["seq"])
                yield {"event": event["type"], "id": str(event["seq"]), "data": json.dumps(event)}
                if event["type"] == TERMINAL_EVENT:
                    return
        finally:
            await sub.unsubscribe()

    return router
