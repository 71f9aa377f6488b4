"""The runs pages: the list, a run's page (header, cost, phases, live heatmap, task
table), its outcome vector and live stream, and the run's buttons (a task's page is
``tasks``).

Reads go through ``lookup.load_run``, the API's own rule: another account's run is
a 404 unless it was shared, and only its owner sees the buttons (the API refuses
the rest anyway: each button posts through it).
"""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from nats.aio.msg import Msg
from sse_starlette import EventSourceResponse

from benchwright_gateway import projections as views
from benchwright_gateway.api import lookup
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.render import render_task
from benchwright_gateway.web import live, queries
from benchwright_gateway.web.routing import PageRoute, Web, see_other
from benchwright_gateway.web.sessions import SECURITY_HEADERS, csrf_token
from benchwright_gateway.web.templating import page
from benchwright_gateway.web.timeline import TIMELINE_EVENTS, PhaseSpan, phase_spans
from benchwright_shared import subjects
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.refusal import Refused

RUNS_PER_PAGE = 25
TASKS_PER_PAGE = 50
TIMELINE_ENTRIES = 2000
QUERY_TIMEOUT_S = 5.0
# What each button asks of the API, and the sentence the page shows after it.
ACTIONS: dict[str, tuple[str, str, dict[str, Any] | None, str]] = {
    "halt": ("POST", "halt", {"reason": "halted from the dashboard"}, "Halt requested."),
    "pause": ("POST", "halt", {"pause": True, "reason": "paused from the dashboard"},
              "Pause requested."),
    "resume": ("POST", "resume", None, "Resume requested."),
    "publish": ("PATCH", "", {"visibility": "public"}, "The run is public."),
    "unpublish": ("PATCH", "", {"visibility": "private"}, "The run is private."),
}  # fmt: skip
PageNumber = Annotated[int, Query(ge=1, le=100_000)]


def viewer(caller: Principal, token: str) -> dict[str, Any]:
    """Who the page is for, as the templates see it."""
    return {"account": caller.account, "scopes": caller.scopes, "csrf": csrf_token(token)}


