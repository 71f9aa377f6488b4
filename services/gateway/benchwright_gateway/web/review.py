"""The review queue: a person grades a sample of a run's tasks by hand, one after
another, and sees how far the run's grader agrees with them.

The sample is the first ``n`` of the run's graded tasks in ``labelling.review_order``
(stratified across the grader's grades in proportion to their sizes, seeded by the
run), so the same run always offers the same tasks in the same order. The page shows
the first of them the person has not labelled yet: its input, expected answer, output
and the grader's score metadata (a judge's reasoning, when its scorer keeps one there),
and a form that posts the person's grade and note through ``POST /v1/runs/{id}/labels``
(``inproc``), then shows the next. The agreement figures above it are those of
``GET /v1/runs/{id}/agreement``.
"""

import asyncio
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse

from benchwright_gateway.adapters import BusPorts
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.labelling import SCALES, Graded, review_order
from benchwright_gateway.operations import labels as labelling
from benchwright_gateway.render import task_row_id
from benchwright_gateway.web.routing import PageRoute, Web, see_other
from benchwright_gateway.web.runs import viewer
from benchwright_gateway.web.templating import page
from benchwright_shared.refusal import Refused

# How many tasks the queue offers unless the page asks for another number.
SAMPLE = 20
SampleSize = Annotated[int, Query(ge=1, le=1000)]


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)
    ctx = web.ctx

    async def review_page(
        request: Request,
        caller: Principal,
        token: str,
        run_id: str,
        n: int,
        *,
        status: int = 200,
        problem: str = "",
    ) -> HTMLResponse:
        graded = await labelling.graded_run(BusPorts(ctx), caller.account, run_id)
        sample = review_order(run_id, graded.units, graded.scale)[:n]
        base = f"/v1/runs/{quote(run_id, safe='')}"
        labels, report = await asyncio.gather(
            web.api.call("GET", f"{base}/labels", token),
            web.api.call("GET", f"{base}/agreement", token),
        )
        if not labels.ok or not report.ok:
            failed = labels if not labels.ok else report
            raise Refused(failed.status, "the review cannot be shown", failed.problem())
        mine = {
            (int(lab["index"]), int(lab["trial"])): lab
            for lab in labels.body["data"]
            if lab["labelled_by"] == caller.account and lab["invocation"] == graded.invocation
        }
        current = next((g for g in sample if (g.index, g.trial) not in mine), None)
        task: dict[str, Any] | None = None
        if current is not None:
            task = await _payload(web, token, base, graded.invocation, current)
        return page(
            request, "review.html", status, me=viewer(caller, token), run_id=run_id,
            run=graded.run, scale=graded.scale, grades=SCALES[graded.scale].categories,
            sample=sample, labelled=mine, current=current, task=task, n=n,
            report=report.body, problem=problem, trials=graded.trials,
        )  # fmt: skip

    @router.get("/runs/{run_id}/review", response_class=HTMLResponse)
    async def review(request: Request, run_id: str, n: SampleSize = SAMPLE) -> Response:
        caller, token = await web.browser.required(request)
        caller.require("runs:read")
        return await review_page(request, caller, token, run_id, n)

    @router.post("/runs/{run_id}/review", response_class=HTMLResponse)
    async def record(request: Request, run_id: str, n: SampleSize = SAMPLE) -> Response:
        """Record the person's grade of the task the form showed, then show the next."""
        caller, token, fields = await web.browser.posted(request)
        body: dict[str, Any] = {"task": fields.get("task", ""), "grade": fields.get("grade", "")}
        if fields.get("trial"):
            body["trial"] = int(fields["trial"]) if fields["trial"].isdigit() else fields["trial"]
        if fields.get("note", "").strip():
            body["note"] = fields["note"].strip()
        path = f"/v1/runs/{quote(run_id, safe='')}/labels"
        answer = await web.api.call("POST", path, token, json=body)
        if not answer.ok:
            return await review_page(
                request, caller, token, run_id, n, status=answer.status, problem=answer.problem()
            )
        return see_other(f"/runs/{quote(run_id, safe='')}/review?n={n}")

    return router


async def _payload(
    web: Web, token: str, base: str, invocation: int, unit: Graded
) -> dict[str, Any]:
    """The task's input, expected answer and output, with the shown trial's own output
    and score metadata on a run of several."""
    row_id = task_row_id(invocation, unit.index)
    answer = await web.api.call("GET", f"{base}/tasks/{row_id}/payload", token)
    if not answer.ok:
        raise Refused(answer.status, "the task cannot be shown", answer.problem())
    payload: dict[str, Any] = dict(answer.body)
    for trial in payload.get("trials") or []:
        if int(trial.get("trial", -1)) == unit.trial:
            payload["output"] = trial.get("output", payload.get("output"))
            payload["score_meta"] = trial.get("score_meta") or payload.get("score_meta")
    payload["row_id"] = row_id
    return payload
