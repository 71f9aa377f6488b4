"""Every error leaves as RFC 9457 ``application/problem+json``, naming the field at fault."""

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from benchwright_shared.refusal import Refused

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)


def problem_response(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    field: str | None = None,
    code: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        body["detail"] = detail
    if field:
        body["field"] = field
    if code:
        body["code"] = code
    if extra:
        body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _field_path(loc: tuple[Any, ...]) -> str:
    # ("body", "sut", "model") -> "sut.model"; the leading location says nothing useful.
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or str(loc[-1] if loc else "")


def install(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def on_refused(_: Request, exc: Refused) -> JSONResponse:
        return problem_response(
            exc.status, exc.title, exc.detail, field=exc.field, code=exc.code, headers=exc.headers
        )

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        field = _field_path(tuple(first.get("loc", ())))
        message = str(first.get("msg", "invalid value"))
        if first.get("type") == "extra_forbidden":
            message = f"unknown field {field!r}"
        return problem_response(
            400,
            "invalid request",
            f"{field}: {message}" if field else message,
            field=field or None,
            code="invalid_argument",
            extra={
                "errors": [
                    {"field": _field_path(tuple(e.get("loc", ()))), "message": str(e.get("msg"))}
                    for e in errors
                ]
            },
        )

    @app.exception_handler(NoRespondersError)
    async def on_no_responders(_: Request, exc: NoRespondersError) -> JSONResponse:
        # A service the request needs is not running (or not yet).
        return problem_response(
            503,
            "service unavailable",
            "a service this request needs is not answering",
            code="service_unavailable",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(NatsTimeoutError)
    async def on_bus_timeout(_: Request, exc: NatsTimeoutError) -> JSONResponse:
        return problem_response(
            504,
            "upstream timeout",
            "a service this request needs did not answer in time",
            code="upstream_timeout",
            headers={"Retry-After": "1"},
        )

    # Anything else is a 500 from ``guard.Contained``, which keeps the connection open.

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names the methods of the first route on the path only.
            headers["Allow"] = ", ".join(_allowed(request))
        return problem_response(exc.status_code, str(exc.detail), headers=headers or None)


def _allowed(request: Request) -> list[str]:
    """Every method some route takes at this request's path (asked of the router
    itself: included routers hold their routes out of sight)."""
    routes = request.app.router.routes
    return [
        method
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
        if any(r.matches({**request.scope, "method": method})[0] == Match.FULL for r in routes)
    ]
