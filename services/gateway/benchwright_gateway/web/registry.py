"""Pages over what the API already answers: comparing two runs, and the registry's
benchmarks, subsets with their leaderboards, and impls with their code and runs.

Each page is the API's answer, asked in-process with the browser's session
(``inproc``): the same scopes, the same visibility rules, the same 404s.
"""

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse

from benchwright_gateway.web.highlight import highlight_python
from benchwright_gateway.web.routing import PageRoute, Web
from benchwright_gateway.web.runs import viewer
from benchwright_gateway.web.templating import page
from benchwright_shared.refusal import Refused

CHANGES_PER_PAGE = 100
RunId = Annotated[str, Query(min_length=1, max_length=200)]


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)

    @router.get("/compare", response_class=HTMLResponse)
    async def compare(
        request: Request,
        a: RunId,
        b: RunId,
        change: Annotated[str | None, Query(max_length=30)] = None,
        page_no: Annotated[int, Query(alias="page", ge=1, le=10_000)] = 1,
    ) -> Response:
        """Run ``b`` against run ``a``, task by task (``GET /v1/runs/{a}/compare?with=b``);
        the changed tasks side by side, a page at a time, ``change`` picking one kind."""
        caller, token = await web.browser.required(request)
        b = b.strip()
        found = await web.api.get(f"/v1/runs/{quote(a.strip(), safe='')}/compare", token, with_=b)
        changes = [c for c in found.get("changes") or [] if change in (None, "", c["change"])]
        start = (page_no - 1) * CHANGES_PER_PAGE
        return page(
            request, "compare.html", me=viewer(caller, token), cmp=found,
            changes=changes[start : start + CHANGES_PER_PAGE], change_total=len(changes),
            page_no=page_no, pages=max(1, -(-len(changes) // CHANGES_PER_PAGE)),
            filters={"a": a.strip(), "b": b, "change": change or ""},
        )  # fmt: skip

    @router.get("/registry", response_class=HTMLResponse)
    async def benchmarks(
        request: Request, tag: Annotated[str | None, Query(max_length=100)] = None
    ) -> Response:
        caller, token = await web.browser.required(request)
        found = await web.api.get("/v1/benchmarks", token, tag=tag, limit=100)
        return page(
            request, "registry.html", me=viewer(caller, token), benchmarks=found["data"],
            tag=tag or "",
        )  # fmt: skip

    @router.get("/registry/benchmarks/{benchmark_id}", response_class=HTMLResponse)
    async def benchmark(request: Request, benchmark_id: str) -> Response:
        caller, token = await web.browser.required(request)
        found = await web.api.get(f"/v1/benchmarks/{benchmark_id}", token)
        return page(request, "benchmark.html", me=viewer(caller, token), bm=found)

    @router.get("/registry/subsets/{subset_id}", response_class=HTMLResponse)
    async def subset(request: Request, subset_id: str) -> Response:
        """A subset and its leaderboard: the best public run per model."""
        caller, token = await web.browser.required(request)
        found = await web.api.get(f"/v1/subsets/{subset_id}", token)
        board = await web.api.get(f"/v1/subsets/{subset_id}/leaderboard", token)
        runs = await web.api.get(f"/v1/subsets/{subset_id}/runs", token, limit=50)
        return page(
            request, "subset.html", me=viewer(caller, token), subset=found,
            leaderboard=board["data"], runs=runs["data"],
        )  # fmt: skip

    @router.get("/registry/impls/{impl_id}", response_class=HTMLResponse)
    async def impl(request: Request, impl_id: str) -> Response:
        """An impl: its scorer's code, highlighted, and the runs that used it."""
        caller, token = await web.browser.required(request)
        found = await web.api.get(f"/v1/impls/{impl_id}", token)
        code = await web.api.call("GET", f"/v1/impls/{impl_id}/code", token)
        if not code.ok:
            raise Refused(code.status, "impl code unavailable", code.problem())
        runs = await web.api.get(f"/v1/impls/{impl_id}/runs", token, limit=50)
        text = code.body if isinstance(code.body, str) else str(code.body.get("code", ""))
        return page(
            request, "impl.html", me=viewer(caller, token), impl=found,
            code=highlight_python(text), runs=runs["data"],
        )  # fmt: skip

    return router
