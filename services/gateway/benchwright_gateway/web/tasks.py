"""A task's page: its input, output and trials, and for an agent the transcript of
every attempt (``transcript``), followed live while the run runs.

The transcript is read from the run's log (the orchestrator answers ``GetRunEvents``),
not from a read model of the gateway's: the log is where every agent step is
recorded, and the page reads only the agent event types. A task an agent is still on
has no row yet; its page shows the transcript so far under the task's index.

The live stream (``/live``) works as the run page's does (``live``): server-sent
events, a look every ``POLL_S`` at the run's log position in the gateway's own view,
the log read only when that moved, and only the elements that changed sent, each
drawn by the same template macro as the page (so escaped the same way).
"""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse
from markupsafe import Markup
from sse_starlette import EventSourceResponse

from benchwright_gateway import projections as views
from benchwright_gateway.api import lookup
from benchwright_gateway.render import parse_task_row_id
from benchwright_gateway.web import transcript as conversation
from benchwright_gateway.web.routing import PageRoute, Web
from benchwright_gateway.web.runs import QUERY_TIMEOUT_S, viewer
from benchwright_gateway.web.templating import environment, page
from benchwright_gateway.web.transcript import Fragment, Transcript
from benchwright_shared.bus import ask
from benchwright_shared.contracts import GetRunEvents, RunEventsPage
from benchwright_shared.projection import ViewCursor
from benchwright_shared.refusal import Refused

POLL_S = 0.5
# How much of the log one look of the live stream reads at most (the rest next look).
LIVE_BUDGET = 4 * conversation.LOG_PAGE
FromTurn = Annotated[int, Query(ge=1, le=100_000)]
ReadRun = Callable[[], Awaitable[dict[str, Any] | None]]
ReadOutcomes = Callable[[], Awaitable[dict[int, str]]]


def render_fragment(transcript: Transcript, fragment: Fragment, outcomes: dict[int, str]) -> str:
    """One element of the transcript, as the page's own macro draws it."""
    macros: Any = environment().get_template("_transcript.html").module
    attempt = fragment.attempt
    if fragment.part == "attempt":
        html: Markup = macros.attempt(transcript, attempt, outcomes)
    elif fragment.part == "head":
        html = macros.head(transcript, attempt)
    elif fragment.part == "turn":
        html = macros.turn_item(attempt, fragment.turn)
    elif fragment.part == "more":
        html = macros.more(transcript, attempt)
    else:
        html = macros.ending(attempt, outcomes)
    return str(html).strip()


async def follow(
    read_run: ReadRun,
    fetch: conversation.Fetch,
    run_id: str,
    transcript: Transcript,
    *,
    since: int,
    outcomes: ReadOutcomes | None = None,
    poll_s: float = POLL_S,
) -> AsyncIterator[dict[str, str]]:
    """Server-sent events for a task page drawn at log position ``since``: ``part``
    (an element to put in place: ``{parent, id, html}``) and ``end``. ``outcomes``
    reads each trial's scored outcome, asked only when a verdict is to be drawn."""
    last_seq: int | None = None
    while True:
        row = await read_run()
        if row is None:
            yield {"event": "end", "data": json.dumps({"status": "deleted"})}
            return
        position = int(row.get("last_seq") or 0)
        if position != last_seq:
            transcript.cut = False
            try:
                readable = await conversation.read(fetch, run_id, transcript, budget=LIVE_BUDGET)
            except Exception:
                readable = False  # the orchestrator is away: look again next time
            if readable and not transcript.cut:
                last_seq = position
            changed = transcript.changed(since)
            scored: dict[int, str] = {}
            if outcomes and any(
                f.attempt.verdict and f.part in ("attempt", "end") for f in changed
            ):
                scored = await outcomes()
            for fragment in changed:
                body = {"parent": fragment.parent, "id": fragment.id,
                        "html": render_fragment(transcript, fragment, scored)}  # fmt: skip
                yield {"event": "part", "data": json.dumps(body)}
            # A first look that stopped short of the page's position sends nothing twice.
            since = max(since, transcript.seq)
        if row["status"] != "running" and last_seq == position:
            yield {"event": "end", "data": json.dumps({"status": row["status"]})}
            return
        await asyncio.sleep(poll_s)