def buttons(run: dict[str, Any], row: dict[str, Any], caller: Principal) -> list[str]:
    """The actions the run's state and the caller's scopes allow."""
    if row["account"] != caller.account or not (
        "runs:write" in caller.scopes or "admin" in caller.scopes
    ):
        return []
    found: list[str] = []
    reason = run.get("halt_reason") or ""
    if run["status"] == "running" and not run["halted"]:
        found += ["pause", "halt"]
    if run["status"] == "running" and reason.startswith("operator_pause"):
        found += ["resume", "halt"]
    found.append("unpublish" if run["visibility"] == "public" else "publish")
    return found


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)
    ctx = web.ctx

    async def timeline(run_id: str) -> list[PhaseSpan] | None:
        """The phase attempts from the run's log; None when the log cannot be read now."""
        query = GetRunEvents(run_id=run_id, types=TIMELINE_EVENTS, limit=TIMELINE_ENTRIES)
        try:
            found = await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)
        except Exception:
            return None  # the orchestrator is away: the rest of the page still answers
        return phase_spans(e.model_dump(mode="json") for e in found.events)

    @router.get("/runs", response_class=HTMLResponse)
    async def runs_list(
        request: Request,
        page_no: Annotated[PageNumber, Query(alias="page")] = 1,
        status: Annotated[str | None, Query(pattern="^(running|ok|error)?$")] = None,
        q: Annotated[str | None, Query(max_length=200)] = None,
        sort: Annotated[str, Query(pattern="^(newest|oldest|finished|benchmark)$")] = "newest",
    ) -> Response:
        caller, token = await web.browser.required(request)
        caller.require("runs:read")
        found = await ctx.read(
            lambda cur: queries.runs_page(
                cur, caller.account, status=status or None, search=q, sort=sort,
                offset=(page_no - 1) * RUNS_PER_PAGE, limit=RUNS_PER_PAGE,
            )
        )  # fmt: skip
        runs = await asyncio.gather(*(lookup.show(ctx, row) for row in found.rows))
        return page(
            request, "runs.html", me=viewer(caller, token), runs=runs, total=found.total,
            page_no=page_no, pages=max(1, -(-found.total // RUNS_PER_PAGE)),
            filters={"status": status or "", "q": q or "", "sort": sort},
        )  # fmt: skip

    @router.get("/runs/{run_id}", response_class=HTMLResponse)
    async def run_page(
        request: Request,
        run_id: str,
        page_no: Annotated[PageNumber, Query(alias="page")] = 1,
        outcome: Annotated[str | None, Query(pattern="^(pass|fail|err|running)?$")] = None,
        trial: Annotated[int | None, Query(ge=0, le=1000)] = None,
        q: Annotated[str | None, Query(max_length=200)] = None,
        sort: Annotated[str, Query(pattern="^(index|-score|score|-duration|task_id)$")] = "index",
        done: Annotated[str | None, Query(max_length=20)] = None,
    ) -> Response:
        caller, token, row = await web.readable_run(request, run_id)

        def read(cur: Any) -> tuple[str, int, queries.Page]:
            vector, version = queries.outcome_vector(cur, run_id, row.get("selected_tasks"))
            tasks = queries.tasks_page(
                cur, run_id, version, outcome=outcome or None, trial=trial, search=q,
                sort=sort, offset=(page_no - 1) * TASKS_PER_PAGE, limit=TASKS_PER_PAGE,
            )  # fmt: skip
            return vector, version, tasks

        (vector, version, tasks), run, spans, others = await asyncio.gather(
            ctx.read(read),
            lookup.show(ctx, row),
            timeline(run_id),
            ctx.read(queries.compare_candidates, caller.account, row),
        )
        summary = run.get("summary") or queries.vector_counts(vector)
        return page(
            request, "run.html", me=viewer(caller, token), run=run, vector=vector,
            version=version, counts=queries.vector_counts(vector), summary=summary,
            tasks=[render_task(t) | {"trial": t.get("trial")} for t in tasks.rows],
            task_total=tasks.total, page_no=page_no,
            pages=max(1, -(-tasks.total // TASKS_PER_PAGE)),
            filters={"outcome": outcome or "", "trial": "" if trial is None else trial,
                     "q": q or "", "sort": sort},
            trials_k=views.trials_per_task(row.get("trials")), spans=spans,
            buttons=buttons(run, row, caller), notice=ACTIONS[done][3] if done in ACTIONS else "",
            others=others,
        )  # fmt: skip

    @router.get("/runs/{run_id}/outcomes")
    async def outcomes(request: Request, run_id: str) -> Response:
        """The run's outcome vector: one character per task (see ``queries``)."""
        _, _, row = await web.readable_run(request, run_id)
        vector, version = await ctx.read(
            lambda cur: queries.outcome_vector(cur, run_id, row.get("selected_tasks"))
        )
        body = {
            "vector": vector,
            "version": version,
            "counts": queries.vector_counts(vector),
            "state": live.run_state(row),
        }
        return JSONResponse(body, headers=SECURITY_HEADERS)

    @router.get("/runs/{run_id}/live")
    async def live_stream(request: Request, run_id: str) -> Response:
        """What changes on the run page, as server-sent events (``live.updates``)."""
        await web.readable_run(request, run_id)
        return EventSourceResponse(watched(run_id), ping=15, headers={"Cache-Control": "no-store"})

    async def watched(run_id: str) -> AsyncIterator[dict[str, str]]:
        """``live.updates``, with the tasks the run's sweeps say they began."""
        started: set[int] = set()

        async def heard(msg: Msg) -> None:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                started.update(int(index) for index, _trial in json.loads(msg.data)["started"])

        subscription = await ctx.bus().connection.subscribe(subjects.live_subject(run_id), cb=heard)
        try:
            async for event in live.updates(ctx.read, run_id, started=started):
                yield event
        finally:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()

    @router.post("/runs/{run_id}/{action}")
    async def act(request: Request, run_id: str, action: str) -> Response:
        """A button: the API's own route does it, with the API's checks."""
        if action not in ACTIONS:
            raise Refused(404, "no such action", f"unknown action {action!r}")
        _, token, _ = await web.browser.posted(request)
        method, verb, body, _ = ACTIONS[action]
        path = f"/v1/runs/{quote(run_id, safe='')}" + (f"/{verb}" if verb else "")
        answer = await web.api.call(method, path, token, json=body)
        if not answer.ok:
            raise Refused(answer.status, "the run refused", answer.problem())
        return see_other(f"/runs/{quote(run_id, safe='')}?done={action}")

    return router
