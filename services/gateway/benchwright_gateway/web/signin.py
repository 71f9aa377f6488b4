"""Signing a browser in and out: the login form, the one-time link, sign-out.

A sign-in link (``benchwright up`` prints one for the local admin) is spent by a
form post from the page it opens, not by the GET itself: a link preview or a
prefetch cannot use it up, and the token never reaches another site's Referer.
"""

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse

from benchwright_gateway.domain import Session
from benchwright_gateway.web.routing import PageRoute, Web, see_other
from benchwright_gateway.web.sessions import (
    PRE_SESSION_COOKIE,
    check_form,
    clear_session_cookie,
    form_fields,
    keep_pre_session,
    pre_session_token,
    safe_next,
    served_securely,
    set_session_cookie,
)
from benchwright_gateway.web.templating import page
from benchwright_shared.refusal import Refused


def build_router(web: Web) -> APIRouter:
    router = APIRouter(route_class=PageRoute, include_in_schema=False)
    ctx = web.ctx

    def secure(request: Request) -> bool:
        return served_securely(request, ctx.settings.gateway_url)

    def form_page(
        request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        token = pre_session_token(request)
        response = page(request, template, status, csrf=token, me=None, **values)
        keep_pre_session(response, token, secure=secure(request))
        return response

    def signed_in(request: Request, opened: tuple[str, Session], target: str) -> Response:
        """Hand the new session's token to the browser, in the cookie only."""
        response = see_other(safe_next(target))
        set_session_cookie(response, opened[0], secure=secure(request))
        response.delete_cookie(PRE_SESSION_COOKIE, path="/")
        return response

    @router.get("/")
    async def home(request: Request) -> Response:
        found = await web.browser.optional(request)
        return see_other("/runs" if found else "/sign-in")

    @router.get("/sign-in")
    async def sign_in_form(request: Request, next: str = "/runs") -> HTMLResponse:
        return form_page(request, "sign_in.html", next=safe_next(next), error="", username="")

    @router.post("/sign-in")
    async def sign_in(request: Request) -> Response:
        fields = await form_fields(request)
        check_form(request, fields, request.cookies.get(PRE_SESSION_COOKIE, ""))
        target = safe_next(fields.get("next"))
        username = fields.get("username", "")[:100]
        try:
            opened = await ctx.call(
                ctx.app.open_session, username, fields.get("password", "")[:1000]
            )
        except Refused as refused:
            return form_page(
                request, "sign_in.html", refused.status, next=target,
                error=refused.detail or refused.title, username=username,
            )  # fmt: skip
        return signed_in(request, opened, target)

    @router.get("/sign-in/link/{token}")
    async def sign_in_link_form(request: Request, token: str, next: str = "/runs") -> Response:
        response = form_page(request, "sign_in_link.html", token=token, next=safe_next(next))
        # The token is in this page's URL: no Referer carries it anywhere.
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @router.post("/sign-in/link")
    async def sign_in_with_link(request: Request) -> Response:
        fields = await form_fields(request)
        check_form(request, fields, request.cookies.get(PRE_SESSION_COOKIE, ""))
        opened = await ctx.call(ctx.app.redeem_sign_in_link, fields.get("token", "")[:200])
        return signed_in(request, opened, fields.get("next", "/runs"))

    @router.post("/sign-out")
    async def sign_out(request: Request) -> Response:
        _, token, _ = await web.browser.posted(request)
        await ctx.call(ctx.app.close_session, token)
        response = see_other("/sign-in")
        clear_session_cookie(response, secure=secure(request))
        return response

    return router