def trial_outcomes(payload: dict[str, Any]) -> dict[int, str]:
    """Each trial's outcome as the platform scored it (one trial: the task's own)."""
    trials = payload.get("trials") or []
    if trials:
        return {int(t["trial"]): t["outcome"] for t in trials if t.get("outcome")}
    return {0: payload["outcome"]} if payload.get("outcome") else {}


def unsettled(task_id: str) -> dict[str, Any]:
    """The page's task before its row exists: an agent is still on it."""
    return {"task_id": task_id, "outcome": None, "score": None, "error": None, "input": None,
            "expected": None, "output": None, "score_meta": None, "trials": []}  # fmt: skip


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)
    ctx = web.ctx

    async def fetch(query: GetRunEvents) -> RunEventsPage:
        return await ask(ctx.bus(), query, RunEventsPage, timeout=QUERY_TIMEOUT_S)

    def task_key(row_id: str) -> tuple[int, int]:
        """``(invocation, index)`` of a task row's id."""
        key = parse_task_row_id(row_id)
        if key is None:
            raise Refused(404, "task not found", f"no task {row_id!r} in this run", field="task")
        return key

    @router.get("/runs/{run_id}/tasks/{row_id}", response_class=HTMLResponse)
    async def task_page(
        request: Request, run_id: str, row_id: str, from_turn: FromTurn = 1
    ) -> Response:
        caller, token, row = await web.readable_run(request, run_id)
        _, index = task_key(row_id)
        path = f"/v1/runs/{quote(run_id, safe='')}/tasks/{quote(row_id, safe='')}/payload"
        answer, run = await asyncio.gather(web.api.call("GET", path, token), lookup.show(ctx, row))
        transcript = Transcript(index, from_turn=from_turn)
        try:
            readable = await conversation.read(fetch, run_id, transcript)
        except Exception:
            readable = False  # the orchestrator is away: the rest of the page still answers
        if answer.ok:
            payload = answer.body
        elif answer.status == 404 and (transcript.attempts or row["status"] == "running"):
            payload = unsettled(transcript.task_id or f"#{index}")
        else:
            raise Refused(answer.status, "the task cannot be shown", answer.problem())
        live_url = None
        # Followed while the run runs if an agent is at it, or may be (no row yet).
        if readable and row["status"] == "running" and (transcript.attempts or not answer.ok):
            live_url = (
                f"/runs/{quote(run_id, safe='')}/tasks/{quote(row_id, safe='')}/live"
                f"?from_turn={from_turn}&since={transcript.seq}"
            )
        return page(
            request, "task.html", me=viewer(caller, token), run=run, task=payload,
            transcript=transcript if readable else None, live_url=live_url,
            outcomes=trial_outcomes(payload),
        )  # fmt: skip

    @router.get("/runs/{run_id}/tasks/{row_id}/live")
    async def transcript_stream(
        request: Request,
        run_id: str,
        row_id: str,
        from_turn: FromTurn = 1,
        since: Annotated[int, Query(ge=-1)] = -1,
    ) -> Response:
        """What the agent does next on this task, as server-sent events (``follow``)."""
        await web.readable_run(request, run_id)
        invocation, index = task_key(row_id)
        transcript = Transcript(index, from_turn=from_turn)

        async def read_run() -> dict[str, Any] | None:
            found: dict[str, Any] | None = await ctx.read(lambda cur: views.get_run(cur, run_id))
            return found

        def scored(cur: ViewCursor) -> dict[int, str]:
            row = views.get_task(cur, run_id, invocation, index) or {}
            trials = views.task_trials(cur, run_id, invocation, [index]).get(index, [])
            return trial_outcomes({"outcome": row.get("outcome"), "trials": trials})

        async def read_outcomes() -> dict[int, str]:
            found: dict[int, str] = await ctx.read(scored)
            return found

        stream = follow(read_run, fetch, run_id, transcript, since=since, outcomes=read_outcomes)
        return EventSourceResponse(stream, ping=15, headers={"Cache-Control": "no-store"})

    return router
